"""Images in slash commands and through a plan that waits, real CLI against the fake server:
``/plan`` with ``--image`` (``run``) or an ``@shot.png`` mention (the app), and a custom
command whose ``@path`` names an image, carry the image in their turn; a command that runs no
task refuses images; a plan made in plan mode (``plan_only``) gives the planner the stored
description and, once ``/approve``d, the executor the image itself."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pexpect
import pytest

from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.fake_server import RecordedRequest
from tests.support.image_cli import image_urls, run, setup
from tests.support.images import png
from tests.support.interactive import spawn
from tests.support.project import Project, project

__all__ = ["project"]

pytestmark = pytest.mark.slow

PLAN = {"objective": "Fix the dialog", "steps": [{"title": "Read the error"}]}
DESCRIBE = "Describe the attached image"


def data_url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


def model(request: RecordedRequest) -> Reply:
    """Planner: a plan, then a closing word; executor: a description when asked, else done."""
    last = request.messages[-1]
    if request.model == "deepseek-v4-pro":
        return Reply.text("planned") if last["role"] == "tool" else Reply.call("submit_plan", PLAN)
    if DESCRIBE in json.dumps(last.get("content")):
        return Reply.text("An error dialog saying 'disk full'.")
    return Reply.text("done")


def check_planned_with_image(srv: FakeDeepSeekServer, shot: bytes) -> None:
    planner = [r for r in srv.requests if r.model == "deepseek-v4-pro"]
    executor = [r for r in srv.requests if r.model == "deepseek-flash"]
    assert planner and all(image_urls(r) == [] for r in planner)
    task = next(m["content"] for m in planner[0].messages if m["role"] == "user")
    assert "described by an image model: An error dialog saying 'disk full'." in task
    assert len([r for r in executor if DESCRIBE in json.dumps(r.messages)]) == 1
    assert image_urls(executor[-1]) == [data_url(shot)]


def test_slash_plan_carries_the_image_to_the_executor_and_its_description_to_the_planner(
    tmp_path: Path,
) -> None:
    shot = png(40, 40, seed=21)
    with FakeDeepSeekServer(handler=model) as srv:
        repo, env = setup(tmp_path, srv.base_url)
        (repo / "shot.png").write_bytes(shot)
        args = ["/plan fix what the screenshot shows", "--image", "shot.png"]
        code, out = run(args, repo, env)
        assert code in (0, 5), out
        check_planned_with_image(srv, shot)


def test_a_custom_command_naming_an_image_carries_it(tmp_path: Path) -> None:
    shot = png(24, 24, seed=22)
    with FakeDeepSeekServer([Reply.text("a dialog")]) as srv:
        repo, env = setup(tmp_path, srv.base_url)
        (repo / "shot.png").write_bytes(shot)
        commands = tmp_path / "cfg" / "commands"
        commands.mkdir()
        (commands / "look.md").write_text("Say what is wrong in $ARGUMENTS.\n")
        code, out = run(["/look @shot.png"], repo, env)
        assert code == 0, out
        [request] = srv.requests
    user = request.messages[-1]
    assert user["content"][0]["text"].startswith("Say what is wrong in @shot.png.")
    assert "@shot.png: attached as an image" in user["content"][0]["text"]
    assert image_urls(request) == [data_url(shot)]


def test_a_command_that_runs_no_task_refuses_images_and_sends_nothing(tmp_path: Path) -> None:
    with FakeDeepSeekServer() as srv:
        repo, env = setup(tmp_path, srv.base_url)
        (repo / "shot.png").write_bytes(png())
        code, out = run(["/cost", "--image", "shot.png"], repo, env)
        assert code != 0 and "/cost takes no images" in out and "none sent" in out, out
        assert srv.requests == []


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
def test_a_plan_only_turn_keeps_the_image_for_the_executor_until_approved(
    project: Project,
) -> None:
    shot = png(36, 28, seed=23)
    (project.root / "shot.png").write_bytes(shot)
    project.ex.handler = model
    project.pl.handler = model
    child = spawn(project)
    try:
        child.expect("›")
        child.sendline("/mode plan")
        child.expect("plan")
        child.expect("›")
        child.sendline("/plan fix what @shot.png shows")
        child.expect("attached @shot.png")
        child.expect("Fix the dialog")
        child.expect("›")
        assert [r for r in project.ex.requests if DESCRIBE not in json.dumps(r.messages)] == []
        child.sendline("/mode ask")
        child.expect("›")
        child.sendline("/approve")
        child.expect("done")
        child.expect("›")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    planner = project.pl.requests
    assert planner and all(image_urls(r) == [] for r in planner)
    task = next(m["content"] for m in planner[0].messages if m["role"] == "user")
    assert "described by an image model: An error dialog saying 'disk full'." in task
    last = project.ex.requests[-1]
    assert image_urls(last) == [data_url(shot)]
    handoff = next(
        m for m in last.messages if m["role"] == "user" and isinstance(m["content"], list)
    )
    assert "Read the error" in handoff["content"][0]["text"]
