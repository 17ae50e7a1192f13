"""A batch task's own commands (``setup`` before the agent, ``verify`` after it), run like the
agent's bash.

They run what the model wrote (``verify`` runs the tests the model may have changed; ``setup``
runs the repository's scripts), so they get exactly what the agent's commands get: the same
:class:`~reasonix.safety.confinement.Confiner` chosen from the task's ``[sandbox]`` settings
(network only when the task's ``network`` or ``[sandbox] network`` says so), the same
environment allowlist without the providers' key variables, the same process bound, clean-up
and undo of protected files — through :meth:`ShellTool.run_command`, the one runner of shell
commands. What they print is redacted (the provider keys and every secret-named variable's
value) before it is kept in a log or a row.

A task file may run a command unconfined by name (``"unconfined": ["verify"]``): that is the
user's explicit choice for that task, said in its log's first line and its row. Where no
sandbox can be had and the user has not accepted unconfined commands (``[sandbox]
allow_unconfined``), a command is refused rather than run on the host, as ``--yes`` refuses the
agent's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from reasonix.errors import ReasonixError

if TYPE_CHECKING:
    from reasonix.safety.confinement import BashConfinement, Confiner

__all__ = ["CommandRefused", "TaskCommands"]

#: How much of a command's output its log keeps (head and tail, the middle cut with a note).
LOG_LIMIT = 1_000_000

UNCONFINED_NOTE = (
    '[reasonix batch: this command ran UNCONFINED, as the task file asked ("unconfined"): it '
    "could read and change everything your user can]"
)


class CommandRefused(ReasonixError):
    """A task's command cannot run confined, and running it unconfined was not accepted."""


@dataclass
class TaskCommands:
    """Runs one task's ``setup``/``verify`` in its copy (see the module docstring)."""

    copy: Path
    timeout: float
    #: the task's confinement (:func:`reasonix.safety.confinement.confinement_for`)
    confinement: BashConfinement
    unconfined: tuple[str, ...] = ()
    key_vars: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    extra_env: Mapping[str, str] | None = None

    async def run(self, which: str, command: str) -> tuple[int, str]:
        """Exit code and redacted output of the task's ``which`` command (124 and a note when
        it ran past the timeout). Raises :class:`CommandRefused` when it may not run."""
        from reasonix.redaction import redact
        from reasonix.safety.confinement import ConfinementError, NoConfiner
        from reasonix.tools.builtin.shell import ShellOptions, ShellTool

        confinement = self.confinement
        open_ = which in self.unconfined
        confiner: Confiner
        if open_:
            confiner = NoConfiner('the task file\'s "unconfined"')
        else:
            refusal = confinement.unattended_error(f"a batch task's {which}")
            if refusal is not None:
                raise CommandRefused(refusal)
            confiner = confinement.confiner
        options = ShellOptions(
            timeout=self.timeout,
            max_timeout=self.timeout,
            output_limit=LOG_LIMIT,
            secret_env=self.key_vars,
            confiner=confiner,
            pass_env=self.include,
            env=dict(self.extra_env or {}),
            # One command per tool: a kept sandbox would only add its supervisor's start.
            kept_sandbox=False,
        )
        shell = ShellTool(self.copy, options=options)
        try:
            run = await shell.run_command(command)
        except ConfinementError as exc:
            raise CommandRefused(f"{which} not run: {exc}") from None
        output = run.output + ("\n" if run.output else "")
        code = run.code
        if run.undone:
            output += (
                f"[reasonix batch: undid what the command did to {', '.join(run.undone)}: "
                "inside the sandbox these are read-only]\n"
            )
        if run.over_limit:
            output += "[reasonix batch: stopped: the command started too many processes]\n"
        if run.timed_out:
            code = 124
            output += f"[reasonix batch: stopped after {self.timeout:g} s]\n"
        if open_:
            output = UNCONFINED_NOTE + "\n" + output
        return code, redact(output)
