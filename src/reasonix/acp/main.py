"""``reasonix acp`` (the command line's entry): speak the Agent Client Protocol on stdin and
stdout for an editor.

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

from reasonix.app.launch import EXIT_OK, StartupError, launch, overrides_from


def run_acp(args: argparse.Namespace) -> int:
    try:
        import acp  # noqa: F401
    except ImportError:
        raise StartupError(
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
    # Lenient: a configuration problem or a missing key is reported per session, as a
    # JSON-RPC error, when one is opened (Launch.config_for checks each folder).
    started = launch(
        Path.cwd(),
        overrides_from(args),
        trust=True if getattr(args, "trust", False) else None,
        lenient=True,
        credentials=False,
    )
    from reasonix.acp.server import serve

    try:
        asyncio.run(serve(started, protocol_out=protocol_out))
    except KeyboardInterrupt:
        pass
    finally:
        started.close()
    return EXIT_OK


def _take_stdout() -> object:
    """The protocol's own stdout (a duplicate of fd 1); fd 1 and ``sys.stdout`` become stderr."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(protocol_fd, "wb", buffering=0)
