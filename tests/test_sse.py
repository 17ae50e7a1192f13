"""SSE decoding and chunk assembly, without any I/O."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reasonix.errors import (
    MalformedChunkError,
    StreamCutError,
    StreamError,
    TransientFinishError,
)
from reasonix.messages import (
    AssistantMessage,
    ReasoningDelta,
    StreamEvent,
    StreamFinished,
    TextDelta,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallComplete,
    ToolCallStarted,
    Usage,
    UsageReported,
)
from reasonix.providers.sse import SSEDecoder, SSEEvent, StreamAssembler, is_output_event

# ---------------------------------------------------------------------------------------------
# SSEDecoder


def decode_all(raw: bytes, piece: int | None = None) -> tuple[list[SSEEvent], SSEDecoder]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    step = piece or len(raw) or 1
    for i in range(0, len(raw), step):
        events.extend(decoder.feed(raw[i : i + step]))
    events.extend(decoder.close())
    return events, decoder


def test_decoder_basic_events_and_done() -> None:
    raw = b'data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n'
    events, _ = decode_all(raw)
    assert [e.data for e in events] == ['{"a":1}', '{"b":2}', "[DONE]"]


def test_decoder_skips_keepalive_comments_and_blank_lines() -> None:
    raw = b": keep-alive\n\n: keep-alive\n\n\n\ndata: x\n\n: keep-alive\n\ndata: y\n\n"
    events, decoder = decode_all(raw)
    assert [e.data for e in events] == ["x", "y"]
    assert decoder.comments == 3


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_decoder_line_endings(newline: bytes) -> None:
    raw = newline.join([b"data: one", b"", b"event: note", b"data: two", b"", b""])
    events, _ = decode_all(raw)
    assert events == [SSEEvent("one"), SSEEvent("two", event="note")]


def test_decoder_multiline_data_joined_with_newline() -> None:
    raw = b'data: {"a":\ndata: 1}\n\n'
    events, _ = decode_all(raw)
    assert events == [SSEEvent('{"a":\n1}')]
    assert json.loads(events[0].data) == {"a": 1}


def test_decoder_no_space_after_colon_and_id_field() -> None:
    events, _ = decode_all(b"id: 7\ndata:x\n\n")
    assert events == [SSEEvent("x", id="7")]


@pytest.mark.parametrize("piece", [1, 2, 3, 5])
def test_decoder_bytes_split_anywhere(piece: int) -> None:
    # CRLF split between "\r" and "\n", and a multi-byte UTF-8 character split in two.
    raw = "data: 你好 ✓\r\n\r\n: keep-alive\r\n\r\ndata: [DONE]\r\n\r\n".encode()
    events, _ = decode_all(raw, piece)
    assert [e.data for e in events] == ["你好 ✓", "[DONE]"]


def test_decoder_close_flushes_unterminated_event() -> None:
    events, _ = decode_all(b"data: last")
    assert events == [SSEEvent("last")]


def test_decoder_close_without_pending_is_empty() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\n") == [SSEEvent("a")]
    assert decoder.close() == []


# ---------------------------------------------------------------------------------------------
# StreamAssembler


def chunk(
    delta: dict[str, Any] | None = None,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    *,
    choices: bool = True,
) -> SSEEvent:
    body: dict[str, Any] = {"id": "x", "object": "chat.completion.chunk"}
    if choices:
        body["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    else:
        body["choices"] = []
    body["usage"] = usage
    return SSEEvent(json.dumps(body))


DONE = SSEEvent("[DONE]")
USAGE = {
    "prompt_tokens": 100,
    "completion_tokens": 20,
    "prompt_cache_hit_tokens": 64,
    "prompt_cache_miss_tokens": 36,
    "completion_tokens_details": {"reasoning_tokens": 5},
}


def run(events: list[SSEEvent]) -> list[StreamEvent]:
    assembler = StreamAssembler()
    out: list[StreamEvent] = []
    for event in events:
        out.extend(assembler.feed(event))
    out.extend(assembler.finish())
    return out


def test_assembles_text_with_usage_on_finish_chunk() -> None:
    out = run(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Hel"}),
            chunk({"content": "lo"}),
            chunk({"content": ""}, "stop", USAGE),
            DONE,
        ]
    )
    usage = Usage(100, 64, 36, 20, 5)
    assert out == [
        TextDelta("Hel"),
        TextDelta("lo"),
        UsageReported(usage),
        StreamFinished("stop", AssistantMessage("Hello"), usage),
    ]


def test_reasoning_then_text() -> None:
    out = run(
        [
            chunk({"reasoning_content": "think "}),
            chunk({"reasoning_content": "more"}),
            chunk({"content": "answer"}),
            chunk({}, "stop"),
            DONE,
        ]
    )
    assert out[:3] == [ReasoningDelta("think "), ReasoningDelta("more"), TextDelta("answer")]
    finished = out[-1]
    assert isinstance(finished, StreamFinished)
    assert finished.message == AssistantMessage("answer", "think more")
    assert finished.usage is None
    assert not any(isinstance(e, UsageReported) for e in out)


def test_empty_answer_has_empty_content_and_no_reasoning() -> None:
    out = run([chunk({"role": "assistant", "content": ""}), chunk({}, "stop"), DONE])
    assert out == [StreamFinished("stop", AssistantMessage("", None), None)]


def test_openai_style_separate_usage_chunk() -> None:
    out = run(
        [
            chunk({"content": "hi"}),
            chunk({}, "stop"),
            chunk(
                usage={
                    "prompt_tokens": 10,
                    "completion_tokens": 2,
                    "prompt_tokens_details": {"cached_tokens": 4},
                },
                choices=False,
            ),
            DONE,
        ]
    )
    usage = Usage(10, 4, 6, 2, 0)
    assert out[-2:] == [UsageReported(usage), StreamFinished("stop", AssistantMessage("hi"), usage)]


def tool_delta(
    index: int, *, id: str | None = None, name: str | None = None, args: str | None = None
) -> dict[str, Any]:
    fragment: dict[str, Any] = {"index": index}
    function: dict[str, Any] = {}
    if id is not None:
        fragment["id"] = id
        fragment["type"] = "function"
    if name is not None:
        function["name"] = name
    if args is not None:
        function["arguments"] = args
    fragment["function"] = function
    return {"tool_calls": [fragment]}


def test_parallel_tool_calls_assembled_by_index() -> None:
    out = run(
        [
            chunk({"content": ""}),
            chunk(tool_delta(0, id="call_a", name="read_file", args="")),
            chunk(tool_delta(0, args='{"path":')),
            chunk(tool_delta(1, id="call_b", name="ls", args='{"dir"')),
            chunk(tool_delta(0, args='"a.py"}')),
            chunk(tool_delta(1, args=':"."}')),
            chunk({}, "tool_calls", USAGE),
            DONE,
        ]
    )
    a = ToolCall("call_a", "read_file", '{"path":"a.py"}')
    b = ToolCall("call_b", "ls", '{"dir":"."}')
    assert out[:6] == [
        ToolCallStarted(0, "call_a", "read_file"),
        ToolCallArgumentsDelta(0, "call_a", '{"path":'),
        ToolCallStarted(1, "call_b", "ls"),
        ToolCallArgumentsDelta(1, "call_b", '{"dir"'),
        ToolCallArgumentsDelta(0, "call_a", '"a.py"}'),
        ToolCallArgumentsDelta(1, "call_b", ':"."}'),
    ]
    assert out[6:8] == [ToolCallComplete(a), ToolCallComplete(b)]
    finished = out[-1]
    assert isinstance(finished, StreamFinished)
    assert finished.finish_reason == "tool_calls"
    assert finished.message.tool_calls == (a, b)
    assert finished.message.content == ""


def test_new_id_on_reused_index_is_a_new_call() -> None:
    out = run(
        [
            chunk(tool_delta(0, id="c1", name="a", args="{}")),
            chunk(tool_delta(0, id="c2", name="b", args='{"x":1}')),
            chunk({}, "tool_calls"),
            DONE,
        ]
    )
    started = [e for e in out if isinstance(e, ToolCallStarted)]
    assert started == [ToolCallStarted(0, "c1", "a"), ToolCallStarted(1, "c2", "b")]
    finished = out[-1]
    assert isinstance(finished, StreamFinished)
    assert finished.message.tool_calls == (
        ToolCall("c1", "a", "{}"),
        ToolCall("c2", "b", '{"x":1}'),
    )


def test_repeated_id_continues_the_same_call() -> None:
    out = run(
        [
            chunk(tool_delta(0, id="c1", name="a", args='{"k"')),
            chunk(tool_delta(0, id="c1", args=":2}")),
            chunk({}, "tool_calls"),
            DONE,
        ]
    )
    finished = out[-1]
    assert isinstance(finished, StreamFinished)
    assert finished.message.tool_calls == (ToolCall("c1", "a", '{"k":2}'),)


def test_name_arriving_after_id_defers_started_and_buffers_arguments() -> None:
    out = run(
        [
            chunk(tool_delta(0, id="c1", args="{")),
            chunk(tool_delta(0, name="late", args="}")),
            chunk({}, "tool_calls"),
            DONE,
        ]
    )
    assert out[:3] == [
        ToolCallStarted(0, "c1", "late"),
        ToolCallArgumentsDelta(0, "c1", "{"),
        ToolCallArgumentsDelta(0, "c1", "}"),
    ]


def test_clean_eof_after_finish_reason_is_fine() -> None:
    out = run([chunk({"content": "ok"}), chunk({}, "length")])
    assert isinstance(out[-1], StreamFinished)
    assert out[-1].finish_reason == "length"


def test_cut_stream_raises_and_never_completes_partial_calls() -> None:
    assembler = StreamAssembler()
    seen: list[StreamEvent] = []
    for event in [chunk(tool_delta(0, id="c1", name="write", args='{"path": "a'))]:
        seen.extend(assembler.feed(event))
    with pytest.raises(StreamCutError, match="without"):
        seen.extend(assembler.finish())
    assert not any(isinstance(e, ToolCallComplete | StreamFinished) for e in seen)


def test_done_without_finish_reason_is_a_cut() -> None:
    assembler = StreamAssembler()
    assembler.feed(chunk({"content": "x"}))
    assembler.feed(DONE)
    with pytest.raises(StreamCutError):
        assembler.finish()


def test_malformed_chunk() -> None:
    with pytest.raises(MalformedChunkError, match="not JSON"):
        StreamAssembler().feed(SSEEvent('{"choices": [oops'))
    with pytest.raises(MalformedChunkError, match="not a JSON object"):
        StreamAssembler().feed(SSEEvent("[1, 2]"))
    with pytest.raises(MalformedChunkError, match="choices"):
        StreamAssembler().feed(SSEEvent('{"choices": 3}'))


def test_arguments_without_id_or_name_are_malformed() -> None:
    with pytest.raises(MalformedChunkError, match="before the call's id"):
        StreamAssembler().feed(chunk(tool_delta(0, args="{}")))


def test_insufficient_system_resource_is_transient() -> None:
    assembler = StreamAssembler()
    with pytest.raises(TransientFinishError):
        assembler.feed(chunk({}, "insufficient_system_resource", USAGE))
    assert TransientFinishError.retryable


def test_error_object_mid_stream() -> None:
    with pytest.raises(StreamError, match="overloaded"):
        StreamAssembler().feed(SSEEvent('{"error": {"message": "overloaded"}}'))


def test_usage_null_on_earlier_chunks_is_ignored() -> None:
    out = run([chunk({"content": "a"}, usage=None), chunk({}, "stop", USAGE), DONE])
    finished = out[-1]
    assert isinstance(finished, StreamFinished)
    assert finished.usage == Usage(100, 64, 36, 20, 5)


def test_server_without_indices_or_ids() -> None:
    out = run(
        [
            SSEEvent(
                json.dumps(
                    {
                        "choices": [
                            {
                                "delta": {
                                    "tool_calls": [{"function": {"name": "f", "arguments": "{"}}]
                                }
                            }
                        ]
                    }
                )
            ),
            SSEEvent(
                json.dumps(
                    {"choices": [{"delta": {"tool_calls": [{"function": {"arguments": "}"}}]}}]}
                )
            ),
            chunk({}, "tool_calls"),
        ]
    )
    finished = out[-1]
    assert isinstance(finished, StreamFinished)
    assert finished.message.tool_calls == (ToolCall("call_0", "f", "{}"),)


def test_is_output_event() -> None:
    assert is_output_event(TextDelta("x"))
    assert is_output_event(ReasoningDelta("x"))
    assert is_output_event(ToolCallStarted(0, "a", "b"))
    assert is_output_event(ToolCallArgumentsDelta(0, "a", "b"))
    assert not is_output_event(UsageReported(Usage()))


def test_feed_completion_for_servers_that_do_not_stream() -> None:
    assembler = StreamAssembler()
    completion = {
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "",
                    "reasoning_content": "check",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "a", "arguments": "{}"},
                        },
                        {
                            "id": "c2",
                            "type": "function",
                            "function": {"name": "b", "arguments": "[]"},
                        },
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": USAGE,
    }
    out = assembler.feed_completion(completion) + assembler.finish()
    finished = out[-1]
    assert isinstance(finished, StreamFinished)
    assert finished.message == AssistantMessage(
        "", "check", (ToolCall("c1", "a", "{}"), ToolCall("c2", "b", "[]"))
    )
    assert finished.usage == Usage(100, 64, 36, 20, 5)
    assert [e for e in out if isinstance(e, ToolCallStarted)] == [
        ToolCallStarted(0, "c1", "a"),
        ToolCallStarted(1, "c2", "b"),
    ]
    with pytest.raises(MalformedChunkError):
        StreamAssembler().feed_completion({"object": "chat.completion"})


def finished(events: list[StreamEvent]) -> StreamFinished:
    last = events[-1]
    assert isinstance(last, StreamFinished)
    return last


def assemble(*bodies: dict[str, Any]) -> list[StreamEvent]:
    assembler = StreamAssembler()
    out: list[StreamEvent] = []
    for body in bodies:
        out.extend(assembler.feed(SSEEvent(json.dumps(body))))
    out.extend(assembler.finish())
    return out


def tool_fragment(fragment: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"delta": {"tool_calls": [fragment]}, "finish_reason": finish}]}


def test_fragments_without_index_that_repeat_the_id_continue_the_call() -> None:
    out = assemble(
        tool_fragment({"id": "c1", "function": {"name": "f", "arguments": '{"a":'}}),
        tool_fragment({"id": "c1", "function": {"arguments": "1}"}}),
        tool_fragment({"id": "c2", "function": {"name": "g", "arguments": "{}"}}),
        tool_fragment({"id": "c2", "function": {"arguments": ""}}, "tool_calls"),
    )
    assert finished(out).message.tool_calls == (
        ToolCall("c1", "f", '{"a":1}'),
        ToolCall("c2", "g", "{}"),
    )


@pytest.mark.parametrize(
    "usage",
    [{"prompt_tokens": "many"}, {"prompt_tokens": [1]}, {"completion_tokens": {"n": 1}}],
)
def test_a_malformed_usage_object_is_a_malformed_chunk(usage: dict[str, Any]) -> None:
    with pytest.raises(MalformedChunkError, match="usage"):
        StreamAssembler().feed(SSEEvent(json.dumps({"choices": [], "usage": usage})))


def test_decoder_ignores_a_leading_byte_order_mark() -> None:
    raw = b'\xef\xbb\xbfdata: {"a":1}\n\ndata: [DONE]\n\n'
    for step in (1, len(raw)):
        decoder = SSEDecoder()
        events: list[SSEEvent] = []
        for i in range(0, len(raw), step):
            events.extend(decoder.feed(raw[i : i + step]))
        events.extend(decoder.close())
        assert [e.data for e in events] == ['{"a":1}', "[DONE]"]
