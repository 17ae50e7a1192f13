"""``reasonix acp``: speak the Agent Client Protocol on stdin/stdout for an editor.

Stdout carries the protocol and nothing else. Before anything else runs, the real stdout is
kept aside for the protocol and file descriptor 1 is pointed at stderr, so a stray print, a
library warning or a child process that inherits our stdout can never corrupt the JSON-RPC
stream. Logs go to stderr (``--log-file`` to send them to a file instead).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from reasonix.cli.commands import EXIT_OK, UsageError, hold_keys, load, open_store

if TYPE_CHECKING:
    from reasonix.config import Config


def run_acp(args: argparse.Namespace) -> int:
    try:
        import acp  # noqa: F401
    except ImportError:
        raise UsageError(
            "reasonix acp needs the Agent Client Protocol SDK: pip install agent-client-protocol"
        ) from None
    protocol_out = _take_stdout()
    handler: logging.Handler = (
        logging.FileHandler(args.log_file, encoding="utf-8")
        if args.log_file
        else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(logging.Formatter("reasonix acp: %(levelname)s %(message)s"))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, handlers=[handler])
    try:
        start_config = load(args, Path.cwd())
    except UsageError:
        start_config = None  # reported per session, as a JSON-RPC error, when one is opened
    environ = hold_keys(start_config) if start_config is not None else _hold_default_key()
    store = open_store()
    from reasonix.acp.server import serve

    def load_for(workspace: Path) -> Config:
        from reasonix.errors import ConfigError

        try:
            return load(args, workspace)
        except UsageError as exc:
            raise ConfigError(str(exc)) from None

    try:
        asyncio.run(serve(store, load_config=load_for, protocol_out=protocol_out, environ=environ))
    except KeyboardInterrupt:
        pass
    finally:
        store.close()
    return EXIT_OK


def _hold_default_key() -> dict[str, str]:
    from reasonix.config import DEEPSEEK_KEY_ENV
    from reasonix.safety.environment import take_from_environment

    return {**os.environ, **take_from_environment([DEEPSEEK_KEY_ENV])}


def _take_stdout() -> object:
    """The protocol's own stdout (a duplicate of fd 1); fd 1 and ``sys.stdout`` become stderr."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(protocol_fd, "wb", buffering=0)
