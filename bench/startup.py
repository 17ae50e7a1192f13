"""Start-up: ``reasonix --version`` against a bare interpreter, the modules the CLI imports
before it answers, time until the interactive prompt accepts input, and time until the first
request of ``reasonix run`` reaches the (fake) server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import Stat, print_table, repeat, verdict, wall_ms
from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.fake_server import RecordedRequest
from reasonix.testing.project import fake_project_toml

BIN = Path(sys.executable).parent
REASONIX = str(BIN / "reasonix")
HEAVY = ("httpx", "rich", "prompt_toolkit", "mcp", "pygments", "sqlite3", "asyncio")
PROMPT = "›"
CPR_REQUEST = "\x1b[6n"
KEY_ENV = "REASONIX_BENCH_KEY"

MODULES_CODE = """
import json, sys
before = set(sys.modules)
from reasonix.cli.main import main
import io, contextlib
with contextlib.redirect_stdout(io.StringIO()):
    main(["--version"])
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def _run(*argv: str, env: dict[str, str] | None = None) -> None:
    subprocess.run(argv, check=True, capture_output=True, env=env)


@dataclass
class Project:
    root: Path
    env: dict[str, str]


@contextmanager
def project(ex: FakeDeepSeekServer, pl: FakeDeepSeekServer) -> Iterator[Project]:
    """A temp project whose reasonix.toml points both roles at the fake servers, with private
    config and data folders (the user's own config never leaks into the figures)."""
    with tempfile.TemporaryDirectory(prefix="reasonix-bench-") as tmp:
        root = Path(tmp) / "proj"
        root.mkdir()
        (Path(tmp) / "cfg").mkdir()
        # Trusted in the (private) user config, so its reasonix.toml applies.
        trusted = f"[trust]\nfolders = [{json.dumps(str(root))}]\n"
        (Path(tmp) / "cfg" / "config.toml").write_text(trusted)
        toml = fake_project_toml(ex.base_url, pl.base_url, key_env=KEY_ENV)
        (root / "reasonix.toml").write_text(toml)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("REASONIX_", "DEEPSEEK_")) and k != "PYTEST_CURRENT_TEST"
        }
        env.update(
            {
                KEY_ENV: "sk-bench",
                "REASONIX_DATA_DIR": str(Path(tmp) / "data"),
                "REASONIX_CONFIG_DIR": str(Path(tmp) / "cfg"),
                "NO_COLOR": "1",
                "TERM": "xterm",
            }
        )
        yield Project(root, env)


def version_vs_bare(runs: int) -> dict[str, Any]:
    bare = repeat(lambda: wall_ms(lambda: _run(sys.executable, "-c", "pass")), runs)
    version = repeat(lambda: wall_ms(lambda: _run(REASONIX, "--version")), runs)
    # interleaved pairs: the difference per pair is less sensitive to machine noise
    diffs = []
    for _ in range(runs):
        a = wall_ms(lambda: _run(sys.executable, "-c", "pass"))
        b = wall_ms(lambda: _run(REASONIX, "--version"))
        diffs.append(b - a)
    diff = Stat.of(diffs)
    return {
        "python_c_pass_ms": bare.to_dict(2),
        "reasonix_version_ms": version.to_dict(2),
        "difference_ms": diff.to_dict(2),
        "target_ms": 35,
        "target_met": diff.median <= 35,
        "_stats": (bare, version, diff),
    }


def startup_modules() -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", MODULES_CODE], check=True, capture_output=True, text=True
    )
    modules: list[str] = json.loads(out.stdout)
    roots = {m.split(".")[0] for m in modules}
    return {
        "count": len(modules),
        "heavy_loaded": {name: name in roots for name in HEAVY},
        "reasonix_modules": sorted(m for m in modules if m.startswith("reasonix")),
    }


