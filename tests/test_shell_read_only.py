"""The proof that a bash command only reads (:mod:`reasonix.safety.shell.readers`), as a table:
hundreds of command lines, both ways, with the hostile near-misses next to the forms they
imitate, and the two views over it: the permission decision allows a proved command in ``ask``
and ``auto-edit`` mode without asking, and a snapshot is skipped for every proved command (and
for more: where a command reads does not matter to a snapshot). No process runs; the workspace
is a temp folder with a few files."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from reasonix.safety.permissions import Mode, Rule, Rules, call_subject, decide
from reasonix.safety.shell.lexer import parse
from reasonix.safety.shell.programs import READERS, writing_obstacle
from reasonix.safety.shell.readers import (
    GIT_READS,
    proved_read_only,
    read_only_obstacle,
    reader_obstacle,
    snapshot_skippable,
)
from reasonix.safety.shell.rules import allow_obstacle
from reasonix.tools.builtin import default_registry
from reasonix.tools.registry import Tool

READ_ONLY = [
    # listing, reading, counting
    "ls", "ls -la", "ls -la src", "ls --color=never -1", "ls -R", "/usr/bin/ls", "/bin/ls -l",
    "cat README.md", "cat README.md | head -50", "cat -n a.txt", "cat a.txt b.txt",
    "head a.txt", "head -5 a.txt", "head -n 5 a.txt", "tail -20 a.txt", "tail -n +2 a.txt",
    "wc -l a.txt", "wc -l *.py", "wc -c a.txt b.txt", "nl a.txt", "tac a.txt", "rev a.txt",
    "cut -d: -f1 a.txt", "paste a.txt b.txt", "tr a-z A-Z < a.txt", "column -t a.txt",
    "od -c a.txt", "hexdump -C a.txt", "strings a.txt", "stat a.txt", "du -sh .", "df -h",
    "cmp a.txt b.txt", "comm a.txt b.txt", "diff a.txt b.txt", "diff -u a.txt b.txt",
    "diff src docs", "diff -U 3 -xr a.txt b.txt", "md5sum a.txt", "sha256sum a.txt b.txt",
    "sha1sum -c sums.txt",
    "cksum a.txt", "b2sum a.txt", "basename src/app.py", "dirname src/app.py",
    "realpath src", "readlink -f src", "jq . data.json", "jq -r .name data.json",
    "seq 1 10", "nproc", "which python3", "type ls", "printenv PATH", "pwd", "whoami", "id",
    "uname -a", "echo hi", "echo hi; pwd", "echo -n hi", "printf '%s\\n' a b", "true", "false",
    ":", "test -f a.txt", "[ -d src ]", "test -f a.txt && cat a.txt",
    # searching
    "grep foo a.txt", "grep -rn foo src", "grep -rn foo src && wc -l a.txt b.txt",
    "grep -o foo a.txt", "grep -e foo -e bar a.txt", "grep --include=*.py -r foo .",
    "grep -A 3 foo a.txt", "grep -c foo a.txt", "egrep 'a|b' a.txt", "fgrep -i x a.txt",
    "grep -l foo -r src", "grep --color=never foo a.txt", "grep -f patterns.txt a.txt",
    "rg x", "rg -n foo src", "rg --type py foo", "rg -g '*.py' foo", "rg -i foo -C 2",
    "rg --files", "rg --pre-glob-nothing foo",
    "find . -name '*.py'", "find src -type f", "find . -maxdepth 1 -newer a.txt",
    "find . -name '*.py' | wc -l", "find . -type d -name src -print",
    "sed -n 1,5p a.txt", "sed 's/a/b/' a.txt", "sed -n 's/a/b/p' a.txt", "sed -e s/a/b/ a.txt",
    "sed --expression=s/a/b/ a.txt", "sed -E 's/(a)/\\1/' a.txt",
    "sed -ne p a.txt", "sed -nl 5 p a.txt", "sed -l 5 p a.txt", "sed --line-length=5 p a.txt",
    "sed -n -- p a.txt", "sed ':a;N;$!ba;s/x/ /g' a.txt", "sed -n '2b end;p;:end' a.txt",
    "sed 'q 5' a.txt", "sed '$!{N;ba}' a.txt",
    "awk '{print $1}' a.txt", "awk -F: '{print $2}' a.txt", "awk -v n=1 'NR==n' a.txt",
    "sort a.txt", "sort -u a.txt", "sort -k 2 a.txt", "sort -t o a.txt", "sort -rn a.txt",
    "uniq a.txt", "uniq -c a.txt", "sort a.txt | uniq -c | sort -rn | head",
    "xxd a.txt", "xxd -l 16 a.txt", "tree", "tree -L 2", "tree -a src", "file a.txt",
    "file -b a.txt", "date", "date +%s", "date -u", "date --date yesterday +%F",
    "date -d yesterday +%F", "hostname",
    "hostname -f", "hostname -I",
    # git that only reads
    "git status", "git status --short", "git -C src status", "git --no-pager log",
    "git -P log -3", "git log", "git log --oneline -3",
    "git log --format=%H -1",
    "git rev-parse HEAD", "git rev-parse --show-toplevel",
    "git ls-files", "git ls-files -m", "git ls-tree HEAD",
    "git cat-file -p HEAD", "git rev-list --count HEAD", "git describe --tags",
    "git shortlog -sn", "git merge-base a b", "git show-ref", "git for-each-ref",
    "git count-objects -v", "git grep foo", "git grep -n foo", "git branch", "git branch -a",
    "git branch -vv", "git branch --show-current", "git branch -l 'feat*'",
    "git branch --list x", "git branch --contains HEAD", "git tag", "git tag -l",
    "git tag -l 'v*'", "git tag -n5", "git tag --sort=-v:refname", "git stash list",
    "git worktree list", "git reflog", "git reflog show HEAD",
    "git reflog --oneline", "git remote", "git remote -v", "git remote get-url origin",
    "git config --local --get user.name", "git config --local --list",
    "git config --local -l --show-origin", "git config get --local user.name",
    "git config -f .gitmodules --list", "git config --worktree -l",
    "git version", "git check-ignore -v a.txt",
    "git log --oneline | head -5", "git grep --text foo", "git grep --no-textconv foo",
    "git stash list --oneline", "git reflog show --oneline", "git describe --dirty",
    # structure of the line
    "cd src && ls", "cd src && ls x*", "(ls; pwd)", "{ ls; pwd; }", "ls && pwd || true", "ls &",
    "cat a.txt 2>/dev/null", "ls 2>&1 | head", "ls > /dev/null", "cat < a.txt",
    "grep foo <<< 'a foo'", "if test -f a.txt; then cat a.txt; fi",
    "while false; do ls; done", "echo 'a;b' | cut -d';' -f1", "cat 'a.txt'", 'cat "a.txt"',
]  # fmt: skip

NOT_READ_ONLY = [
    # programs that change something, or run others
    "rm x", "rm -rf build", "touch x", "mkdir d", "mv a.txt b.txt", "cp a.txt b.txt",
    "chmod +x a.txt", "ln -s a b", "python3 -c 'print(1)'", "make", "pytest", "npm test",
    "env ls", "env -i ls", "xargs cat", "ls | xargs rm", "sh -c ls", "bash -c 'ls'",
    "eval ls", "exec ls", "command ls", "nice ls", "timeout 5 ls", "sudo ls", "nohup ls",
    "time ls x | sh", "source x", ". x", "./ls", "./script.sh", "bin/ls", "~/ls",
    "curl https://example.com", "wget x", "ssh host ls", "less a.txt", "vim a.txt",
    "tee out.txt", "ls | tee out.txt", "dd if=a of=b", "truncate -s 0 a.txt",
    "kill 1", "alias ls=rm", "ls() { rm -rf .; }; ls", "f() { ls; }; f",
    # redirections and hidden parts
    "echo hi > out.txt", "ls >> log", "cat a.txt > copy.txt", "ls &> log", "ls 2> err.txt",
    "ls >| x", "cat a.txt 1<> a.txt", "> x", "ls > $f", "ls $(rm a.txt)", "cat $(rm x)",
    "ls `rm x`", "cat <(rm x)", "diff a.txt >(tee x)", "echo $HOME", "ls $dir", "ls ~",
    "ls {a,b}", "FOO=1 ls", "LD_PRELOAD=x.so ls", "ls; touch new", "ls && rm x",
    "ls || rm x", "ls | sh", "cat a.txt | bash", "", "   ", "ls 'unterminated",
    "$cmd", "l* -la",
    # reads outside the workspace
    "cat /etc/passwd", "ls /", "head ~/.ssh/id_rsa", "cat ../secret", "cd .. && ls",
    "cd / && ls", "cat /proc/self/environ", "cd src && ls *.py", "ls /dev", "grep -r x /home",
    "git -C / status", "find / -name x", "ls -la ..",
    # near misses of the forms above
    "sort -o out.txt a.txt", "sort -uo out.txt a.txt", "sort --output=x a.txt",
    "sort --out=x a.txt", "sort --o=x a.txt", "sort --compress-program=sh a.txt",
    "sort --co=sh a.txt", "tree -o x", "tree -ao x", "tree --output x", "tree -R -H . src",
    "file -C", "file -bC -m x", "file --compile", "hostname foo", "hostname -F name.txt",
    "hostname -b x", "hostname --file x", "date 010112002020", "date -s now",
    "date --set=now", "date -I 0101", "date --date=now 0101", "date --utc 0101",
    "uniq -- a.txt -b.txt", "date --se now",
    "uniq a.txt b.txt", "uniq -c a.txt b.txt",
    # recursion that follows symbolic links (one may point out of the workspace)
    "grep -R x .", "grep -rR x .", "grep --dereference-recursive x .", "grep --deref x .",
    "rg -L x", "rg --follow x", "find -L .", "find . -follow", "ls -RL", "ls -R --dereference",
    "tree -l", "du -L .",
    "diff -r a b", "diff -rN empty .", "diff -Nr a b", "diff --recursive a b", "diff --recu a b",
    "diff --no-dereference -r a b",
    "xxd a.txt b.txt", "xxd -r a.txt b.txt", "printf -v x %s y", "test -v 'a[$(rm x)]'",
    "[ -v x ]", "find . -delete", "find . -name x -delete", "find . -exec rm {} ;",
    "find . -execdir ls ;", "find . -ok rm {} ;", "find . -fprint out.txt",
    "find . -fls out.txt", "find . -fprintf out.txt %p", "sed -i s/a/b/ a.txt",
    "sed -ni p a.txt", "sed -ie s/a/b/ a.txt", "sed --in-place s/a/b/ a.txt",
    "sed --in s/a/b/ a.txt", "sed --e='w x' p", "sed 's/a/b/w out' a.txt",
    "sed 'e ls' a.txt", "sed 'w out' a.txt", "sed -f script.sed a.txt", "sed '1r x' a.txt",
    # sed's options read like getopt: a cluster ending in a valued letter, -l's value, prefixes
    "sed -ne '1e ls' -e p a.txt", "sed -se '1e ls' -e p a.txt", "sed -l 5 '1e ls' a.txt",
    "sed -nl 5 '1e ls' a.txt", "sed --line-length 5 '1e ls' a.txt", "sed --expr '1e ls' a.txt",
    "sed -l '1e ls' a.txt", "sed -nf script.sed a.txt", "sed --fi script.sed a.txt",
    "sed -I p a.txt", "sed -n -- '1e ls' a.txt",
    # a glob that older shells expand to '..' (no globskipdots before bash 5.2, dash)
    "cat .?/outside/secret.txt", "cat .[.]/outside/secret.txt", "ls src/.*/x", "cat .*/x",
    "cat [.][.]/outside/secret.txt",
    # git config beyond the repository's own file reads the user's and the system's
    "git config --get user.name", "git config --list", "git config -l --show-origin",
    "git config get user.name", "git config --global --list", "git config --system -l",
    "git config --local --includes --list", "git config --glo -l", "git config --get-regexp .",
    # git reads that run the textconv or filter drivers the files' attributes select
    "git cat-file --textconv HEAD:a.txt", "git cat-file --filters HEAD:a.txt",
    "git cat-file --text HEAD:a.txt", "git cat-file --filt HEAD:a.txt",
    "git cat-file --batch --textconv", "git grep --textconv foo", "git grep --textc foo",
    "git reflog show -p", "git reflog -p",
    # a label ends at a blank or ';', a q/l/v value is a number: what follows is a command
    "sed ':a;1e ls' a.txt", "sed ':a 1e ls' a.txt", "sed 't x 1e ls' a.txt",
    "sed 'tx 1e ls' a.txt", "sed 'q 1e ls' a.txt", "sed 'l 1e ls' a.txt",
    "awk 'BEGIN{system(\"rm x\")}'", "awk '{print > \"out\"}' a.txt", "awk -f x.awk a.txt",
    "awk --fi=x.awk a.txt", "awk -p '{print}' a.txt", "awk -o out '{print}' a.txt",
    "awk --so='BEGIN{system(\"x\")}'", "awk '{print | \"sh\"}' a.txt",
    "awk '{getline x < \"f\"}' a.txt", "gawk -l ext 1", "mawk -W exec x",
    "gawk --source='BEGIN{system(\"x\")}'", "gawk -e'BEGIN{system(\"x\")}'", "awk -fx.awk a",
    "gawk '@include \"x.awk\"' a.txt", "gawk 'BEGIN{f=\"system\"; @f(\"x\")}'",
    "gawk -W source='BEGIN{system(\"x\")}'", "gawk -Wsource='BEGIN{system(\"x\")}'",
    "rg --pre sh x", "rg --pre=sh x", "rg --hostname-bin=sh x", "rg --hostname-bin sh x",
    "grep -o foo a.txt --exec rm", "grep --fi=x a", "grep --unknown x a.txt",
    # git near misses
    "git", "git --version", "git commit -m x", "git checkout -- .", "git reset --hard",
    "git push", "git pull", "git fetch", "git clone x", "git add .", "git rm a.txt",
    "git clean -fd", "git stash", "git stash pop", "git stash drop", "git merge x",
    "git rebase main", "git switch x", "git restore a.txt", "git init", "git gc",
    "git -c core.pager=sh log", "git -c alias.l=!sh l", "git -cuser.name=x log",
    "git --config-env=core.pager=X log", "git -p log", "git --paginate log",
    "git --exec-path=. log", "git --git-dir=/tmp/x status", "git --work-tree=/ status",
    "git diff --output=patch.txt", "git diff --output patch.txt", "git log --out=x",
    "git log --outp=x", "git diff --ext-diff", "git diff --ext=x", "git grep -O foo",
    "git grep -Ovim foo", "git grep --open-files-in-pager foo", "git grep --open foo",
    "git branch new", "git branch -d x", "git branch -D x", "git branch -m a b",
    "git branch --delete x", "git branch -f x HEAD", "git branch -u origin/x",
    "git branch --set-upstream-to=x", "git tag v1", "git tag -d v1", "git tag -v v1",
    "git tag -a v1 -m x", "git tag -s v1", "git tag -f v1", "git worktree add x",
    "git worktree remove x", "git reflog expire --all", "git reflog delete HEAD@{1}",
    "git remote add x y", "git remote remove x", "git remote show origin",
    "git remote prune origin", "git config user.name x", "git config --unset x",
    "git config --add x y", "git config set x y", "git config user.name",
    "git config --edit", "git config get --unset x", "git config -e", "git help log",
    "git ls-remote origin",
    "git archive -o x.tar HEAD", "git bisect run ls", "git submodule foreach ls",
    "git notes add -m x", "git difftool", "git log --exec=x",
]  # fmt: skip

#: not proved read-only (they read outside the workspace, or run the diff drivers the files'
#: attributes select) but they change nothing: no snapshot
SNAPSHOT_ONLY = [
    "git show", "git show HEAD:a.txt", "git diff", "git diff HEAD", "git diff --stat",
    "git diff --cached", "git blame a.txt", "git log -p a.txt", "git log --stat",
    "git stash show -p", "git status && git diff", "git log -U3", "git log --pat",
    "git stash list -p", "git stash list --stat", "git log -G foo", "git log -S foo",
    "git log -Sfoo --oneline", "git log --pickaxe-r -S x", "git log --find-object=abc",
    "cat /etc/passwd", "ls /", "cat ../secret", "cd .. && ls", "cd / && ls",
    "grep -r x /home", "find / -name x", "ls -la ..", "cat /proc/self/environ", "ls /dev",
    "git -C / status", "date -f ../outside/secret.txt", "date -r /etc/passwd",
    # a sed address that looks like a path is taken for one (an over-careful refusal)
    "sed -n '/foo/p' a.txt",
]  # fmt: skip


@pytest.fixture(autouse=True)
def _no_user_git_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The user's and the system's git configuration are the machine's: none here (a filter
    driver there makes ``git status`` unproved: the test of filter drivers below)."""
    empty = tmp_path_factory.mktemp("gitconfig") / "config"
    empty.write_text("")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GIT_CONFIG_GLOBAL", str(empty))
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        yield


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    for name in ("a.txt", "b.txt", "data.json", "sums.txt", "patterns.txt", "x.py", "y.py"):
        (root / name).write_text("a foo\n")
    (root / "src").mkdir()
    (root / "docs").mkdir()
    return root


