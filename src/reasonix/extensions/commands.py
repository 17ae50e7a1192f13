"""Custom slash commands: markdown prompt files, in Claude Code's format.

Where they are found (the first definition of a name wins):

1. ``.reasonix/commands/`` in the project,
2. ``.claude/commands/`` in the project,
3. ``commands/`` in the user's config folder (next to ``config.toml``).

The project folders are read only when the folder is trusted. Subfolders namespace a command:
``git/commit.md`` is ``/git:commit`` (names are lower-cased). The front matter may give
``description``, ``argument-hint``, ``allowed-tools`` and ``model``.

Expanding ``/name ARGS`` (:func:`expand_command`):

- ``$ARGUMENTS`` becomes ``ARGS``; ``$1`` … ``$N`` its words (shell quoting respected). When the
  file uses neither, ``ARGS`` is appended on a line of its own so it is not lost.
- ``!`cmd``` runs ``cmd`` through the caller's shell runner (in reasonix: the ``bash`` tool
  behind the permission engine, so it is sandboxed and asks like any other command) and is
  replaced by its output. ``allowed-tools`` entries such as ``Bash(git status:*)`` let those
  commands run without asking, but only in the user's own command files: a project file may
  not grant itself permissions.
- ``@path`` includes a file of the workspace: its text is appended under the prompt; an image
  (JPEG, PNG, GIF, WebP, told from the bytes) rides with the turn as an image part instead
  (:func:`expand_command_parts`). Paths outside the workspace, and files the sandbox protects
  (``.env``, keys), are not included and the prompt says so.
- ``model`` cannot switch the model inside a session (the prompt cache would be lost); it is
  reported, not obeyed.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from reasonix.errors import SandboxError
from reasonix.extensions.frontmatter import parse
from reasonix.safety.sandbox import Sandbox

if TYPE_CHECKING:
    from reasonix.messages import ImagePart

MAX_INCLUDE_BYTES = 100_000
MAX_COMMAND_FILE_BYTES = 200_000

_NAME_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_BANG = re.compile(r"!`([^`\n]+)`")
_AT = re.compile(r"(?<![\w@`/])@((?:[\w.~-]+/)*[\w.-]+)")
_POSITIONAL = re.compile(r"\$(\d+)")

ShellRunner = Callable[[str, tuple[str, ...]], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class CustomCommand:
    """One command file. ``source`` is ``project`` or ``user``; ``allowed_tools`` as written
    (Claude Code's form, ``Bash(git add:*)``)."""

    name: str
    path: Path
    source: str
    body: str
    description: str = ""
    argument_hint: str = ""
    allowed_tools: tuple[str, ...] = ()
    model: str = ""

    def help_line(self) -> str:
        """``/name <hint>  description (source)`` for ``/help``."""
        usage = f"/{self.name}" + (f" {self.argument_hint}" if self.argument_hint else "")
        what = self.description or "custom command"
        return f"{usage:<22} {what} ({self.source})"

    @property
    def shell_grants(self) -> tuple[str, ...]:
        """Permission rules (``bash(git status*)``) that ``allowed-tools`` grants the command's
        ``!`` lines; none for a project file."""
        if self.source != "user":
            return ()
        return tuple(r for r in (bash_rule(t) for t in self.allowed_tools) if r)


def bash_rule(entry: str) -> str | None:
    """Claude Code's ``Bash(git add:*)`` / ``Bash(npm test)`` / ``Bash`` as our rule."""
    text = entry.strip()
    name, _, rest = text.partition("(")
    if name.strip() not in ("Bash", "bash"):
        return None
    if not rest:
        return "bash"
    pattern = rest.rstrip(")").strip()
    if pattern.endswith(":*"):
        pattern = pattern[:-2] + "*"
    return f"bash({pattern})"


def command_folders(
    workspace: Path, user_dir: Path | None, *, trusted: bool
) -> list[tuple[Path, str]]:
    """The folders commands are read from, in precedence order, with their source label."""
    folders: list[tuple[Path, str]] = []
    if trusted:
        folders += [
            (workspace / ".reasonix" / "commands", "project"),
            (workspace / ".claude" / "commands", "project"),
        ]
    if user_dir is not None:
        folders.append((user_dir / "commands", "user"))
    return folders


def load_commands(
    folders: Iterable[tuple[Path, str]],
    *,
    reserved: Iterable[str] = (),
    problems: list[str] | None = None,
) -> dict[str, CustomCommand]:
    """Every command in ``folders`` by name (sorted). A name taken by a built-in command
    (``reserved``) or an earlier folder is skipped and reported through ``problems``."""
    taken = {r.lower() for r in reserved}
    found: dict[str, CustomCommand] = {}
    notes = problems if problems is not None else []
    for folder, source in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.md")):
            rel = path.relative_to(folder).with_suffix("")
            parts = rel.parts
            if not all(_NAME_PART.match(p) for p in parts) or not path.is_file():
                notes.append(f"custom command {path} skipped: use letters, digits, - _ . in names")
                continue
            name = ":".join(parts).lower()
            if name.lower() in taken:
                notes.append(f"custom command /{name} ({path}) skipped: a built-in has that name")
                continue
            if name in found:
                continue
            try:
                raw = path.read_bytes()[:MAX_COMMAND_FILE_BYTES]
            except OSError as exc:
                notes.append(f"custom command {path} skipped: {exc.strerror}")
                continue
            doc = parse(raw.decode("utf-8", "replace"))
            found[name] = CustomCommand(
                name=name,
                path=path,
                source=source,
                body=doc.body.strip("\n"),
                description=" ".join(doc.text("description").split()),
                argument_hint=doc.text("argument-hint"),
                allowed_tools=tuple(doc.items("allowed-tools")),
                model=doc.text("model"),
            )
    return dict(sorted(found.items()))


def substitute_arguments(body: str, arguments: str) -> str:
    """``$ARGUMENTS`` and ``$1`` … ``$N`` filled in; ``arguments`` appended when unused."""
    try:
        words = shlex.split(arguments)
    except ValueError:
        words = arguments.split()
    used = "$ARGUMENTS" in body or _POSITIONAL.search(body) is not None
    text = body.replace("$ARGUMENTS", arguments)

    def positional(match: re.Match[str]) -> str:
        index = int(match.group(1))
        return words[index - 1] if 0 < index <= len(words) else ""

    text = _POSITIONAL.sub(positional, text)
    if not used and arguments.strip():
        text = text.rstrip("\n") + f"\n\nARGUMENTS: {arguments}"
    return text


async def expand_command(
    command: CustomCommand,
    arguments: str,
    *,
    run_shell: ShellRunner | None,
    include: Callable[[str], str],
) -> str:
    """The prompt ``/command arguments`` sends to the model (its text; images are read as
    files: see :func:`expand_command_parts`)."""
    text, _ = await expand_command_parts(command, arguments, run_shell=run_shell, include=include)
    return text


async def expand_command_parts(
    command: CustomCommand,
    arguments: str,
    *,
    run_shell: ShellRunner | None,
    include: Callable[[str], str],
    image: Callable[[str], ImagePart | None] | None = None,
) -> tuple[str, tuple[ImagePart, ...]]:
    """The prompt ``/command arguments`` sends to the model, and the images it carries.

    ``run_shell(cmd, grants)`` returns a ``!`` command's output (or why it did not run);
    ``include(path)`` returns a file's text or raises ``OSError``/``ValueError`` saying why it
    cannot be included; ``image(path)`` returns the file as an image part when it is one
    (None when it is not; ``ValueError`` when it may not be sent)."""
    text = substitute_arguments(command.body, arguments)

    async def bang(match: re.Match[str]) -> str:
        if run_shell is None:
            return f"[not run: {match.group(1)}]"
        return (await run_shell(match.group(1), command.shell_grants)).rstrip("\n")

    pieces: list[str] = []
    last = 0
    for match in _BANG.finditer(text):
        pieces.append(text[last : match.start()])
        pieces.append(await bang(match))
        last = match.end()
    pieces.append(text[last:])
    text = "".join(pieces)

    included: list[str] = []
    images: list[ImagePart] = []
    for match in _AT.finditer(text):
        path = match.group(1).rstrip(".")
        if any(block.startswith(f"@{path}:") for block in included):
            continue
        try:
            part = image(path) if image is not None else None
            if part is not None:
                images.append(part)
                included.append(f"@{path}: attached as an image")
                continue
            content = include(path)
        except (OSError, ValueError) as exc:
            included.append(f"@{path}: not included ({exc})")
            continue
        included.append(f"@{path}:\n```\n{content.rstrip()}\n```")
    if included:
        text = text.rstrip("\n") + "\n\n" + "\n\n".join(included)
    if command.model:
        text += (
            f"\n\n(The command asks for model {command.model!r}; models stay fixed within a "
            "session, so this runs on the session's model.)"
        )
    return text, tuple(images)


def include_reader(sandbox: Sandbox) -> Callable[[str], str]:
    """An ``include`` for :func:`expand_command` that reads through the sandbox (workspace
    only, protected files refused)."""

    def read(path: str) -> str:
        try:
            real = sandbox.resolve(path)
        except SandboxError as exc:
            raise ValueError(str(exc)) from None
        if not real.is_file():
            raise ValueError("no such file in the workspace")
        data = real.read_bytes()
        if len(data) > MAX_INCLUDE_BYTES:
            raise ValueError(f"larger than {MAX_INCLUDE_BYTES} bytes")
        if b"\x00" in data[:8192]:
            raise ValueError("a binary file")
        return data.decode("utf-8", "replace")

    return read


def image_reader(sandbox: Sandbox) -> Callable[[str], ImagePart | None]:
    """An ``image`` for :func:`expand_command_parts`: a workspace file whose bytes are an
    image, read through the sandbox like ``include``; ``ValueError`` for one DeepSeek would
    refuse (the prompt then says why it is not included)."""
    from reasonix.images import ImageError, load_image, looks_like_image

    def read(path: str) -> ImagePart | None:
        try:
            real = sandbox.resolve(path)
        except SandboxError as exc:
            raise ValueError(str(exc)) from None
        if not real.is_file():
            return None
        with real.open("rb") as f:
            if not looks_like_image(f.read(16)):
                return None
        try:
            return load_image(real.read_bytes(), name=real.name, what=f"@{path}")
        except ImageError as exc:
            raise ValueError(str(exc)) from None

    return read
