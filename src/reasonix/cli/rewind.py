"""``reasonix rewind``: undo steps or turns of any stored session, headless ones included.

With no arguments: the most recent session of this folder, back to before its last turn.
``--turn N`` goes back to before turn N; ``--steps K`` undoes the last K steps that may have
changed files; ``--force PATH...``, right after a rewind, puts back the files it left alone.
Files come back from the session's snapshots; the conversation is cut to the same point, so
``reasonix run -c`` continues from there. Needs no API key: no model is called.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from reasonix.cli.commands import EXIT_OK, UsageError, load, open_store
from reasonix.config import Config
from reasonix.errors import ReasonixError
from reasonix.store import SessionStore


def run_rewind(args: argparse.Namespace) -> int:
    store = open_store()
    try:
        here = Path.cwd().resolve()
        session_id = args.session or store.latest_session(here)
        if session_id is None:
            raise UsageError(
                f"no stored session in {here} to rewind; `reasonix sessions list --all` lists "
                "the sessions of every folder, and `--session ID` picks one"
            )
        info = store.get_session(session_id)
        if info is None:
            raise UsageError(f"no session {session_id!r}; list them with `reasonix sessions list`")
        workspace = Path(info.workspace)
        if not workspace.is_dir():
            raise UsageError(f"the session's folder {workspace} does not exist any more")
        config = load(args, workspace)
        return asyncio.run(_rewind(args, store, session_id, workspace, config))
    finally:
        store.close()


async def _rewind(
    args: argparse.Namespace, store: SessionStore, session_id: str, workspace: Path, config: Config
) -> int:
    from reasonix.app.session import AgentSession

    try:
        runtime = await AgentSession.open(
            config, workspace, store=store, resume_id=session_id, start_mcp=False
        )
    except ReasonixError as exc:
        raise UsageError(str(exc)) from None
    try:
        if args.force:
            import shlex

            print(f"Session {session_id} in {workspace}:")
            print(runtime.history.force(shlex.join(args.force)))
            return EXIT_OK
        if args.steps is not None:
            if args.steps < 1:
                raise UsageError("--steps needs a number of steps of 1 or more")
            text = runtime.history.undo(args.steps)
        else:
            marks = runtime.history.marks
            if args.turn is not None and marks and not any(m.turn == args.turn for m in marks):
                raise UsageError(
                    f"session {session_id} has no turn {args.turn}; its turns are "
                    f"1..{marks[-1].turn}"
                )
            text = runtime.history.rewind(args.turn)
        print(f"Session {session_id} in {workspace}:")
        print(text)
        return EXIT_OK
    finally:
        await runtime.aclose()
