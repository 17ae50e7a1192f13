"""The one start-up every frontend goes through.

Security invariants live here once, so a new frontend cannot forget one:

1. the sandbox probe starts (it answers while the configuration loads);
2. the configuration is loaded, and the values of the providers' key variables are registered
   for redaction *before* anything removes them from the environment;
3. trust: project files count only when the user trusts the folder (a frontend with a person
   in front of it may ask, through ``confirm_trust``);
4. credentials are checked, with one clear error;
5. the keys are taken out of the process environment and held in memory (:func:`hold_keys`):
   no subprocess can inherit one, ``/proc/<pid>/environ`` shows none;
6. the session database is opened.

Every failure is a :class:`~reasonix.errors.StartupError` whose message says what to fix. The
long-running frontends (ACP, the dashboard) open sessions in other folders later:
:meth:`Launch.config_for` repeats steps 2–5 for that folder.

``reasonix run``'s helpers for a run nobody watches (approving, the exit code, the result
object) are in :mod:`reasonix.app.headless`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reasonix.errors import StartupError

if TYPE_CHECKING:
    from reasonix.config import Config
    from reasonix.store import SessionStore

__all__ = [
    "EXIT_FAILURE",
    "EXIT_NEEDS_INPUT",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "Launch",
    "StartupError",
    "hold_keys",
    "launch",
    "load",
    "open_store",
    "overrides_from",
    "print_notice",
    "project_notice",
    "require_credentials",
]

#: Exit codes of the command-line frontends (``reasonix run``, ``batch``, the others).
EXIT_OK = 0
EXIT_FAILURE = 1
#: a usage or configuration problem: a StartupError
EXIT_USAGE = 2
#: refused work: a permission denial stopped part of the task, or a plan was declined
EXIT_REFUSED = 3
#: the model asked the user a question (``ask``); answer with ``reasonix run -c``
EXIT_NEEDS_INPUT = 4

#: ``confirm_trust(question)``: the folder is not trusted and its project files were left
#: out; ``question`` lists every item trusting it would make take effect
#: (:func:`reasonix.config.trust.trust_question`). True: the user trusts the folder.
ConfirmTrust = Callable[[str], bool]


def overrides_from(args: Any) -> dict[str, Any]:
    """Command-line flags as config override keys (unset flags are None: ignored by the loader).
    ``args`` is any object with the flags as attributes (an ``argparse.Namespace``)."""
    out: dict[str, Any] = {
        "executor.model": getattr(args, "model", None),
        "planner.model": getattr(args, "planner_model", None),
        "executor.effort": getattr(args, "effort", None),
        "permissions.mode": permission_mode(getattr(args, "mode", None)),
        "executor.max_steps": getattr(args, "max_steps", None),
        "budget.max_session_usd": getattr(args, "max_cost", None),
        "sandbox.bash": getattr(args, "sandbox", None),
    }
    if getattr(args, "no_planner", False):
        out["planner.enabled"] = False
    # Lists from flags add to the configured ones (never replace a deny list).
    allowed = getattr(args, "allowed_tools", None)
    if allowed:
        out["permissions.allow"] = tool_rules(allowed)
    disallowed = getattr(args, "disallowed_tools", None)
    if disallowed:
        out["permissions.deny"] = tool_rules(disallowed)
    dirs = getattr(args, "add_dir", None)
    if dirs:
        out["workspace.roots"] = [str(Path(d).expanduser().resolve()) for d in dirs]
    return out


def permission_mode(value: str | None) -> str | None:
    """Our mode for ``value``, which may also be Claude Code's name for it
    (``default``, ``acceptEdits``, ``plan``, ``bypassPermissions``)."""
    if value is None:
        return None
    from reasonix.extensions.hooks import CLAUDE_PERMISSION_MODES

    ours = {claude: mode for mode, claude in CLAUDE_PERMISSION_MODES.items()}
    return ours.get(value, value)


def tool_rules(entries: Sequence[str]) -> list[str]:
    """``--allowedTools``/``--disallowedTools`` words as permission rules: split on commas and
    spaces outside parentheses (``"Bash(git log:*) Read,Edit"``); Claude Code's ``:*`` suffix
    (``Bash(npm run:*)``) is our ``*``. Tool names may be ours or Claude Code's (a rule
    matches a tool's aliases, :attr:`reasonix.tools.registry.Tool.aliases`)."""
    rules: list[str] = []
    for entry in entries:
        depth, word = 0, ""
        for ch in entry + ",":
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth = max(0, depth - 1)
            if depth == 0 and (ch == "," or ch.isspace()):
                if word.strip():
                    rules.append(word.strip())
                word = ""
            else:
                word += ch
    out = []
    for rule in rules:
        name, sep, rest = rule.partition("(")
        if sep and rest.endswith(":*)"):
            rule = f"{name}({rest[:-3]}*)"
        out.append(rule)
    return out


