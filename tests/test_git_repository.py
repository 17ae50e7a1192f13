"""A repository's own git configuration: which settings make git run a program."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reasonix.safety.git_repository import command_settings, repository_obstacle


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("[core]\n\tfsmonitor = touch x #\n", ["core.fsmonitor"]),
        ("[core] fsmonitor = x\n", ["core.fsmonitor"]),  # a key on the header's line
        ("[CoRe]\nFSMonitor=x\n", ["core.fsmonitor"]),  # names are case-insensitive
        ('[diff "Foo"]\n textconv = x\n', ["diff.Foo.textconv"]),
        ("[filter.x]\nclean = y\n", ["filter.x.clean"]),  # the old [section.sub] spelling
        ("[include]\npath = other\n", ["include.path"]),
        ("[alias]\n st = status\n x = !sh\n", ["alias.x"]),
        ('[core]\n\tbare = false\n[remote "origin"]\n\turl = x\n', []),
        ("[core\n", ["?"]),  # what cannot be read is reported
    ],
)
def test_command_settings(text: str, found: list[str]) -> None:
    assert command_settings(text) == found


def test_a_linked_worktree_is_checked_through_its_common_folder(tmp_path: Path) -> None:
    main = tmp_path / "main"
    subprocess.run(["git", "init", "-q", str(main)], check=True)
    other = tmp_path / "other"
    subprocess.run(
        [
            "git",
            "-C",
            str(main),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        check=True,
    )
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(other)], check=True)
    assert repository_obstacle(other) is None
    with (main / ".git" / "config").open("a") as fh:
        fh.write("[diff]\n\texternal = x\n")
    assert "diff.external" in (repository_obstacle(other) or "")
