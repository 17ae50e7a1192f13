"""File tools: ``read_file``, ``write_file``, ``edit_file``, ``multi_edit``, ``delete_file``.

Every path goes through the :class:`~reasonix.safety.sandbox.Sandbox` first. Writers save the
file's previous state in the turn's checkpoint (``CHECKPOINTS_KEY`` in ``ctx.state``, else the
manager given to :func:`file_tools`) before they change it, and write atomically (a temporary
file renamed over the target, keeping its permission bits).

It runs past 500 lines because the five tools share one path, bounds and checkpoint discipline
(sandbox check, size caps, snapshot before change, atomic write); kept together, a writer
cannot be added that skips one of the steps the others take.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import inspect
import os
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ParamSpec

from reasonix.errors import SandboxError
from reasonix.safety.checkpoints import CHECKPOINTS_KEY, CheckpointManager
from reasonix.safety.plants import approved_write
from reasonix.safety.sandbox import Sandbox
from reasonix.tools.builtin.editing import (
    EditError,
    TextFile,
    apply_edit,
    decode_text,
    describe_binary,
    unified_diff,
)
from reasonix.tools.limits import DEFAULT_LIMITS, write_in_parts_hint
from reasonix.tools.registry import Effect, Tool, ToolContext, ToolResult

#: read_file limits: lines per call, characters per line, characters per result.
READ_LINE_LIMIT = 2000
READ_LINE_CHARS = 2000
READ_TOTAL_CHARS = 30_000
#: Files larger than this are not read whole.
READ_MAX_BYTES = 20 * 1024 * 1024

P = ParamSpec("P")

# Read once, at import (setting the umask to read it is not thread-safe).
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def digest(data: bytes) -> str:
    """The short content digest used in effects."""
    return hashlib.sha256(data).hexdigest()[:16]


def _error_result(exc: Exception) -> ToolResult:
    if isinstance(exc, SandboxError | EditError):
        return ToolResult.error(str(exc))
    if isinstance(exc, FileNotFoundError):
        return ToolResult.error(f"No such file or folder: {exc.filename}")
    if isinstance(exc, IsADirectoryError):
        return ToolResult.error(f"{exc.filename} is a folder, not a file.")
    if isinstance(exc, NotADirectoryError):
        return ToolResult.error(f"A part of {exc.filename} is a file, not a folder.")
    if isinstance(exc, PermissionError):
        return ToolResult.error(f"The operating system refused access to {exc.filename}.")
    if isinstance(exc, OSError):
        return ToolResult.error(f"{exc.strerror or exc}: {exc.filename or ''}".strip(": "))
    raise exc


_EXPECTED = (SandboxError, EditError, OSError)


def tool_errors(func: Callable[P, ToolResult]) -> Callable[P, ToolResult]:
    """Turn the refusals a tool expects (sandbox, edit, OS errors) into error results with a
    plain message for the model."""

    @functools.wraps(func)
    def run(*args: P.args, **kwargs: P.kwargs) -> ToolResult:
        try:
            return func(*args, **kwargs)
        except _EXPECTED as exc:
            return _error_result(exc)

    return run


def async_tool_errors(
    func: Callable[P, Awaitable[ToolResult]],
) -> Callable[P, Awaitable[ToolResult]]:
    """:func:`tool_errors` for coroutine tools."""

    @functools.wraps(func)
    async def run(*args: P.args, **kwargs: P.kwargs) -> ToolResult:
        try:
            return await func(*args, **kwargs)
        except _EXPECTED as exc:
            return _error_result(exc)

    return run


def builtin_tool(func: Callable[..., Any], *, name: str, **flags: Any) -> Tool:
    """``Tool.from_function`` with the docstring folded onto one line (the schema is paid for
    on every request, wrapped lines included)."""
    description = " ".join((inspect.getdoc(func) or "").split())
    return Tool.from_function(func, name=name, description=description, **flags)


@dataclass
class EditSpec:
    """One replacement inside ``multi_edit``."""

    old_string: str
    new_string: str
    replace_all: bool = False


def write_atomic(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder renamed over ``path``, so a crash never
    leaves a half-written file; an existing file keeps its permission bits.

    The temporary file is created new (``O_EXCL``, unpredictable name): a symlink planted where
    a fixed temporary name would be cannot redirect the write outside the workspace."""
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    prefix = f".{path.name[:200]}."
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=".reasonix.tmp", dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            if mode is not None:
                os.fchmod(out.fileno(), mode)
            else:  # mkstemp makes it 0600; a new file gets the usual umask-based mode
                os.fchmod(out.fileno(), 0o666 & ~_UMASK)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def keep_final_newline(before: str, after: str) -> str:
    """Give ``after`` the same final-newline state as ``before`` (edits must not flip it)."""
    if not before or not after:
        return after
    if before.endswith("\n") and not after.endswith("\n"):
        return after + ("\r\n" if before.endswith("\r\n") else "\n")
    if not before.endswith("\n") and after.endswith("\n"):
        return after.removesuffix("\n").removesuffix("\r")
    return after


