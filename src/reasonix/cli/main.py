"""The ``reasonix`` command. Kept import-light: ``--version`` and ``--help`` load nothing heavy."""

from __future__ import annotations

import sys
from collections.abc import Sequence

USAGE = """\
usage: reasonix [--version] [--help]

A DeepSeek-native coding agent: a fast executor model runs the tool loop, a capable planner
model is called for multi-step plans and when the executor stalls.

options:
  --version   print the version and exit
  -h, --help  show this help and exit
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--version"]:
        from reasonix._version import __version__

        print(f"reasonix {__version__}")
        return 0
    if not args or args[:1] in (["-h"], ["--help"]):
        print(USAGE, end="")
        return 0
    print(f"reasonix: unknown argument {args[0]!r}\n\n{USAGE}", end="", file=sys.stderr)
    return 2
