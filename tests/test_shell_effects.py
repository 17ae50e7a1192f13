"""The one record of what a shell command does (:mod:`reasonix.safety.shell.effects`) and the
rules "allow for this session" proposes from it: a row per command and per program, no process
run, milliseconds a row. The attack suites in tests/security/ prove the same through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonix.app.approvals import proposed_session_rules
from reasonix.safety.permissions import ApprovalRequest, Mode, Rule, Rules, call_subject, decide
from reasonix.safety.shell.deletes import DELETERS
from reasonix.safety.shell.effects import PROGRAMS, effects
from reasonix.safety.shell.irreversible import _DESTROYERS, irreversible_reason
from reasonix.safety.shell.lexer import parse
from reasonix.safety.shell.programs import READERS
from reasonix.safety.shell.readers import read_only_obstacle
from reasonix.safety.shell.rules import _CHECKS, allow_obstacle, rule_matches, runs_commands
from reasonix.tools.builtin import default_registry
from reasonix.tools.registry import Tool

#: command -> (files it writes, programs that reach another machine, hidden or unclear)
EFFECTS: dict[str, tuple[tuple[str, ...], tuple[str, ...], bool]] = {
    "ls -la": ((), (), False),
    "rm -rf build dist": (("build", "dist"), (), False),
    "unlink a": (("a",), (), False),
    "touch a b": (("a", "b"), (), False),
    "mkdir -p x/y": (("x/y",), (), False),
    "chmod 644 a b": (("a", "b"), (), False),
    "chown me:me f": (("f",), (), False),
    "setfacl -m u:x:r f": (("f",), (), False),
    "cp a b c": (("c",), (), False),
    "ln -s a b": (("b",), (), False),
    "install -m 755 a /usr/local/bin/a": (("/usr/local/bin/a",), (), False),
    "mv a b": (("a", "b"), (), False),
    "tee log": (("log",), (), False),
    "dd if=/dev/zero of=disk.img": (("disk.img",), (), False),
    "sed -i s/a/b/ f": (("f",), (), False),
    "sed -i -e s/a/b/ f": (("s/a/b/", "f"), (), False),
    "sed s/a/b/ f": ((), (), False),
    "find . -name x -delete": ((".",), (), False),
    "find . -name x": ((), (), False),
    # -exec may change what it finds: the folder it starts from counts as written
    "find src -name x -exec grep -l y {} +": (("src",), (), False),
    "echo hi > out.txt": (("out.txt",), (), False),
    "echo hi > /dev/null 2>&1": ((), (), False),
    "sudo rm -f /etc/x": (("/etc/x",), (), False),
    "sh -c 'rm -f a'": (("a",), (), False),
    "curl -O https://x": ((), ("curl",), False),
    "wget https://x": ((), ("wget",), False),
    "nc host 80": ((), ("nc",), False),
    "scp a host:b": (("host:b",), ("scp",), False),
    "rsync -a src/ host:dst": (("host:dst",), ("rsync",), False),
    "timeout 5 curl x": ((), ("curl",), False),
    "echo $(id)": ((), (), True),
    "cat <<EOF\nbody\nEOF": ((), (), False),
    "echo 'open": ((), (), True),
}


@pytest.mark.parametrize("command", EFFECTS, ids=list(EFFECTS))
def test_effects_table(command: str) -> None:
    writes, off_host, opaque = EFFECTS[command]
    line = effects(command)
    assert (line.writes, line.off_host, line.opaque) == (writes, off_host, opaque)


def test_parts_redirects_and_runs() -> None:
    line = effects("git status && nice -n 5 make test > log; echo $HOME")
    assert line.parts == ["git status", "nice -n 5 make test > log", "echo $HOME"]
    assert line.redirects and not line.opaque
    assert ("make", "test") in line.runs and ("nice", "-n", "5", "make", "test") in line.runs
    assert ("echo", None) in line.runs
    assert not effects("ls 2>&1 >/dev/null").redirects
    assert effects("ls >&-").redirects is False


def test_computed_once_per_text() -> None:
    assert effects("ls -la src") is effects("ls -la src")
    assert effects("ls -la src") is not effects("ls -la  src")


#: what the proposed rule of ``NAME x`` is, by the kind of program
#: exact: every use asks on its own (it deletes, writes, fetches, changes processes or
#: services, or runs code given to it)
EXACT = frozenset(
    {"rm", "rmdir", "unlink", "shred", "srm", "wipe", "truncate", "tee", "mv", "chmod", "chown",
     "chgrp", "setfacl", "chattr", "cp", "ln", "install", "rsync", "scp", "dd", "mkfs", "curl",
     "wget", "nc", "ncat", "socat", "kill", "pkill", "killall", "crontab", "systemctl", "docker",
     "podman", "python", "python3", "python2", "node", "perl", "ruby", "php", "lua", "Rscript",
     "osascript", "pwsh", "powershell"}
)  # fmt: skip
#: the rule keeps the second word (``bash(git x)``, ``bash(git x *)``)
SUBCOMMANDS = frozenset(
    {"git", "npm", "pnpm", "yarn", "cargo", "go", "pip", "pip3", "uv", "poetry", "pipenv",
     "pdm", "hatch", "tox", "nox", "conda", "make", "just", "gh", "kubectl", "helm",
     "terraform", "dotnet", "mvn", "gradle", "rustup", "brew", "apt", "apt-get", "dnf",
     "pacman", "bundle", "rake", "mix", "composer", "cmake", "ctest", "deno", "bun"}
)  # fmt: skip

#: every program the allow side, the read-only proof, the delete list, the irreversible list
#: or the table of effects knows
KNOWN = sorted({*READERS, *_CHECKS, *DELETERS, *_DESTROYERS, *PROGRAMS} - {"[", "[[", ":", "test"})


def _request(command: str) -> ApprovalRequest:
    exact = (f"bash({command})",)
    return ApprovalRequest("bash", "bash", {"command": command}, command, "r", exact, Mode.ASK)


def _expected(name: str) -> tuple[str, ...]:
    if name in EXACT or runs_commands(name):
        return (f"bash({name} x)",)
    if name in SUBCOMMANDS:
        return (f"bash({name} x)", f"bash({name} x *)")
    return (f"bash({name})", f"bash({name} *)")


@pytest.mark.parametrize("name", KNOWN)
def test_proposed_rule_for_every_known_program(name: str) -> None:
    assert proposed_session_rules(_request(f"{name} x")) == _expected(name)


def test_a_bare_interpreter_gets_no_rule() -> None:
    # alone it reads code from stdin: a rule for it would allow any script
    for name in ("python3", "node", "deno", "bun", "sh"):
        assert proposed_session_rules(_request(name)) == (), name
    assert proposed_session_rules(_request("make")) == ("bash(make)",)


def test_the_table_knows_every_program_of_the_exact_and_subcommand_lists() -> None:
    assert set(PROGRAMS) >= EXACT | SUBCOMMANDS
    assert {"cat", "grep", "sed", "find", "tar", "aws", "dropdb", "srm"} <= set(KNOWN)


@pytest.fixture
def bash(tmp_path: Path) -> Tool:
    return next(t for t in default_registry(tmp_path) if t.name == "bash")


#: commands whose proposed rules are probed with the forms below
BASES = ["git diff", "git log -3", "sort a", "tree", "grep -r x", "rg x", "find .", "ls -la",
         "make test", "npm test", "file a", "date", "awk 1 a", "sed -n 1p a", "tar -tf a.tar",
         "uniq a", "less a", "man ls", "printf x", "cat a"]  # fmt: skip
#: what may follow a proposed rule's stem: forms that write, run or reach what the text does
#: not show, and plain ones
TAILS = ["--output=x", "--out=x", "-o out", "-exec rm {} ;", "-delete", "-fprint x", "> f",
         "$(id)", "-i s/a/b/ f", "--pre=sh x", "-c core.pager=sh log", "x; rm -rf ~",
         "'BEGIN{system(\"id\")}'", "-xf a.tar", "-R", "a b", "--compile", "-C", "x", "-la",
         "--ext-diff", "-s 0101", "foo", "-v x", "&& curl x | sh"]  # fmt: skip


@pytest.mark.parametrize("base", BASES)
def test_a_proposed_rule_never_allows_a_form_the_allow_side_would_not_cover(
    base: str, bash: Tool, tmp_path: Path
) -> None:
    proposed = proposed_session_rules(_request(base))
    assert proposed, base
    rules = Rules(session_allow=tuple(Rule(r, "allow") for r in proposed))
    allowed = 0
    for tail in TAILS:
        probe = f"{base} {tail}"
        subject = call_subject(bash, {"command": probe}, tmp_path)
        if decide(bash, subject, Mode.ASK, rules).outcome == "allow":
            allowed += 1
            assert allow_obstacle(parse(probe), tmp_path) is None, probe
    assert allowed, "some probe is allowed by the rule (the probe reaches the rule)"


def test_the_probe_sees_a_rule_that_overreaches(bash: Tool, tmp_path: Path) -> None:
    # control: with the allow side's check switched off (a subject that claims no obstacle),
    # the same broad rule allows a form that writes a file the text does not show
    import dataclasses

    rules = Rules(session_allow=(Rule("bash(sort *)", "allow"),))
    subject = call_subject(bash, {"command": "sort -o out a"}, tmp_path)
    assert decide(bash, subject, Mode.ASK, rules).outcome != "allow"
    blind = dataclasses.replace(subject, obstacle=None)
    assert decide(bash, blind, Mode.ASK, rules).outcome == "allow"
    assert allow_obstacle(parse("sort -o out a"), tmp_path) is not None


#: git takes any unambiguous prefix of a long option: an abbreviation of one that deletes or
#: rewrites the remote's history is that option
ABBREVIATED_PUSH = [
    "git push --del origin x", "git push --forc", "git push --mirr backup",
    "git push --pru origin", "git push --force-w", "git push --delete=x",
]  # fmt: skip
PLAIN_PUSH = [
    "git push --dry-run", "git push --progress", "git push --porcelain",
    "git push --follow-tags", "git push --set-upstream origin x", "git push --",
]  # fmt: skip


@pytest.mark.parametrize("command", ABBREVIATED_PUSH)
def test_an_abbreviated_push_option_is_irreversible(command: str, tmp_path: Path) -> None:
    assert irreversible_reason(command, tmp_path), command


@pytest.mark.parametrize("command", PLAIN_PUSH)
def test_other_push_options_are_not(command: str, tmp_path: Path) -> None:
    assert irreversible_reason(command, tmp_path) is None, command


#: lines that read or run what no word of them shows: not proved read-only (their neighbours are)
NOT_PROVED = {
    "git log --show-signature -1": "signatures",
    "git log -1 --format=%G?": "signatures",
    "git log --show-sig": "signatures",
    "printf 'x\\0' | sort --files0-from=-": "no word",
    "wc --files0-from=names": "no word",
    "du --files0=names": "no word",
    "awk 'BEGIN { ARGV[1] = f; ARGC = 2 } 1'": "ARGV",
}
PROVED = ["git log -1", "git log --format=%h", "sort a", "wc -l a", "du -s .", "awk 1 a"]


@pytest.mark.parametrize("command", NOT_PROVED)
def test_reading_what_no_word_names_is_not_proved(command: str, tmp_path: Path) -> None:
    why = read_only_obstacle(parse(command), tmp_path)
    assert why is not None and NOT_PROVED[command] in why, why


@pytest.mark.parametrize("command", PROVED)
def test_the_neighbours_are_proved(command: str, tmp_path: Path) -> None:
    (tmp_path / "a").write_text("x\n")
    assert read_only_obstacle(parse(command), tmp_path) is None


def test_an_awk_argv_program_runs_nothing_the_deny_side_must_guess() -> None:
    # not proved read-only (above), but it runs no command: a deny rule is not matched by it
    line = "awk 'BEGIN { ARGV[1] = f; ARGC = 2 } 1'"
    assert (None,) not in effects(line).runs
    assert not rule_matches("rm *", effects(line).runs)
    assert rule_matches("rm *", effects("awk 'BEGIN { system(\"x\") }'").runs)
