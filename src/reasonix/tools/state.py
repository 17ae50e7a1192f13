"""Typed keys for the host objects in a tool context's ``state``.

The host hands tools the objects they work with (the todo list, the progress ledger, the
checkpoint manager, the plan a planner submitted) in one ``state`` mapping. A bare string key
says nothing of what is stored under it and invites a typo; a :class:`StateKey` names the entry
and its type once, where the type is defined, and reads it back typed::

    CHECKPOINTS = StateKey("checkpoints", CheckpointManager)
    CHECKPOINTS.set(agent.tool_state, manager)
    manager = CHECKPOINTS.get(ctx.state)        # CheckpointManager | None

The mapping stays a plain ``dict[str, Any]`` keyed by :attr:`StateKey.name`, so a user's own tool
may keep its own string keys beside ours. Tools must tolerate a missing entry: :meth:`get`
answers None for an entry that is absent or of another type.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any, Generic, TypeVar, cast

__all__ = ["StateKey"]

T = TypeVar("T")


class StateKey(Generic[T]):
    """The name of one host object in a tool context's ``state``, and its type.

    ``kind`` is checked on reading when it is a class; pass ``None`` for a type ``isinstance``
    cannot check (a callable signature) and give the type as ``StateKey[...]("name")``.
    """

    __slots__ = ("kind", "name")

    def __init__(self, name: str, kind: type[T] | None = None) -> None:
        self.name = name
        self.kind = kind

    def get(self, state: Mapping[str, Any]) -> T | None:
        """The entry, or None when it is missing or not a ``kind``."""
        value = state.get(self.name)
        if value is None or (self.kind is not None and not isinstance(value, self.kind)):
            return None
        return cast(T, value)

    def set(self, state: MutableMapping[str, Any], value: T) -> None:
        state[self.name] = value

    def pop(self, state: MutableMapping[str, Any]) -> T | None:
        """Remove the entry and return it (None when it was missing or not a ``kind``)."""
        value = self.get(state)
        state.pop(self.name, None)
        return value

    def present(self, state: Mapping[str, Any]) -> bool:
        """Whether ``state`` holds a ``kind`` under this key."""
        return self.get(state) is not None

    def __repr__(self) -> str:
        kind = self.kind.__name__ if self.kind is not None else "?"
        return f"StateKey({self.name!r}, {kind})"
