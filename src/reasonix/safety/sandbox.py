"""The workspace sandbox: every path a tool touches must resolve inside the workspace roots.

A path argument is checked in this order, and refused with a :class:`~reasonix.errors.SandboxError`
whose message says why:

1. it is not empty, has no NUL byte, is not absurdly long (4096 bytes, 255 per name);
2. it has no Unicode look-alike of ``/`` or ``..`` (``．．／etc`` is refused rather than created
   as a strange file name that a human would read as a parent directory);
3. ``~`` is expanded, a relative path is taken from the workspace, and symlinks and ``..`` are
   resolved (``os.path.realpath``); a symlink that cannot be resolved (a loop) is refused;
4. the resolved path lies inside one of the roots (the workspace plus configured extra roots);
5. it matches no read-deny pattern (secrets such as ``.env`` and private keys; these apply to
   writes too, since an edit would echo the content back), and for writes no write-deny pattern
   (``.git`` folders and files). Deny patterns ignore case, since on a case-insensitive file
   system ``.ENV`` opens ``.env``.

The check is made on the resolved path and tools then use that resolved path, so a symlink in
the argument cannot redirect the operation afterwards. Residual risk: a folder on the path
replaced by a symlink by another process between the check and the use (a TOCTOU race). The
file tools re-check the path right before they create folders, write or delete, and write
through a freshly created temporary file, which narrows that window but cannot close it without
``openat``-style descriptor walking; a command run under ``isolation="bwrap"`` leaves no process
behind that could race.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path

from reasonix.errors import SandboxError
from reasonix.safety.patterns import compile_patterns, match_path_or_parents

#: Files tools may neither read nor write: secrets that should not reach a model provider.
DEFAULT_READ_DENY: tuple[str, ...] = (
    ".env", ".env.*", "!.env.example", "!.env.sample", "!.env.template", "*.pem", "*.key", "*.p12",
    "*.pfx", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", ".netrc", ".git-credentials",
    ".pgpass",
)  # fmt: skip


def holds_secrets(relpath: str) -> bool:
    """Whether ``relpath`` (relative to its folder, symlinks resolved) is a file the built-in
    read-deny patterns protect (``.env``, keys): what the file tools refuse must not reach the
    model another way either (a memory file, a skill's file, an ``@`` mention)."""
    patterns = compile_patterns(DEFAULT_READ_DENY, ignore_case=True)
    return match_path_or_parents(patterns, relpath, is_dir=False) is not None


#: Files tools may read but not write: a repository's internals (hooks and config run code), and
#: also a ``.git`` *file*, which points git at another folder (``gitdir: ...``) whose hooks and
#: config would then run.
DEFAULT_WRITE_DENY: tuple[str, ...] = (".git",)

MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255

# Characters that render like a slash but are ordinary name characters to the kernel.
_SLASH_LOOKALIKES = frozenset("\u2215\u2044\u29f8\uff0f\u2571\u2cc6\u30ce\u31d3\u4e3f")


def _check_lookalikes(path: str) -> None:
    if any(c in _SLASH_LOOKALIKES for c in path):
        raise SandboxError(
            f"Path {path!r} contains a Unicode look-alike of '/'. Use plain ASCII separators."
        )
    for name in path.split("/"):
        if name.isascii():
            continue
        folded = unicodedata.normalize("NFKC", name)
        if "/" in folded or "\\" in folded or (folded and set(folded) == {"."}):
            raise SandboxError(
                f"Path {path!r} contains a Unicode look-alike of '.', '..' or '/' ({name!r}). "
                "Use plain ASCII for path syntax."
            )


class Sandbox:
    """Confines tool paths to the workspace roots; see the module docstring for the rules.

    ``roots[0]`` is the workspace (relative paths start there); further roots are extra folders
    tools may also use. ``read_deny`` and ``write_deny`` are gitignore-style patterns matched
    against the path relative to its root (a match on a parent folder counts).
    """

    def __init__(
        self,
        roots: Sequence[str | Path],
        *,
        read_deny: Iterable[str] = DEFAULT_READ_DENY,
        write_deny: Iterable[str] = DEFAULT_WRITE_DENY,
    ) -> None:
        if not roots:
            raise SandboxError("A sandbox needs at least one root folder (the workspace).")
        self.roots: tuple[Path, ...] = tuple(
            Path(os.path.realpath(os.path.expanduser(str(r)))) for r in roots
        )
        self.read_deny = tuple(read_deny)
        self.write_deny = tuple(write_deny)
        # Case-insensitive: on macOS and Windows ``.ENV`` and ``.Git/config`` are the same files.
        self._read_deny = compile_patterns(self.read_deny, ignore_case=True)
        self._write_deny = compile_patterns(self.write_deny, ignore_case=True)

    @property
    def workspace(self) -> Path:
        """The main root; relative paths are taken from here."""
        return self.roots[0]

    # -- checks --------------------------------------------------------------------------------

    def resolve(self, path: str, *, write: bool = False) -> Path:
        """Resolve ``path`` and return the real path, or raise :class:`SandboxError`."""
        if not isinstance(path, str) or not path.strip():
            raise SandboxError("The path is empty. Give a path relative to the workspace.")
        if "\x00" in path:
            raise SandboxError("The path contains a NUL byte, which no file name can contain.")
        raw = path.encode("utf-8", "surrogateescape")
        if len(raw) > MAX_PATH_BYTES:
            raise SandboxError(
                f"The path is too long ({len(raw)} bytes; at most {MAX_PATH_BYTES})."
            )
        if any(len(n.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES for n in path.split("/")):
            raise SandboxError(f"A name in the path is longer than {MAX_NAME_BYTES} bytes.")
        _check_lookalikes(path)
        joined = os.path.join(self.workspace, os.path.expanduser(path))
        try:
            real = os.path.realpath(joined)
        except (OSError, ValueError) as exc:
            raise SandboxError(f"Cannot resolve {path!r}: {exc}") from exc
        self._check_no_loop(path, real)
        self.check(Path(real), write=write, shown=path)
        return Path(real)

    def check(self, real: Path, *, write: bool = False, shown: str | None = None) -> None:
        """Check an already resolved path (e.g. one found while walking a folder)."""
        label = shown if shown is not None else str(real)
        root = self.root_of(real)
        if root is None:
            where = ", ".join(str(r) for r in self.roots)
            raise SandboxError(
                f"Path {label!r} resolves to {real}, which is outside the workspace ({where}). "
                "Tools may only use files inside the workspace."
            )
        hit = self.denied(real, write=write, root=root)
        if hit is not None:
            kind, pattern = hit
            if kind == "read":
                raise SandboxError(
                    f"Path {label!r} is protected (matches {pattern!r}): files that may hold "
                    "secrets are not available to tools."
                )
            raise SandboxError(
                f"Path {label!r} is read-only for tools (matches {pattern!r}); it cannot be "
                "written, edited or deleted."
            )

    def denied(
        self, real: Path, *, write: bool = False, root: Path | None = None
    ) -> tuple[str, str] | None:
        """``("read"|"write", pattern)`` if a deny pattern covers ``real``, else None."""
        root = root or self.root_of(real)
        if root is None or real == root:
            return None
        rel = real.relative_to(root).as_posix()
        is_dir = real.is_dir()
        hit = match_path_or_parents(self._read_deny, rel, is_dir=is_dir)
        if hit is not None:
            return ("read", hit)
        if write:
            hit = match_path_or_parents(self._write_deny, rel, is_dir=is_dir)
            if hit is not None:
                return ("write", hit)
        return None

    def root_of(self, real: Path) -> Path | None:
        """The root containing the resolved path ``real``, or None."""
        for root in self.roots:
            if real.is_relative_to(root):
                return root
        return None

    def display(self, real: Path) -> str:
        """How a resolved path is shown to the model: relative to the workspace when inside it."""
        if real == self.workspace:
            return "."
        if real.is_relative_to(self.workspace):
            return real.relative_to(self.workspace).as_posix()
        return str(real)

    @staticmethod
    def _check_no_loop(shown: str, real: str) -> None:
        # realpath leaves a symlink it cannot resolve (a loop) in place instead of failing, so a
        # symlink anywhere in its answer means the path never settles.
        current = Path(real)
        for candidate in (current, *current.parents):
            if candidate.is_symlink():
                raise SandboxError(
                    f"Path {shown!r} goes through a symlink that cannot be resolved "
                    f"({candidate}: a symlink loop)."
                )
