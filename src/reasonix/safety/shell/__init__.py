"""What a shell command does, computed once from the parsed line, and the views over it:
``lexer`` (the parser), ``git`` (a git line parsed once), ``rules`` (what may run, deny forms,
allow obstacles), ``deletes``, ``irreversible``, ``programs`` (the per-program tables),
``readers`` (the read-only proof) and ``effects`` (the per-line record the views share). The
package imports nothing itself, so its modules can import each other in that order.
"""
