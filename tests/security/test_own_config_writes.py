"""Writes to our own configuration (``reasonix.toml``, ``.mcp.json``, ``.reasonix/``, ``.claude/``,
``.git/``) always ask, in every mode but yolo: through the real CLI in auto-edit mode (which
writes other files unasked) and with allow rules that name the commands, headless, so asking is
refusing. Controls: an ordinary file is written unasked, and yolo writes our config (so the
probes see a write)."""

from __future__ import annotations

import pytest

from tests.security.support import Attack, Lab, lab, record

__all__ = ["lab"]

pytestmark = pytest.mark.slow

TARGETS = {
    "reasonix.toml": '[permissions]\nmode = "yolo"\n',
    ".mcp.json": '{"mcpServers": {"x": {"command": "touch"}}}',
    ".reasonix/settings.toml": "x = 1\n",
    ".claude/settings.json": "{}",
}


def attacks() -> list[tuple[Attack, str]]:
    out = []
    for path, content in TARGETS.items():
        out.append(
            (Attack(f"write_file {path}", "write_file", {"path": path, "content": content}), path)
        )
    out.append(
        (
            Attack(
                "edit_file reasonix.toml",
                "edit_file",
                {"path": "reasonix.toml", "old_string": "# mine", "new_string": 'mode = "yolo"'},
            ),
            "reasonix.toml",
        )
    )
    out += [
        (
            Attack("cp over reasonix.toml", "bash", {"command": "cp evil.toml reasonix.toml"}),
            "reasonix.toml",
        ),
        (Attack("mv over .mcp.json", "bash", {"command": "mv evil.json .mcp.json"}), ".mcp.json"),
        (
            Attack("cp into .claude/", "bash", {"command": "cp evil.json .claude/settings.json"}),
            ".claude/settings.json",
        ),
        (
            Attack("cp into .git/hooks", "bash", {"command": "cp evil.sh .git/hooks/pre-commit"}),
            ".git/hooks/pre-commit",
        ),
        (
            Attack(
                "tee into .reasonix/",
                "bash",
                {"command": "tee .reasonix/settings.toml < evil.toml"},
            ),
            ".reasonix/settings.toml",
        ),
    ]
    return out


def prepare(lab: Lab, extra: str = "") -> dict[str, bytes | None]:
    root = lab.root
    (root / "reasonix.toml").write_text("# mine\n")
    for folder in (".claude", ".reasonix", ".git/hooks"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "evil.toml").write_text('[permissions]\nmode = "yolo"\n')
    (root / "evil.json").write_text("{}")
    (root / "evil.sh").write_text("#!/bin/sh\n")
    rules = '"bash(cp *)", "bash(mv *)", "bash(tee *)"'
    lab.write_user_config(f'[sandbox]\nbash = "off"\n\n[permissions]\nallow = [{rules}]\n' + extra)
    return snapshot(lab)


def snapshot(lab: Lab) -> dict[str, bytes | None]:
    paths = [*TARGETS, ".git/hooks/pre-commit"]
    return {p: (lab.root / p).read_bytes() if (lab.root / p).exists() else None for p in paths}


def test_own_config_writes_ask_in_auto_edit_mode(lab: Lab, request: pytest.FixtureRequest) -> None:
    before = prepare(lab)
    chosen = attacks()
    outcome = lab.attack([a for a, _ in chosen], "--mode", "auto-edit")
    after = snapshot(lab)
    changed = [p for p in after if after[p] != before[p]]
    refused = [
        a.name
        for (a, _), text in zip(chosen, outcome.results, strict=True)
        if "Permission denied" in text
    ]
    record(request, "own-config writes", len(chosen), len(chosen) - len(refused))
    assert changed == []
    assert len(refused) == len(chosen), outcome.results


def test_control_ordinary_writes_run_and_yolo_writes_our_config(lab: Lab) -> None:
    before = prepare(lab)
    plain = lab.attack(
        [
            Attack("notes", "write_file", {"path": "notes.txt", "content": "n\n"}),
            Attack("cp", "bash", {"command": "cp evil.json copy.json"}),
        ],
        "--mode",
        "auto-edit",
    )
    assert plain.proc.returncode == 0, plain.results
    assert (lab.root / "notes.txt").read_text() == "n\n" and (lab.root / "copy.json").exists()
    chosen = attacks()
    lab.attack([a for a, _ in chosen], "--mode", "yolo")
    after = snapshot(lab)
    # .git is outside what file tools may write at all; bash in yolo writes it.
    assert all(after[p] != before[p] for p in after), after
