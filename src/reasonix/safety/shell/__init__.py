"""What a shell command does, computed once from the parsed line, and the views over it.

- :mod:`~reasonix.safety.shell.readers`: the table of programs that only read, and how each
  takes its options. ``read_only_obstacle`` says why a line is not proved read-only (None
  when it is); the permission decision allows a proved command in ``ask`` and ``auto-edit``
  mode without asking (``proved_read_only``), and the snapshots skip a command that changes
  nothing (``snapshot_skippable``: the same proof without the question of where it reads, so
  every proved read-only command is skippable).
- :mod:`~reasonix.safety.shell.git`: a git command line parsed once, for every view.
- :mod:`~reasonix.safety.shell.lexer`: the parser every view reads a line through.
- :mod:`~reasonix.safety.shell.rules`: what a command may run (wrappers seen through), the
  deny side's forms and the allow side's obstacles.
- :mod:`~reasonix.safety.shell.deletes`: what a deleting program deletes.
- :mod:`~reasonix.safety.shell.irreversible`: commands no snapshot can undo.
- :mod:`~reasonix.safety.shell.programs`: the tables of programs, one row each: how a reading
  program takes its options (``READERS``) and what each program does besides reading
  (``PROGRAMS``: what it writes, reaches, changes, whether it only reads what it names).
- :mod:`~reasonix.safety.shell.effects`: what a command line does (runs, writes, reaches
  off-host, does unseen), computed once per text (each simple command's step once per
  command); the permission subject, the allow side, the irreversible list, the snapshots'
  read-only test and the proposed session rules read the line through it.

The package imports nothing itself, so :mod:`reasonix.safety.shell.rules` can use its parts
while :mod:`~reasonix.safety.shell.readers` builds on the allow side.
"""
