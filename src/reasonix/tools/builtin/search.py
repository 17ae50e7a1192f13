"""Search tools: ``ls``, ``glob`` and ``grep``, confined to the sandbox.

Walks skip ``.git``, FIFOs, sockets and devices, and whatever ``.gitignore`` files (and
``.git/info/exclude``) exclude, never follow symlinked folders, and skip symlinked files that
lead outside the workspace. ``grep``
also skips files the sandbox protects (``.env``, keys). It runs ``rg`` (ripgrep) when it is on
the machine and a pure-Python search otherwise; both give the same output format.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from reasonix.errors import SandboxError
from reasonix.safety.patterns import PathPattern, compile_patterns
from reasonix.safety.sandbox import Sandbox
from reasonix.tools.builtin.editing import decode_text
from reasonix.tools.builtin.files import async_tool_errors, builtin_tool, digest, tool_errors
from reasonix.tools.registry import Effect, Tool, ToolResult

LS_LIMIT = 500
GLOB_LIMIT = 200
GREP_MATCH_LIMIT = 100
GREP_LINE_CHARS = 300
GREP_TOTAL_CHARS = 20_000
GREP_FILE_BYTES = 10 * 1024 * 1024


# ---------------------------------------------------------------------------------------------
# Walking with .gitignore


@dataclass(frozen=True, slots=True)
class _IgnoreLevel:
    base: str  # the folder of the .gitignore, relative to the walk root ("" for the root)
    lead: str  # for .gitignore files above the walk root: the walk root relative to them
    patterns: tuple[PathPattern, ...]


@dataclass(frozen=True)
class IgnoreRules:
    """The ``.gitignore`` patterns in force while walking one folder. Later files and later
    lines win, as in git."""

    levels: tuple[_IgnoreLevel, ...] = ()

    def ignored(self, rel: str, *, is_dir: bool) -> bool:
        """Whether ``rel`` (relative to the walk root) is ignored."""
        verdict = False
        for level in self.levels:
            if level.base and not rel.startswith(level.base + "/"):
                continue
            sub = rel[len(level.base) + 1 :] if level.base else rel
            if level.lead:
                sub = f"{level.lead}/{sub}"
            for p in level.patterns:
                if p.match(sub, is_dir=is_dir):
                    verdict = not p.negated
        return verdict

    def with_file(self, ignore_file: Path, base: str = "", lead: str = "") -> IgnoreRules:
        """These rules plus the patterns in ``ignore_file``, if it exists."""
        try:
            lines = ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return self
        patterns = tuple(compile_patterns(lines))
        if not patterns:
            return self
        return IgnoreRules((*self.levels, _IgnoreLevel(base, lead, patterns)))


def _initial_rules(sandbox: Sandbox, base: Path) -> IgnoreRules:
    """Rules from the root's ``.git/info/exclude`` and every ``.gitignore`` from the root down to
    ``base`` (the walk root)."""
    root = sandbox.root_of(base) or base
    folders = [base, *(p for p in base.parents if p.is_relative_to(root))]
    rules = IgnoreRules()
    exclude = root / ".git" / "info" / "exclude"
    lead_of_root = base.relative_to(root).as_posix()
    rules = rules.with_file(exclude, lead="" if lead_of_root == "." else lead_of_root)
    for folder in reversed(folders):
        lead = base.relative_to(folder).as_posix()
        rules = rules.with_file(folder / ".gitignore", lead="" if lead == "." else lead)
    return rules


@dataclass(frozen=True, slots=True)
class Entry:
    """A file found by a walk: its resolved path and its path relative to the walk base."""

    real: Path
    rel: str


def walk_files(sandbox: Sandbox, base: Path, *, gitignore: bool = True) -> Iterator[Entry]:
    """Files under ``base`` in sorted order, honouring the sandbox and ``.gitignore``."""
    rules = _initial_rules(sandbox, base) if gitignore else IgnoreRules()
    stack: list[tuple[Path, str, IgnoreRules]] = [(base, "", rules)]
    while stack:
        folder, rel_folder, rules_here = stack.pop()
        if gitignore and rel_folder:  # the walk root's own .gitignore is in _initial_rules
            rules_here = rules_here.with_file(folder / ".gitignore", rel_folder)
        try:
            with os.scandir(folder) as it:
                children = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        subfolders: list[tuple[Path, str, IgnoreRules]] = []
        for child in children:
            rel = f"{rel_folder}/{child.name}" if rel_folder else child.name
            try:
                is_link = child.is_symlink()
                is_dir = child.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir and child.name == ".git":
                continue
            if gitignore and rules_here.ignored(rel, is_dir=is_dir):
                continue
            if is_dir:
                subfolders.append((Path(child.path), rel, rules_here))
                continue
            real = Path(child.path)
            if not is_link and not child.is_file(follow_symlinks=False):
                continue  # a FIFO, socket or device: reading it could block forever
            if is_link:
                try:
                    real = Path(os.path.realpath(child.path))
                    sandbox.check(real)
                except (OSError, SandboxError):
                    continue
                if not real.is_file():
                    continue
            yield Entry(real, rel)
        stack.extend(reversed(subfolders))


# ---------------------------------------------------------------------------------------------
# Tools


def displayable(text: str) -> str:
    """File names that are not valid UTF-8 (kept by Python as lone surrogates) shown with a
    replacement character, as grep shows them, instead of failing the whole listing."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


