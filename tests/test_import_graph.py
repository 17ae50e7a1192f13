"""Imports point down only (docs/architecture.md, DESIGN.md "Layers"): no frontend imports
another frontend, no lower layer imports a higher one, and the provider layer and the tools
know nothing of each other. Every import counts, the lazy ones inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import reasonix

SOURCE = Path(reasonix.__file__).parent

FRONTENDS = frozenset({"cli", "acp", "web", "batch"})

#: Top-level modules and packages of ``reasonix`` by layer, highest first.
LAYERS: dict[str, int] = {
    # the package itself (the public API's lazy table) and ``python -m reasonix``
    "__init__": 6,
    "__main__": 6,
    **dict.fromkeys(FRONTENDS, 5),
    "app": 4,
    "control": 3,
    "agent": 2,
    # parts, and what the layers that need them use: may import each other
    **dict.fromkeys(("tools", "providers", "mcp", "extensions", "safety", "store", "testing"), 1),
    # plain typed data, no I/O (the config loader reads its files)
    **dict.fromkeys(
        (
            "messages",
            "events",
            "errors",
            "config",
            "redaction",
            "terminal_text",
            "fences",
            "images",
            "_version",
        ),
        0,
    ),
}

#: Modules whose layer is not their package's: the model table is plain data (names, limits,
#: prices) that the configuration reads.
MODULE_LAYERS = {"reasonix.providers.models": 0}

#: Known upward imports, each with its reason (module -> module it may import). Keep it short:
#: an entry is a debt, not a licence.
EXCEPTIONS = {
    # The trust decision (part of loading the config) reads which protected files a job that
    # still runs may have planted, from the records the safety layer keeps.
    ("reasonix.config.trust", "reasonix.safety.plants"): "trust reads running jobs' plants",
    ("reasonix.config.trust", "reasonix.safety.protected"): "the fingerprint hashes the scripts "
    "our config names",
}

#: Pairs of packages of one layer that must not know each other.
STRANGERS = {frozenset({"providers", "tools"})}


def _layer(module: str) -> int:
    for name, layer in MODULE_LAYERS.items():
        if module == name or module.startswith(name + "."):
            return layer
    return LAYERS[module.split(".")[1]]


def _imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every import of a ``reasonix`` module in ``path``."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            base = node.module
            names = [base]
            # ``from reasonix import app``: a package named in the import list
            if base == "reasonix":
                names = [f"reasonix.{alias.name}" for alias in node.names]
            out += [(node.lineno, name) for name in names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
    return [(line, m) for line, m in out if m.startswith("reasonix.")]


def violations(source: Path = SOURCE) -> list[str]:
    found: list[str] = []
    for path in sorted(source.rglob("*.py")):
        rel = path.relative_to(source)
        here = "reasonix." + ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
        top = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        for line, module in _imports(path):
            there = module.split(".")[1]
            if there == top:
                continue
            where = f"{rel}:{line} imports {module}"
            if (here, module) in EXCEPTIONS:
                continue
            if top in FRONTENDS and there in FRONTENDS:
                found.append(f"{where}: one frontend ({top}) imports another ({there})")
            elif _layer(here) < _layer(module):
                found.append(f"{where}: a lower layer ({top}) imports a higher one ({there})")
            elif frozenset({top, there}) in STRANGERS:
                found.append(f"{where}: {top} and {there} must not know each other")
    return found


def test_every_package_has_a_layer() -> None:
    tops = {
        p.stem if p.is_file() else p.name
        for p in SOURCE.iterdir()
        if (p.is_file() and p.suffix == ".py") or (p / "__init__.py").is_file()
    }
    assert tops <= set(LAYERS), f"give these a layer in LAYERS: {sorted(tops - set(LAYERS))}"


def test_imports_point_down_only() -> None:
    assert violations() == []


def _copy(tmp_path: Path) -> Path:
    import shutil

    copy = tmp_path / "reasonix"
    shutil.copytree(SOURCE, copy, ignore=shutil.ignore_patterns("__pycache__", "static"))
    return copy


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "planted", "said"),
    [
        # batch reaching into the CLI for a helper: the old cycle
        ("batch/runner.py", "from reasonix.cli.headless import run_headless", "one frontend"),
        # lazily, inside a function, still counts
        ("web/server.py", "def f():\n    import reasonix.acp.server", "one frontend"),
        ("control/gate.py", "from reasonix.app.session import AgentSession", "lower layer"),
        ("tools/limits.py", "from reasonix.agent.session import Session", "lower layer"),
        ("config/loader.py", "from reasonix.safety import sandbox", "lower layer"),
        ("providers/sse.py", "from reasonix.tools.registry import Tool", "must not know"),
    ],
)
def test_a_planted_violation_is_found(tmp_path: Path, module: str, planted: str, said: str) -> None:
    copy = _copy(tmp_path)
    assert violations(copy) == []  # the copy is as clean as the source
    target = copy / module
    target.write_text(target.read_text(encoding="utf-8") + "\n\n" + planted + "\n")
    found = violations(copy)
    assert len(found) == 1 and said in found[0] and module in found[0], found


#: The start-up's security steps and the one module allowed to call them (besides where they
#: are defined): a frontend that takes keys or registers redaction itself would be a copy.
START_UP_CALLS = {"take_from_environment": "app/launch.py", "remember_environment": "app/launch.py"}


def start_up_copies(source: Path = SOURCE) -> list[str]:
    found: list[str] = []
    for path in sorted(source.rglob("*.py")):
        rel = path.relative_to(source).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in START_UP_CALLS and rel != START_UP_CALLS[name]:
                    found.append(f"{rel}:{node.lineno} calls {name}: use reasonix.app.launch")
    return found


def test_keys_are_held_and_redaction_registered_in_one_place() -> None:
    assert start_up_copies() == []


def test_a_planted_copy_of_the_start_up_is_found(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    target = copy / "web" / "server.py"
    target.write_text(
        target.read_text(encoding="utf-8")
        + "\n\ndef _mine():\n"
        + "    from reasonix.safety.environment import take_from_environment\n\n"
        + "    return take_from_environment(['DEEPSEEK_API_KEY'])\n"
    )
    (found,) = start_up_copies(copy)
    assert found.startswith("web/server.py:") and "take_from_environment" in found


#: The tool contract: what every tool and the permission layer share. It sits below
#: ``reasonix.safety``; the built-in tools (the rest of ``tools/``) sit above it.
TOOL_CONTRACT = frozenset(
    {
        "reasonix.tools",
        "reasonix.tools.registry",
        "reasonix.tools.state",
        "reasonix.tools.limits",
        "reasonix.tools.deferred",
    }
)


def _tier(module: str) -> int | None:
    """0 the tool contract, 1 the safety layer, 2 the built-in tools; None outside both."""
    if module in TOOL_CONTRACT:
        return 0
    if module == "reasonix.safety" or module.startswith("reasonix.safety."):
        return 1
    if module.startswith("reasonix.tools."):
        return 2
    return None


def _module_graph(source: Path) -> dict[str, set[str]]:
    """``module -> modules it imports`` for ``tools/`` and ``safety/``, lazy imports included;
    ``from reasonix.safety import sandbox`` counts as importing ``reasonix.safety.sandbox``."""
    known: set[str] = set()
    files: dict[str, Path] = {}
    for package in ("tools", "safety"):
        for path in sorted((source / package).rglob("*.py")):
            rel = path.relative_to(source)
            name = "reasonix." + ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
            known.add(name)
            files[name] = path
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                subs = {f"{node.module}.{alias.name}" for alias in node.names}
                found = subs & known
                edges |= found or ({node.module} & known)
            elif isinstance(node, ast.Import):
                edges |= {alias.name for alias in node.names} & known
        graph[name] = edges - {name}
    return graph


def tool_safety_violations(source: Path = SOURCE) -> list[str]:
    """Imports that point up the contract → safety → built-ins order, and import cycles among
    the modules of ``tools/`` and ``safety/``."""
    graph = _module_graph(source)
    found = [
        f"{here} imports {there}: the tool contract sits below safety, the built-ins above it"
        for here, edges in sorted(graph.items())
        for there in sorted(edges)
        if (a := _tier(here)) is not None and (b := _tier(there)) is not None and a < b
    ]
    # a cycle through a safety module: one reachable from a module it imports (a cycle
    # between tools/ and safety/ breaks the order above)
    for start in sorted(m for m in graph if _tier(m) == 1):
        seen: set[str] = set()
        stack = list(graph[start])
        while stack:
            m = stack.pop()
            if m == start:
                found.append(f"import cycle through {start}")
                break
            if m not in seen:
                seen.add(m)
                stack.extend(graph.get(m, ()))
    return found


def test_no_cycle_inside_safety_or_between_tools_and_safety() -> None:
    assert tool_safety_violations() == []


@pytest.mark.parametrize(
    ("module", "planted", "said"),
    [
        # the contract reaching up to the built-ins: the old ``ToolRegistry.default``
        (
            "tools/registry.py",
            "def f():\n    from reasonix.tools.builtin import default_tools",
            "contract sits below",
        ),
        ("tools/state.py", "from reasonix.safety.permissions import Rule", "contract sits below"),
        ("safety/patterns.py", "from reasonix.tools.builtin import shell", "contract sits below"),
        # inside safety: the lexer importing the rules that import it
        ("safety/shell/lexer.py", "def f():\n    import reasonix.safety.shell.rules", "cycle"),
    ],
)
def test_a_planted_cycle_is_found(tmp_path: Path, module: str, planted: str, said: str) -> None:
    copy = _copy(tmp_path)
    assert tool_safety_violations(copy) == []
    target = copy / module
    target.write_text(target.read_text(encoding="utf-8") + "\n\n" + planted + "\n")
    found = tool_safety_violations(copy)
    assert any(said in f for f in found), found
