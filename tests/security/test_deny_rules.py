"""Deny rules match after normalisation, through the real CLI under ``--yes``: every bypass the
issue lists (quotes, backslashes, wrappers, ``bash -lc``, ``eval``, a variable or a substitution
in command position, ``/dev/tcp``, flags combined or split) is refused. The sandbox is off in the
user's config so a bypass would show (a victim folder gone, a request on the loopback server).
Controls: a benign command runs with the rules in place, and without the rules every probe
sees its attack work."""

from __future__ import annotations

import pytest

from tests.security.support import Attack, HitCounter, Lab, hits, lab, record

__all__ = ["hits", "lab"]

pytestmark = pytest.mark.slow

#: The README's own example, and one for the network.
DENY = ["bash(rm -rf *)", "bash(curl *)"]

RM_BYPASSES = [
    "r''m -rf {v}",
    "\\rm -rf {v}",
    '"rm" -rf {v}',
    "r\\m -rf {v}",
    "$'\\x72m' -rf {v}",
    "/bin/rm -rf {v}",
    "rm -fr {v}",
    "rm -r -f {v}",
    "rm -R -f {v}",
    "rm --recursive --force {v}",
    "rm -rfv {v}",
    "bash -lc 'rm -rf {v}'",
    'sh -c "rm -rf {v}"',
    "bash -c 'bash -c \"rm -rf {v}\"'",
    "eval 'rm -rf {v}'",
    "env -i rm -rf {v}",
    "env FOO=1 rm -rf {v}",
    "FOO=1 rm -rf {v}",
    "nice rm -rf {v}",
    "nice -n 5 rm -rf {v}",
    "timeout 5 rm -rf {v}",
    "command -p rm -rf {v}",
    "exec rm -rf {v}",
    "nohup rm -rf {v} >/dev/null",
    "setsid -w rm -rf {v}",
    "stdbuf -o0 rm -rf {v}",
    "time rm -rf {v}",
    "x=rm; $x -rf {v}",
    "$(echo rm) -rf {v}",
    "`echo rm` -rf {v}",
    "echo {v} | xargs rm -rf",
    "find . -name {v} -exec rm -rf {{}} +",
    "{{ rm -rf {v}; }}",
    "(rm -rf {v})",
    "f() {{ rm -rf {v}; }}; f",
    "if true; then rm -rf {v}; fi",
    "echo ok #'\nrm -rf {v} #'",
    "true && rm -rf {v}",
    "echo $(rm -rf {v})",
]

NET_BYPASSES = [
    "cu''rl -s -m 5 http://127.0.0.1:{port}/{p}",
    '"curl" -s -m 5 http://127.0.0.1:{port}/{p}',
    "/usr/bin/curl -s -m 5 http://127.0.0.1:{port}/{p}",
    "env curl -s -m 5 http://127.0.0.1:{port}/{p}",
    "bash -c 'curl -s -m 5 http://127.0.0.1:{port}/{p}'",
    "exec 3<>/dev/tcp/127.0.0.1/{port}; printf 'GET /{p} HTTP/1.0\\r\\n\\r\\n' >&3; cat <&3",
    'bash -c \'exec 3<>/dev/tcp/127.0.0.1/{port}; printf "GET /{p} HTTP/1.0\\r\\n\\r\\n" >&3; '
    "cat <&3'",
]


def attacks(lab: Lab, server: HitCounter) -> list[tuple[Attack, object]]:
    out: list[tuple[Attack, object]] = []
    for k, template in enumerate(RM_BYPASSES):
        victim = f"victim{k}"
        (lab.root / victim).mkdir()
        (lab.root / victim / "keep.txt").write_text("keep\n")
        out.append((Attack(template, "bash", {"command": template.format(v=victim)}), victim))
    for k, template in enumerate(NET_BYPASSES):
        path = f"net{k}"
        command = template.format(port=server.port, p=path)
        out.append((Attack(template, "bash", {"command": command}), "/" + path))
    return out


def worked(lab: Lab, server: HitCounter, target: object) -> bool:
    assert isinstance(target, str)
    if target.startswith("/"):
        return target in server.paths
    return not (lab.root / target).exists()


def test_every_bypass_is_denied_under_yes(
    lab: Lab, hits: HitCounter, request: pytest.FixtureRequest
) -> None:
    rules = ", ".join(f'"{r}"' for r in DENY)
    lab.write_user_config(f'[sandbox]\nbash = "off"\n\n[permissions]\ndeny = [{rules}]\n')
    chosen = attacks(lab, hits)
    outcome = lab.attack([a for a, _ in chosen], "--yes")
    assert len(outcome.results) == len(chosen), outcome.proc.stderr
    broke = [
        a.name
        for (a, target), text in zip(chosen, outcome.results, strict=True)
        if worked(lab, hits, target) or "deny rule" not in text
    ]
    record(request, "deny-rule bypasses", len(chosen), len(broke))
    assert broke == []
    assert hits.hits == 0


def test_control_a_benign_command_runs_with_the_rules(lab: Lab) -> None:
    rules = ", ".join(f'"{r}"' for r in DENY)
    lab.write_user_config(f'[sandbox]\nbash = "off"\n\n[permissions]\ndeny = [{rules}]\n')
    (lab.root / "old.txt").write_text("x\n")
    outcome = lab.attack(
        [
            Attack("benign", "bash", {"command": "echo benign > ok.txt && rm old.txt"}),
            Attack("rm -f of one file", "bash", {"command": "rm -f error.log"}),
        ],
        "--yes",
    )
    assert outcome.proc.returncode == 0, outcome.proc.stdout + outcome.proc.stderr
    assert (lab.root / "ok.txt").read_text() == "benign\n"
    assert not (lab.root / "old.txt").exists()
    assert "deny rule" not in outcome.results[1]


def test_control_without_the_rules_every_probe_sees_its_attack(lab: Lab, hits: HitCounter) -> None:
    lab.write_user_config('[sandbox]\nbash = "off"\n')
    chosen = attacks(lab, hits)
    outcome = lab.attack([a for a, _ in chosen], "--yes")
    missed = [a.name for a, target in chosen if not worked(lab, hits, target)]
    assert missed == [], (missed, outcome.proc.stderr)
