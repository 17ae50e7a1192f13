"""The task file: one JSON object per line.

::

    {"id": "fix-1", "repo": "../calc", "task": "make the tests pass", "verify": "pytest -q"}

Required: ``id`` (letters, digits, ``.``, ``_``, ``-``; unique in the file), ``repo`` (a local
folder, relative to the task file, or a git URL) and ``task``. Optional: ``verify`` (a shell
command run in the task's copy after the agent; exit code 0 means solved), ``setup`` (a shell
command run there before the agent), and overrides of this task's configuration: ``model``
(executor model), ``planner_model``, ``effort``, ``planner`` (true/false), ``mode`` (permission
mode), ``max_steps``, ``network`` (true/false: the agent's commands and this task's ``setup``
and ``verify`` may reach the network; ``[sandbox] network`` otherwise), ``images`` (a list of
image files, relative to the task file, sent with the task as image parts; each is checked
from its bytes when the file is read). Blank lines and lines starting with ``#`` are skipped.

``setup`` and ``verify`` run in the same sandbox as the agent's own commands (they run what the
model wrote). ``"unconfined": ["setup"]`` (or ``["verify"]``, or ``true`` for both) runs that
task's named commands as plain commands on the host instead, with the same environment
allowlist; the batch says so when it starts and in the task's row and log.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reasonix.errors import ConfigError

__all__ = ["COMMANDS", "BatchTask", "load_tasks"]

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|git@)", re.IGNORECASE)
_STRING_KEYS = ("verify", "setup", "model", "planner_model", "effort", "mode")
_KNOWN = {
    "id",
    "repo",
    "task",
    "planner",
    "max_steps",
    "network",
    "unconfined",
    "images",
    *_STRING_KEYS,
}
#: the task's own commands, in the order they run
COMMANDS = ("setup", "verify")


@dataclass(frozen=True)
class BatchTask:
    """One line of the task file. ``repo`` is an absolute folder or a URL as given."""

    id: str
    repo: str
    task: str
    verify: str | None = None
    setup: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    #: which of :data:`COMMANDS` the task file asked to run unconfined
    unconfined: tuple[str, ...] = ()
    #: image files sent with the task (absolute paths)
    images: tuple[str, ...] = ()

    @property
    def is_url(self) -> bool:
        return bool(_URL.match(self.repo))

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "repo": self.repo,
            "task": self.task,
            "verify": self.verify,
            "setup": self.setup,
            "overrides": dict(self.overrides),
            "unconfined": list(self.unconfined),
            "images": list(self.images),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BatchTask:
        return cls(
            str(data["id"]),
            str(data["repo"]),
            str(data["task"]),
            data.get("verify"),
            data.get("setup"),
            dict(data.get("overrides") or {}),
            tuple(data.get("unconfined") or ()),
            tuple(data.get("images") or ()),
        )


def _overrides(entry: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A task's own settings as config override keys."""
    out: dict[str, Any] = {}
    mapping = {
        "model": "executor.model",
        "planner_model": "planner.model",
        "effort": "executor.effort",
        "mode": "permissions.mode",
    }
    for key, target in mapping.items():
        if key in entry:
            out[target] = entry[key]
    if "planner" in entry:
        if not isinstance(entry["planner"], bool):
            raise ConfigError(f"{where}: 'planner' must be true or false")
        out["planner.enabled"] = entry["planner"]
    if "max_steps" in entry:
        steps = entry["max_steps"]
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
            raise ConfigError(f"{where}: 'max_steps' must be a positive integer")
        out["executor.max_steps"] = steps
    if "network" in entry:
        if not isinstance(entry["network"], bool):
            raise ConfigError(f"{where}: 'network' must be true or false")
        out["sandbox.network"] = entry["network"]
    return out


def _unconfined(entry: Mapping[str, Any], where: str) -> tuple[str, ...]:
    """The commands the task file runs unconfined: ``true`` for both, or a list of names."""
    value = entry.get("unconfined", False)
    if value is False:
        return ()
    if value is True:
        return COMMANDS
    names = ", ".join(f'"{c}"' for c in COMMANDS)
    if not isinstance(value, list) or any(v not in COMMANDS for v in value):
        raise ConfigError(
            f"{where}: 'unconfined' takes true or a list of the commands to run outside the "
            f"sandbox ({names}), not {json.dumps(value)}"
        )
    return tuple(c for c in COMMANDS if c in value)


def _images(entry: Mapping[str, Any], base: Path, where: str) -> tuple[str, ...]:
    """The task's image files, each read and checked as DeepSeek would (format from the bytes,
    size): a bad one fails the task file, before any request."""
    value = entry.get("images", [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: 'images' must be a list of image file paths")
    from reasonix.images import ImageError, load_image

    found = []
    for name in value:
        file = (base / name).resolve()
        try:
            load_image(file.read_bytes(), name=file.name, what=f"image {name!r}")
        except OSError as exc:
            raise ConfigError(f"{where}: image {name!r}: {exc.strerror or exc}") from None
        except ImageError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        found.append(str(file))
    return tuple(found)


def load_tasks(path: Path) -> list[BatchTask]:
    """Every task of ``path``; a ConfigError names the line and what to fix."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read the task file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"the task file {path} is not UTF-8 text") from None
    tasks: list[BatchTask] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        where = f"{path}:{number}"
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            entry = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"{where}: not a JSON object ({exc})") from None
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: each line must be a JSON object with id, repo and task")
        missing = [k for k in ("id", "repo", "task") if not entry.get(k)]
        if missing:
            raise ConfigError(f"{where}: missing {', '.join(missing)}")
        unknown = sorted(set(entry) - _KNOWN)
        if unknown:
            raise ConfigError(
                f"{where}: unknown key(s) {', '.join(unknown)}; a task line takes "
                + ", ".join(sorted(_KNOWN))
            )
        for key in ("id", "repo", "task", *_STRING_KEYS):
            if key in entry and not isinstance(entry[key], str):
                raise ConfigError(f"{where}: '{key}' must be a string")
        task_id = entry["id"]
        if not _ID.match(task_id):
            raise ConfigError(
                f"{where}: id {task_id!r} must be letters, digits, '.', '_' or '-' "
                "(it names the task's output folder)"
            )
        if task_id in seen:
            raise ConfigError(f"{where}: id {task_id!r} is used already on line {seen[task_id]}")
        seen[task_id] = number
        repo = entry["repo"]
        if not _URL.match(repo):
            folder = (path.parent / repo).resolve()
            if not folder.is_dir():
                raise ConfigError(f"{where}: repo {repo!r} is not a folder ({folder})")
            repo = str(folder)
        tasks.append(
            BatchTask(
                task_id,
                repo,
                entry["task"],
                entry.get("verify"),
                entry.get("setup"),
                _overrides(entry, where),
                _unconfined(entry, where),
                _images(entry, path.parent, where),
            )
        )
    if not tasks:
        raise ConfigError(f"the task file {path} has no tasks")
    return tasks
