"""``@path`` mentions: the files (or folder listings) a user names in a message, attached to it.

``attach_mentions("why does @calc.py fail?", workspace)`` keeps the user's words as typed and
appends each mentioned file's text (a folder: its listing) after them, so what is attached rides
at the tail of the user turn and the cached prefix before it stays intact. A word is a mention
only when it names something that exists inside the workspace; anything else (an e-mail
address, a decorator, a path outside the workspace) is left as it was typed. A file the file
tools refuse to read (``.env``, keys; also through a symlink) is not attached, with a note.

Images (told from their bytes: JPEG, PNG, GIF, WebP) ride as image parts of the turn instead
(``images``): an ``@shot.png`` mention, and a pasted or dropped path to an image file (a
terminal pastes a dragged file as its path, quoted or with escaped spaces), wherever it is.
An image DeepSeek would refuse (too large, damaged) makes ``refused`` say why: the turn is not
sent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reasonix.messages import ImagePart

__all__ = ["Attached", "Prepared", "attach_mentions"]

#: a mention starts a word: ``@`` then a path, trailing punctuation not included
_MENTION = re.compile(r"(?<![\w@])@([^\s@]+)")
_TRAILING = ".,;:!?)]}'\""
#: a pasted path to an image: quoted, or a word (spaces escaped with a backslash)
_PASTED = re.compile(
    r"""'([^'\n]+\.(?:png|jpe?g|gif|webp))'|"([^"\n]+\.(?:png|jpe?g|gif|webp))"|"""
    r"""((?:[^\s'"@\\]|\\ )+\.(?:png|jpe?g|gif|webp))(?![\w.])""",
    re.IGNORECASE,
)
#: a task's text as the message, and the images it carries (what a command's ``prepare`` gives)
Prepared = tuple[str, tuple["ImagePart", ...]]
MAX_FILE_CHARS = 60_000
MAX_LISTING = 200


@dataclass(frozen=True, slots=True)
class Attached:
    """The message to send and what was attached to it (workspace-relative paths)."""

    text: str
    paths: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    images: tuple[ImagePart, ...] = ()
    #: why the turn must not be sent (an image DeepSeek would refuse), or None
    refused: str | None = None


def attach_mentions(text: str, workspace: Path) -> Attached:
    """``text`` with every ``@path`` that names a file or folder in ``workspace`` attached at
    its end; see the module docstring. ``notes`` say what was cut or could not be read."""
    root = workspace.resolve()
    blocks: list[str] = []
    paths: list[str] = []
    notes: list[str] = []
    images: list[ImagePart] = []
    seen: set[Path] = set()
    for match in _PASTED.finditer(text):
        if match.start() > 0 and text[match.start() - 1] == "@":
            continue  # an @mention: below
        raw = next(g for g in match.groups() if g).replace("\\ ", " ")
        if not raw.startswith(("/", "~", "./", "../")):
            continue  # a pasted path is absolute; a bare name in a sentence is only words
        target = (root / Path(raw).expanduser()).resolve()
        if target in seen or not target.is_file():
            continue
        seen.add(target)
        image, refused = _image(target, raw)
        if refused:
            return Attached(text, refused=refused)
        if image is not None:
            images.append(image)
            paths.append(raw)
    for match in _MENTION.finditer(text):
        raw = match.group(1).rstrip(_TRAILING)
        if not raw:
            continue
        target = (root / raw).resolve()
        if not target.is_relative_to(root) or not target.exists():
            continue
        rel = target.relative_to(root).as_posix() or "."
        if rel in paths or target in seen:
            continue
        if target.is_file() and _secret(rel):
            # what the file tools refuse to read (.env, keys), also through a link a
            # repository ships (CONTRIBUTING.md -> .env): not sent to the model this way either
            seen.add(target)
            notes.append(f"@{raw} is (a link to) a file that holds secrets; not attached")
            continue
        if target.is_file():
            image, refused = _image(target, rel)
            if refused:
                return Attached(text, refused=refused)
            if image is not None:
                seen.add(target)
                images.append(image)
                paths.append(rel)
                continue
        block, note = _folder(target, rel) if target.is_dir() else _file(target, rel)
        if note:
            notes.append(note)
        if block:
            paths.append(rel)
            blocks.append(block)
    if not blocks:
        return Attached(text, tuple(paths), tuple(notes), tuple(images))
    attached = "\n\n".join(blocks)
    return Attached(f"{text}\n\n{attached}", tuple(paths), tuple(notes), tuple(images))


def _secret(rel: str) -> bool:
    from reasonix.safety.sandbox import holds_secrets

    return holds_secrets(rel)


def _image(path: Path, shown: str) -> tuple[ImagePart | None, str | None]:
    """``path`` as an image part when its bytes are an image; (None, why) when DeepSeek would
    refuse it; (None, None) when it is no image at all."""
    from reasonix.images import ImageError, load_image, looks_like_image

    try:
        with path.open("rb") as f:
            if not looks_like_image(f.read(16)):
                return None, None
        data = path.read_bytes()
    except OSError:
        return None, None
    try:
        return load_image(data, name=path.name, what=shown), None
    except ImageError as exc:
        return None, f"{exc}; the message was not sent"


def _file(path: Path, rel: str) -> tuple[str, str]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        return "", f"@{rel} could not be read ({exc.strerror or exc})"
    if b"\0" in data[:8192]:
        return "", f"@{rel} is a binary file; not attached"
    content = data.decode("utf-8", errors="replace")
    note = ""
    if len(content) > MAX_FILE_CHARS:
        note = f"@{rel} is {len(content)} characters; the first {MAX_FILE_CHARS} are attached"
        content = content[:MAX_FILE_CHARS] + f"\n[... {len(content) - MAX_FILE_CHARS} more]"
    fence = "````" if "```" in content else "```"
    lines = content.count("\n") + (0 if content.endswith("\n") else 1)
    head = f"Attached by the user: {rel} ({lines} lines)"
    return f"{head}\n{fence}\n{content.rstrip(chr(10))}\n{fence}", note


def _folder(path: Path, rel: str) -> tuple[str, str]:
    try:
        entries = sorted(path.iterdir(), key=lambda p: (not p.is_dir(), p.name))
    except OSError as exc:
        return "", f"@{rel} could not be listed ({exc.strerror or exc})"
    shown = [e.name + ("/" if e.is_dir() else "") for e in entries if e.name != ".git"]
    more = len(shown) - MAX_LISTING
    listing = "\n".join(shown[:MAX_LISTING]) + (f"\n[... {more} more]" if more > 0 else "")
    return f"Attached by the user: folder {rel}/ ({len(shown)} entries)\n{listing}", ""
