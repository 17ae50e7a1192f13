"""An editor over ACP sees a call through ``more_tools`` as the tool it runs: its kind, title
and location, and an approval of that tool is matched to the call."""

from __future__ import annotations

from pathlib import Path

from reasonix.acp.updates import UpdateMapper
from reasonix.events import ToolCallEvent
from reasonix.messages import ToolCall
from reasonix.tools.builtin import default_registry


def test_a_deferred_call_shows_as_the_tool_it_runs(tmp_path: Path) -> None:
    registry = default_registry(tmp_path).defer(["delete_file"])
    mapper = UpdateMapper(workspace=tmp_path, context_window=1_000, cost=dict, tools=registry.get)
    args = '{"name": "delete_file", "arguments": {"path": "old.txt"}}'
    (start,) = mapper.updates(ToolCallEvent("executor", ToolCall("c1", "more_tools", args)))
    assert start.kind == "delete"
    assert start.locations and start.locations[0].path == str(tmp_path / "old.txt")
    approval = mapper.call_for_approval("delete_file", {"path": "old.txt"}, "old.txt")
    assert approval.tool_call_id == "c1"
    # the listing itself is just that
    (listing,) = mapper.updates(ToolCallEvent("executor", ToolCall("c2", "more_tools", "{}")))
    assert listing.kind == "other"
