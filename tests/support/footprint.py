"""The installed dependency tree of a distribution, read from the environment's metadata (what
``pip install`` put there), with markers evaluated for this interpreter. (No tests here.)"""

from __future__ import annotations

import re
from importlib import metadata

from packaging.markers import default_environment
from packaging.requirements import Requirement


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def dependency_tree(root: str, extras: tuple[str, ...] = ()) -> set[str]:
    """Canonical names of ``root`` and every distribution it needs, transitively (``extras``
    of ``root`` only)."""
    seen: set[str] = set()
    done: set[tuple[str, tuple[str, ...]]] = set()
    todo: list[tuple[str, tuple[str, ...]]] = [(root, extras)]
    while todo:
        name, wanted = todo.pop()
        key = _canonical(name)
        if (key, wanted) in done:
            continue
        done.add((key, wanted))
        seen.add(key)
        for text in metadata.requires(name) or []:
            req = Requirement(text)
            if req.marker is not None:
                envs = [{**default_environment(), "extra": e} for e in ("", *wanted)]
                if not any(req.marker.evaluate(env) for env in envs):
                    continue
            todo.append((req.name, tuple(sorted(req.extras))))
    return seen
