"""The ``Agent``: one model, one session, the model <-> tool loop.

``await agent.run(text)`` appends the user message and loops — request, stream, execute tool
calls, append results — until the model answers without tool calls, the step limit is reached,
a step hook asks to pause, or the run is cancelled. Both the executor and the planner are Agents.

Whatever happens, the session stays valid for the next request: nothing half-streamed is
stored, every assistant tool call gets a tool result (an explicit "interrupted" one if needed),
and a turn never ends on a dangling user message.

It runs past 500 lines because the loop and the repairs that keep its session valid are one
contract: each way a step can end (a cut stream and its retraction, an output-length cut, a
content filter, a cancelled tool call, a compaction) must leave the session in a state the next
request accepts, and keeping them beside the loop is what lets a reader check that. The parts
that stand alone are elsewhere: compaction in :mod:`~reasonix.agent.compaction`, the progress
ledger in :mod:`~reasonix.agent.progress`, the todo list in :mod:`~reasonix.agent.todo`, prefix
shapes in :mod:`~reasonix.agent.prefix`.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from reasonix.agent.compaction import (
    ECONOMIC_KEEP_MESSAGES,
    PLAN_STATE_KEY,
    compact_session,
    economic_inputs,
    economic_keep_turns,
)
from reasonix.agent.economics import CompactionAccount, EconomicInputs, economic_verdict
from reasonix.agent.prefix import PrefixShape, PrefixTracker
from reasonix.agent.progress import LEDGER_KEY, ProgressLedger
from reasonix.agent.prompts import EXECUTOR_SYSTEM_PROMPT
from reasonix.agent.session import Session
from reasonix.agent.todo import TODO_KEY, TodoItem, TodoState
from reasonix.errors import ProviderError, StreamCutError, UnknownModelError
from reasonix.events import (
    CacheMissExplained,
    CompactionEvent,
    ErrorEvent,
    NoticeEvent,
    NullSink,
    OutputRetracted,
    ReasoningDeltaEvent,
    RetryEvent,
    Sink,
    TextDeltaEvent,
    TodoChanged,
    ToolCallEvent,
    ToolResultEvent,
    TurnEnded,
    TurnStarted,
    UsageEvent,
    UsageSource,
)
from reasonix.messages import (
    AssistantMessage,
    ImagePart,
    Message,
    ModelRequest,
    ReasoningDelta,
    ReasoningEffort,
    StreamFinished,
    StreamRetry,
    SystemMessage,
    TextDelta,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    canonical_json,
)
from reasonix.providers.base import Provider
from reasonix.providers.models import Prices, price_usage
from reasonix.redaction import redact
from reasonix.tools.ask import ASK_TOOL_NAME, free_answer
from reasonix.tools.limits import StepBudget, bound_response, check_request_size
from reasonix.tools.registry import Charge, ToolContext, ToolRegistry, ToolResult, cap_output

#: the executor's system prompt (see :mod:`reasonix.agent.prompts`)
DEFAULT_SYSTEM_PROMPT = EXECUTOR_SYSTEM_PROMPT

INTERRUPTED_CALL = "interrupted: the run was cancelled before this tool call finished."
INTERRUPTED_TURN = "[interrupted before the assistant answered]"
#: ends a partial answer kept after an interruption, so the model knows it was cut
INTERRUPTED_MARK = "[interrupted by the user]"


#: ``needs_input``: a tool call waits for the user's answer and no one could be asked (``ask``
#: in a headless run); the call stays open and the next user input answers it.
StopReason = Literal[
    "done", "step_limit", "cancelled", "error", "paused", "length", "content_filter", "needs_input"
]

CONTENT_FILTERED = (
    "The answer was stopped by the provider's content filter (finish_reason content_filter); "
    "nothing more of it will come. Rephrase the request or leave out the content that "
    "triggered the filter."
)
LENGTH_CUT_TEXT = (
    "The answer was cut at the output limit (finish_reason length); it is kept as it is. "
    "Raise max_tokens for the role (e.g. [executor] max_tokens) or ask for a shorter answer."
)
LENGTH_CUT_CALLS = (
    "[host] Your previous output was cut at the output limit (finish_reason length) while you "
    "were writing tool calls ({names}), so none of them was run: their arguments are "
    "incomplete. Work in smaller pieces: write a large file in several smaller edits or "
    "appends, one tool call at a time, and keep each call's arguments short."
)


class AgentHooks(Protocol):
    """What the host runs around an agent's work (reasonix's hooks): after each tool call that
    ran (it may add to the result) and before a compaction (``manual`` or ``auto``)."""

    async def after_tool(
        self, call: ToolCall, result: ToolResult, ctx: ToolContext
    ) -> ToolResult: ...

    async def before_compact(self, trigger: str) -> None: ...


#: What an image model is asked for an image a text-only planner cannot see.
DESCRIBE_IMAGE_INSTRUCTION = (
    "Describe the attached image in at most three sentences for a colleague who cannot see "
    "it: what it shows, and any text, error message or numbers in it that matter for the task."
)


@dataclass
class AgentOptions:
    """How an agent talks to its model. ``prices`` default to the provider's model prices."""

    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    model: str | None = None
    thinking: bool | None = None
    reasoning_effort: ReasoningEffort | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    max_steps: int = 50
    usage_source: UsageSource = UsageSource.EXECUTOR
    prices: Prices | None = None
    #: the same model's CNY price list, when known (``[ui] currency = "CNY"``)
    prices_cny: Prices | None = None
    #: USD and CNY prices of another model, for answers the server says another model gave
    #: (None when it has no known prices); by default the built-in presets
    prices_for: Callable[[str], tuple[Prices, Prices | None] | None] | None = None
    max_tool_output_chars: int = 32_000
    user_id: str | None = None
    workspace: Path = field(default_factory=Path.cwd)
    role: str = "executor"
    #: a cache hit this many tokens below the previous prompt (with no planned rewrite) is
    #: reported as a cache-miss event; covers the server's unit rounding.
    cache_miss_tolerance: int = 256
    #: the same call (tool + arguments) this many times within the last 2x calls is refused.
    repeat_limit: int = 3
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    #: compact when the last prompt reached this share of the context window (None: never)
    compaction_threshold: float | None = 0.8
    compaction_keep_turns: int = 4
    #: "window": compact at the threshold only; "economic": also as soon as it pays
    #: (:mod:`reasonix.agent.economics`)
    compaction_policy: Literal["window", "economic"] = "window"
    #: override the provider's context window (tests, small local models)
    context_window: int | None = None
    #: the host's hooks around tool calls and compaction (None: none)
    hooks: AgentHooks | None = None
    #: configured models that read images, named when this agent's model cannot
    image_models: tuple[str, ...] = ("deepseek-flash",)