class SearchTools:
    """``ls``, ``glob`` and ``grep`` over one sandbox.

    ``use_rg``: True forces ripgrep, False forces the pure-Python search, None uses ``rg`` when
    it is on ``PATH``.
    """

    def __init__(self, sandbox: Sandbox, *, use_rg: bool | None = None) -> None:
        self.sandbox = sandbox
        self.rg = shutil.which("rg") if use_rg is not False else None
        if use_rg and self.rg is None:
            raise SandboxError("use_rg=True but ripgrep (rg) is not installed.")

    def ls(
        self,
        path: str = ".",
    ) -> ToolResult:
        """List a folder: subfolders end with '/', files show their size."""
        real = self.sandbox.resolve(path)
        shown = self.sandbox.display(real)
        if not real.exists():
            return ToolResult.error(f"No such folder: {shown}")
        if not real.is_dir():
            return ToolResult(f"{shown} is a file ({real.stat().st_size:,} bytes).")
        entries = sorted(os.scandir(real), key=lambda e: e.name)
        lines: list[str] = []
        for entry in entries[:LS_LIMIT]:
            try:
                if entry.is_symlink():
                    lines.append(f"{entry.name} -> {os.readlink(entry.path)}")
                elif entry.is_dir():
                    lines.append(f"{entry.name}/")
                else:
                    lines.append(f"{entry.name}  ({_size(entry.stat().st_size)})")
            except OSError:
                lines.append(entry.name)
        if len(entries) > LS_LIMIT:
            lines.append(f"[... {len(entries) - LS_LIMIT} more entries not shown]")
        body = displayable("\n".join(lines) if lines else f"{shown} is empty.")
        return ToolResult(body, effects=(Effect("read", f"ls:{shown}", digest(body.encode())),))

    def glob(
        self,
        pattern: Annotated[str, "e.g. **/*.py"],
        path: str = ".",
    ) -> ToolResult:
        """Find files by name pattern (respects .gitignore)."""
        if pattern.startswith(("/", "~")) or ".." in pattern.split("/"):
            return ToolResult.error(
                "The pattern must be relative to the search folder and contain no '..'; "
                "pass the folder as path instead."
            )
        base = self.sandbox.resolve(path)
        shown = self.sandbox.display(base)
        if not base.is_dir():
            return ToolResult.error(f"{shown} is not a folder.")
        matcher = PathPattern(pattern.removeprefix("./"), anchored=True)
        found: list[str] = []
        more = 0
        for entry in walk_files(self.sandbox, base):
            if matcher.match(entry.rel):
                if len(found) < GLOB_LIMIT:
                    found.append(entry.rel if shown == "." else f"{shown}/{entry.rel}")
                else:
                    more += 1
        if not found:
            body = f"No files match {pattern!r} under {shown}"
        else:
            body = "\n".join(found)
            if more:
                body += f"\n[... {more} more files match; narrow the pattern]"
        body = displayable(body)
        effect = Effect("read", f"glob:{pattern}@{shown}", digest(body.encode()))
        return ToolResult(body, effects=(effect,))

    async def grep(
        self,
        pattern: Annotated[str, "regular expression"],
        path: str = ".",
        glob: Annotated[str | None, "file glob, e.g. *.py"] = None,
        context: Annotated[int, "lines around matches"] = 0,
        ignore_case: bool = False,
        files_only: Annotated[bool, "file names only"] = False,
    ) -> ToolResult:
        """Regex search of file contents (respects .gitignore): path:line:text."""
        flags = re.IGNORECASE if ignore_case else 0
        try:
            regex = re.compile(pattern, flags)
        except re.error as exc:
            return ToolResult.error(f"Invalid regular expression {pattern!r}: {exc}.")
        base = self.sandbox.resolve(path)
        shown = self.sandbox.display(base)
        if not base.exists():
            return ToolResult.error(f"No such file or folder: {shown}")
        if not base.is_dir() and not base.is_file():
            return ToolResult.error(f"{shown} is not a regular file (a FIFO, socket or device).")
        context = max(0, min(context, 10))
        search = _GrepRun(self.sandbox, base, shown, context, files_only)
        file_filter = PathPattern(glob) if glob else None
        if self.rg:
            await search.run_rg(self.rg, pattern, ignore_case, glob)
        else:
            await asyncio.to_thread(search.run_python, regex, file_filter)
        body = search.render(pattern)
        effect = Effect("read", f"grep:{pattern}@{shown}", digest(body.encode()))
        return ToolResult(body, effects=(effect,))

    def tools(self) -> list[Tool]:
        """The three search tools as registry tools."""
        return [
            builtin_tool(
                tool_errors(self.ls),
                name="ls",
                **_READER,
                kind="read",
                aliases=("LS",),
                subjects=("path",),
            ),
            builtin_tool(
                tool_errors(self.glob),
                name="glob",
                **_READER,
                kind="search",
                aliases=("Glob",),
                subjects=("path", "pattern"),
            ),
            builtin_tool(
                async_tool_errors(self.grep),
                name="grep",
                **_READER,
                kind="search",
                aliases=("Grep",),
                subjects=("path", "pattern"),
            ),
        ]


