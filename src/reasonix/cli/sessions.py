"""``reasonix sessions list|show ID|export ID``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from reasonix.app.commands import session_line
from reasonix.cli.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageError, open_store
from reasonix.errors import SessionStoreError
from reasonix.redaction import redact
from reasonix.store import SessionStore
from reasonix.store.private import write_private_text
from reasonix.terminal_text import json_for_terminal, terminal_safe


def _print(text: str) -> None:
    """A line of stored text (transcripts quote models, tools and servers): shown, not obeyed,
    and without known secrets."""
    print(terminal_safe(redact(text)))


def run_sessions(args: argparse.Namespace) -> int:
    if args.action is None:
        raise UsageError("sessions needs an action: list, show ID or export ID")
    store = open_store()
    try:
        return _run(args, store)
    except SessionStoreError as exc:
        print(f"reasonix: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    finally:
        store.close()


def _run(args: argparse.Namespace, store: SessionStore) -> int:
    if args.action == "list":
        workspace = None if args.all else Path.cwd().resolve()
        infos = store.list_sessions(workspace, limit=args.limit)
        if not infos:
            where = "" if args.all else " in this folder (try --all)"
            print(f"No sessions{where}.")
        for item in infos:
            line = session_line(item)
            _print(f"{line}  [{item.workspace}]" if args.all else line)
        return EXIT_OK
    info = store.get_session(args.id)
    if info is None:
        print(
            f"reasonix: no session {terminal_safe(repr(args.id))}; list them with "
            "`reasonix sessions list --all`",
            file=sys.stderr,
        )
        return EXIT_USAGE  # a wrong id is a usage error, as for `--resume`
    if args.action == "show":
        _print(session_line(info))
        _print(f"workspace: {info.workspace}")
        usage = store.usage_summary(info.id)
        for source, total in usage.items():
            u = total.usage
            print(
                f"{source}: {total.requests} requests, {u.prompt_tokens} prompt tokens "
                f"({u.cache_hit_tokens} cached), {u.completion_tokens} output, ${total.cost:.6f}"
            )
        children = [a for a in store.export_json(info.id)["messages"] if a.startswith("task-")]
        if children:
            print(f"subagents: {', '.join(children)} (transcripts below)")
        print()
        _print(store.export_markdown(info.id))
        return EXIT_OK
    if args.output:
        # A file gets the exact (redacted) transcript, readable by the user alone.
        if args.format == "json":
            text = json.dumps(store.export_json(info.id), ensure_ascii=False, indent=2) + "\n"
        else:
            text = store.export_markdown(info.id)
        write_private_text(Path(args.output), text)
    elif args.format == "json":
        sys.stdout.write(json_for_terminal(store.export_json(info.id), indent=2) + "\n")
    else:
        sys.stdout.write(terminal_safe(store.export_markdown(info.id)))
    return EXIT_OK
