"""Compaction talks to its agent through the narrow CompactionHost protocol."""

from __future__ import annotations

from collections.abc import Sequence

from reasonix.agent.compaction import CompactionHost, compact_session
from reasonix.agent.session import Session
from reasonix.events import CollectingSink, UsageSource
from reasonix.messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    SystemMessage,
    Usage,
    UserMessage,
)
from reasonix.testing import Reply, ScriptedProvider


async def test_compaction_needs_only_the_narrow_host_protocol() -> None:
    """Compaction works on anything shaped like CompactionHost, not only on an Agent: the
    summary request is the host's own request over the kept prefix, and the host says what
    state the summary carries."""

    class Host:
        role = "executor"

        def __init__(self) -> None:
            self.session = Session(
                "s",
                [
                    SystemMessage("sys"),
                    *(
                        m
                        for i in range(6)
                        for m in (
                            UserMessage(f"question {i} " + "x" * 400),
                            AssistantMessage(content=f"answer {i} " + "y" * 400),
                        )
                    ),
                ],
            )
            self.provider = ScriptedProvider([Reply.text("short summary")])
            self.sink = CollectingSink()
            self.accounted: list[tuple[str, UsageSource | None]] = []

        def build_request(
            self, messages: Sequence[Message] | None = None, *, tool_choice: str | None = None
        ) -> ModelRequest:
            return ModelRequest(
                messages=tuple(messages or ()), model="m-host", tool_choice=tool_choice
            )

        def account_usage(
            self, model: str, usage: Usage | None, source: UsageSource | None = None
        ) -> float:
            self.accounted.append((model, source))
            return 0.0

        def carried_state(self) -> list[str]:
            return ["Current plan:\n1. the host's plan"]

    host = Host()
    checked: CompactionHost = host
    event = await compact_session(checked, keep_recent_turns=2)
    assert event.accepted, event.reason
    (sent,) = host.provider.requests
    assert sent.model == "m-host"
    assert sent.tool_choice == "none"
    assert host.accounted == [("m-host", UsageSource.COMPACTION)]
    summary = host.session.snapshot()[1]
    assert isinstance(summary, UserMessage)
    assert "short summary" in summary.content
    assert "1. the host's plan" in summary.content