@pytest.mark.parametrize("command", READ_ONLY)
def test_proved_read_only(ws: Path, command: str) -> None:
    assert read_only_obstacle(parse(command), ws) is None
    assert snapshot_skippable(command, ws), "every proved read-only command is skippable"


@pytest.mark.parametrize("command", NOT_READ_ONLY)
def test_not_proved_read_only(ws: Path, command: str) -> None:
    assert not proved_read_only(command, ws)
    why = read_only_obstacle(parse(command), ws)
    assert why, "a refusal says why"
    if command not in SNAPSHOT_ONLY:
        assert not snapshot_skippable(command, ws)


@pytest.mark.parametrize("command", SNAPSHOT_ONLY)
def test_snapshot_skips_reads_anywhere(ws: Path, command: str) -> None:
    assert snapshot_skippable(command, ws) and not proved_read_only(command, ws)


def test_the_tables_are_not_empty_and_every_row_is_tried() -> None:
    """Every program of the table appears in a proved row, so none is listed by mistake."""
    proved = " ".join(READ_ONLY)
    for name in (*READERS, *GIT_READS):
        if name in ("tac", "popd", "pushd", "nawk", "gawk", "mawk", "sha224sum", "sha384sum",
                    "sha512sum", "show-branch", "cherry", "check-attr", "name-rev"):  # fmt: skip
            assert reader_obstacle(name, []) is None or name in GIT_READS
            continue
        assert name in proved, name