class FileTools:
    """The file tools bound to one sandbox; :meth:`tools` lists them."""

    def __init__(
        self,
        sandbox: Sandbox,
        checkpoints: CheckpointManager | None = None,
        *,
        max_write_bytes: int = DEFAULT_LIMITS.max_write_bytes,
        max_image_bytes: int = DEFAULT_LIMITS.max_image_bytes,
        image_detail: str = DEFAULT_LIMITS.image_detail,
    ) -> None:
        self.sandbox = sandbox
        self.checkpoints = checkpoints
        #: ``read_file`` on an image (``[limits] max_image_bytes``, ``image_detail``)
        self.max_image_bytes = max_image_bytes
        self.image_detail = None if image_detail == "auto" else image_detail
        #: what one call may write (``[limits] max_write_bytes``): whatever is written stays
        #: in the conversation and is resent on every later request
        self.max_write_bytes = max_write_bytes

    def _too_large(self, name: str, text: str) -> ToolResult | None:
        size = len(text.encode("utf-8", "surrogatepass"))
        if size <= self.max_write_bytes:
            return None
        return ToolResult.error(
            f"Not written: {name} was given {size:,} bytes of content, over the "
            f"{self.max_write_bytes:,}-byte limit for one call ([limits] max_write_bytes). "
            + write_in_parts_hint()
        )

    # -- helpers -------------------------------------------------------------------------------

    def _checkpoint(self, ctx: ToolContext, real: Path) -> None:
        manager = CHECKPOINTS_KEY.get(ctx.state) or self.checkpoints
        if manager is not None:
            manager.before_write(ctx, real)

    def _missing(self, real: Path, shown: str) -> ToolResult:
        hint = ""
        if real.parent.is_dir():
            names = [p.name for p in real.parent.iterdir()]
            close = difflib.get_close_matches(real.name, names, n=3, cutoff=0.6)
            if close:
                hint = " Similar names there: " + ", ".join(close) + "."
        return ToolResult.error(f"File not found: {shown}.{hint}")

    def _load_text(self, real: Path, shown: str) -> tuple[bytes, TextFile]:
        data = real.read_bytes()
        text = decode_text(data)
        if text is None:
            raise EditError(
                f"{shown} is a binary file ({describe_binary(data)}); it cannot be edited."
            )
        return data, text

    def _write(self, ctx: ToolContext, real: Path, data: bytes) -> None:
        self._checkpoint(ctx, real)
        self._recheck(real)
        real.parent.mkdir(parents=True, exist_ok=True)
        self._recheck(real)
        write_atomic(real, data)
        # An approved write of a protected file is the user's: a running job's guard keeps it.
        approved_write(real, data)

    def _recheck(self, real: Path) -> None:
        """Refuse when a folder on the checked path has since become a symlink (something ran
        between the sandbox check and now); see the sandbox's note on races."""
        if os.path.realpath(real) != str(real):
            raise SandboxError(
                f"{self.sandbox.display(real)} now resolves elsewhere (a folder on its path "
                "changed into a symlink while the tool ran); nothing was written."
            )

    def _image(self, real: Path, shown: str, size: int) -> ToolResult | None:
        """An image file (told from its first bytes) as an image part of the result, for a
        model that reads images; None for anything else. Over ``max_image_bytes`` or past
        DeepSeek's limits it is described in words, not attached."""
        from reasonix.images import ImageError, looks_like_image

        with real.open("rb") as f:
            head = f.read(16)
        if not looks_like_image(head):
            return None
        if size > self.max_image_bytes:
            return ToolResult(
                f"{shown}: image of {size:,} bytes, over the {self.max_image_bytes:,}-byte "
                "limit for showing one ([limits] max_image_bytes); not attached."
            )
        from reasonix.images import load_image

        data = real.read_bytes()
        effect = Effect("read", f"{shown}:image", digest(data))
        try:
            part = load_image(data, name=shown, detail=self.image_detail, what=shown)
        except ImageError as exc:
            return ToolResult(
                f"{shown}: binary file ({describe_binary(data)}, {size:,} bytes); not shown to "
                f"the model: {exc}",
                effects=(effect,),
            )
        return ToolResult(
            f"{shown}: {part.mime} image, {part.width}x{part.height} px, {size:,} bytes "
            "(attached below).",
            effects=(effect,),
            images=(part,),
        )

    def _not_regular(self, real: Path, shown: str) -> ToolResult | None:
        """An error for a FIFO, socket or device, whose reading would block or never end."""
        if real.exists() and not real.is_file():
            return ToolResult.error(f"{shown} is not a regular file (a FIFO, socket or device).")
        return None

    # -- tools ---------------------------------------------------------------------------------

    def read_file(
        self,
        ctx: ToolContext,
        path: str,
        offset: Annotated[int, "first line (1-based)"] = 1,
        limit: Annotated[int, "max lines"] = READ_LINE_LIMIT,
    ) -> ToolResult:
        """Read a text file as numbered lines."""
        real = self.sandbox.resolve(path)
        shown = self.sandbox.display(real)
        if real.is_dir():
            return ToolResult.error(f"{shown} is a folder; use ls to list it.")
        if not real.exists():
            return self._missing(real, shown)
        if (special := self._not_regular(real, shown)) is not None:
            return special
        size = real.stat().st_size
        if (image := self._image(real, shown, size)) is not None:
            return image
        if size > READ_MAX_BYTES:
            return self._read_large(real, shown, size, offset, limit)
        data = real.read_bytes()
        # The window is part of what was read: reading the next part of a long file is new
        # progress, reading the same part of an unchanged file again is not.
        effect = Effect("read", f"{shown}:{offset}+{limit}", digest(data))
        text = decode_text(data)
        if text is None:
            return ToolResult(
                f"{shown}: binary file ({describe_binary(data)}, {len(data):,} bytes, "
                f"sha256 {hashlib.sha256(data).hexdigest()[:16]}); contents not shown.",
                effects=(effect,),
            )
        if not text.text:
            return ToolResult(f"{shown}: empty file.", effects=(effect,))
        lines = text.text.split("\n")
        if text.text.endswith("\n"):
            lines.pop()
        total = len(lines)
        start = max(offset, 1)
        if start > total:
            return ToolResult.error(f"{shown} has {total} lines; offset {offset} is past the end.")
        limit = max(1, min(limit, READ_LINE_LIMIT))
        out: list[str] = []
        used = 0
        last = start - 1
        long_lines = 0
        for number in range(start, min(total, start + limit - 1) + 1):
            line = lines[number - 1].removesuffix("\r")
            if len(line) > READ_LINE_CHARS:
                line = line[:READ_LINE_CHARS] + f" [... {len(line) - READ_LINE_CHARS} chars cut]"
                long_lines += 1
            entry = f"{number}\t{line}"
            if out and used + len(entry) + 1 > READ_TOTAL_CHARS:
                break
            out.append(entry)
            used += len(entry) + 1
            last = number
        notes: list[str] = []
        if last < total:
            notes.append(
                f"[showing lines {start}-{last} of {total}; call read_file with offset={last + 1} "
                "to continue]"
            )
        if long_lines:
            notes.append(f"[{long_lines} long line(s) were cut at {READ_LINE_CHARS} characters]")
        if text.encoding != "utf-8" or text.bom:
            notes.append(f"[file encoding: {text.encoding}{' with BOM' if text.bom else ''}]")
        body = "\n".join(out + notes)
        return ToolResult(body, effects=(effect,))

    def _read_large(self, real: Path, shown: str, size: int, offset: int, limit: int) -> ToolResult:
        """A window of a file too large to load whole, read line by line: the lines before
        ``offset`` are skipped, never kept, and a very long line is cut as it is read."""
        start = max(offset, 1)
        limit = max(1, min(limit, READ_LINE_LIMIT))
        out: list[str] = []
        used = number = 0
        more = False
        seen = hashlib.sha256()
        with real.open("rb") as f:
            if b"\0" in f.read(8192):
                return ToolResult(f"{shown}: binary file ({size:,} bytes); contents not shown.")
            f.seek(0)
            while raw := f.readline(READ_LINE_CHARS * 4):
                cut = not raw.endswith(b"\n")
                while cut and (rest := f.readline(1 << 16)):
                    if rest.endswith(b"\n"):
                        break
                number += 1
                if number < start:
                    continue
                if len(out) >= limit:
                    more = True
                    break
                seen.update(raw)
                line = raw.decode("utf-8", "replace").rstrip("\n").removesuffix("\r")
                if len(line) > READ_LINE_CHARS or cut:
                    line = line[:READ_LINE_CHARS] + " [... line cut]"
                entry = f"{number}\t{line}"
                if out and used + len(entry) + 1 > READ_TOTAL_CHARS:
                    more = True
                    break
                out.append(entry)
                used += len(entry) + 1
        if not out:
            return ToolResult.error(f"{shown} has {number} lines; offset {offset} is past the end.")
        last = start + len(out) - 1
        tail = (
            f"call read_file with offset={last + 1} to continue" if more else "the end of the file"
        )
        note = f"[{shown} is {size:,} bytes, read in part: lines {start}-{last}; {tail}]"
        effect = Effect("read", f"{shown}:{offset}+{limit}", seen.hexdigest()[:16])
        return ToolResult("\n".join([*out, note]), effects=(effect,))

    def write_file(
        self,
        ctx: ToolContext,
        path: str,
        content: str,
    ) -> ToolResult:
        """Create or overwrite a file (and its folders). To change a file, prefer edit_file."""
        return self._write_file(ctx, path, content)

    def _write_file(
        self, ctx: ToolContext, path: str, content: str, *, dry_run: bool = False
    ) -> ToolResult:
        """``write_file``; with ``dry_run``, what it would do (a diff, or the new file's head
        and size) without writing."""
        if (refusal := self._too_large("write_file", content)) is not None:
            return refusal
        real = self.sandbox.resolve(path, write=True)
        shown = self.sandbox.display(real)
        if real.is_dir():
            return ToolResult.error(f"{shown} is a folder; give a file path.")
        if (special := self._not_regular(real, shown)) is not None:
            return special
        before: bytes | None = real.read_bytes() if real.exists() else None
        style = decode_text(before) if before is not None else None
        if style is not None:
            # Keep the existing file's encoding and line endings.
            data = style.encode(content.replace("\r\n", "\n"))
        else:
            data = content.encode("utf-8")
        effect = Effect("write", shown, digest(data))
        if before == data:
            return ToolResult(f"{shown} already has this content; nothing changed.")
        lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
        if dry_run:
            return _write_preview(shown, content, lines, len(data), before, style)
        self._write(ctx, real, data)
        if before is None:
            return ToolResult(
                f"Created {shown} ({lines} lines, {len(data):,} bytes).", effects=(effect,)
            )
        if style is None:
            return ToolResult(
                f"Overwrote {shown} (was binary; now {lines} lines, {len(data):,} bytes).",
                effects=(effect,),
            )
        diff = unified_diff(style.text, content.replace("\r\n", "\n"), shown, max_lines=40)
        added = sum(1 for d in diff.splitlines() if d.startswith("+") and not d.startswith("+++"))
        removed = sum(1 for d in diff.splitlines() if d.startswith("-") and not d.startswith("---"))
        return ToolResult(
            f"Updated {shown} (+{added} -{removed} lines).\n{diff}".rstrip(), effects=(effect,)
        )

    def _edit(
        self, ctx: ToolContext, path: str, edits: list[EditSpec], *, dry_run: bool = False
    ) -> ToolResult:
        """Apply ``edits``; with ``dry_run``, check them and return the diff they would make
        (or the error they would fail with) without writing."""
        name = "edit_file" if len(edits) == 1 else "multi_edit"
        if (refusal := self._too_large(name, "".join(e.new_string for e in edits))) is not None:
            return refusal
        real = self.sandbox.resolve(path, write=True)
        shown = self.sandbox.display(real)
        if real.is_dir():
            return ToolResult.error(f"{shown} is a folder; give a file path.")
        if not real.exists():
            if len(edits) == 1 and edits[0].old_string == "":
                return self._write_file(ctx, path, edits[0].new_string, dry_run=dry_run)
            return self._missing(real, shown)
        if (special := self._not_regular(real, shown)) is not None:
            return special
        before, text = self._load_text(real, shown)
        current = text.text
        notes: list[str] = []
        for index, edit in enumerate(edits, 1):
            try:
                outcome = apply_edit(
                    current, edit.old_string, edit.new_string, replace_all=edit.replace_all
                )
            except EditError as exc:
                if len(edits) == 1:
                    raise
                raise EditError(
                    f"Edit {index} of {len(edits)} failed, so none were applied: {exc}"
                ) from exc
            current = outcome.text
            count = f"{outcome.count} replacements" if outcome.count > 1 else "1 replacement"
            tolerant = outcome.how == "whitespace-tolerant"
            note = f"{count} at line {outcome.first_line}"
            notes.append(note + (" (whitespace-tolerant match)" if tolerant else ""))
        current = keep_final_newline(text.text, current)
        data = text.encode(current)
        if data == before:
            return ToolResult.error(f"The edit leaves {shown} unchanged.")
        if dry_run:
            return ToolResult(unified_diff(text.text, current, shown, max_lines=80))
        self._write(ctx, real, data)
        summary = "; ".join(notes) if len(notes) <= 3 else f"{len(notes)} edits"
        diff = unified_diff(text.text, current, shown)
        return ToolResult(
            f"Edited {shown}: {summary}.\n{diff}".rstrip(),
            effects=(Effect("write", shown, digest(data)),),
        )

    def edit_file(
        self,
        ctx: ToolContext,
        path: str,
        old_string: Annotated[str, "exact text, unique in the file"],
        new_string: str,
        replace_all: bool = False,
    ) -> ToolResult:
        """Replace old_string (one place; add nearby lines to make it unique) with
        new_string. Indentation/trailing-space differences are tolerated."""
        return self._edit(ctx, path, [EditSpec(old_string, new_string, replace_all)])

    def multi_edit(
        self,
        ctx: ToolContext,
        path: str,
        edits: Annotated[list[EditSpec], "applied in order"],
    ) -> ToolResult:
        """Several edit_file edits to one file, all or none."""
        if not edits:
            return ToolResult.error("edits is empty; give at least one replacement.")
        return self._edit(ctx, path, list(edits))

    def delete_file(
        self,
        ctx: ToolContext,
        path: str,
    ) -> ToolResult:
        """Delete a file (recorded in the checkpoint, so a rewind restores it)."""
        real = self.sandbox.resolve(path, write=True)
        shown = self.sandbox.display(real)
        if real.is_dir():
            return ToolResult.error(f"{shown} is a folder; delete_file removes files only.")
        if not real.exists():
            return self._missing(real, shown)
        self._checkpoint(ctx, real)
        self._recheck(real)
        real.unlink()
        return ToolResult(f"Deleted {shown}.", effects=(Effect("write", shown, "deleted"),))

    # -- previews: what an edit will do, for the one approving it ----------------------------------

    def _preview_write(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        return self._write_file(ctx, str(args["path"]), str(args["content"]), dry_run=True)

    def _preview_edit(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        spec = EditSpec(
            str(args["old_string"]), str(args["new_string"]), bool(args.get("replace_all"))
        )
        return self._edit(ctx, str(args["path"]), [spec], dry_run=True)

    def _preview_multi(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        raw = args.get("edits") or []
        if not raw:
            return ToolResult.error("edits is empty; give at least one replacement.")
        specs = [
            EditSpec(str(e["old_string"]), str(e["new_string"]), bool(e.get("replace_all")))
            for e in raw
        ]
        return self._edit(ctx, str(args["path"]), specs, dry_run=True)

    def tools(self) -> list[Tool]:
        """The five file tools as registry tools."""

        def previewed(tool: Tool, preview: Callable[..., ToolResult]) -> Tool:
            return dataclasses.replace(tool, preview=tool_errors(preview))

        return [
            builtin_tool(
                tool_errors(self.read_file),
                name="read_file",
                read_only=True,
                category="read",
                kind="read",
                aliases=("Read",),
                subjects=("path",),
            ),
            previewed(
                builtin_tool(
                    tool_errors(self.write_file), name="write_file", **_WRITER, aliases=("Write",)
                ),
                self._preview_write,
            ),
            previewed(
                builtin_tool(
                    tool_errors(self.edit_file), name="edit_file", **_WRITER, aliases=("Edit",)
                ),
                self._preview_edit,
            ),
            previewed(
                builtin_tool(
                    tool_errors(self.multi_edit),
                    name="multi_edit",
                    **_WRITER,
                    # Claude Code's Edit permission covers its MultiEdit too
                    aliases=("MultiEdit", "Edit"),
                ),
                self._preview_multi,
            ),
            builtin_tool(
                tool_errors(self.delete_file),
                name="delete_file",
                category="edit",
                destructive=True,
                kind="delete",
                subjects=("path",),
                writes=True,
            ),
        ]


#: what the three editing tools are
_WRITER: dict[str, Any] = {
    "category": "edit",
    "kind": "edit",
    "subjects": ("path",),
    "writes": True,
}

#: lines of a new file's head shown before it is written
PREVIEW_HEAD_LINES = 20


def _write_preview(
    shown: str,
    content: str,
    lines: int,
    size: int,
    before: bytes | None,
    style: TextFile | None,
) -> ToolResult:
    """What ``write_file`` would do: the diff against a text file it replaces, otherwise the
    new content's head and size."""
    if before is not None and style is not None:
        diff = unified_diff(style.text, content.replace("\r\n", "\n"), shown, max_lines=80)
        return ToolResult(f"Overwrites {shown} ({lines} lines, {size:,} bytes):\n{diff}")
    what = "Creates" if before is None else "Overwrites a binary file with"
    head = content.split("\n")[:PREVIEW_HEAD_LINES]
    more = lines - len(head)
    body = "\n".join(head) + (f"\n[... {more} more lines]" if more > 0 else "")
    return ToolResult(f"{what} {shown} ({lines} lines, {size:,} bytes):\n{body}")


def file_tools(
    sandbox: Sandbox,
    checkpoints: CheckpointManager | None = None,
    *,
    max_write_bytes: int = DEFAULT_LIMITS.max_write_bytes,
) -> list[Tool]:
    """``read_file``, ``write_file``, ``edit_file``, ``multi_edit`` and ``delete_file``."""
    return FileTools(sandbox, checkpoints, max_write_bytes=max_write_bytes).tools()