@dataclass(frozen=True, slots=True)
class StepInfo:
    """Passed to the step hook after each model step (and its tool calls)."""

    step: int
    assistant: AssistantMessage
    results: tuple[ToolMessage, ...]
    progress_signature: str
    made_progress: bool
    #: the results (of ``results``) whose call the permission policy refused
    refusals: tuple[ToolMessage, ...] = ()


StepDecision = Literal["continue", "pause"]
StepHook = Callable[[StepInfo], "StepDecision | Awaitable[StepDecision]"]


@dataclass(frozen=True, slots=True)
class AgentResult:
    text: str
    stop_reason: StopReason
    steps: int
    usage: Usage
    cost: float
    error: str | None = None


class Agent:
    """``Agent(provider, tools, session, options, sink, state=...)``. ``state`` holds the host
    objects its tools reach through ``ToolContext.state`` (checkpoints, the question asker,
    the goal tracker: :class:`~reasonix.tools.state.StateKey` names), given at construction;
    the agent adds its own todo list and progress ledger."""

    def __init__(
        self,
        provider: Provider,
        tools: ToolRegistry | None = None,
        session: Session | None = None,
        options: AgentOptions | None = None,
        sink: Sink | None = None,
        *,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        self.provider = provider
        self.tools = tools if tools is not None else ToolRegistry()
        self.options = options or AgentOptions()
        self.session = session if session is not None else Session(self.options.role)
        self.sink: Sink = sink or NullSink()
        self.todo_state = TodoState()
        self.todo_state.on_change(self._todo_changed)
        self.ledger = ProgressLedger()
        self.turn = 0
        self.usage_total = Usage()
        self.cost_total = 0.0
        self.requests = 0
        self._substitutions: set[tuple[str, str]] = set()
        #: host objects tools may use through ``ToolContext.state``
        self.tool_state: dict[str, Any] = dict(state or {})
        TODO_KEY.set(self.tool_state, self.todo_state)
        LEDGER_KEY.set(self.tool_state, self.ledger)
        self.prefix_shapes: list[PrefixShape] = []
        self._tracker = PrefixTracker()
        self._last_prompt_tokens: int | None = None
        self._compact_at = 0  # no automatic compaction below this prompt size (after a refusal)
        self._steps_since_compact = 0
        self._summary_tokens: int | None = None
        #: what this session's compactions saved (USD), from the requests made since
        prices = self.options.prices or provider.info.prices
        self.compaction_account = CompactionAccount(hit=prices.hit, miss=prices.miss)
        self._recent_calls: list[str] = []
        self._tail_notes: list[str] = []
        #: sha256 → Files API id of the images this agent uploaded (see :meth:`upload_images`)
        self._uploaded: dict[str, str] = {}
        #: what the calls left open in the last step wait for (see ``needs_input``)
        self._waiting: list[str] = []
        # What the current request has streamed so far (kept if the user interrupts it).
        self._partial_text: list[str] = []
        self._partial_reasoning: list[str] = []

    # -- host state -----------------------------------------------------------------------------

    @property
    def role(self) -> str:
        return self.options.role

    def seed_todo_state(self, items: list[TodoItem] | tuple[TodoItem, ...]) -> None:
        """Replace the todo list (the orchestrator does this with a plan). A new plan is a new
        approach: repeat detection starts afresh."""
        self.todo_state.replace(items)
        self._recent_calls.clear()
        self.ledger.recent.clear()

    def host_progress_signature(self) -> str:
        """Digest of host-observed progress; unchanged across rounds means stalled."""
        return self.ledger.signature()

    def open_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls of the conversation's last answer that have no result yet: calls
        waiting for the user's input (``needs_input``)."""
        answered: set[str] = set()
        for message in reversed(self.session.snapshot()):
            if isinstance(message, ToolMessage):
                answered.add(message.tool_call_id)
            elif isinstance(message, AssistantMessage):
                return tuple(c for c in message.tool_calls if c.id not in answered)
            else:
                break
        return ()

    def add_tail_note(self, note: str) -> None:
        """Queue a note for the tail of the next user message (memory edits, reminders):
        never the system prompt, so the cached prefix stays intact."""
        self._tail_notes.append(note)

    @property
    def context_window(self) -> int:
        return self.options.context_window or self.provider.info.context_window

    async def compact(
        self,
        reason: str = "manual",
        *,
        keep_recent_turns: int | None = None,
        keep_recent_messages: int = 8,
    ) -> CompactionEvent:
        """Compact the session now (``/compact``)."""
        if self.options.hooks is not None:
            await self.options.hooks.before_compact("manual" if reason == "manual" else "auto")
        keep = keep_recent_turns
        if keep is None:
            keep = self.options.compaction_keep_turns
        before, spent = self._last_prompt_tokens, self.cost_total
        event = await compact_session(
            self,
            keep_recent_turns=keep,
            keep_recent_messages=keep_recent_messages,
            reason=reason,
        )
        if event.accepted:
            self._steps_since_compact = 0
            self._summary_tokens = max(1, event.chars_summary // 4)
            self.compaction_account.compacted(before, self.cost_total - spent)
        return event

    def economic_inputs(self) -> EconomicInputs | None:
        """What the economic policy would weigh now (None before the first request)."""
        last = self._last_prompt_tokens
        if last is None:
            return None
        prices = self.options.prices or self.provider.info.prices
        return economic_inputs(
            self,
            prompt_tokens=last,
            schema_chars=len(self.tools.schema_bytes()),
            steps_since_reset=self._steps_since_compact,
            summary_tokens=self._summary_tokens,
            hit=prices.hit,
            miss=prices.miss,
            output=prices.output,
        )

    async def _maybe_compact(self) -> None:
        """Between steps: compact at the window threshold, or (economic policy) when it pays."""
        threshold = self.options.compaction_threshold
        last = self._last_prompt_tokens
        window = self.context_window
        if last is None or last < self._compact_at:
            return
        keep: int | None = None
        keep_messages = 8
        if threshold is not None and last >= threshold * window:
            reason = f"prompt reached {last} of {window} tokens"
            retry_at = last + max(1, (window - last) // 2)
        elif self.options.compaction_policy == "economic":
            inputs = self.economic_inputs()
            verdict = economic_verdict(inputs) if inputs is not None else None
            if verdict is None or not verdict.compact:
                return
            keep = economic_keep_turns(self.session.snapshot())
            reason, keep_messages = verdict.reason, ECONOMIC_KEEP_MESSAGES
            retry_at = last + max(1, last // 4)
        else:
            return
        accepted = False
        try:
            event = await self.compact(
                reason=reason, keep_recent_turns=keep, keep_recent_messages=keep_messages
            )
            accepted = event.accepted
        except ProviderError as exc:
            # A failed summary must not cost the turn: keep the history and go on.
            self.sink.emit(NoticeEvent(self.role, "compaction_failed", str(exc)))
        # After a refusal or failure, try again only once the prompt has grown (halfway to
        # the window; by a quarter for the economic policy), not on every step: each attempt
        # is a paid summary request.
        self._compact_at = 0 if accepted else retry_at
        self._last_prompt_tokens = None  # measure afresh after the rewrite

    def _todo_changed(self, items: tuple[TodoItem, ...]) -> None:
        self.ledger.observe_todo(items)
        self.sink.emit(TodoChanged(self.role, items))

    # -- running --------------------------------------------------------------------------------

    def run_sync(self, text: str | None) -> AgentResult:
        """Blocking façade for scripts."""
        return asyncio.run(self.run(text))

    async def run(
        self,
        text: str | None,
        *,
        on_step: StepHook | None = None,
        continue_turn: bool = False,
        images: tuple[ImagePart, ...] = (),
    ) -> AgentResult:
        """Run one turn. ``text`` None continues from the session as it is (the last message
        must then be a user or tool message). ``continue_turn`` keeps the turn number (the
        orchestrator resumes a paused turn this way, so checkpoints stay per user turn)."""
        if not continue_turn or self.turn == 0:
            self.turn += 1
            self._recent_calls.clear()
        self._ensure_system_prompt()
        self.sink.emit(TurnStarted(self.role, self.turn, text or ""))
        if images:
            try:
                images = await self.upload_images(images)
            except ProviderError as exc:
                failed = f"The image upload failed, so nothing else was sent: {exc}"
                self.sink.emit(ErrorEvent(self.role, type(exc).__name__, failed))
                self.sink.emit(TurnEnded(self.role, self.turn, "error", failed))
                return AgentResult(failed, "error", 0, Usage(), 0.0, str(exc))
        if text is not None:
            if self._tail_notes:
                text = text + "\n\n" + "\n".join(self._tail_notes)
                self._tail_notes.clear()
            open_calls = self.open_calls()
            if open_calls:
                # The user's input is the answer the open calls wait for (``ask``): a tool
                # message per call, so no user message comes before every call is answered.
                for i, call in enumerate(open_calls):
                    answer = free_answer(text) if call.name == ASK_TOOL_NAME else INTERRUPTED_CALL
                    self.session.add(
                        ToolMessage(
                            call.id, answer, name=call.name, images=images if i == 0 else ()
                        )
                    )
            else:
                self.session.add(UserMessage(text, images))
        usage_before, cost_before = self.usage_total, self.cost_total
        steps = 0
        final_text = ""
        reason: StopReason = "done"
        error: str | None = None
        try:
            while True:
                if steps >= self.options.max_steps:
                    reason = "step_limit"
                    final_text = (
                        f"Stopped after {steps} steps: the step limit "
                        f"({self.options.max_steps}) was reached. Send 'continue' to go on."
                    )
                    self.sink.emit(NoticeEvent(self.role, "step_limit", final_text))
                    break
                steps += 1
                await self._maybe_compact()
                self._steps_since_compact += 1
                finished = await self._request()
                assistant = finished.message
                if finished.finish_reason == "content_filter":
                    # Final and not a success; a call in a filtered answer is never run.
                    self.session.add(_without_calls(assistant))
                    reason, final_text = "content_filter", CONTENT_FILTERED
                    self.sink.emit(NoticeEvent(self.role, "content_filter", CONTENT_FILTERED))
                    break
                if finished.finish_reason == "length" and assistant.tool_calls:
                    # The calls' arguments were cut: never run them. The model is told, in a
                    # valid sequence (its answer without the calls, then a host note), and
                    # gets another step to work in smaller pieces.
                    names = ", ".join(c.name for c in assistant.tool_calls)
                    self.session.add(_without_calls(assistant))
                    note = LENGTH_CUT_CALLS.format(names=names)
                    self.session.add(UserMessage(note))
                    self.sink.emit(NoticeEvent(self.role, "length_tool_calls", note))
                    continue
                # Shaped once, on entry: the bounded form is what is stored and sent back.
                edit_tools = [t.name for t in self.tools if t.kind == "edit"]
                assistant, refused = bound_response(assistant, self.tools.limits, edit_tools)
                self.session.add(assistant)
                if not assistant.tool_calls:
                    final_text = assistant.content
                    if finished.finish_reason == "length":
                        reason = "length"
                        self.sink.emit(NoticeEvent(self.role, "length", LENGTH_CUT_TEXT))
                    break
                before = self.ledger.signature()
                results, refusals = await self._execute_calls(assistant.tool_calls, refused)
                if self._waiting:
                    reason, final_text = "needs_input", "\n\n".join(self._waiting)
                    self._waiting = []
                    break
                if on_step is not None:
                    info = StepInfo(
                        steps,
                        assistant,
                        results,
                        self.ledger.signature(),
                        self.ledger.signature() != before,
                        refusals,
                    )
                    decision = on_step(info)
                    if inspect.isawaitable(decision):
                        decision = await decision
                    if decision == "pause":
                        reason = "paused"
                        break
        except asyncio.CancelledError:
            self._keep_partial_answer()
            self._close_dangling_turn(INTERRUPTED_TURN)
            self.sink.emit(TurnEnded(self.role, self.turn, "cancelled"))
            raise
        except ProviderError as exc:
            reason, error = "error", str(exc)
            final_text = f"The model request failed: {exc}"
            self._close_dangling_turn(f"[request failed: {type(exc).__name__}]")
            self.sink.emit(ErrorEvent(self.role, type(exc).__name__, str(exc)))
        except Exception as exc:
            # Not ours to handle (a provider bug, a sink or hook that raised): let it propagate,
            # but leave the session valid for the next turn. Nothing is emitted, as the sink
            # may be what failed.
            self._close_dangling_turn(f"[turn failed: {type(exc).__name__}]")
            raise
        self.sink.emit(TurnEnded(self.role, self.turn, reason, final_text))
        return AgentResult(
            final_text,
            reason,
            steps,
            self.usage_total - usage_before,
            self.cost_total - cost_before,
            error,
        )

    def _ensure_system_prompt(self) -> None:
        if len(self.session) == 0 and self.options.system_prompt:
            self.session.add(SystemMessage(self.options.system_prompt))

    def _keep_partial_answer(self) -> None:
        """An answer the user watched stream and then interrupted stays in the conversation,
        marked as cut, so the model knows what it said (with its reasoning, which DeepSeek
        requires on every earlier assistant message)."""
        text, reasoning = "".join(self._partial_text), "".join(self._partial_reasoning)
        self._partial_text, self._partial_reasoning = [], []
        if not (text.strip() or reasoning.strip()):
            return
        if not isinstance(self.session.last, UserMessage | ToolMessage):
            return
        content = f"{text.rstrip()}\n\n{INTERRUPTED_MARK}" if text.strip() else INTERRUPTED_MARK
        self.session.add(AssistantMessage(content=content, reasoning_content=reasoning))

    def _close_dangling_turn(self, note: str) -> None:
        """Keep user/assistant alternation valid when a turn ends without an answer."""
        if isinstance(self.session.last, UserMessage):
            self.session.add(AssistantMessage(content=note, reasoning_content=""))

    def build_request(
        self, messages: Sequence[Message] | None = None, *, tool_choice: str | None = None
    ) -> ModelRequest:
        """The next request: the session (or ``messages``) with this agent's model, tools and
        options."""
        o = self.options
        chosen = self.session.snapshot() if messages is None else tuple(messages)
        return ModelRequest(
            messages=self._for_model(chosen),
            model=o.model or self.provider.model,
            tools=self.tools.schemas(),
            thinking=o.thinking,
            reasoning_effort=o.reasoning_effort,
            temperature=o.temperature,
            max_tokens=o.max_tokens,
            tool_choice=tool_choice,
            user_id=o.user_id,
            extra_body=o.extra_body,
        )

    async def upload_images(self, images: tuple[ImagePart, ...]) -> tuple[ImagePart, ...]:
        """The images, each one too large to go inline (:attr:`ImagePart.pending`) uploaded to
        the provider's Files API once per session: bytes this session already uploaded reuse
        their file id (found in the session's own messages too, so a resumed session reuses
        it), so the same image is always the same part. Nothing is uploaded for a model that
        does not read images or a provider without a Files API: the request check then
        refuses the image, saying why, before anything is sent."""
        if not any(image.pending for image in images):
            return images
        from reasonix.providers.base import FileUploader

        provider = self.provider
        if not provider.info.accepts_images or not isinstance(provider, FileUploader):
            return images
        from reasonix.images import upload_name
        from reasonix.messages import message_images

        found = message_images(self.session.snapshot())
        known = {i.sha256: i.file_id for i in found if i.file_id is not None}
        known.update(self._uploaded)
        ready: list[ImagePart] = []
        for image in images:
            if image.pending and image.data is not None:
                file_id = known.get(image.sha256)
                if file_id is None:
                    file_id = await provider.upload_file(image.data, upload_name(image), image.mime)
                    known[image.sha256] = self._uploaded[image.sha256] = file_id
                    self.sink.emit(
                        NoticeEvent(
                            self.role,
                            "image_uploaded",
                            f"{image.name or 'an image'} ({image.size:,} bytes) is over the "
                            "32 MiB DeepSeek takes inline: uploaded once through its Files "
                            f"API as {file_id}",
                        )
                    )
                image = image.uploaded(file_id)
            ready.append(image)
        return tuple(ready)

    async def describe_images(self, images: tuple[ImagePart, ...]) -> tuple[ImagePart, ...]:
        """The images with a short description each, written once by this agent's model (it
        must read images), for a model that cannot see them. One request per image, on the
        agent's own request shape so its cached prefix is reused; its usage is counted on this
        agent's role (where it was spent). An image already described is kept as it is; one
        too large to go inline is uploaded first (:meth:`upload_images`), and comes back as
        its upload."""
        from dataclasses import replace

        from reasonix.messages import StreamFinished as Finished

        images = await self.upload_images(images)
        described: list[ImagePart] = []
        for image in images:
            if image.description:
                described.append(image)
                continue
            ask = UserMessage(DESCRIBE_IMAGE_INSTRUCTION, (image,))
            request = self.build_request((*self.session.snapshot(), ask), tool_choice="none")
            from reasonix.images import check_request_images

            check_request_images(
                request.messages,
                model=request.model or self.provider.model,
                accepts_images=self.provider.info.accepts_images,
                image_models=self.options.image_models,
            )
            finished: Finished | None = None
            async for event in self.provider.stream(request):
                if isinstance(event, Finished):
                    finished = event
            text = finished.message.content.strip() if finished is not None else ""
            if finished is not None:
                self.account_usage(
                    request.model or self.provider.model, finished.usage, self.options.usage_source
                )
            described.append(replace(image, description=" ".join(text.split())[:600] or None))
        return tuple(described)

    def _for_model(self, messages: tuple[Message, ...]) -> tuple[Message, ...]:
        """The messages as this agent's model may see them. A model that reads images gets
        them as they are; one that does not (the planner) gets each image as the description
        an image model wrote once and stored with it, so the request holds no image and is
        the same bytes every time. An image without a description stays, and
        :func:`~reasonix.images.check_request_images` refuses the request with a clear
        message before it is sent."""
        from reasonix.messages import message_images, text_only

        if self.provider.info.accepts_images:
            return messages
        found = message_images(messages)
        if found and all(image.description for image in found):
            return text_only(messages)
        return messages

    def carried_state(self) -> list[str]:
        """What a compaction summary carries over: the todo list and the current plan."""
        parts = []
        if len(self.todo_state):
            parts.append("Current todo list:\n" + self.todo_state.render())
        plan = PLAN_STATE_KEY.get(self.tool_state)
        if plan:
            parts.append("Current plan:\n" + plan)
        return parts

    async def _request(self) -> StreamFinished:
        request = self.build_request()
        check_request_size(request.messages, self.tools.limits)
        if any(getattr(m, "images", ()) for m in request.messages):
            from reasonix.images import check_request_images

            check_request_images(
                request.messages,
                model=request.model or self.provider.model,
                accepts_images=self.provider.info.accepts_images,
                image_models=self.options.image_models,
            )
        shape = self._tracker.shape(request.messages, self.tools.schema_bytes(), self.session.epoch)
        finished: StreamFinished | None = None
        self._partial_text, self._partial_reasoning = [], []
        try:
            finished = await self._stream(request)
        except (asyncio.CancelledError, ProviderError):
            # Cut off before the usage arrived: what streamed was billed all the same.
            streamed = sum(map(len, self._partial_text)) + sum(map(len, self._partial_reasoning))
            self._account_estimate(request, streamed)
            raise
        self._partial_text, self._partial_reasoning = [], []
        if finished is None:
            raise StreamCutError("The provider's stream ended without a finished message.")
        self.requests += 1
        usage = finished.usage or Usage()
        requested = request.model or self.provider.model
        answered = finished.model or requested
        if answered != requested:
            self._note_substitution(requested, answered)
        self.account_usage(answered, usage, image_tokens=_image_tokens(request.messages))
        self._check_cache(shape, usage)
        return finished

    def _account_estimate(self, request: ModelRequest, streamed_chars: int) -> None:
        """Count a request whose usage never arrived, from what streamed before it broke: the
        prompt as large as the last one reported (at least the request's own text), the
        output at DeepSeek's rule of thumb of 0.3 tokens per character. Labelled an estimate
        wherever it is shown."""
        if streamed_chars <= 0:
            return
        own = round(sum(len(str(m.content or "")) for m in request.messages) * 0.3)
        last = self._last_prompt_tokens or 0
        prompt = max(last, own)
        hit = min(last, prompt)
        usage = Usage(prompt, hit, prompt - hit, max(1, round(streamed_chars * 0.3)), 0)
        self.account_usage(request.model or self.provider.model, usage, estimated=True)

    async def _stream(self, request: ModelRequest) -> StreamFinished | None:
        """Stream one request to the sink; its finished message (None if it never came)."""
        finished: StreamFinished | None = None
        async for event in self.provider.stream(request):
            if isinstance(event, TextDelta):
                self._partial_text.append(event.text)
                self.sink.emit(TextDeltaEvent(self.role, event.text))
            elif isinstance(event, ReasoningDelta):
                self._partial_reasoning.append(event.text)
                self.sink.emit(ReasoningDeltaEvent(self.role, event.text))
            elif isinstance(event, StreamRetry):
                # A retried request streams its answer again from the start.
                self._partial_text, self._partial_reasoning = [], []
                if event.retract:
                    self.sink.emit(
                        OutputRetracted(
                            self.role,
                            event.attempt,
                            event.reason,
                            event.partial_chars,
                            event.billed,
                        )
                    )
                if event.billed is not None:
                    # A broken attempt the server reported usage for: it may have been billed.
                    self.account_usage(request.model or self.provider.model, event.billed)
                else:
                    # No usage came with the broken attempt: count what it had streamed.
                    self._account_estimate(request, event.partial_chars)
                self.sink.emit(RetryEvent(self.role, event.attempt, event.delay, event.reason))
            elif isinstance(event, StreamFinished):
                finished = event
        return finished

    def account_usage(
        self,
        model: str,
        usage: Usage | None,
        source: UsageSource | None = None,
        *,
        estimated: bool = False,
        image_tokens: int = 0,
    ) -> float:
        """Price one request's usage with this agent's model and emit the usage event
        (``estimated``: counted from what streamed, the server's figure never arrived;
        ``image_tokens``: our estimate of the images' share of the input)."""
        usage = usage or Usage()
        prices, cny = self._prices_of(model)
        at = datetime.now(UTC)
        cost = price_usage(usage, prices, at)
        cost_cny = price_usage(usage, cny, at) if cny is not None else None
        self.usage_total = self.usage_total + usage
        self.cost_total += cost
        src = source or self.options.usage_source
        self.sink.emit(
            UsageEvent(self.role, src, model, usage, cost, cost_cny, estimated, image_tokens)
        )
        return cost

    def _other_prices(self, model: str) -> tuple[Prices, Prices | None] | None:
        """Prices of a model other than this agent's (None when unknown)."""
        if self.options.prices_for is not None:
            return self.options.prices_for(model)
        from reasonix.providers.models import get_model_info, prices_in

        try:
            usd = get_model_info(model).prices
        except UnknownModelError:
            return None
        return usd, prices_in("CNY", model, usd)

    def _prices_of(self, model: str) -> tuple[Prices, Prices | None]:
        """USD and CNY prices to count ``model``'s usage at: this agent's own, or those of the
        model the server says answered."""
        own = (self.options.prices or self.provider.info.prices, self.options.prices_cny)
        if model == (self.options.model or self.provider.model):
            return own
        return self._other_prices(model) or own

    def _note_substitution(self, requested: str, answered: str) -> None:
        """The server answered with another model than requested: say so once per pair."""
        if (requested, answered) in self._substitutions:
            return
        self._substitutions.add((requested, answered))
        if self._other_prices(answered) is not None:
            priced = f"its usage is counted at {answered}'s prices"
        else:
            priced = f"{answered} has no known prices, so its usage is counted at {requested}'s"
        self.sink.emit(
            NoticeEvent(
                self.role,
                "model_substituted",
                f"Asked for {requested}, the server answered with {answered}: {priced}. "
                f"Set the model to {answered} to make this explicit.",
            )
        )

    def _check_cache(self, shape: PrefixShape, usage: Usage) -> None:
        prev = self.prefix_shapes[-1] if self.prefix_shapes else None
        self.prefix_shapes.append(shape)
        prev_prompt, self._last_prompt_tokens = self._last_prompt_tokens, usage.prompt_tokens
        self.compaction_account.request(usage.prompt_tokens)
        if prev is None or prev_prompt is None or shape.epoch != prev.epoch:
            return  # first request, or a planned rewrite (compaction/rewind): no expectation
        expected = prev_prompt
        if usage.cache_hit_tokens + self.options.cache_miss_tolerance >= expected:
            return
        changed = shape.changes_from(prev) or ("unknown",)
        detail = ""
        if "history" in changed:
            detail = f"history diverged at message {shape.first_divergence(prev)}"
        elif changed == ("unknown",):
            detail = "the prefix was unchanged: the server evicted or expired its cache"
        self.sink.emit(
            CacheMissExplained(self.role, expected, usage.cache_hit_tokens, changed, detail)
        )

    # -- tools ----------------------------------------------------------------------------------

    async def _execute_calls(
        self, calls: tuple[ToolCall, ...], refused: Mapping[str, str] | None = None
    ) -> tuple[tuple[ToolMessage, ...], tuple[ToolMessage, ...]]:
        """Run the calls: consecutive read-only calls concurrently, writers one at a time.
        Results are appended in call order; on cancellation the missing ones are filled in.
        ``refused`` calls (over the response's limits) get their error without running.
        Returns the results and, of them, those the permission policy refused."""
        for call in calls:
            kind, subject = self.tools.call_identity(call.name, call.arguments)
            self.sink.emit(ToolCallEvent(self.role, call, kind, subject))
        results = {cid: ToolResult.error(text) for cid, text in (refused or {}).items()}
        pending = [c for c in calls if c.id not in results]
        try:
            i = 0
            while i < len(pending):
                batch = [pending[i]]
                if self._is_read_only(pending[i]):
                    while i + len(batch) < len(pending) and self._is_read_only(
                        pending[i + len(batch)]
                    ):
                        batch.append(pending[i + len(batch)])
                outs = await asyncio.gather(*(self._execute_one(c) for c in batch))
                for c, out in zip(batch, outs, strict=True):
                    results[c.id] = out
                i += len(batch)
        finally:
            messages = []
            denied = []
            budget = StepBudget(self.tools.limits)
            shown_images = 0
            for call in calls:
                out = results.get(call.id) or ToolResult.error(INTERRUPTED_CALL)
                if out.needs_input:
                    # Left open: the user's next input becomes its result.
                    self._waiting.append(redact(out.content))
                    self.sink.emit(NoticeEvent(self.role, "needs_input", redact(out.content)))
                    continue
                content = cap_output(redact(out.content), self.options.max_tool_output_chars)
                content = budget.admit(content, out.is_error)
                images, content = self._admit_images(out.images, content, shown_images)
                shown_images += len(images)
                if any(image.pending for image in images):
                    images = await self.upload_images(images)
                if out.charge is not None:
                    self._account_charge(out.charge)
                msg = ToolMessage(
                    call.id, content, name=call.name, is_error=out.is_error, images=images
                )
                self.session.add(msg)
                messages.append(msg)
                if out.refused:
                    denied.append(msg)
                if call.id in results:
                    self.sink.emit(
                        ToolResultEvent(self.role, call.id, call.name, content, out.is_error)
                    )
        return tuple(messages), tuple(denied)

    def _account_charge(self, charge: Charge) -> None:
        """A paid tool request, counted on this agent's role (its own line in /cost)."""
        from reasonix.events import ToolCharged

        self.cost_total += charge.cost
        self.sink.emit(
            ToolCharged(
                self.role,
                self.options.usage_source,
                charge.service,
                charge.requests,
                charge.billed,
                charge.cost,
                charge.cost_cny,
            )
        )

    def _admit_images(
        self, images: tuple[ImagePart, ...], content: str, shown: int
    ) -> tuple[tuple[ImagePart, ...], str]:
        """The images a tool result may show: none to a model that does not read them, at
        most ``[limits] max_images_per_step`` a step; the result says what was left out."""
        if not images:
            return (), content
        if not self.provider.info.accepts_images:
            return (), f"{content}\n[image not shown: {self.provider.model} does not read images]"
        room = max(0, self.tools.limits.max_images_per_step - shown)
        if len(images) > room:
            left = len(images) - room
            content += (
                f"\n[{left} image(s) not shown: at most "
                f"{self.tools.limits.max_images_per_step} a step ([limits] max_images_per_step)]"
            )
            images = images[:room]
        return images, content

    def _is_read_only(self, call: ToolCall) -> bool:
        # A call through more_tools reads only if the tool it dispatches to does.
        t = self.tools.acting_tool(call.name, call.arguments)
        return t is not None and t.read_only

    async def _execute_one(self, call: ToolCall) -> ToolResult:
        key = f"{call.name}:{_normalise_args(call.arguments)}"
        window = self._recent_calls[-(2 * self.options.repeat_limit - 1) :]
        self._recent_calls.append(key)
        if window.count(key) + 1 >= self.options.repeat_limit:
            # Refused, and recorded as the same outcome repeated: that is what it would be.
            last = self.ledger.last_outcome(key)
            self.ledger.record_call(key, last[1] if last else "", last[2] if last else False)
            return ToolResult.error(
                f"Not run: {call.name} was called with these same arguments "
                f"{self.options.repeat_limit} times in a row of recent calls. The result will not "
                "change; reconsider the approach (read the error, try something different, or "
                "explain what is blocking you)."
            )
        ctx = ToolContext(
            workspace=self.options.workspace,
            role=self.role,
            turn=self.turn,
            call_id=call.id,
            state=self.tool_state,
        )
        result = await self.tools.execute(call.name, call.arguments, ctx)
        if self.options.hooks is not None:
            result = await self.options.hooks.after_tool(call, result, ctx)
        digest = hashlib.sha256(result.content.encode()).hexdigest()[:16]
        ok = not result.is_error and all(e.ok for e in result.effects)
        self.ledger.record_call(key, digest, ok)
        changed = False
        for effect in result.effects:
            if self.ledger.observe(effect, is_error=result.is_error, output=result.content):
                changed = changed or not self._is_read_only(call)
        if changed:
            # A writer made new progress (an edit, a command with a new result): the workspace
            # may have changed, so repeating an *other* earlier call (re-running the tests after
            # a fix) is no longer a loop; this call's own repeats still count. Writers run one
            # at a time, so nothing else is in flight.
            self._recent_calls = [k for k in self._recent_calls if k == key]
        return result


def _without_calls(message: AssistantMessage) -> AssistantMessage:
    """The answer as stored when its tool calls must not run (cut or filtered)."""
    return AssistantMessage(message.content, message.reasoning_content or "")


def _normalise_args(arguments: str) -> str:
    import json

    try:
        return canonical_json(json.loads(arguments))
    except (ValueError, TypeError):
        return arguments.strip()


__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "Agent",
    "AgentOptions",
    "AgentResult",
    "StepDecision",
    "StepInfo",
]


def _image_tokens(messages: Sequence[Message]) -> int:
    """Estimated input tokens of the images a request carries (DeepSeek counts them inside
    ``prompt_tokens`` and reports no separate figure; :func:`reasonix.images.image_tokens`)."""
    from reasonix.messages import message_images

    found = message_images(messages)
    if not found:
        return 0
    from reasonix.images import image_tokens

    return sum(image_tokens(i.width, i.height, i.detail) for i in found)
