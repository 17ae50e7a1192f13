"""The ``ask`` tool: the model asks the user one to four multiple-choice questions.

The shape is Claude Code's AskUserQuestion: ``questions``, 1-4 items, each with ``question``,
``header`` (a short label, at most 12 characters), ``options`` (2-4 items of ``label`` and
``description``) and ``multiSelect``. Arguments are checked strictly and every problem goes back
to the model in one error, so it can fix the call at once.

Who answers depends on the frontend:

- with a :class:`QuestionAsker` in the tool state (:data:`ASKER_KEY`; the terminal app's picker,
  an editor over ACP), the call waits for the user's choices and returns them as its result;
- with none (``reasonix run``, batch), the result is marked ``needs_input``: the run stops with
  the stop reason ``needs_input`` and the call stays open. The session is stored that way, and
  the next user input (``reasonix run -c "<answer>"``) becomes this call's result, so every tool
  call is still answered by a tool message before any later message (see
  :meth:`reasonix.agent.Agent.run`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Protocol

from reasonix.messages import Message, ToolCall
from reasonix.tools.registry import Tool, ToolContext, ToolResult
from reasonix.tools.state import StateKey

__all__ = [
    "ASKER_KEY",
    "ASK_TOOL_NAME",
    "Answer",
    "Option",
    "Question",
    "QuestionAsker",
    "answer_text",
    "ask_tool",
    "describe_questions",
    "free_answer",
    "pending_questions",
    "questions_dicts",
    "validate_questions",
]

ASK_TOOL_NAME = "ask"
MAX_QUESTIONS = 4
MIN_OPTIONS, MAX_OPTIONS = 2, 4
MAX_HEADER = 12
MAX_TEXT = 1000


@dataclass(frozen=True)
class Option:
    """One choice: its ``label`` (what the user picks) and what it means."""

    label: Annotated[str, "1-5 words"]
    description: str


@dataclass(frozen=True)
class Question:
    """One question with its choices. ``multiSelect`` lets the user pick several."""

    question: str
    header: Annotated[str, "max 12 chars"]
    options: list[Option]
    multiSelect: bool = False


@dataclass(frozen=True)
class Answer:
    """The user's answer to one question: the labels picked and/or their own words."""

    question: str
    labels: tuple[str, ...] = ()
    other: str = ""


class QuestionAsker(Protocol):
    """A frontend that shows questions to the user and returns one answer per question (None:
    the user dismissed them)."""

    async def ask(self, questions: Sequence[Question]) -> Sequence[Answer] | None: ...


ASKER_KEY: StateKey[QuestionAsker] = StateKey("question_asker")


def validate_questions(questions: Sequence[Question]) -> list[str]:
    """Every problem with ``questions``, in words the model can act on (empty: valid)."""
    problems: list[str] = []
    if not 1 <= len(questions) <= MAX_QUESTIONS:
        problems.append(f"ask takes 1 to {MAX_QUESTIONS} questions, got {len(questions)}")
    seen_questions: set[str] = set()
    for i, q in enumerate(questions, 1):
        where = f"question {i}"
        if not q.question.strip():
            problems.append(f"{where}: 'question' is empty")
        elif len(q.question) > MAX_TEXT:
            problems.append(f"{where}: 'question' is over {MAX_TEXT} characters")
        if q.question.strip() in seen_questions:
            problems.append(f"{where}: the same question is asked twice")
        seen_questions.add(q.question.strip())
        if not q.header.strip():
            problems.append(f"{where}: 'header' is empty (a short label such as 'Auth method')")
        elif len(q.header) > MAX_HEADER:
            problems.append(
                f"{where}: 'header' {q.header!r} is {len(q.header)} characters; at most "
                f"{MAX_HEADER}"
            )
        if not MIN_OPTIONS <= len(q.options) <= MAX_OPTIONS:
            problems.append(
                f"{where}: give {MIN_OPTIONS} to {MAX_OPTIONS} options, got {len(q.options)} (the "
                "user can always type an answer of their own; do not add an 'Other' option)"
            )
        labels: set[str] = set()
        for j, option in enumerate(q.options, 1):
            label = option.label.strip()
            if not label:
                problems.append(f"{where}, option {j}: 'label' is empty")
            elif len(option.label) > MAX_TEXT or len(option.description) > MAX_TEXT:
                problems.append(f"{where}, option {j}: over {MAX_TEXT} characters")
            if label.lower() in labels:
                problems.append(f"{where}, option {j}: the label {label!r} is used twice")
            labels.add(label.lower())
    return problems


