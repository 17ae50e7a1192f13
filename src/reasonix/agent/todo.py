"""The executor's task list: host state, kept outside the prompt."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias

from reasonix.tools.state import StateKey

TodoStatus: TypeAlias = Literal["pending", "in_progress", "completed"]
TodoOrigin: TypeAlias = Literal["planner", "executor", "user"]

_MARK = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}


@dataclass(frozen=True, slots=True)
class TodoItem:
    """One task. ``verify`` is the plan's verification command (evidence a step is done)."""

    content: str
    status: TodoStatus = "pending"
    level: int = 0
    origin: TodoOrigin = "executor"
    id: str = ""
    verify: str = ""
    acceptance: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "content": self.content,
            "status": self.status,
            "level": self.level,
            "origin": self.origin,
            "verify": self.verify,
            "acceptance": self.acceptance,
        }


class TodoState:
    """An ordered list of :class:`TodoItem`; every change notifies the listeners."""

    MAX_ITEMS = 40

    def __init__(self, items: Iterable[TodoItem] = ()) -> None:
        self._items: tuple[TodoItem, ...] = tuple(items)
        self._listeners: list[Callable[[tuple[TodoItem, ...]], None]] = []

    @property
    def items(self) -> tuple[TodoItem, ...]:
        return self._items

    def __len__(self) -> int:
        return len(self._items)

    def on_change(self, listener: Callable[[tuple[TodoItem, ...]], None]) -> None:
        self._listeners.append(listener)

    def replace(self, items: Iterable[TodoItem]) -> None:
        numbered = []
        for i, item in enumerate(list(items)[: self.MAX_ITEMS], start=1):
            numbered.append(item if item.id else replace(item, id=str(i)))
        self._items = tuple(numbered)
        for listener in self._listeners:
            listener(self._items)

    def find(self, key: str) -> TodoItem | None:
        """By id, or by a case-insensitive prefix of the content."""
        key_l = key.strip().lower()
        for item in self._items:
            if item.id == key.strip():
                return item
        for item in self._items:
            if item.content.lower().startswith(key_l) and key_l:
                return item
        return None

    def set_status(self, item_id: str, status: TodoStatus) -> None:
        self.replace(replace(i, status=status) if i.id == item_id else i for i in self._items)

    def current(self) -> TodoItem | None:
        for item in self._items:
            if item.status == "in_progress":
                return item
        return next((i for i in self._items if i.status == "pending"), None)

    def render(self) -> str:
        """Compact markdown checklist."""
        lines = []
        for item in self._items:
            indent = "  " * item.level
            lines.append(f"{indent}- {_MARK[item.status]} {item.id}. {item.content}")
        return "\n".join(lines)


#: The executor's todo list in its tools' context.
TODO_KEY = StateKey("todo", TodoState)
