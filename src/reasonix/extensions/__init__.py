"""Extensions users bring from other agents, in Claude Code's formats: hooks
(:mod:`~reasonix.extensions.hooks`), skills (:mod:`~reasonix.extensions.skills`) and custom
slash commands (:mod:`~reasonix.extensions.commands`). Project-level ones load only in folders
the user trusts; the user's own (in the config folder) always load."""
