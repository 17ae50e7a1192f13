"""The recap of a resumed session's last turns."""

from __future__ import annotations

from reasonix.app.persistence import TurnMark
from reasonix.app.recap import recap
from reasonix.messages import AssistantMessage, SystemMessage, ToolMessage, UserMessage


def test_recap_pairs_each_request_with_its_last_answer() -> None:
    messages = [
        SystemMessage("sys"),
        UserMessage("first\n\nAttached by the user: a.py"),
        AssistantMessage("looking", tool_calls=()),
        AssistantMessage("Done:\n the first."),
        UserMessage("second"),
        AssistantMessage(""),
        ToolMessage("c1", "out"),
        UserMessage("third"),
    ]
    marks = [
        TurnMark(1, 1, 0, 0, "first"),
        TurnMark(2, 4, 0, 1, "second"),
        TurnMark(3, 7, 0, 2, "third"),
    ]
    assert recap(marks, messages, turns=3) == [
        ("first", "Done: the first."),
        ("second", ""),
        ("third", ""),
    ]
    assert recap(marks, messages, turns=1) == [("third", "")]
    # A turn compacted into a summary has no answer to show.
    compacted = [TurnMark(1, -1, 0, 0, "old"), marks[2]]
    assert recap(compacted, messages, turns=2) == [("old", ""), ("third", "")]
