"""Subprocess environments come from an allowlist plus what the user configures."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from reasonix.safety.environment import build_environment, git_environment, take_from_environment

PARENT = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/me",
    "LANG": "C.UTF-8",
    "LC_CTYPE": "C.UTF-8",
    "VIRTUAL_ENV": "/home/me/.venv",
    "AWS_SECRET_ACCESS_KEY": "aws",
    "GITHUB_TOKEN": "ghp",
    "NPM_TOKEN": "npm",
    "HTTPS_PROXY": "http://user:pass@proxy:3128",
    "DEEPSEEK_API_KEY": "sk",
    "GIT_DIR": "/elsewhere/.git",
    "MY_TOOL_HOME": "/opt/tool",
}


def test_only_allowlisted_variables_pass() -> None:
    env = build_environment(base=PARENT)
    assert env == {
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/me",
        "LANG": "C.UTF-8",
        "LC_CTYPE": "C.UTF-8",
        "VIRTUAL_ENV": "/home/me/.venv",
    }


def test_the_user_adds_patterns_and_values_but_withheld_names_stay_out() -> None:
    env = build_environment(
        base=PARENT,
        include=["MY_TOOL_*", "HTTPS_PROXY", "*_API_KEY"],
        withheld=["DEEPSEEK_API_KEY"],
        extra={"CI": "1", "PATH": "/custom"},
    )
    assert env["MY_TOOL_HOME"] == "/opt/tool" and env["HTTPS_PROXY"].startswith("http://")
    assert "DEEPSEEK_API_KEY" not in env  # withheld beats a pattern
    assert env["CI"] == "1" and env["PATH"] == "/custom"  # explicit values win
    assert "GITHUB_TOKEN" not in env and "AWS_SECRET_ACCESS_KEY" not in env


def test_git_environment_cannot_be_steered_from_outside() -> None:
    env = git_environment(base=PARENT)
    assert "GIT_DIR" not in env and "GITHUB_TOKEN" not in env
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_TERMINAL_PROMPT"] == "0"


@pytest.mark.slow
def test_taken_keys_leave_the_process_environment() -> None:
    # In a child process, so this test run's own environment is untouched.
    code = (
        "import os\n"
        "from reasonix.safety.environment import take_from_environment\n"
        "got = take_from_environment(['PROBE_KEY', 'PROBE_UNSET'])\n"
        "raw = open(f'/proc/{os.getpid()}/environ', 'rb').read()\n"
        "print(got == {'PROBE_KEY': 'sk-probe-1'}, 'PROBE_KEY' in os.environ,"
        " b'sk-probe-1' in raw, b'PROBE_OTHER=kept' in raw)\n"
    )
    env = {**os.environ, "PROBE_KEY": "sk-probe-1", "PROBE_OTHER": "kept"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    if sys.platform.startswith("linux"):
        assert out == ["True", "False", "False", "True"]
    else:
        assert out[:2] == ["True", "False"]
    assert take_from_environment([]) == {}