def answer_text(answers: Sequence[Answer]) -> str:
    """The tool result for the user's answers: one line per question."""
    lines = ["The user answered:"]
    for a in answers:
        parts = [*a.labels]
        if a.other.strip():
            parts.append(f"(their own words) {a.other.strip()}")
        chosen = "; ".join(parts) if parts else "(no answer)"
        lines.append(f"- {a.question} -> {chosen}")
    return "\n".join(lines)


def free_answer(text: str) -> str:
    """The tool result for an answer the user typed for all the questions at once
    (``reasonix run -c "<answer>"``, a message typed instead of picking)."""
    return f"The user answered in their own words:\n{text}"


def pending_questions(messages: Sequence[Message]) -> list[tuple[ToolCall, list[Question]]]:
    """The ``ask`` calls left open at the end of a conversation, each with its questions
    (empty when the conversation does not end waiting for an answer)."""
    from reasonix.messages import AssistantMessage, ToolMessage

    answered: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            answered.add(message.tool_call_id)
            continue
        if not isinstance(message, AssistantMessage):
            return []
        return [
            (call, _parse(call.arguments))
            for call in message.tool_calls
            if call.name == ASK_TOOL_NAME and call.id not in answered
        ]
    return []


def questions_dicts(questions: Sequence[Question]) -> list[dict[str, Any]]:
    """The questions as JSON objects (the headless result's ``questions``)."""
    return [asdict(q) for q in questions]


def describe_questions(questions: Sequence[Mapping[str, Any]]) -> list[str]:
    """The questions (as :func:`questions_dicts` gives them) as lines of text, with their
    numbered options, for frontends that cannot show a picker."""
    lines = []
    for q in questions:
        pick = " (pick one or more)" if q.get("multiSelect") else ""
        lines.append(f"[{q['header']}] {q['question']}{pick}")
        for n, option in enumerate(q["options"], 1):
            lines.append(f"  {n}. {option['label']}: {option['description']}")
    return lines


def _parse(arguments: str) -> list[Question]:
    try:
        data = json.loads(arguments)
        return [
            Question(
                str(q["question"]),
                str(q["header"]),
                [Option(str(o["label"]), str(o.get("description", ""))) for o in q["options"]],
                bool(q.get("multiSelect", False)),
            )
            for q in data["questions"]
        ]
    except (ValueError, KeyError, TypeError):
        return []


@dataclass
class _AskTool:
    """``ask`` bound to nothing: who answers comes from the tool state, per call. Calls in one
    response are shown one after the other, never two pickers at once."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def ask(
        self,
        ctx: ToolContext,
        questions: list[Question],
    ) -> ToolResult:
        """Ask the user multiple-choice questions when only they can decide (preference,
        approach, missing requirement); not what you can find out."""
        problems = validate_questions(questions)
        if problems:
            return ToolResult.error(
                "ask was not shown to the user: " + "; ".join(problems) + ". Fix and retry."
            )
        asker = ASKER_KEY.get(ctx.state)
        if asker is None:
            shown = "\n".join(f"- [{q.header}] {q.question}" for q in questions)
            return ToolResult(f"Waiting for the user's answer to:\n{shown}", needs_input=True)
        async with self.lock:
            answers = await asker.ask(questions)
        if answers is None:
            return ToolResult.error(
                "The user dismissed the questions without answering; go on with what you know "
                "or ask the user in your reply."
            )
        return ToolResult(answer_text(answers))


def ask_tool() -> Tool:
    """``ask`` for the executor. It changes nothing, so it asks no approval (``read_only``); it
    is given to the executor alone, never to the planner or to children."""
    from reasonix.tools.builtin.files import builtin_tool

    tool = builtin_tool(_AskTool().ask, name=ASK_TOOL_NAME, read_only=True, category="ask")
    params = json.loads(json.dumps(tool.parameters))
    questions = params["properties"]["questions"]
    questions["minItems"], questions["maxItems"] = 1, MAX_QUESTIONS
    options = questions["items"]["properties"]["options"]
    options["minItems"], options["maxItems"] = MIN_OPTIONS, MAX_OPTIONS
    return Tool(
        name=tool.name,
        description=tool.description,
        parameters=params,
        func=tool.func,
        read_only=True,
        category="ask",
        context_param=tool.context_param,
        kind="think",
        aliases=("AskUserQuestion",),
    )
