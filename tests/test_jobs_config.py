"""The ``[jobs]`` keys: the README's example loads; a project file cannot keep jobs running
after the session (``keep_on_exit`` is the user's alone) but may lower ``max_running``; a bad
value says what is valid."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reasonix.config import load_config
from reasonix.errors import ConfigError

README = Path(__file__).resolve().parent.parent / "README.md"


def test_the_readme_example_is_valid_user_config(tmp_path: Path) -> None:
    block = re.search(r"```toml\n(\[jobs\].*?)```", README.read_text(), re.DOTALL)
    assert block is not None, "the README shows a [jobs] example"
    user = tmp_path / "config.toml"
    user.write_text(block.group(1))
    config = load_config(tmp_path, user_config=user)
    assert config.jobs.keep_on_exit is False and config.jobs.max_running == 8
    assert config.provenance["jobs.keep_on_exit"].startswith("user:")


def test_a_project_file_cannot_keep_jobs_but_may_lower_the_bound(tmp_path: Path) -> None:
    (tmp_path / "reasonix.toml").write_text("[jobs]\nkeep_on_exit = true\nmax_running = 2\n")
    config = load_config(tmp_path, user_config=tmp_path / "none.toml", trust=True)
    assert config.jobs.keep_on_exit is False
    assert config.jobs.max_running == 2
    assert any("jobs.keep_on_exit" in note for note in config.ignored), config.ignored


def test_a_bad_bound_says_what_is_valid(tmp_path: Path) -> None:
    user = tmp_path / "config.toml"
    user.write_text("[jobs]\nmax_running = 0\n")
    with pytest.raises(ConfigError, match="max_running"):
        load_config(tmp_path, user_config=user)