_READER: dict[str, Any] = {"read_only": True, "category": "read"}


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024 / 1024:.1f} MB"


@dataclass
class _GrepRun:
    """Collects grep output from either engine, with the caps applied as it goes."""

    sandbox: Sandbox
    base: Path
    shown: str
    context: int
    files_only: bool
    lines: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    matches: int = 0
    chars: int = 0
    truncated: bool = False
    skipped_binary: int = 0

    def _label(self, rel: str) -> str:
        if self.base.is_file():
            return self.shown
        return rel if self.shown == "." else f"{self.shown}/{rel}"

    def full(self) -> bool:
        return self.truncated

    def _add(self, line: str) -> None:
        if self.chars + len(line) > GREP_TOTAL_CHARS:
            self.truncated = True
            return
        self.lines.append(line)
        self.chars += len(line) + 1

    def add_file(self, label: str, hits: list[tuple[int, str, bool]]) -> None:
        """``hits``: (line number, text, is_match) in order, context lines included."""
        if self.files_only:
            if len(self.files) >= GREP_MATCH_LIMIT:
                self.truncated = True
            else:
                self.files.append(label)
            return
        previous = 0
        for number, text, is_match in hits:
            if self.truncated:
                return
            if is_match and self.matches >= GREP_MATCH_LIMIT:
                self.truncated = True
                return
            if self.context and previous and number > previous + 1:
                self._add("--")
            if len(text) > GREP_LINE_CHARS:
                text = text[:GREP_LINE_CHARS] + " [...]"
            self._add(f"{label}{':' if is_match else '-'}{number}{':' if is_match else '-'}{text}")
            self.matches += is_match
            previous = number
        if self.context and not self.truncated:
            self._add("--")

    def run_python(self, regex: re.Pattern[str], file_filter: PathPattern | None) -> None:
        if self.base.is_file():
            candidates: Iterator[Entry] = iter([Entry(self.base, self.base.name)])
        else:
            candidates = walk_files(self.sandbox, self.base)
        for entry in candidates:
            if self.truncated:
                return
            if file_filter is not None and not file_filter.match(entry.rel):
                continue
            if self.sandbox.denied(entry.real) is not None:
                continue
            try:
                if entry.real.stat().st_size > GREP_FILE_BYTES:
                    continue
                data = entry.real.read_bytes()
            except OSError:
                continue
            decoded = decode_text(data)
            if decoded is None:
                self.skipped_binary += 1
                continue
            lines = decoded.text.split("\n")
            if decoded.text.endswith("\n"):
                lines.pop()
            hit_numbers = [i for i, line in enumerate(lines) if regex.search(line)]
            if not hit_numbers:
                continue
            wanted: dict[int, bool] = {}
            for i in hit_numbers:
                for j in range(max(0, i - self.context), min(len(lines), i + self.context + 1)):
                    wanted.setdefault(j, False)
                wanted[i] = True
            hits = [(i + 1, lines[i].removesuffix("\r"), wanted[i]) for i in sorted(wanted)]
            self.add_file(self._label(entry.rel), hits)

    async def run_rg(self, rg: str, pattern: str, ignore_case: bool, glob: str | None) -> None:
        args = [rg, "--json", "--hidden", "--no-require-git", "-g", "!.git"]
        if ignore_case:
            args.append("-i")
        if self.context:
            args += ["-C", str(self.context)]
        if glob:
            args += ["-g", glob]
        root = self.base if self.base.is_dir() else self.base.parent
        target = "." if self.base.is_dir() else self.base.name
        args += ["-e", pattern, "--", target]
        proc = await asyncio.create_subprocess_exec(
            *args,
            cwd=root,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        assert proc.stdout is not None
        current: str | None = None
        hits: list[tuple[int, str, bool]] = []
        allowed = True
        read_all = False
        try:
            async for raw in proc.stdout:
                if self.truncated:
                    break
                event = json.loads(raw)
                kind = event.get("type")
                data = event.get("data", {})
                if kind == "begin":
                    current = _rg_text(data.get("path", {})).removeprefix("./")
                    allowed = self._allowed(root / current)
                    hits = []
                elif kind in ("match", "context") and allowed:
                    text = _rg_text(data.get("lines", {})).rstrip("\n").removesuffix("\r")
                    hits.append((int(data.get("line_number") or 0), text, kind == "match"))
                elif kind == "end" and current is not None:
                    if allowed and hits:
                        self.add_file(self._label(current), hits)
                    current = None
            read_all = not self.truncated
        finally:
            if not read_all and proc.returncode is None:
                # Signalled by pid: Process.kill() first polls the child, which reaps it when it
                # has just exited, behind the back of asyncio's watcher (which then logs
                # "Unknown child process pid ..." on stderr). rg that wrote all its output is
                # left to exit on its own.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)
            await proc.wait()

    def _allowed(self, found: Path) -> bool:
        try:
            self.sandbox.check(Path(os.path.realpath(found)))
        except SandboxError:
            return False
        return True

    def render(self, pattern: str) -> str:
        if self.files_only:
            body = "\n".join(self.files)
        else:
            while self.lines and self.lines[-1] == "--":
                self.lines.pop()
            body = "\n".join(self.lines)
        if not body:
            return f"No matches for {pattern!r} under {self.shown}"
        if self.truncated:
            body += "\n[results capped; narrow the pattern, path or glob to see the rest]"
        return body


def _rg_text(field_value: dict[str, Any]) -> str:
    if "text" in field_value:
        return str(field_value["text"])
    import base64

    return base64.b64decode(field_value.get("bytes", "")).decode("utf-8", "replace")


def search_tools(sandbox: Sandbox, *, use_rg: bool | None = None) -> list[Tool]:
    """``ls``, ``glob`` and ``grep``; see :class:`SearchTools` for ``use_rg``."""
    return SearchTools(sandbox, use_rg=use_rg).tools()
