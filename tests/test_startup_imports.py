"""`reasonix --version` and `import reasonix.providers` stay light: heavy modules load lazily."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pexpect
import pytest

from tests.support.project import Project, project

__all__ = ["project"]

pytestmark = pytest.mark.slow

HEAVY = [
    "httpx",
    "httpcore",
    "anyio",
    "rich",
    "prompt_toolkit",
    "pydantic",
    "mcp",
    "asyncio",
    "sqlite3",
    "openai",
    "starlette",
    "uvicorn",
]


def loaded_after(code: str) -> set[str]:
    """Which top-level modules a fresh interpreter has imported after running ``code``."""
    script = (
        "import sys, json\n"
        f"{code}\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_version_imports_nothing_heavy() -> None:
    loaded = loaded_after(
        "import io, contextlib\n"
        "from reasonix.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as buf:\n"
        "    assert main(['--version']) == 0\n"
        "assert buf.getvalue().startswith('reasonix ')"
    )
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_providers_package_does_not_import_httpx() -> None:
    loaded = loaded_after("import reasonix.providers\nimport reasonix.providers.sse")
    assert "httpx" not in loaded
    assert "httpcore" not in loaded


def test_httpx_loads_with_the_first_request_not_with_the_provider() -> None:
    loaded = loaded_after(
        "import asyncio\n"
        "from reasonix.providers.openai_compat import OpenAICompatProvider\n"
        "from reasonix.messages import ModelRequest, UserMessage\n"
        "p = OpenAICompatProvider(base_url='http://127.0.0.1:9', model='m', api_key='k',"
        " max_retries=0)\n"
        "assert 'httpx' not in sys.modules, 'building a provider imported httpx'\n"
        "async def go():\n"
        "    try:\n"
        "        async for _ in p.stream(ModelRequest(messages=(UserMessage('hi'),))):\n"
        "            pass\n"
        "    except Exception:\n"
        "        pass\n"
        "    await p.aclose()\n"
        "asyncio.run(go())\n"
    )
    assert "httpx" in loaded


def test_provider_class_is_exported_lazily() -> None:
    loaded = loaded_after(
        "import reasonix.providers as p\n"
        "assert 'httpx' not in sys.modules\n"
        "from reasonix.providers import OpenAICompatProvider\n"
        "from reasonix.providers.openai_compat import OpenAICompatProvider as Direct\n"
        "assert OpenAICompatProvider is Direct"
    )
    assert "reasonix" in loaded
    assert "httpx" not in loaded


#: The interactive app draws its prompt before it opens the session: what it imports up to the
#: prompt (the app module, configuration, trust, keys, the store, the bwrap probe) leaves out the
#: session's subsystems, which load in the background while the user types.
NOT_BEFORE_PROMPT = [
    "reasonix.app.session",
    "reasonix.app.assembly",
    "reasonix.app.persistence",
    "reasonix.app.turn",
    "reasonix.control",
    "reasonix.agent",
    "reasonix.mcp",
    "reasonix.tools.registry",
    "reasonix.tools.builtin",
    "reasonix.safety.checkpoints",
    "reasonix.safety.permissions",
    "reasonix.safety.sandbox",
    "reasonix.providers.openai_compat",
    "reasonix.extensions",
    # the message and event types: about 40 dataclasses, a tenth of the time to the prompt
    "reasonix.messages",
    "reasonix.events",
    "reasonix.providers.base",
    # Rich and the renderer: the header is drawn by prompt_toolkit, the renderer made on first use
    "rich.console",
    "rich.text",
    "reasonix.cli.render",
    "httpx",
    "mcp",
    "pydantic",
]
#: How many of our modules the prompt may need (it needed 91 when everything loaded first;
#: 37 once the command table's records moved to app/command_types.py to keep app/commands.py
#: under 500 lines; 34 since the message and event types, the renderer and the tool limits load
#: after the first frame, of which the real start reports 33: the app's own module is imported
#: with importlib, which ``-X importtime`` does not report).
MAX_OWN_MODULES_BEFORE_PROMPT = 33

BEFORE_PROMPT = (
    "import reasonix.cli.interactive, reasonix.app.launch, reasonix.safety.confinement\n"
    "import reasonix.config, reasonix.config.trust, reasonix.safety.environment, reasonix.store\n"
)


def modules_after(code: str) -> set[str]:
    """Every module (full dotted names) a fresh interpreter has imported after ``code``."""
    script = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_interactive_prompt_loads_no_session_subsystem() -> None:
    loaded = modules_after(BEFORE_PROMPT)
    early = sorted(m for m in loaded for p in NOT_BEFORE_PROMPT if m == p or m.startswith(p + "."))
    assert early == [], early
    own = sorted(m for m in loaded if m.split(".")[0] == "reasonix")
    assert len(own) <= MAX_OWN_MODULES_BEFORE_PROMPT, own


def test_the_session_subsystems_still_load_when_the_session_opens() -> None:
    # Control for the test above: the names it forbids are the ones the session really uses.
    loaded = modules_after(BEFORE_PROMPT + "import reasonix.app.session")
    for name in (
        "reasonix.control",
        "reasonix.agent",
        "reasonix.safety.checkpoints",
        "reasonix.messages",
        "reasonix.events",
    ):
        assert name in loaded


def _early(loaded: set[str]) -> list[str]:
    return sorted(m for m in loaded for p in NOT_BEFORE_PROMPT if m == p or m.startswith(p + "."))


def test_the_real_prompt_is_drawn_before_any_of_them_loads(project: Project) -> None:
    """The same through the real ``reasonix`` in a pseudo-terminal: what Python reports having
    imported (``-X importtime``) by the time the prompt is on the screen, where building the
    app, drawing the header and starting the background work are in it too."""
    env = project.env(PYTHONPROFILEIMPORTTIME="1", PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "reasonix"],
        cwd=str(project.root),
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 120),
    )
    try:
        child.expect("/help for commands")
        seen = child.before
        child.expect("›")
        seen += child.before
        child.sendline("/exit")
        child.expect(pexpect.EOF, timeout=60)
    finally:
        child.close(force=True)
    loaded = set(re.findall(r"import time:.*\|\s*([\w.]+)\s*$", seen, re.M))
    # (modules imported with importlib.import_module, as the commands are, are not reported)
    assert "reasonix.cli.status" in loaded and "prompt_toolkit" in loaded, sorted(loaded)
    assert _early(loaded) == [], _early(loaded)
    own = sorted(m for m in loaded if m.split(".")[0] == "reasonix")
    assert len(own) <= MAX_OWN_MODULES_BEFORE_PROMPT, own
