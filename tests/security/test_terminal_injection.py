"""Terminal injection: escape sequences from a model, a tool, a file, an MCP server, a provider
error or a config value never reach the terminal raw.

Every attack goes through the real ``python -m reasonix`` process (headless ``run``, ``sessions
show|export``, ``config``, ``doctor``, and the interactive app in a pseudo-terminal) with a
scripted model on loopback. Output is captured as bytes: a text-mode pipe would turn a lone
``\\r`` into a newline and hide it.

Controls prove the probe sees a break: the same payloads come back intact through
``--output-format json`` (escaped there, as JSON must), so the bytes did travel through the
pipeline; and a process that prints them directly is caught by the same detector.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pexpect
import pytest

from reasonix.terminal_text import strip_escape_sequences, terminal_safe
from reasonix.testing import Fault, Reply
from tests.support.project import Project, json_lines, project

__all__ = ["project"]


def add_user_config(project: Project, text: str) -> None:
    """Add ``text`` to the user's config.toml (which also says the project folder is trusted)."""
    path = project.config_dir / "config.toml"
    path.write_text((path.read_text() if path.exists() else "") + "\n" + text)


#: one payload per sequence class a terminal acts on
PAYLOADS: Mapping[str, str] = {
    "csi": "\x1b[7331q\x1b[2J",
    "osc-bel": "\x1b]0;pwned-bel\x07",
    "osc-st": "\x1b]0;pwned-st\x1b\\",
    "osc52-bel": "\x1b]52;c;cHduZWQtY2xpcA==\x07",
    "osc52-c1-st": "\x1b]52;c;cHduZWQtYzE=\x9c",
    "csi-8bit": "\x9b7331q",
    "osc-8bit": "\x9d0;pwned-c1\x9c",
    "dcs": "\x1bP1$qm\x1b\\",
    "apc": "\x1b_pwned-apc\x1b\\",
    "pm": "\x1b^pwned-pm\x1b\\",
    "sos": "\x1bXpwned-sos\x1b\\",
    "lone-esc": "x\x1by",
    "c0": "a\x08\x08b\x07c\rd",
    "bidi": "safe\u202eexe.txt",
}
ALL = "".join(f"<{name}>{p}</{name}>\n" for name, p in PAYLOADS.items())

#: what a terminal would obey (C0 but newline/tab, DEL, C1, bidi overrides)
RAW = frozenset(
    [chr(c) for c in range(0x20) if chr(c) not in "\n\t"]
    + [chr(c) for c in range(0x7F, 0xA0)]
    + ["\u202e", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069", "\u200b"]
)


def raw_controls(text: str) -> list[str]:
    """The characters in ``text`` a terminal would act on (empty: nothing got through)."""
    return sorted({f"U+{ord(ch):04X}" for ch in text if ch in RAW})


def run_bytes(
    project: Project, *args: str, env: Mapping[str, str] | None = None
) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "reasonix", *args],
        cwd=project.root,
        env=dict(env or project.env()),
        capture_output=True,
        timeout=60,
        check=False,
    )
    return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")


def assert_clean(*outputs: str) -> None:
    for out in outputs:
        assert raw_controls(out) == [], out


# -- controls -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_control_the_detector_catches_a_direct_print(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.stdout.write({ALL!r})"],
        capture_output=True,
        check=True,
        timeout=30,
    )
    found = raw_controls(proc.stdout.decode("utf-8"))
    # ESC, C1 CSI/OSC/ST, BEL, backspace, CR, the bidi override: each class is seen.
    for code in ("U+001B", "U+009B", "U+009D", "U+009C", "U+0007", "U+0008", "U+000D", "U+202E"):
        assert code in found


@pytest.mark.slow
def test_control_payloads_travel_intact_through_json(project: Project) -> None:
    project.ex.push(Reply.text(ALL))
    code, out, err = run_bytes(project, "run", "--output-format", "json", "hello")
    assert code == 0, err
    (result,) = json_lines(out)
    assert result["result"] == ALL  # the model's bytes reached us untouched...
    assert_clean(out, err)  # ...and JSON carries them escaped, C1 controls included


# -- headless -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_model_answer_in_text_output(project: Project) -> None:
    project.ex.push(Reply.text(ALL))
    code, out, err = run_bytes(project, "run", "hello")
    assert code == 0, err
    assert_clean(out, err)
    assert "pwned-st" in out and "\\x1b]52;c;" in out  # shown, as visible text
    assert "\\x9b7331q" in out


@pytest.mark.slow
def test_stream_json_events(project: Project) -> None:
    project.ex.push(
        Reply.call("bash", {"command": "printf 'tool %s' \"$(cat payload.txt)\""}),
        Reply.text(ALL, reasoning=ALL),
    )
    (project.root / "payload.txt").write_text(ALL)
    code, out, err = run_bytes(project, "run", "--yes", "--output-format", "stream-json", "go")
    assert code == 0, err
    assert_clean(out, err)
    texts = [e.get("text", "") for e in json_lines(out) if e.get("kind") == "text_delta"]
    assert "".join(texts) == ALL


@pytest.mark.slow
def test_provider_error_message(project: Project) -> None:
    project.ex.push(Reply.failing(Fault(status=400, message=f"bad request {ALL}")))
    code, out, err = run_bytes(project, "run", "hello")
    assert code == 1
    assert "bad request" in err
    assert_clean(out, err)