def load(
    workspace: Path,
    overrides: Mapping[str, Any] | None = None,
    *,
    trust: bool | None = None,
    environ: Mapping[str, str] | None = None,
    user_config: str | Path | None = None,
) -> Config:
    """The effective configuration of ``workspace``; a ConfigError becomes a StartupError. The
    project folder counts as trusted with ``trust=True`` or when the user's own records say so
    (``[trust] folders``, a remembered answer); otherwise its files are left out and listed in
    ``Config.ignored`` (see :func:`project_notice`)."""
    from reasonix.config import load_config
    from reasonix.errors import ConfigError
    from reasonix.redaction import remember_environment

    try:
        config = load_config(
            workspace,
            overrides=dict(overrides or {}),
            trust=trust,
            environ=environ,
            user_config=Path(user_config) if user_config is not None else None,
        )
    except ConfigError as exc:
        raise StartupError(str(exc)) from None
    # Before anything removes keys from the environment: their values are redacted from
    # whatever is stored or shown, whatever the variables are called.
    remember_environment((p.api_key_env for p in config.providers.values()), environ)
    return config


def project_notice(config: Config) -> str:
    """The one notice about project settings that were not applied ("" when none were)."""
    from reasonix.config.trust import refused_notice, untrusted_notice

    if config.trusted:
        return refused_notice(config.ignored)
    return untrusted_notice(config.ignored)


def print_notice(text: str) -> None:
    """Show a start-up notice on stderr (it quotes project files: shown, never obeyed)."""
    from reasonix.terminal_text import terminal_safe

    print(f"reasonix: {terminal_safe(text)}", file=sys.stderr, flush=True)


def key_names(config: Config | None) -> set[str]:
    """The environment variables ``config``'s providers read their keys from (with the default
    DeepSeek one, which a later folder's configuration may use)."""
    from reasonix.config import DEEPSEEK_KEY_ENV

    names = {DEEPSEEK_KEY_ENV}
    if config is not None:
        names |= {p.api_key_env for p in config.providers.values() if p.api_key_env}
    return names


def hold_keys(config: Config | None = None, names: Iterable[str] = ()) -> dict[str, str]:
    """Take the providers' API keys out of the process environment (they stay in memory, for
    the providers) and return the environment to open a session with: the rest of the
    environment plus the keys. From here on no subprocess can inherit a key, and
    ``/proc/<pid>/environ`` of this process no longer shows one. Safe to call again (another
    folder's configuration may name another variable): merge the result into what you hold."""
    return {**os.environ, **take_keys(config, names)}


def take_keys(config: Config | None = None, names: Iterable[str] = ()) -> dict[str, str]:
    """Only the keys :func:`hold_keys` takes, out of the environment (to add to an environment
    held already, or to a process's own memory, as a batch worker does)."""
    from reasonix.safety.environment import take_from_environment

    return take_from_environment(sorted(key_names(config) | set(names)))


def require_credentials(config: Config, environ: Mapping[str, str] | None = None) -> None:
    """A StartupError naming every missing key (and how to try reasonix without one)."""
    from reasonix.config import check_credentials

    problems = check_credentials(config, environ)
    if problems:
        hint = "(`reasonix demo` shows the whole machinery offline, with no key.)"
        raise StartupError("\n".join([*problems, hint]))


def open_store(path: Path | None = None) -> SessionStore:
    """The session database (the default one under the data folder unless ``path``)."""
    from reasonix.errors import SessionStoreError
    from reasonix.store import SessionStore, default_store_path

    path = path or default_store_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return SessionStore(path)
    except (OSError, SessionStoreError) as exc:
        raise StartupError(
            f"cannot open the session database {path}: {exc}. Set REASONIX_DATA_DIR to a "
            "writable folder."
        ) from None


