"""Terminal injection through the surfaces added this wave, in ``reasonix run`` text mode: the
``ask`` tool's questions, headers, labels and descriptions, and the notice listing background
jobs still running when the run ends (their command lines). An OSC 52 clipboard write, an 8-bit
CSI and a DCS string must never reach stdout or stderr raw. The control shows the probe
recognises each raw sequence in the payload."""

from __future__ import annotations

from typing import Any

import pytest

from reasonix.testing import Reply
from tests.security.support import Attack, Lab, kill_all, lab, processes_with_arg, record

__all__ = ["lab"]

OSC52 = "\x1b]52;c;cHduZWQ=\x07"
C1_CSI = "\x9b31m"
DCS = "\x1bP1$r0m\x1b\\"
PAYLOAD = OSC52 + C1_CSI + DCS

RAW = ("\x1b]52", "\x9b", "\x1bP")


def _questions() -> list[dict[str, Any]]:
    return [
        {
            "question": f"Pick one {PAYLOAD}?",
            "header": "H\x1b]52;c;x\x07",
            "options": [
                {"label": f"A{C1_CSI}", "description": f"first {PAYLOAD}"},
                {"label": "B", "description": f"second {DCS}"},
            ],
            "multiSelect": False,
        }
    ]


def _raw_in(text: str) -> list[str]:
    return [r for r in RAW if r in text]


@pytest.mark.slow
def test_ask_questions_reach_the_terminal_harmless(
    lab: Lab, request: pytest.FixtureRequest
) -> None:
    lab.ex.push(Reply.call("ask", {"questions": _questions()}))
    proc = lab.cli("run", "--no-planner", "--output-format", "text", "go")
    raw = _raw_in(proc.stdout + proc.stderr)
    record(request, "terminal injection (new surfaces)", 1, int(bool(raw)))
    assert "Pick one" in proc.stdout, (proc.stdout, proc.stderr)
    assert raw == []


@pytest.mark.slow
def test_job_notices_reach_the_terminal_harmless(lab: Lab, request: pytest.FixtureRequest) -> None:
    lab.write_user_config("[jobs]\nkeep_on_exit = true\n")
    command = f"sleep 31.7 # {PAYLOAD}"
    job = Attack("job", "bash", {"command": command, "run_in_background": True})
    lab.ex.push(Reply.call(job.tool, job.args), Reply.text("started"))
    try:
        proc = lab.cli("run", "--yes", "--no-planner", "--output-format", "text", "go")
    finally:
        kill_all(processes_with_arg("31.7"))  # the kept job
    raw = _raw_in(proc.stdout + proc.stderr)
    record(request, "terminal injection (new surfaces)", 1, int(bool(raw)))
    assert "job-1" in proc.stdout + proc.stderr, (proc.stdout, proc.stderr)
    assert raw == []


def test_control_the_probe_sees_raw_sequences() -> None:
    assert _raw_in(PAYLOAD) == list(RAW)
