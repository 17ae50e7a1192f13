"""The protected list derived from a repository's own git configuration, the file-tool question
it feeds, and a background job's guard record (real git, real files, no sandbox needed)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from reasonix.safety.plants import CreationGuard, approved_write, running_plants
from reasonix.safety.protected import (
    config_named_files,
    git_named_paths,
    protected_paths,
    protection,
)


def _git(root: Path, *args: str) -> None:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    return root.resolve()


def _named(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): why for p, why in git_named_paths(root)}


def test_a_plain_repository_names_nothing_in_the_work_tree(repo: Path) -> None:
    assert _named(repo) == {}
    assert protection(repo / "src" / "main.py", repo) is None
    assert protection(repo / ".git" / "config", repo) is not None
    assert protection(repo / ".mcp.json", repo) is not None
    assert protection(repo / ".vscode" / "tasks.json", repo) is not None
    assert protection(repo / ".bashrc", repo) is not None
    assert protection(repo / "sub" / ".mcp.json", repo) is not None  # a run started in sub/
    assert protection(repo / "sub" / "notes.json", repo) is None


def test_what_the_configuration_points_at_is_protected(repo: Path) -> None:
    _git(repo, "config", "core.hooksPath", ".husky/_")
    _git(repo, "config", "include.path", "../shared.gitconfig")
    _git(repo, "config", "includeIf.gitdir:/x/.path", "../cond.gitconfig")
    _git(repo, "config", "core.attributesFile", "attrs/global")
    _git(repo, "config", "filter.fmt.clean", "sh tools/clean.sh --fast")
    _git(repo, "config", "core.fsmonitor", "./watch.sh")
    named = _named(repo)
    for rel in (
        ".husky/_",
        ".husky",
        "shared.gitconfig",
        "cond.gitconfig",
        "attrs/global",
        "tools/clean.sh",
        "watch.sh",
        ".gitattributes",
        ".git/info/attributes",
        ".pre-commit-config.yaml",
        "lefthook.yml",
    ):
        assert rel in named, (rel, named)
    assert "sh" not in named and "--fast" not in named
    assert "which git runs" in (protection(repo / ".husky" / "pre-commit", repo) or "")
    assert protection(repo / "tools" / "other.sh", repo) is None


def test_an_included_file_is_read_for_what_it_names(repo: Path) -> None:
    _git(repo, "config", "include.path", "../extra.gitconfig")
    (repo / "extra.gitconfig").write_text("[core]\n\thooksPath = githooks\n")
    named = _named(repo)
    assert "extra.gitconfig" in named and "githooks" in named
    assert repo / "githooks" in protected_paths(repo)


def test_the_users_configuration_is_read_where_git_reads_it(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIT_CONFIG_GLOBAL replaces ~/.gitconfig for git: a relative hooks path set there points
    # into this work tree as one in ~/.gitconfig would.
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    assert "myhooks" not in _named(repo)
    global_config = tmp_path / "global.gitconfig"
    global_config.write_text("[core]\n\thooksPath = myhooks\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(global_config))
    assert _named(repo).get("myhooks") == "core.hooksPath"
    assert "which git runs" in (protection(repo / "myhooks" / "pre-commit", repo) or "")


def test_a_hooks_path_that_is_the_work_tree_protects_the_hook_names(repo: Path) -> None:
    _git(repo, "config", "core.hooksPath", ".")
    named = _named(repo)
    assert "pre-commit" in named and "post-checkout" in named
    assert "." not in named


def test_a_jobs_guard_keeps_an_approved_write_and_undoes_the_rest(tmp_path: Path) -> None:
    root = (tmp_path / "w").resolve()
    root.mkdir()
    records = tmp_path / "records"
    guard = CreationGuard.start([root], lasting=True, record_dir=records)
    (root / ".claude" / "commands").mkdir(parents=True)
    (root / ".claude" / "commands" / "notes.md").write_bytes(b"approved\n")
    approved_write(root / ".claude" / "commands" / "notes.md", b"approved\n")
    (root / ".claude" / "settings.json").write_text("{}")  # the job's plant beside it
    (root / ".mcp.json").write_text("{}")
    assert running_plants(records, root) == [".claude", ".mcp.json"]
    (root / ".claude" / "commands" / "notes.md").write_bytes(b"replaced by the job\n")
    undone = guard.finish()
    assert ".mcp.json" in undone and ".claude" in undone
    assert (root / ".claude" / "commands" / "notes.md").read_bytes() == b"approved\n"
    assert not (root / ".claude" / "settings.json").exists()
    assert not (root / ".mcp.json").exists()
    assert running_plants(records, root) == [] and not list(records.glob("*.json"))


@pytest.mark.slow
def test_a_record_of_a_job_that_ended_without_the_undo_keeps_blocking(tmp_path: Path) -> None:
    root = (tmp_path / "w").resolve()
    root.mkdir()
    records = tmp_path / "records"
    records.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    record = records / "dead.json"
    data = {"pid": dead.pid, "job": None, "absent": [str(root / ".mcp.json")], "approved": {}}
    record.write_text(json.dumps(data))
    assert running_plants(records, root) == []
    assert not record.exists()  # nothing left: the record goes
    record.write_text(json.dumps(data))
    (root / ".mcp.json").write_text("{}")
    assert running_plants(records, root) == [".mcp.json"]
    assert record.exists()
    (root / ".mcp.json").unlink()
    assert running_plants(records, root) == [] and not record.exists()


def test_a_workspace_below_the_repository_root_gets_what_the_repository_names_in_it(
    repo: Path,
) -> None:
    sub = repo / "app"
    sub.mkdir()
    _git(repo, "config", "core.hooksPath", "app/hooks")
    _git(repo, "config", "include.path", "../app/local.gitconfig")
    named = _named(sub)
    assert "hooks" in named and "local.gitconfig" in named, named


def test_a_symlinked_config_folder_is_protected_where_it_leads(repo: Path) -> None:
    from reasonix.safety.protected import bind_arguments

    (repo / "shared" / "claude").mkdir(parents=True)
    (repo / ".claude").symlink_to("shared/claude")
    args = bind_arguments([repo])
    real = str(repo / "shared" / "claude")
    assert any(args[k : k + 3] == ["--ro-bind", real, real] for k in range(len(args) - 2)), args
    # The file tools see the resolved path: it still asks.
    assert "symlink" in (protection(repo / "shared" / "claude" / "settings.json", repo) or "")


def test_the_users_own_relative_hooks_path_counts(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = repo.parent / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        '[core]\n\thooksPath = .githooks\n[filter "lfs"]\n\tclean = git-lfs clean -- %f\n'
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    named = _named(repo)
    assert ".githooks" in named
    assert ".gitattributes" not in named  # the user's own lfs driver runs git-lfs, not a plant


@pytest.mark.parametrize(
    "command",
    [
        "sh scripts/run.sh>/dev/null 2>&1",
        "sh scripts/run.sh<input.txt",
        "sh scripts/run.sh& wait",
        "LOG=1 sh scripts/run.sh;true",
        "sh -c 'cd scripts && sh ./run.sh'",
        "echo $(sh scripts/run.sh)",
    ],
)
def test_a_hooks_script_is_found_however_the_command_is_spelled(
    tmp_path: Path, command: str
) -> None:
    root = tmp_path.resolve()
    (root / "scripts").mkdir()
    (root / "scripts" / "run.sh").write_text("echo hi\n")
    hooks = {"SessionStart": [{"hooks": [{"type": "command", "command": command}]}]}
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    assert root / "scripts" / "run.sh" in config_named_files(root)
    assert "a program our own configuration runs" in (
        protection(root / "scripts" / "run.sh", root) or ""
    )
