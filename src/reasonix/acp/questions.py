"""The model's ``ask`` questions as an ACP form (``elicitation/create``, form mode), for editors
that say they show forms (``clientCapabilities.elicitation.form``).

Each question becomes one field (a single choice, or a multi-select for ``multiSelect``) plus an
optional text field for an answer in the user's own words. The form is still marked unstable in
the protocol, so it is used only when the client advertises it; otherwise the questions end the
turn and the next prompt answers them (:mod:`reasonix.acp.server`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from acp import schema

from reasonix.tools.ask import Answer, Question

if TYPE_CHECKING:
    from acp.interfaces import Client

__all__ = ["FormAsker", "answers_from", "form_schema"]

log = logging.getLogger("reasonix.acp")


def form_schema(questions: Sequence[Question]) -> schema.ElicitationSchema:
    """The form: ``q1``, ``q2``, ... (the choices) and ``q1_other``, ... (own words)."""
    properties: dict[str, Any] = {}
    for n, q in enumerate(questions, 1):
        choices = [
            schema.EnumOption(const=o.label, title=o.label, description=o.description or None)
            for o in q.options
        ]
        if q.multiSelect:
            properties[f"q{n}"] = schema.ElicitationMultiSelectPropertySchema(
                type="array",
                title=q.header,
                description=q.question,
                items=schema.TitledMultiSelectItems(any_of=choices),
            )
        else:
            properties[f"q{n}"] = schema.ElicitationStringPropertySchema(
                type="string", title=q.header, description=q.question, one_of=choices
            )
        properties[f"q{n}_other"] = schema.ElicitationStringPropertySchema(
            type="string", title=f"{q.header}: other", description="Or answer in your own words"
        )
    return schema.ElicitationSchema(type="object", properties=properties, required=[])


def answers_from(content: Mapping[str, Any] | None, questions: Sequence[Question]) -> list[Answer]:
    """The user's answers from a form's content (unknown labels are ignored)."""
    content = content or {}
    answers = []
    for n, q in enumerate(questions, 1):
        picked = content.get(f"q{n}")
        values = picked if isinstance(picked, list) else [picked] if picked else []
        known = {o.label for o in q.options}
        labels = tuple(str(v) for v in values if str(v) in known)
        other = content.get(f"q{n}_other")
        answers.append(Answer(q.question, labels, str(other) if other else ""))
    return answers


class FormAsker:
    """A :class:`~reasonix.tools.ask.QuestionAsker` over an editor's form. ``session_id`` gives
    the ACP session the form belongs to."""

    def __init__(self, conn: Client, session_id: Callable[[], str]) -> None:
        self.conn = conn
        self.session_id = session_id

    async def ask(self, questions: Sequence[Question]) -> list[Answer] | None:
        mode = schema.ElicitationFormSessionMode(
            session_id=self.session_id(), requested_schema=form_schema(questions)
        )
        message = "\n".join(q.question for q in questions)
        try:
            response = await self.conn.create_elicitation(message=message, mode=mode)
        except Exception as exc:  # the editor failed to show it: the model hears "dismissed"
            log.warning("elicitation/create failed: %s", exc)
            return None
        if getattr(response, "action", None) != "accept":
            return None
        return answers_from(getattr(response, "content", None), questions)