def _decide_trust(
    config: Config,
    workspace: Path,
    overrides: Mapping[str, Any],
    confirm_trust: ConfirmTrust | None,
) -> Config:
    """Ask (when a frontend can) whether to trust a folder whose project files were left out,
    listing every item they would make take effect; "yes" is remembered with the hash of the
    files as they were when listed (when they change meanwhile nothing is trusted), and the
    configuration is loaded with them."""
    if confirm_trust is None or config.trusted:
        return config
    from reasonix.config.trust import TRUST_FILE, TrustStore, measure, project_files

    if not config.ignored and not project_files(workspace):
        return config
    seen = measure(workspace)
    preview = load(workspace, overrides, trust=True)
    from reasonix.app.trust_items import trust_items

    groups = trust_items(workspace, config, preview)
    if not groups:
        return config
    from reasonix.config.trust import trust_question

    question = trust_question(groups, preview.ignored, unremembered=seen.problem)
    if not confirm_trust(question):
        return config
    if measure(workspace) != seen:
        raise StartupError(
            "the folder's project files changed while you were asked; nothing was trusted. "
            "Start again to see the new list."
        )
    if seen.problem is None:
        from reasonix.config import user_config_path

        TrustStore(user_config_path().parent / TRUST_FILE).remember(workspace, seen)
    return preview


@dataclass
class Launch:
    """What a frontend holds after start-up: the start folder's configuration (None when a
    lenient start could not load it: then each session's folder is loaded on its own), the
    environment to open sessions with (the keys held in memory), the session database, and the
    notice about project files left out (already shown through ``notify``)."""

    config: Config | None
    environ: dict[str, str]
    opened_store: SessionStore | None = None
    notice: str = ""
    overrides: Mapping[str, Any] = field(default_factory=dict)
    trust: bool | None = None

    @property
    def store(self) -> SessionStore:
        if self.opened_store is None:
            raise StartupError("this start-up opened no session database (store=False)")
        return self.opened_store

    def config_for(self, workspace: Path) -> Config:
        """The configuration of a session in ``workspace`` for a long-running frontend: loaded
        (keys registered for redaction), any key variable it names taken out of the
        environment too, credentials checked. Raises StartupError."""
        config = self.load(workspace)
        self.hold(config)
        require_credentials(config, self.environ)
        return config

    def hold(self, config: Config) -> None:
        """Take the key variables ``config`` names out of the process environment as well
        (another folder's configuration may name one the start-up's did not)."""
        self.environ.update(take_keys(config))

    def load(self, workspace: Path, *, trust: bool | None = None) -> Config:
        """``workspace``'s configuration with this start-up's flags (no credentials check)."""
        return load(workspace, self.overrides, trust=self.trust if trust is None else trust)

    def close(self) -> None:
        if self.opened_store is not None:
            self.opened_store.close()


def launch(
    workspace: Path,
    overrides: Mapping[str, Any] | None = None,
    *,
    trust: bool | None = None,
    lenient: bool = False,
    credentials: bool = True,
    store: bool = True,
    confirm_trust: ConfirmTrust | None = None,
    notify: Callable[[str], None] | None = None,
    check: Callable[[Config], None] | None = None,
) -> Launch:
    """Start up for a frontend in ``workspace`` (see the module docstring for the steps).

    ``lenient=True`` (an editor's server, which reports problems per session): a configuration
    that does not load does not stop the start (the default key is still held);
    ``credentials=False`` leaves the key check to each session (:meth:`Launch.config_for`) or
    task. ``store=False`` opens no database (batch keeps one per task). ``notify`` shows the
    notice about project files left out; ``check`` runs the frontend's own checks of the
    configuration before any key is taken."""
    from reasonix.safety.confinement import start_bwrap_probe

    start_bwrap_probe()  # answers while the configuration loads
    overrides = dict(overrides or {})
    config: Config | None
    try:
        config = load(workspace, overrides, trust=trust)
    except StartupError:
        if not lenient:
            raise
        config = None
    notice = ""
    if config is not None:
        config = _decide_trust(config, workspace, overrides, confirm_trust)
        notice = project_notice(config)
        if notice and notify is not None:
            notify(notice)
        if check is not None:
            check(config)
        if credentials:
            require_credentials(config)
    environ = hold_keys(config)
    return Launch(config, environ, open_store() if store else None, notice, overrides, trust)
