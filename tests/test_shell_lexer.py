"""The shell lexer and what permission rules make of its parse: each construct the rules depend
on, and the normalisation deny rules match after (fast, in-process; the CLI-level attacks are in
tests/security/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonix.safety.shell.lexer import parse
from reasonix.safety.shell.rules import allow_obstacle, command_forms, rule_matches


def names(command: str) -> list[tuple[str, ...]]:
    return [c.argv for c in parse(command).commands if c.words]


def test_a_newline_inside_a_comment_looking_quote_still_ends_the_command() -> None:
    assert names("echo ok #'\ntouch x #'") == [("echo", "ok"), ("touch", "x")]
    assert names("echo 'a # b'") == [("echo", "a # b")]
    assert names("echo a#b") == [("echo", "a#b")]


def test_quotes_backslashes_and_ansi_c_quotes_are_removed() -> None:
    assert names("r''m \\-rf \"x y\" $'\\x72m' $'\\162'") == [("rm", "-rf", "x y", "rm", "r")]
    assert names("echo a\\\nb") == [("echo", "ab")]


def test_every_nested_command_is_found() -> None:
    script = parse("echo $(id -u) `whoami` <(ls) >(cat) $((1 + $(date +%s))) ${x:-$(uname)}")
    found = {c.argv[0] for c in script.commands if c.words}
    assert {"id", "whoami", "ls", "cat", "date", "uname", "echo"} <= found
    assert script.substitutions
    assert names("(cd sub && make) | { grep x; }") == [("cd", "sub"), ("make",), ("grep", "x")]
    loops = "for f in *.py; do rm $f; done; case $x in a|b) touch y;; *) ls;; esac"
    assert [n[0] for n in names(loops)] == ["rm", "touch", "ls"]
    assert [n[0] for n in names("f() { rm -rf /; }; f")] == ["rm", "f"]
    assert [n[0] for n in names("if true; then echo a; elif b; then c; else d; fi")] == [
        "true",
        "echo",
        "b",
        "c",
        "d",
    ]


def test_here_documents() -> None:
    expanding = parse("cat <<EOF\n$(rm a)\nEOF\necho after")
    assert [c.argv for c in expanding.commands if c.words] == [
        ("cat",),
        ("rm", "a"),
        ("echo", "after"),
    ]
    quoted = parse("cat <<'EOF'\n$(rm a)\nEOF")
    assert [c.argv for c in quoted.commands if c.words] == [("cat",)] and not quoted.substitutions
    assert names("cat <<-EOF\n\tbody\n\tEOF\nls") == [("cat",), ("ls",)]


def test_redirections_are_seen_and_classified() -> None:
    (cmd,) = parse("echo hi 2>&1 >out.txt <in.txt").commands
    ops = [(r.op, r.fd, r.writes, r.reads) for r in cmd.redirects]
    assert ops == [(">&", "2", False, False), (">", "", True, False), ("<", "", False, True)]
    after_loop = parse("while read l; do echo $l; done > log").commands
    assert any(r.writes for c in after_loop for r in c.redirects)
    (test,) = parse("[[ a > b && -n x ]]").commands
    assert not test.redirects


def test_what_cannot_be_analysed_is_reported() -> None:
    for broken in ("echo 'open", 'echo "open', "echo $(open", "echo `open", "case x in a) ls"):
        assert parse(broken).problems, broken
    assert parse("shopt -s expand_aliases; alias l=rm").problems


DENY = "rm -rf *"


@pytest.mark.parametrize(
    "command",
    [
        "r''m -rf x", "\\rm -rf x", '"rm" -rf x', "/bin/rm -rf x", "rm -fr x", "rm -r -f x",
        "rm -R -f x", "rm --recursive --force x", "rm -rfv x", "rm x -rf",
        "bash -lc 'rm -rf x'", "sh -c \"rm -rf x\"", "eval 'rm -rf x'", "eval rm -rf x",
        "env -i rm -rf x", "env FOO=1 rm -rf x", "FOO=1 rm -rf x", "nice -n 5 rm -rf x",
        "timeout -s KILL 5 rm -rf x", "command -p rm -rf x", "exec rm -rf x", "xargs rm -rf",
        "sudo -u root rm -rf x", "nohup rm -rf x", "setsid -w rm -rf x", "stdbuf -o0 rm -rf x",
        "find . -exec rm -rf {} +", "x=rm; $x -rf y", "$(echo rm) -rf x", "{r,}m -rf x",
        "trap 'rm -rf x' EXIT", "env -S 'rm -rf x'", "echo rm -rf x | bash", "rm -rf $target",
    ],
)  # fmt: skip
def test_deny_rules_see_through_normalisation(command: str) -> None:
    assert rule_matches(DENY, command_forms(command)), command


@pytest.mark.parametrize(
    "command",
    ["rm -f error.log", "rm -r build", "echo rm -rf x", "git rm -r --cached x", "ls -rf",
     "grep -rf patterns .", "bash script.sh"],
)  # fmt: skip
def test_deny_rules_do_not_catch_what_they_do_not_name(command: str) -> None:
    assert not rule_matches(DENY, command_forms(command)), command


def test_dev_tcp_and_unparsable_lines_match_any_deny_rule() -> None:
    assert rule_matches("curl *", command_forms("exec 3<>/dev/tcp/10.0.0.1/80"))
    assert rule_matches("curl *", command_forms("echo 'open"))
    assert not rule_matches("curl *", command_forms("echo fine"))


ALLOWED = [
    "cat seed.txt",
    "sed -n 1p seed.txt",
    "git diff",
    "ls *.txt",
    "echo /etc",
    "cd sub && cat x",
    "cat < seed.txt",
    "grep -r x .",
    "awk '{print $1}' seed.txt",
]
NOT_ALLOWED = [
    "cat link",
    "cat ../secret",
    "cat l*",
    "cd .. && cat secret",
    "cat /proc/self/environ",
    "echo $HOME",
    "cat ~/.ssh/id_rsa",
    "X=1 cat seed.txt",
    "sed -e 'w out' seed.txt",
    "sed --in-place s/a/b/ seed.txt",
    "awk -f prog.awk",
    "git --config-env=a=B log",
    "tee out",
    "sort -o out seed.txt",
    "cp a reasonix.toml",
    "cat < ../secret",
    "grep -f../secret seed.txt",
    "git checkout -- reasonix.toml",
]


def test_allow_obstacles(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "seed.txt").write_text("x\n")
    (tmp_path / "secret").write_text("s\n")
    (ws / "link").symlink_to(tmp_path / "secret")

    def obstacle(command: str) -> str | None:
        return allow_obstacle(parse(command), ws)

    for fine in ALLOWED:
        assert obstacle(fine) is None, fine
    for bad in NOT_ALLOWED:
        assert obstacle(bad) is not None, bad
