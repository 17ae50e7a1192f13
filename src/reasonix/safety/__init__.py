"""Safety: the workspace sandbox, permission rules and approval modes, snapshots of each step.

Import the module that holds a name (``reasonix.safety.permissions``, ``reasonix.safety.sandbox``,
...); the package itself loads nothing, so ``reasonix.safety.confinement`` (the bwrap probe the
interactive app starts before its prompt) does not pull in snapshots and the permission engine.
The names library users need are exported by ``reasonix`` itself."""