def test_a_glob_that_may_expand_to_an_option_is_not_proved(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("")
    assert proved_read_only("find *", tmp_path)
    (tmp_path / "-delete").write_text("")
    assert not proved_read_only("find *", tmp_path)
    assert not proved_read_only("rg x *", tmp_path)
    assert proved_read_only("find ./*", tmp_path)  # a path, never an option


def test_git_in_a_repository_whose_config_names_a_program_is_not_proved(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert proved_read_only("git status", tmp_path)
    with (tmp_path / ".git" / "config").open("a") as config:
        config.write("[core]\n\tfsmonitor = ./watch.sh\n")
    assert not proved_read_only("git status", tmp_path)
    assert "fsmonitor" in (read_only_obstacle(parse("git status"), tmp_path) or "")


#: what reads the work tree's files through a filter's clean program, and the near misses
CLEANS = ["git status", "git status --short", "git ls-files -m", "git ls-files --modified",
          "git ls-files -dm", "git describe --dirty", "git describe --broken"]  # fmt: skip
NO_CLEAN = ["git ls-files", "git ls-files -o", "git describe --tags", "git log --oneline"]


@pytest.mark.parametrize("setting", ["clean = cat", "process = x"])
def test_git_status_with_a_filter_driver_is_not_proved(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    """The user's git-lfs, or any filter driver of theirs: git status runs its clean program
    on a file whose time stamp changed and whose attributes (the repository's) name it."""
    config = tmp_path / "gitconfig"
    config.write_text(f'[filter "doc"]\n\t{setting}\n')
    for command in CLEANS:
        assert proved_read_only(command, ws), command
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    for command in CLEANS:
        assert "clean program" in (read_only_obstacle(parse(command), ws) or ""), command
    for command in NO_CLEAN:
        assert proved_read_only(command, ws), command
    monkeypatch.delenv("GIT_CONFIG_GLOBAL")
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".gitconfig").write_text("[include]\n\tpath = other\n")
    assert not proved_read_only("git status", ws), "an include may define one"


@pytest.fixture(scope="module")
def bash(ws: Path) -> Tool:
    return next(t for t in default_registry(ws) if t.name == "bash")


@pytest.mark.parametrize("mode", [Mode.ASK, Mode.AUTO_EDIT])
@pytest.mark.parametrize("command", ["ls -la", "git status", "cat README.md | head -50"])
def test_decide_allows_a_proved_command_in_ask_and_auto_edit(
    ws: Path, bash: Tool, mode: Mode, command: str
) -> None:
    subject = call_subject(bash, {"command": command}, ws)
    verdict = decide(bash, subject, mode, Rules())
    assert (verdict.outcome, verdict.via) == ("allow", "read-only")
    # a deny rule, an ask rule and a hook that asks still decide
    assert decide(bash, subject, mode, Rules(deny=(Rule("bash", "deny"),))).outcome == "deny"
    asked = Rules(ask=(Rule(f"bash({command.split()[0]}*)", "ask"),))
    assert decide(bash, subject, mode, asked).outcome == "ask"
    assert decide(bash, subject, mode, Rules(), hook="ask").outcome == "ask"


@pytest.mark.parametrize("mode", [Mode.ASK, Mode.AUTO_EDIT])
@pytest.mark.parametrize("command", ["rm x", "ls > out.txt", "git branch new", "sort -o x a"])
def test_decide_asks_for_what_is_not_proved(ws: Path, bash: Tool, mode: Mode, command: str) -> None:
    subject = call_subject(bash, {"command": command}, ws)
    assert decide(bash, subject, mode, Rules()).outcome == "ask"


def test_plan_mode_still_refuses_bash(ws: Path, bash: Tool) -> None:
    subject = call_subject(bash, {"command": "ls"}, ws)
    assert decide(bash, subject, Mode.PLAN, Rules()).outcome == "deny"


#: what an allow rule (``bash(sort *)``, ``bash(git log *)``) must not cover: the same rows
#: tell the allow side what writes, abbreviations included
ALLOW_SIDE_WRITES = [
    "sort -uo out.txt a.txt", "sort --out=x a.txt", "sort --o=x a.txt", "tree -ao x",
    "file -bC", "date 010112002020", "date --se now", "hostname foo", "rg --hostname-bin=sh x",
    "rg --pre sh x", "git log --outp=x", "git diff --ext=x", "git grep --open foo",
    "git log --exe=x", "uniq a.txt b.txt", "xxd a.txt b.txt", "printf -v x y",
    "hostname -F name.txt", "uniq -- a.txt -b.txt",
]  # fmt: skip
#: and what it still covers (writing nothing, even with an option the proof does not know)
ALLOW_SIDE_FINE = [
    "sort -u a.txt", "sort -t o a.txt", "tree -L 2", "file -b a.txt", "date +%s",
    "hostname -f", "rg --pre-glob x y", "git log --oneline", "uniq a.txt", "grep --unknown x",
]  # fmt: skip


@pytest.mark.parametrize("command", ALLOW_SIDE_WRITES)
def test_the_allow_side_refuses_what_a_row_says_writes(ws: Path, command: str) -> None:
    assert allow_obstacle(parse(command), ws) is not None


@pytest.mark.parametrize("command", ALLOW_SIDE_FINE)
def test_the_allow_side_still_covers_what_writes_nothing(ws: Path, command: str) -> None:
    assert allow_obstacle(parse(command), ws) is None


def test_writing_obstacle_is_none_for_programs_not_in_the_table() -> None:
    assert writing_obstacle("make", ["-o", "x"]) is None
    assert writing_obstacle("sort", ["-o", "x"]) == "sort -o writes or runs something"


def test_git_in_a_subfolder_of_a_repository_is_not_proved(tmp_path: Path) -> None:
    # object names and pathspecs reach the rest of the repository (attacker4 B19)
    (tmp_path / ".git").mkdir()
    sub = tmp_path / "sub"
    sub.mkdir()
    for line in ("git status", "git cat-file -p HEAD:other/x", "git grep x -- :/"):
        assert proved_read_only(line, tmp_path), line  # control: at the top it is proved
        assert not proved_read_only(line, sub), line
    assert proved_read_only("cat README", sub)  # the rest of the proof is unchanged
