"""Every program a table of :mod:`reasonix.safety.shell` knows has a row in a table test, and
the rows here give the ones no other table names: each view's verdict on a line (deny rules
seeing through it, the allow side, the read-only proof, irreversible detection). No process
is run but git; milliseconds a row. The CLI attack suites prove the same through the binary.

Also which programs an allow rule may cover naming a protected file (our configuration,
``.git/``): the column ``names`` of :data:`~reasonix.safety.shell.programs.PROGRAMS`, checked
over every known program so a merge of tables cannot widen it."""

from __future__ import annotations

import ast
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from reasonix.safety.shell import deletes, irreversible, programs, rules
from reasonix.safety.shell.effects import PROGRAMS, effects
from reasonix.safety.shell.irreversible import irreversible_reason
from reasonix.safety.shell.lexer import parse
from reasonix.safety.shell.readers import proved_read_only, snapshot_skippable
from reasonix.safety.shell.rules import allow_obstacle, rule_matches

TESTS = Path(__file__).resolve().parent

#: every program a table knows: what it reads, does, runs, deletes, destroys, and the wrappers
KNOWN = sorted(
    {
        *programs.READERS,
        *PROGRAMS,
        *rules._CHECKS,
        *rules._RUNS,
        *rules._VALUE_OPTS,
        *rules._SHELLS,
        *rules._OPAQUE_WRAPPERS,
        *deletes.DELETERS,
        *irreversible._DESTROYERS,
        *irreversible._DB_CLIENTS,
    }
)

#: each view's verdict: a deny rule ``bash(rm *)`` matches a form it may run ("rm"), no allow
#: obstacle ("allow"), proved read-only ("read"), no snapshot can undo it ("irrev")
ROWS: dict[str, frozenset[str]] = {
    # wrappers: what they run is a form of its own, which deny rules and the floor see
    **{
        f"{wrapper} rm -rf /etc/x": frozenset({"rm", "irrev"})
        for wrapper in (
            "builtin", "busybox", "toybox", "chrt 5", "doas", "flock lockfile", "ionice -c 3",
            "taskset 1", "time", "unbuffer", "bwrap --ro-bind / /", "catchsegv", "chronic",
            "cgexec -g cpu:x", "dbus-launch", "dbus-run-session", "entr", "fakeroot",
            "faketime 2020-01-01", "firejail", "linux32", "linux64", "ltrace", "nsenter -t 1",
            "numactl", "perf record", "pkexec", "prlimit", "proot", "proxychains",
            "proxychains4", "sem", "setarch x86_64", "setpriv", "systemd-run", "torsocks",
            "ts", "unshare", "valgrind",
        )
    },
    # shells running text (the text is shown: a rule for the shell itself would cover it)
    "watch 'rm -rf /etc/x'": frozenset({"rm", "irrev", "allow"}),
    **{
        f"{shell} -c 'rm -rf /etc/x'": frozenset({"rm", "irrev", "allow"})
        for shell in (
            "ash", "busybox-sh", "csh", "dash", "fish", "ksh", "lksh", "mksh", "oksh", "posh",
            "rbash", "tcsh", "yash", "zsh",
        )
    },
    "zsh -c 'cat a'": frozenset({"allow"}),
    # database clients given a statement that destroys data, and one that reads (the floor
    # asks before the first whatever the rules say; the allow side judges what is hidden)
    **{
        f"{client} -c 'DROP TABLE users'": frozenset({"irrev", "allow"})
        for client in (
            "clickhouse-client", "cockroach", "cqlsh", "duckdb", "mariadb", "mongo", "mongosh",
            "sqlcmd",
        )
    },
    "duckdb -c 'SELECT 1'": frozenset({"allow"}),
    # what no snapshot holds
    "az group delete -n x": frozenset({"irrev", "allow"}),
    "gcloud compute instances delete x": frozenset({"irrev", "allow"}),
    "gsutil rm gs://b/x": frozenset({"irrev", "allow"}),
    "gsutil ls gs://b": frozenset({"allow"}),
    "http DELETE https://api.example.com/x": frozenset({"irrev", "allow"}),
    "https DELETE https://api.example.com/x": frozenset({"irrev", "allow"}),
    "xh DELETE https://api.example.com/x": frozenset({"irrev", "allow"}),
    "xh GET https://api.example.com/x": frozenset({"allow"}),
    "dropuser app": frozenset({"irrev", "allow"}),
    "mysqladmin drop app": frozenset({"irrev", "allow"}),
    "mysqladmin status": frozenset({"allow"}),
    "pulumi destroy": frozenset({"irrev", "allow"}),
    "tofu destroy": frozenset({"irrev", "allow"}),
    "tofu plan": frozenset({"allow"}),
    # programs that run a command or shell text their words give: deny rules see it, and no
    # allow rule naming the program covers it (its neighbour without that word is covered)
    "at now": frozenset({"rm"}),
    "batch": frozenset({"rm"}),
    "enable -f ./x.so x": frozenset({"rm"}),
    "hash -p /bin/rm ls": frozenset({"rm"}),
    "mapfile -C 'rm -rf x' lines": frozenset({"rm"}),
    "readarray -C 'rm -rf x' lines": frozenset({"rm"}),
    "readarray lines": frozenset({"allow"}),
    "script -c 'rm -rf x' log": frozenset({"rm"}),
    "sg staff 'rm -rf x'": frozenset({"rm"}),
    "sg staff -c 'rm -rf x'": frozenset({"rm"}),
    "gdb -ex 'shell rm -rf x' prog": frozenset({"rm"}),
    "gdb -ex 'break main' prog": frozenset({"allow"}),
    **{
        f"{vim} -c '!rm -rf x' a": frozenset({"rm"})
        for vim in ("vi", "ex", "view", "vimdiff", "gvim", "rvim", "nvim")
    },
    "nvim -c 'set nu' a": frozenset({"allow"}),
    "zip -TT 'rm -rf x' out.zip a": frozenset({"rm"}),
    "zip out.zip a": frozenset({"allow"}),
    "parallel rm ::: a": frozenset({"rm"}),
    "gsed -n 1p a": frozenset({"allow"}),
    "gsed '1e rm -rf x' a": frozenset({"rm"}),
    "busybox-awk 'BEGIN { system(\"rm -rf x\") }'": frozenset({"rm"}),
    "gtar --to-command='rm -rf x' -xf a.tar": frozenset({"rm"}),
    "bsdtar -tf a.tar": frozenset({"allow"}),
    "gtar -tf a.tar --remove-files a": frozenset({"rm", "allow"}),
    "man -B 'rm -rf x' ls": frozenset({"rm"}),
    "more a": frozenset({"allow"}),
}  # fmt: skip

