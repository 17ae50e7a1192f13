"""Commands no snapshot can undo ask every time, in yolo and under ``--yes`` too, unless the
user's own config allows them by an explicit rule: the matcher's table, and the real CLI."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from reasonix.safety.shell.irreversible import irreversible_reason
from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.project import fake_project_toml
from tests.support.cli import FAKE_KEY_ENV, cli_env, run_cli

IRREVERSIBLE = [
    "git push --force origin main",
    "git push -f",
    "git push --force-with-lease",
    "git push origin :old-branch",
    "git push origin +main",
    "git push --delete origin feature",
    "git push --mirror backup",
    "git stash clear",
    "git reflog expire --expire=now --all",
    "git gc --prune=now",
    "gh repo delete me/project --yes",
    "dropdb production",
    "psql -c 'DROP TABLE users'",
    "mysql -e 'truncate orders'",
    "redis-cli FLUSHALL",
    "aws s3 rm s3://bucket/key --recursive",
    "aws ec2 terminate-instances --instance-ids i-1",
    "kubectl delete namespace prod",
    "helm uninstall web",
    "terraform destroy -auto-approve",
    "terraform apply -destroy",
    "docker volume rm data",
    "curl -X DELETE https://api.example.com/items/1",
    "rm -rf ~/projects",
    "echo gone > ~/.bashrc",
    "sudo rm -rf /etc/nginx",
    "cp build.txt /etc/motd",
    "cd .. && rm -rf sibling",
    "bash -c 'git push -f origin main'",
    "timeout 10 kubectl delete pod web",
    "env X=1 dropdb app",
    "ls && git push --force",
    # attacker4 B7's other gaps: refs in the user's .git, and unpacking outside the workspace
    "git branch -D feature",
    "git branch --delete --force feature",
    "git tag -d v1",
    "git update-ref -d refs/heads/x",
    "tar -C .. -xf a.tar",
    "tar xf a.tar --directory=..",
    "unzip -d .. a.zip",
    "pushd .. && rm -rf sibling",
    # attacker5 B8: a force push or a ref delete without the option's own spelling
    "git -c remote.origin.push=+HEAD:release push origin",
    "git -c remote.origin.push=:release push origin",
    "git --config-env=remote.origin.push=REFSPEC push origin",
    "git -c Remote.Backup.Mirror=true push backup",
    "git -c include.path=more.cfg push origin",
    "git send-pack --force remote.git HEAD:release",
    "git send-pack remote.git +HEAD:release",
    "git send-pack --mirror remote.git",
    "git send-pack --stdin remote.git",
    "git http-push -D https://example.com/repo.git release",
    "git http-push --force https://example.com/repo.git main",
    "printf 'delete refs/heads/feature\\n' | git update-ref --stdin",
    "git -c gc.pruneExpire=now gc",
    "git -c gc.reflogExpire=now -c gc.reflogExpireUnreachable=now gc",
    "git -c gc.pruneExpire=now commit -m x",
    "git push origin ${F:---force} main",
    "git push origin $(echo --force) main",
    'git push origin "$FLAG" main',
    "git $SUB --force origin main",
    'git -c "$SETTING" push origin',
    "sudo git push $F origin",
    "git symbolic-ref -d HEAD",
    # attacker6 B3: the same settings through git's environment, or a file it names
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.push GIT_CONFIG_VALUE_0=+HEAD:r git push",
    "GIT_CONFIG_PARAMETERS=\"'remote.origin.push'='+HEAD:release'\" git push origin",
    "env GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.o.mirror GIT_CONFIG_VALUE_0=1 git push o",
    "export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.o.push GIT_CONFIG_VALUE_0=:x; git push o",
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=gc.reflogExpire GIT_CONFIG_VALUE_0=now git commit -m x",
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.o.push GIT_CONFIG_VALUE_0=$R git push o",
    "GIT_CONFIG_COUNT=$N git push origin",
    "GIT_CONFIG_GLOBAL=g.cfg git push origin",
    "HOME=. git push origin",
    "XDG_CONFIG_HOME=cfg git gc",
    "sh -c 'HOME=. git push origin'",
]
REVERSIBLE = [
    "git push origin main",
    "git push -u origin feature",
    "git status",
    "rm -rf build",
    "git reset --hard",
    "echo x > notes.txt",
    "psql -c 'select 1'",
    "aws s3 ls s3://bucket",
    "kubectl get pods",
    "terraform plan",
    "cp /etc/hosts hosts.copy",
    "ls -la /",
    "echo hi 2>&1 >/dev/null",
    "git branch -d merged",
    "git branch feature",
    "git tag v1",
    "git update-ref refs/heads/x HEAD",
    "tar -xf a.tar -C sub",
    "tar -czf out.tgz -C .. src",
    "unzip a.zip -d out",
    "git -c remote.origin.push=HEAD:release push origin",
    "git -c remote.origin.pushurl=backup push origin",
    "git -c remote.backup.mirror=false push backup",
    "git -c gc.pruneExpire=never gc",
    "git -c gc.auto=0 commit -m x",
    "git send-pack remote.git HEAD:release",
    "git update-ref --no-deref refs/heads/x HEAD",
    "git symbolic-ref HEAD refs/heads/main",
    'git commit -m "$(date)"',
    "git log $REV",
    'git -C "$DIR" status',
    'git -C "$DIR" push origin main',
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=user.name GIT_CONFIG_VALUE_0=me git push origin",
    "GIT_CONFIG_PARAMETERS=\"'remote.origin.push'='HEAD:release'\" git push origin",
    "HOME=/tmp git status",
    "GIT_CONFIG_GLOBAL=g.cfg git commit -m x",
    "HOME=. make",
]


@pytest.mark.parametrize("command", IRREVERSIBLE)
def test_recognised(command: str, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    assert irreversible_reason(command, ws), command


@pytest.mark.parametrize("command", REVERSIBLE)
def test_not_recognised(command: str, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    assert irreversible_reason(command, ws) is None, command


KEY_ENV = FAKE_KEY_ENV


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[tuple[Path, Path, FakeDeepSeekServer]]:
    root = tmp_path / "work"
    root.mkdir()
    config = tmp_path / "config"
    config.mkdir()
    with FakeDeepSeekServer() as ex:
        (config / "config.toml").write_text(
            fake_project_toml(ex.base_url, ex.base_url, key_env=KEY_ENV, max_steps=6)
        )
        yield root, config, ex


def run(root: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = cli_env(root.parent / "data", config)
    return run_cli(["run", "--no-planner", *args], cwd=root, env=env)


# The command would leave a marker if it ran (the push itself fails: there is no remote).
FORCE_PUSH = "git push --force nowhere main; touch pushed"


@pytest.mark.slow
@pytest.mark.parametrize("flags", [["--yes"], ["--mode", "yolo"], ["--yes", "--mode", "yolo"]])
def test_force_push_is_refused_under_yes_and_yolo(
    cli: tuple[Path, Path, FakeDeepSeekServer], flags: list[str]
) -> None:
    root, config, ex = cli
    ex.push(Reply.call("bash", {"command": FORCE_PUSH}), Reply.text("could not push"))
    proc = run(root, config, *flags, "push it")
    assert proc.returncode == 3, proc.stderr
    assert not (root / "pushed").exists()
    assert "no snapshot can undo" in proc.stderr and "[permissions] allow" in proc.stderr
    sent = ex.requests[-1].messages[-1]["content"]
    assert "rewrites or deletes history on the remote" in sent


@pytest.mark.slow
def test_an_explicit_rule_in_the_users_config_allows_it(
    cli: tuple[Path, Path, FakeDeepSeekServer],
) -> None:
    root, config, ex = cli
    with (config / "config.toml").open("a") as fh:
        rules = '"bash(git push --force nowhere main)", "bash(touch pushed)"'
        fh.write(f"\n[permissions]\nallow = [{rules}]\n")
    ex.push(Reply.call("bash", {"command": FORCE_PUSH}), Reply.text("pushed"))
    proc = run(root, config, "--yes", "push it")
    assert proc.returncode == 0, proc.stderr
    assert (root / "pushed").exists()  # control: the probe sees a command that ran
