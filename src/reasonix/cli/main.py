"""The ``reasonix`` command. Kept import-light: ``--version`` and ``--help`` load nothing heavy;
argparse and the rest load only on the path of a real command."""

from __future__ import annotations

import sys
from collections.abc import Sequence

USAGE = """\
usage: reasonix [options] [PROMPT]        interactive session here (PROMPT: its first message)
       reasonix -p [options] TASK         the same as reasonix run (Claude Code's -p/--print)
       reasonix run [options] TASK|-      one headless task (text, json or stream-json output)
       reasonix config                    effective configuration and where each value came from
       reasonix sessions list|show|export stored sessions
       reasonix rewind [--steps K|--turn N] undo steps or turns (files and conversation)
       reasonix doctor                    check configuration, keys, endpoints, folders, tools
       reasonix demo                      an offline demo turn with a scripted model
       reasonix acp                       serve an editor over the Agent Client Protocol
       reasonix batch TASKS.jsonl --out D many tasks headless, locally or on Ray
       reasonix serve [--port N] [--all]  a local web dashboard (prints the URL to open)

A DeepSeek-native coding agent: a fast executor model runs the tool loop, a capable planner
model is called for multi-step plans and when the executor stalls.

options (interactive and run):
  -c, --continue          continue the last session in this folder
  -r, --resume ID         resume a stored session
  -m, --model NAME        executor model, default deepseek-flash     (executor.model)
  --planner-model NAME    planner model, default deepseek-v4-pro     (planner.model)
  --effort LEVEL          executor thinking effort: low|high|max|off (executor.effort)
  --mode MODE             permission mode: ask|auto-edit|auto|plan|yolo (permissions.mode)
  --max-steps N           executor steps per turn (executor.max_steps); also --max-turns
  --permission-mode MODE  Claude Code's names: default|acceptEdits|plan|bypassPermissions
  --allowedTools RULES    add allow rules (ours or Claude Code's: "Read,Bash(git log:*)")
  --disallowedTools RULES add deny rules, same forms
  --add-dir DIR           one more folder the tools may use (workspace.roots); repeatable
  --append-system-prompt TEXT  instructions at the end of the first message
  --max-cost USD          stop the session once it has spent this much (budget.max_session_usd)
  --sandbox MODE          confine shell commands: auto|bwrap|off (sandbox.bash)
  --no-planner            run the executor alone (planner.enabled = false)
  --trust                 trust this folder's reasonix.toml and .mcp.json for this run
                          (otherwise they count only once you trust the folder)
  --version               print the version and exit
  -h, --help              show this help and exit; `reasonix COMMAND --help` for a command

exit codes: 0 success, 1 failure (model/provider error), 2 usage or configuration error,
3 refused work (a permission denial stopped the task, or a plan was declined),
4 needs input (run: the model asked a question; answer it with reasonix run -c "ANSWER"),
5 plan incomplete (run: the executor stopped with plan steps open; the result names them)
"""

COMMANDS = ("run", "config", "sessions", "rewind", "doctor", "demo", "acp", "batch", "serve")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--version"]:
        from reasonix._version import __version__

        print(f"reasonix {__version__}")
        return 0
    if args[:1] in (["-h"], ["--help"]):
        print(USAGE, end="")
        return 0
    from reasonix.cli.commands import dispatch

    return dispatch(args)