@pytest.mark.slow
def test_tool_output_and_file_content_in_sessions_show_and_export(project: Project) -> None:
    (project.root / "notes.txt").write_text(ALL)
    project.ex.push(
        Reply.calls(
            ("read_file", {"path": "notes.txt"}),
            ("bash", {"command": "cat notes.txt; printf '\\033]52;c;YmFzaA==\\033\\\\'"}),
        ),
        Reply.text(f"done {ALL}"),
    )
    code, out, err = run_bytes(project, "run", "--yes", "--output-format", "json", "read it")
    assert code == 0, err
    session = json_lines(out)[0]["session_id"]

    code, out, err = run_bytes(project, "sessions", "show", session)
    assert code == 0, err
    assert_clean(out, err)
    assert "pwned-apc" in out  # the transcript is there, made visible

    for fmt in ("markdown", "json"):
        code, out, err = run_bytes(project, "sessions", "export", session, "--format", fmt)
        assert code == 0, err
        assert_clean(out, err)
    code, out, err = run_bytes(project, "sessions", "list")
    assert code == 0, err
    assert_clean(out, err)


@pytest.mark.slow
def test_config_value_in_reasonix_config(project: Project) -> None:
    project.write_toml(f"[permissions]\nallow = [{json.dumps('bash(' + ALL + ')')}]\n")
    code, out, err = run_bytes(project, "config")
    assert code == 0, err
    assert_clean(out, err)
    assert "pwned-bel" in out


@pytest.mark.slow
def test_bad_config_value_in_the_error(project: Project) -> None:
    project.write_toml(f"[permissions]\nmode = {json.dumps(ALL)}\n")
    code, out, err = run_bytes(project, "run", "hello")
    assert code == 2
    assert "mode" in err
    assert_clean(out, err)


@pytest.mark.slow
def test_mcp_server_stderr_in_doctor(project: Project) -> None:
    server = project.root / "noisy_server.py"
    server.write_text(f"import sys\nsys.stderr.write({ALL!r})\nsys.exit(3)\n")
    add_user_config(
        project,
        f'[[mcp.servers]]\nname = "noisy"\ncommand = {json.dumps(sys.executable)}\n'
        f"args = [{json.dumps(str(server))}]\n",
    )
    code, out, err = run_bytes(project, "doctor")
    assert code in (0, 1), err
    assert "noisy" in out
    assert_clean(out, err)


# -- interactive --------------------------------------------------------------------------------

#: sequences the app itself never writes (Rich and prompt_toolkit do write colours and cursor
#: moves), so any of them in the pty output came from the payload
MARKERS = (
    "\x1b[7331q",
    "\x9b",
    "\x9d",
    "\x9c",
    "\x1b]0;pwned",
    "\x1b]52;",
    "\x1bP1$qm",
    "\x1b_pwned",
    "\x1b^pwned",
    "\x1bXpwned",
    "\x08\x08b",
    "\u202e",
)


def spawn(project: Project) -> tuple[pexpect.spawn, io.StringIO]:
    env = project.env(PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color", COLUMNS="120")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "reasonix"],
        cwd=str(project.root),
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 120),
    )
    log = io.StringIO()
    child.logfile_read = log
    return child, log


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
def test_interactive_every_source(project: Project) -> None:
    ex, pl = project.ex, project.pl
    (project.root / "payload.txt").write_text(ALL)
    one_line = ALL.replace("\n", " ")
    ex.push(
        Reply.text(f"answer {ALL}", reasoning=f"thinking {ALL}"),
        Reply.calls(
            ("read_file", {"path": "payload.txt"}),
            ("bash", {"command": "cat payload.txt"}),
        ),
        Reply.text("read both"),
        Reply.text("plan done"),
        Reply.text("plan done, really"),  # told its step is still open, it stops again
        Reply.failing(Fault(status=400, message=f"refused {one_line}")),
    )
    pl.push(
        Reply.call(
            "submit_plan",
            {
                "objective": f"Objective {one_line}",
                "steps": [{"title": f"Step {one_line}", "verify": ""}],
            },
        )
    )
    project.write_toml('[permissions]\nmode = "yolo"\n')
    child, log = spawn(project)
    try:
        child.expect("›")
        child.sendline("say it")
        child.expect("answer")
        child.expect("›")
        child.sendline("/reasoning")
        child.expect("thinking")
        child.expect("›")
        child.sendline("read the payload")
        child.expect("read both")
        child.expect("›")
        child.sendline("/plan do it")
        child.expect("plan done")
        child.expect("›")
        child.sendline("/todo")
        child.expect("Step")
        child.expect("›")
        child.sendline("fail now")
        child.expect("refused")
        child.expect("›")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    output = log.getvalue()
    assert "pwned-st" in output  # the payload text was shown...
    leaked = [m for m in MARKERS if m in output]
    assert leaked == []  # ...and none of it as a sequence


# -- the sanitiser's own rules --------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_terminal_safe_neutralises_each_class(name: str) -> None:
    shown = terminal_safe(PAYLOADS[name])
    assert raw_controls(shown) == []


@pytest.mark.parametrize("name", sorted(set(PAYLOADS) - {"lone-esc", "c0", "bidi"}))
def test_model_bound_output_loses_whole_sequences(name: str) -> None:
    # bash and MCP output go to the model without the sequences (colour codes are noise);
    # OSC ended by ST and the 8-bit forms included.
    assert strip_escape_sequences(f"a{PAYLOADS[name]}b") == "ab"