#: the per-program readings the rows above rest on: sed's and awk's scripts found among their
#: words, tar's modes, quoted substitutions bash may still run, how deep ``sh -c`` is followed
FORMS: dict[str, frozenset[str]] = {
    "sed -n -e 1p wfile": frozenset({"allow", "read"}),  # the file is no script: 'w' is no command
    "sed '/x/e rm -rf y' a": frozenset({"rm"}),  # the e command after a regex address
    "sed 's/a/b/e' a": frozenset({"rm"}),
    "sed 's/a/b/w out' a": frozenset({"rm"}),
    "sed 's/a/b/g' a": frozenset({"allow", "read"}),
    "sed 'v;w out' a": frozenset(),  # v takes an optional version, then commands go on
    "sed 'v 4.2;w out' a": frozenset(),
    "sed -n 'v;p' a": frozenset({"allow", "read"}),
    "sed -n '\\,x,w out' a": frozenset(),
    "sed -n '\\,x,p' a": frozenset({"allow", "read"}),
    "awk -e 1 getline.txt": frozenset({"allow", "read"}),  # the file is no program
    "tree -l -o out": frozenset(),  # following links is no reason to skip the next word
    "tree -l a": frozenset({"allow"}),
    "tar -xf a.tar": frozenset(),
    "tar --extract -f a.tar": frozenset(),
    "echo '$(rm -rf x)'": frozenset({"allow", "read", "rm"}),  # arithmetic may evaluate it later
    "echo '`rm -rf x`'": frozenset({"allow", "read", "rm"}),
}


def _nested(depth: int) -> str:
    command = "cat a"
    for _ in range(depth):
        command = f"sh -c {shlex.quote(command)}"
    return command


@pytest.fixture(autouse=True)
def _no_user_git_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    empty = tmp_path_factory.mktemp("gitconfig") / "config"
    empty.write_text("")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GIT_CONFIG_GLOBAL", str(empty))
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        yield


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for name in ("a", "b", "reasonix.toml"):
        (root / name).write_text("x\n")
    return root


def _verdicts(command: str, ws: Path) -> frozenset[str]:
    seen = {
        "rm": rule_matches("rm *", effects(command).runs),
        "allow": allow_obstacle(parse(command), ws) is None,
        "read": proved_read_only(command, ws),
        "irrev": irreversible_reason(command, ws) is not None,
    }
    return frozenset(k for k, v in seen.items() if v)


@pytest.mark.parametrize("command", ROWS)
def test_row(command: str, ws: Path) -> None:
    assert _verdicts(command, ws) == ROWS[command]


@pytest.mark.parametrize("command", FORMS)
def test_form(command: str, ws: Path) -> None:
    assert _verdicts(command, ws) == FORMS[command]


def test_shell_text_is_followed_five_deep_not_six(ws: Path) -> None:
    assert _verdicts(_nested(5), ws) == {"allow"}
    assert _verdicts(_nested(6), ws) == {
        "rm"
    }  # deeper: an unknown command, which every rule matches


