"""The terminal app's picker for the model's ``ask`` questions, and its ``/jobs`` command.

The picker is a small inline prompt_toolkit application per question: arrows move, Enter
chooses, the number keys pick an option at once (toggle it, in a multi-select question, where
Space toggles too), and the last entry, "Other", asks for an answer in the user's own words.
Esc or Ctrl-C dismisses the questions. The answers go back to the model as the tool's result
(:class:`reasonix.tools.ask.QuestionAsker`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from reasonix.terminal_text import printable
from reasonix.tools.ask import Answer, Question

if TYPE_CHECKING:
    from prompt_toolkit.formatted_text import FormattedText
    from prompt_toolkit.key_binding import KeyPressEvent


__all__ = ["Choice", "QuestionPicker", "choose"]

T = TypeVar("T")

OTHER = "Other (type your own answer)"


@dataclass
class Choice:
    """Where the picker stands on one question: the entry under the cursor, the entries
    ticked (multi-select), and the outcome once done (indexes; the last one means Other)."""

    question: Question
    cursor: int = 0
    ticked: set[int] = field(default_factory=set)
    picked: list[int] | None = None
    #: the last entry is "Other" (the user's own words); a plain list of choices has none
    other: bool = True

    @property
    def entries(self) -> list[str]:
        return [o.label for o in self.question.options] + ([OTHER] if self.other else [])

    def lines(self) -> list[tuple[str, str]]:
        """The picker's text as (style, text) fragments."""
        q = self.question
        out: list[tuple[str, str]] = [
            ("bold", printable(f"[{q.header}] {q.question}")),
            ("", "\n"),
        ]
        for i, label in enumerate(self.entries):
            here = i == self.cursor
            mark = ("[x] " if i in self.ticked else "[ ] ") if q.multiSelect else ""
            text = f"{'❯' if here else ' '} {i + 1}. {mark}{printable(label)}"
            if i < len(q.options) and q.options[i].description:
                text += f" — {printable(q.options[i].description)}"
            out += [("reverse" if here else "", text), ("", "\n")]
        keys = "↑/↓ move · Enter choose · number keys pick"
        if q.multiSelect:
            keys = "↑/↓ move · Space or number toggles · Enter done"
        out.append(("italic", keys + " · Esc dismiss"))
        return out

    def press(self, key: str) -> bool:
        """Apply one key; True when the question is answered."""
        last = len(self.entries) - 1
        if key == "up":
            self.cursor = max(0, self.cursor - 1)
        elif key == "down":
            self.cursor = min(last, self.cursor + 1)
        elif key.isdigit() and 1 <= int(key) <= last + 1:
            self.cursor = int(key) - 1
            if not self.question.multiSelect or (self.other and self.cursor == last):
                self.picked = [self.cursor]
                return True
            self.ticked ^= {self.cursor}
        elif key == "space" and self.question.multiSelect:
            self.ticked ^= {self.cursor}
        elif key == "enter":
            if self.question.multiSelect and self.ticked:
                self.picked = sorted(self.ticked)
            else:
                self.picked = [self.cursor]
            return True
        return False


async def choose(question: Question, *, other: bool = True, **app_options: Any) -> list[int] | None:
    """Show one question inline and return the picked entries (None: dismissed); ``other``
    offers "Other" as the last entry."""
    from prompt_toolkit.application import Application
    from prompt_toolkit.formatted_text import FormattedText
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.layout import Layout, Window
    from prompt_toolkit.layout.controls import FormattedTextControl

    state = Choice(question, other=other)
    kb = KeyBindings()
    keys = ["up", "down", "enter", "space"]
    keys += [str(n) for n in range(1, min(len(state.entries), 9) + 1)]

    def bind(key: str) -> None:
        name = {"enter": "c-m", "space": " "}.get(key, key)

        @kb.add(name)
        def _(event: KeyPressEvent) -> None:
            if state.press(key):
                event.app.exit(result=state.picked)

    for key in keys:
        bind(key)

    @kb.add("escape", eager=True)
    @kb.add("c-c")
    @kb.add("c-d")
    def _dismiss(event: KeyPressEvent) -> None:
        event.app.exit(result=None)

    def text() -> FormattedText:
        return FormattedText(state.lines())

    control = FormattedTextControl(text, focusable=True, show_cursor=False)
    app: Application[list[int] | None] = Application(
        layout=Layout(Window(control, dont_extend_height=True)),
        key_bindings=kb,
        full_screen=False,
        **app_options,
    )
    return await app.run_async()


class QuestionPicker:
    """The terminal app's :class:`~reasonix.tools.ask.QuestionAsker`. ``exclusive`` runs a
    coroutine while the app's own key watching is paused; ``prompt`` asks for one line (None on
    Ctrl-C); ``say`` prints a line of what was chosen."""

    def __init__(
        self,
        exclusive: Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]],
        prompt: Callable[[str], Awaitable[str | None]],
        say: Callable[[str], None],
    ) -> None:
        self.exclusive = exclusive
        self.prompt = prompt
        self.say = say

    async def ask(self, questions: Sequence[Question]) -> list[Answer] | None:
        answers = []
        for question in questions:

            def show(q: Question = question) -> Awaitable[list[int] | None]:
                return choose(q)

            picked: list[int] | None = await self.exclusive(show)
            if picked is None:
                return None
            other = ""
            if len(question.options) in picked:
                typed = await self.prompt(f"{printable(question.header)}, your answer: ")
                if typed is None:
                    return None
                other = typed.strip()
            labels = tuple(question.options[i].label for i in picked if i < len(question.options))
            answer = Answer(question.question, labels, other)
            self.say(f"{question.header}: {'; '.join([*labels, other] if other else labels)}")
            answers.append(answer)
        return answers
