"""Known secret values, and their removal from text that is kept or shown.

The process knows some secrets: the provider keys it holds, and the values of environment
variables named like secrets (``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*PASSWORD*``, …). When
one of those values shows up in a tool's output (``cat .env``, ``env``, an MCP server echoing
its configuration), it is replaced by ``[redacted $NAME]`` where text enters the session (tool
results, once, when they are capped, so the stored and sent bytes never change afterwards),
and again wherever text leaves: the session store, exports, ``sessions show``, stream-json and
text output.

Values shorter than :data:`MIN_SECRET_LENGTH`, and values that are paths, are not treated as
secrets: replacing every ``1234`` or ``/home/me`` would wreck ordinary text.

The set is process-wide (:func:`default_secrets`): the environment is read the first time it is
needed (or explicitly, with :func:`remember_environment`, before anything removes keys from
it), and holders of other secrets add them with :func:`register_secret`.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

#: environment variable names whose values are secrets (matched case-insensitively)
SECRET_NAME_PATTERNS: tuple[str, ...] = (
    "*_KEY",
    "*_KEY_*",
    "*APIKEY*",
    "*_TOKEN",
    "*_TOKEN_*",
    "*_SECRET",
    "*_SECRET_*",
    "*PASSWORD*",
    "*PASSWD*",
    "*PASSPHRASE*",
    "*_CREDENTIALS",
    "*_PAT",
    "*PRIVATE_KEY*",
)
#: names that match a pattern above but hold a location, not a secret
_NOT_SECRET_SUFFIXES = ("_DIR", "_PATH", "_FILE", "_HOME", "_SOCK", "_URL_FILE")
MIN_SECRET_LENGTH = 8


def is_secret_name(name: str) -> bool:
    """Whether an environment variable named ``name`` holds a secret."""
    upper = name.upper()
    if upper.endswith(_NOT_SECRET_SUFFIXES):
        return False
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in SECRET_NAME_PATTERNS)


def _worth_redacting(value: str) -> bool:
    value = value.strip()
    if len(value) < MIN_SECRET_LENGTH:
        return False
    # A path or a plain word list is a setting, not a credential.
    return not value.startswith(("/", "~/", "./", "../")) and " " not in value


class SecretSet:
    """Secret values with the labels shown in their place; :meth:`redact` replaces them."""

    def __init__(self) -> None:
        self._labels: dict[str, str] = {}
        self._lock = threading.Lock()
        self._pattern: re.Pattern[str] | None = None
        self._json_pattern: re.Pattern[str] | None = None
        self._json_labels: dict[str, str] = {}
        self.environment_read = False

    def add(self, value: str | None, label: str) -> None:
        """Treat ``value`` as a secret shown as ``[redacted label]`` (ignored when too short)."""
        if not value or not _worth_redacting(value):
            return
        value = value.strip()
        label = re.sub(r"[^A-Za-z0-9_$ .-]", "_", label)  # safe inside JSON and on a terminal
        with self._lock:
            if value in self._labels:
                return
            self._labels[value] = label
            self._pattern = self._json_pattern = None

    def add_environment(self, environ: Mapping[str, str], extra_names: Iterable[str] = ()) -> None:
        """Every secret-named variable of ``environ``, and the ``extra_names`` whatever their
        names (the variables our providers read their keys from)."""
        extra = {n for n in extra_names if n}
        for name, value in environ.items():
            if name in extra or is_secret_name(name):
                self.add(value, f"${name}")
        self.environment_read = True

    def __len__(self) -> int:
        return len(self._labels)

    def _compiled(self) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
        with self._lock:
            if self._pattern is None and self._labels:
                values = sorted(self._labels, key=len, reverse=True)
                self._pattern = re.compile("|".join(re.escape(v) for v in values))
                # The same values as they appear inside JSON text (ensure_ascii or not).
                self._json_labels = {}
                for value, label in self._labels.items():
                    for form in (_json_inner(value, True), _json_inner(value, False)):
                        self._json_labels.setdefault(form, label)
                forms = sorted(self._json_labels, key=len, reverse=True)
                self._json_pattern = re.compile("|".join(re.escape(f) for f in forms))
            return self._pattern, self._json_pattern

    def redact(self, text: str) -> str:
        """``text`` with every known secret value replaced by ``[redacted $NAME]``."""
        pattern, _ = self._compiled()
        if pattern is None or not text:
            return text
        return pattern.sub(lambda m: f"[redacted {self._labels[m.group()]}]", text)

    def redact_json_text(self, text: str) -> str:
        """Like :meth:`redact` for serialised JSON: values are matched in their escaped form
        (a quote in a secret never matches JSON's own quotes), so the result stays valid."""
        _, pattern = self._compiled()
        if pattern is None or not text:
            return text
        return pattern.sub(lambda m: f"[redacted {self._json_labels[m.group()]}]", text)

    def redact_value(self, value: Any) -> Any:
        """``value`` (JSON-like data) with every string redacted, keys included."""
        if not self._labels:
            return value
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, Mapping):
            return {self.redact(str(k)): self.redact_value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact_value(v) for v in value]
        return value


def _json_inner(value: str, ascii_only: bool) -> str:
    return json.dumps(value, ensure_ascii=ascii_only)[1:-1]


_DEFAULT = SecretSet()


def default_secrets() -> SecretSet:
    """The process-wide set; the environment is read into it on first use."""
    if not _DEFAULT.environment_read:
        _DEFAULT.add_environment(os.environ)
    return _DEFAULT


def remember_environment(
    extra_names: Iterable[str] = (), environ: Mapping[str, str] | None = None
) -> None:
    """Read the environment's secrets now (call before anything removes keys from it), with
    ``extra_names``: variables holding keys whatever they are called. ``environ``: an
    environment held apart from the process's (default: the process's own)."""
    _DEFAULT.add_environment(os.environ if environ is None else environ, extra_names)


def register_secret(value: str | None, label: str = "api key") -> None:
    """Add one secret the process holds (a provider key kept in memory)."""
    _DEFAULT.add(value, label)


def redact(text: str) -> str:
    """``text`` without the process's known secrets (see :class:`SecretSet`)."""
    return default_secrets().redact(text)


def redact_json_text(text: str) -> str:
    """Serialised JSON without the process's known secrets, still valid JSON."""
    return default_secrets().redact_json_text(text)


def redact_value(value: Any) -> Any:
    """JSON-like data without the process's known secrets."""
    return default_secrets().redact_value(value)


__all__ = [
    "MIN_SECRET_LENGTH",
    "SECRET_NAME_PATTERNS",
    "SecretSet",
    "default_secrets",
    "is_secret_name",
    "redact",
    "redact_json_text",
    "redact_value",
    "register_secret",
    "remember_environment",
]