def test_the_forms_deny_rules_see() -> None:
    assert ("id",) in effects("find . -exec id ;").runs
    assert ("ls", "-l", "{}") in effects("find . -exec ls -l {} +").runs
    assert rule_matches("git push --force", effects("git push -f").runs)
    assert not rule_matches("git push --force", effects("git fetch -f").runs)
    assert effects("> out; ls").parts == ["ls"]  # a redirection alone is no part a rule names


def test_a_pattern_that_may_expand_to_an_option_is_judged_where_it_runs(tmp_path: Path) -> None:
    # ``*e`` matches the file ``-delete`` here (not in the other folder): the proof and the
    # snapshot's question both look in the folder the command runs in
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    for folder in (here, elsewhere):
        folder.mkdir()
        (folder / "a").write_text("x\n")
    (here / "-delete").write_text("")
    assert not proved_read_only("ls *e", here) and proved_read_only("ls *e", elsewhere)
    assert not snapshot_skippable("ls *e", here) and snapshot_skippable("ls *e", elsewhere)


def _named_in_tables(paths: list[Path]) -> set[str]:
    """The programs the string literals of these test modules run (each simple command's
    first word, its folder dropped)."""
    found: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.JoinedStr):
                node = ast.Constant("".join(ast.unparse(v) for v in node.values))
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for cmd in parse(node.value).commands:
                    if cmd.words:
                        found.add(cmd.words[0].value.rsplit("/", 1)[-1])
    return found


def _table_tests() -> list[Path]:
    return [*sorted(TESTS.glob("test_shell_*.py")), TESTS / "test_irreversible.py"]


def test_every_known_program_has_a_row_in_a_table_test() -> None:
    rows = {c.split()[0] for c in ROWS}
    missing = set(KNOWN) - _named_in_tables(_table_tests()) - rows
    assert missing == set(), sorted(missing)


def test_the_row_scan_sees_a_program_without_a_row() -> None:
    # control: without this module's rows, the other table tests leave programs uncovered
    others = [p for p in _table_tests() if p.name != Path(__file__).name]
    missing = set(KNOWN) - _named_in_tables(others)
    assert {"zip", "watch", "duckdb"} <= missing
    assert "cat" not in missing and "git" not in missing


#: the programs an allow rule may cover naming a protected file: those that only read what
#: their words name, and those whose words are text (they name no file at all)
MAY_NAME_PROTECTED = frozenset(
    {"cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ls", "wc", "diff",
     "stat", "file", "echo", "printf", "test", "[", "cut", "sort", "uniq", "nl", "od", "xxd",
     "hexdump", "md5sum", "sha256sum", "sha1sum", "find", "tree", "du", "realpath", "readlink",
     "basename", "dirname", "jq", "awk", "sed", "tr", "column", "cmp", "comm", "true", "false",
     ":", "pwd", "whoami"}
)  # fmt: skip
#: and those whose words are never files: they may name what is outside the workspace too
TEXT_ONLY = frozenset({"echo", "printf", "true", "false", ":", "pwd", "whoami"})
#: cd moves only inside the workspace (its own check, wherever it names); the lexer reads
#: ``time`` as a keyword, so the word after it is the program, which no check reads as a path
OWN_CHECK = frozenset({"cd", "pushd", "popd", "time"})
#: what some programs need before a file name to run at all
BEFORE = {"awk": "1", "sed": "-n 1p", "jq": ".", "[": "-f", "test": "-f"}
AFTER = {"[": " ]"}


def _naming(name: str, path: str) -> str:
    before = BEFORE.get(name, "")
    return f"{name} {before} {path}{AFTER.get(name, '')}".replace("  ", " ")


@pytest.mark.parametrize("name", KNOWN)
def test_which_programs_may_name_a_protected_file(name: str, ws: Path) -> None:
    for path in (".git/config", "reasonix.toml"):
        why = allow_obstacle(parse(_naming(name, path)), ws)
        assert (why is None) == (name in MAY_NAME_PROTECTED | OWN_CHECK), (name, path, why)


@pytest.mark.parametrize("name", KNOWN)
def test_only_programs_naming_no_file_may_name_one_outside(name: str, ws: Path) -> None:
    why = allow_obstacle(parse(_naming(name, "/etc/hostname")), ws)
    assert (why is None) == (name in TEXT_ONLY | {"time"}), (name, why)


def test_the_protected_probe_sees_the_difference(ws: Path) -> None:
    # control: the same program and words, a plain file instead of a protected one, is
    # covered: the refusal above is about what the words name
    assert allow_obstacle(parse("tac a"), ws) is None
    assert allow_obstacle(parse("tac .git/config"), ws) is not None
    assert allow_obstacle(parse("cat .git/config"), ws) is None