def _cpu_ms(pid: int) -> float:
    """User + system CPU time the process has used so far (Linux; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def interactive_ready(runs: int) -> dict[str, Any]:
    """Spawn ``reasonix`` in a pseudo-terminal; time until the prompt is drawn, the CPU the
    process had used by then (less sensitive to a busy machine than wall time), and (one more
    run, with ``PYTHONPROFILEIMPORTTIME``) how many of our modules were loaded before it."""
    try:
        import pexpect
    except ImportError:
        return {"available": False, "why": "pexpect is not installed"}
    samples, cpu, errors = [], [], []
    own_modules = -1
    with FakeDeepSeekServer() as ex, FakeDeepSeekServer() as pl, project(ex, pl) as proj:
        for i in range(runs + 2):
            profile = i == runs + 1  # the last run counts modules (the profile slows it)
            env = {**proj.env, "PYTHONPROFILEIMPORTTIME": "1"} if profile else proj.env
            start = time.perf_counter()
            child = pexpect.spawn(
                REASONIX,
                cwd=str(proj.root),
                env=env,
                encoding="utf-8",
                timeout=20,
                dimensions=(40, 120),
            )
            try:
                # prompt_toolkit asks the terminal where the cursor is; answer as a terminal would
                if child.expect_exact([CPR_REQUEST, PROMPT]) == 0:
                    seen = child.before
                    child.send("\x1b[1;1R")
                    child.expect_exact(PROMPT)
                    seen += child.before
                else:
                    seen = child.before
                took = (time.perf_counter() - start) * 1000
                used = _cpu_ms(child.pid)
                if profile:
                    own_modules = len(set(re.findall(r"\|\s*(reasonix[\w.]*)\s*$", seen, re.M)))
                elif i:  # the first run warms the OS file cache
                    samples.append(took)
                    cpu.append(used)
                child.sendline("/exit")
                child.expect(pexpect.EOF, timeout=10)
            except (pexpect.TIMEOUT, pexpect.EOF) as exc:
                errors.append(f"{type(exc).__name__}: {(child.before or '')[-300:]!r}")
                break
            finally:
                child.close(force=True)
    if errors:
        return {"available": False, "why": errors[0]}
    stat, cpu_stat = Stat.of(samples), Stat.of(cpu)
    return {
        "available": True,
        "ms": stat.to_dict(1),
        "cpu_ms": cpu_stat.to_dict(1),
        "own_modules_before_prompt": own_modules,
        "target_ms": 300,
        "target_met": stat.median < 300,
        "_stat": stat,
        "_cpu": cpu_stat,
    }


def first_request(runs: int) -> dict[str, Any]:
    """``reasonix run TASK``: spawn to the first request's arrival at the fake server."""
    arrivals: list[float] = []
    lock = threading.Lock()

    def handler(request: RecordedRequest) -> Reply:
        with lock:
            arrivals.append(time.perf_counter())
        return Reply.text("hello")

    samples, totals, errors = [], [], []
    with (
        FakeDeepSeekServer(handler=handler) as ex,
        FakeDeepSeekServer() as pl,
        project(ex, pl) as proj,
    ):
        for i in range(runs + 1):
            arrivals.clear()
            start = time.perf_counter()
            proc = subprocess.run(
                [REASONIX, "run", "--no-planner", "say hello"],
                cwd=proj.root,
                env=proj.env,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            end = time.perf_counter()
            if proc.returncode != 0 or not arrivals:
                errors.append(f"exit {proc.returncode}: {proc.stderr[-300:]}")
                break
            if i:
                samples.append((arrivals[0] - start) * 1000)
                totals.append((end - start) * 1000)
    if errors:
        return {"available": False, "why": errors[0]}
    first, total = Stat.of(samples), Stat.of(totals)
    return {
        "available": True,
        "first_request_ms": first.to_dict(1),
        "whole_run_ms": total.to_dict(1),
        "_stats": (first, total),
    }


def compile_bytecode() -> bool:
    """Compile reasonix's modules to bytecode, as ``pip install`` does for an installed package
    (an editable install writes it on its first run). Python reads bytecode also where
    ``PYTHONDONTWRITEBYTECODE`` is set; without it every start compiled our ~40 prompt
    modules from source again (about 130 ms of CPU here), which no installed copy does."""
    import compileall

    import reasonix

    return bool(compileall.compile_dir(str(Path(reasonix.__file__).parent), quiet=1))


def run_startup(quick: bool) -> dict[str, Any]:
    runs = 5 if quick else 21
    load_before = round(os.getloadavg()[0], 2)
    compiled = compile_bytecode()
    version = version_vs_bare(runs)
    modules = startup_modules()
    interactive = interactive_ready(2 if quick else 7)
    first = first_request(2 if quick else 7)
    load_after = round(os.getloadavg()[0], 2)
    bare, ver, diff = version.pop("_stats")
    heavy = ", ".join(f"{k}={'yes' if v else 'no'}" for k, v in modules["heavy_loaded"].items())
    rows: list[list[object]] = [
        ["python -c pass", bare.fmt(digits=1), ""],
        ["reasonix --version", ver.fmt(digits=1), ""],
        ["difference (paired)", diff.fmt(digits=1), f"<= 35 ms: {verdict(version['target_met'])}"],
        ["modules imported by --version", modules["count"], heavy],
    ]
    if interactive.get("available"):
        rows.append(
            [
                "interactive prompt ready",
                interactive.pop("_stat").fmt(digits=0),
                f"< 300 ms: {verdict(interactive['target_met'])}",
            ]
        )
        rows.append(
            [
                "  CPU used by then",
                interactive.pop("_cpu").fmt(digits=0),
                f"{interactive['own_modules_before_prompt']} reasonix modules loaded by then",
            ]
        )
    else:
        rows.append(["interactive prompt ready", "n/a", str(interactive.get("why", ""))[:80]])
    if first.get("available"):
        fr, total = first.pop("_stats")
        rows.append(["reasonix run: first request at server", fr.fmt(digits=0), ""])
        rows.append(["reasonix run: whole one-step task", total.fmt(digits=0), ""])
    else:
        rows.append(["reasonix run: first request", "n/a", str(first.get("why", ""))[:80]])
    print_table(
        f"Start-up (wall time, median (min-max) of {runs} runs; reasonix's bytecode "
        f"{'compiled first, as pip install does' if compiled else 'NOT compiled'}; load "
        f"average {load_before} before, {load_after} after: on a busy machine the prompt waits "
        "for a core, so compare the CPU line and the target on an idle one)",
        rows,
        ["what", "time", "target / notes"],
    )
    return {
        "runs": runs,
        "load_average": [load_before, load_after],
        "bytecode_compiled": compiled,
        "version": version,
        "modules": modules,
        "interactive": interactive,
        "run_first_request": first,
    }
