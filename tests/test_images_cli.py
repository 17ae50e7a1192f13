"""Images through the real CLI against the fake DeepSeek server: ``run --image`` and piped
bytes reach the executor as image parts; files that are no image, too large, or meant for a
text-only model are refused with a clear message before any request; a planned turn gives the
planner the image's stored description and never the image."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.fake_server import RecordedRequest
from reasonix.testing.project import fake_project_toml
from tests.support.cli import cli_env
from tests.support.image_cli import image_urls, run, setup
from tests.support.images import png

pytestmark = pytest.mark.slow


def data_url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


def test_run_image_reaches_the_executor_as_an_image_part(tmp_path: Path) -> None:
    shot, other = png(40, 30, seed=1), png(20, 10, seed=2)
    with FakeDeepSeekServer([Reply.text("a login form")]) as srv:
        repo, env = setup(tmp_path, srv.base_url)
        (repo / "shot.png").write_bytes(shot)
        (repo / "other.dat").write_bytes(other)  # the bytes decide, not the name
        code, out = run(["what is this?", "--image", "shot.png", "--image", "other.dat"], repo, env)
        assert code == 0, out
        assert image_urls(srv.requests[0]) == [data_url(shot), data_url(other)]
        assert srv.requests[0].messages[0]["role"] == "system"
        assert isinstance(srv.requests[0].messages[0]["content"], str)  # never in the prompt


def test_piped_image_bytes_reach_the_executor(tmp_path: Path) -> None:
    shot = png(16, 16, seed=5)
    with FakeDeepSeekServer([Reply.text("a square")]) as srv:
        repo, env = setup(tmp_path, srv.base_url)
        code, out = run(["describe it", "--image", "-"], repo, env, stdin=shot)
        assert code == 0, out
        assert image_urls(srv.requests[0]) == [data_url(shot)]


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"BM" + b"\0" * 100, "not a JPEG, PNG, GIF or WebP"),
        (b"GIF89a\x10\x00\x10\x00" + b"\0" * (64 * 1024 * 1024), "at most 67,108,864"),
    ],
)
def test_no_image_or_an_oversize_one_is_refused_before_any_request(
    tmp_path: Path, content: bytes, said: str
) -> None:
    with FakeDeepSeekServer() as srv:
        repo, env = setup(tmp_path, srv.base_url)
        (repo / "bad.png").write_bytes(content)
        code, out = run(["look", "--image", "bad.png"], repo, env)
        assert code == 2, out
        assert said in out and "nothing was sent" in out
        assert srv.requests == []


def test_a_text_only_executor_is_never_sent_an_image(tmp_path: Path) -> None:
    with FakeDeepSeekServer() as srv:
        repo, env = setup(tmp_path, srv.base_url, executor_model="deepseek-v4-pro")
        (repo / "shot.png").write_bytes(png())
        code, out = run(["look", "--image", "shot.png"], repo, env)
        assert code != 0
        assert "deepseek-v4-pro does not read images" in out and "deepseek-flash" in out
        assert srv.requests == []


def test_a_planned_turn_gives_the_planner_a_stored_description_and_no_image(
    tmp_path: Path,
) -> None:
    shot = png(50, 50, seed=9)
    plan = {"objective": "Fix the dialog", "steps": [{"title": "Read the error"}]}

    def model(request: RecordedRequest) -> Reply:
        last = request.messages[-1]
        text = json.dumps(last.get("content"))
        if request.model == "deepseek-v4-pro":
            if last["role"] == "tool":
                return Reply.text("planned")
            return Reply.call("submit_plan", plan)
        if "Describe the attached image" in text:
            return Reply.text("An error dialog saying  'disk full'.")
        return Reply.text("done")

    with FakeDeepSeekServer(handler=model) as srv:
        repo, env = setup(tmp_path, srv.base_url)
        (repo / "shot.png").write_bytes(shot)
        code, out = run(
            ["fix what the screenshot shows", "--plan", "--image", "shot.png"], repo, env
        )
        assert code == 5, out  # the scripted executor leaves the plan's step open
        planner = [r for r in srv.requests if r.model == "deepseek-v4-pro"]
        executor = [r for r in srv.requests if r.model == "deepseek-flash"]
    assert planner and all(image_urls(r) == [] for r in planner)
    task = next(m["content"] for m in planner[0].messages if m["role"] == "user")
    assert "described by an image model: An error dialog saying 'disk full'." in task
    # every later planner request repeats the first one's messages byte for byte
    first = json.dumps(planner[0].messages)
    assert all(json.dumps(r.messages[: len(planner[0].messages)]) == first for r in planner)
    # the executor's model described it once, and then got the image itself in the turn
    describe = [r for r in executor if "Describe the attached image" in json.dumps(r.messages)]
    assert len(describe) == 1
    assert image_urls(executor[-1]) == [data_url(shot)]


def test_read_file_of_a_png_returns_an_image_part(tmp_path: Path) -> None:
    shot = png(64, 48, seed=7)
    with FakeDeepSeekServer(
        [Reply.call("read_file", {"path": "ui.png"}), Reply.text("a dialog")]
    ) as srv:
        repo, env = setup(tmp_path, srv.base_url)
        (repo / "ui.png").write_bytes(shot)
        code, out = run(["look at ui.png"], repo, env)
        assert code == 0, out
        tool = srv.requests[1].messages[-1]
    assert tool["role"] == "tool"
    assert tool["content"][0]["text"].startswith("ui.png: image/png image, 64x48 px")
    assert tool["content"][1] == {"type": "image_url", "image_url": {"url": data_url(shot)}}


@pytest.mark.parametrize("files_api", [False, True], ids=["inline", "files-api"])
def test_a_five_turn_session_with_two_images_is_pure_append(
    tmp_path: Path, files_api: bool
) -> None:
    """Five turns, two images (one given with --image, one read by read_file), a planned
    turn: every request of each role is a byte-exact prefix extension and gets 100% of the
    pure-append ideal. ``files-api``: both images are over the 32 MiB inline limit, so both go
    through the Files API, once each, and are sent as their file ids."""
    from reasonix import images
    from tests.support.images import large_gif
    from tests.support.wire import pure_append_hits, wire_prefix_violations

    if files_api:
        first = large_gif(images.MAX_IMAGE_BYTES + 1, seed=1)
        second = large_gif(images.MAX_IMAGE_BYTES + 2, seed=2)
        extra = "[limits]\nmax_image_bytes = 67108864\n"
    else:
        first, second = png(300, 200, seed=11), png(500, 400, seed=12)
        extra = ""
    plan = {"objective": "Tidy", "steps": [{"title": "Say it is tidy"}]}
    with (
        FakeDeepSeekServer(cache_formula="measured", handler=lambda r: Reply.text("Done.")) as ex,
        FakeDeepSeekServer(cache_formula="measured") as pl,
    ):
        repo = tmp_path / "repo"
        repo.mkdir()
        cfg = tmp_path / "cfg"
        cfg.mkdir()
        toml = fake_project_toml(ex.base_url, pl.base_url, max_steps=8, extra=extra)
        (cfg / "config.toml").write_text(toml)
        env = cli_env(tmp_path / "data", cfg)
        (repo / "a.png").write_bytes(first)
        (repo / "b.png").write_bytes(second)
        ex.push(Reply.text("A chart.", reasoning="It is a chart."))
        assert run(["what is this?", "--image", "a.png"], repo, env)[0] == 0
        ex.push(Reply.call("read_file", {"path": "b.png"}), Reply.text("A screenshot."))
        assert run(["-c", "and b.png?"], repo, env)[0] == 0
        ex.push(Reply.text("They differ in size."))
        assert run(["-c", "compare them"], repo, env)[0] == 0
        pl.push(Reply.call("submit_plan", plan), Reply.text("ok"))
        ex.push(Reply.call("complete_step", {"step": "1", "evidence": "said"}), Reply.text("Tidy."))
        code, out = run(["-c", "--plan", "tidy up"], repo, env)
        assert code in (0, 5), out
        ex.push(Reply.text("Bye."))
        assert run(["-c", "thanks"], repo, env)[0] == 0
        for server in (ex, pl):
            requests = server.requests
            assert all(r.status == 200 for r in requests), [r.error for r in requests]
            assert wire_prefix_violations(requests) == []
            actual, ideal = pure_append_hits(requests)
            assert actual == ideal and (ideal > 0 or server is pl), (actual, ideal, len(requests))
        last = json.dumps(ex.requests[-1].messages)
        if files_api:
            uploads = ex.files.uploads
            assert [u.status for u in uploads] == [200, 200]
            assert all(f'"file_id": "{u.file_id}"' in last for u in uploads)
            assert image_urls(ex.requests[-1]) == [] and pl.files.uploads == []
        else:
            assert data_url(first) in last and data_url(second) in last
            assert ex.files.uploads == []
        assert all(image_urls(r) == [] for r in pl.requests)
        assert all('"type": "file"' not in json.dumps(r.messages) for r in pl.requests)


def test_image_tokens_appear_in_the_json_usage_and_in_cost(tmp_path: Path) -> None:
    from reasonix import images

    shot = png(900, 700, seed=13)
    with FakeDeepSeekServer([Reply.text("a photo")]) as srv:
        repo, env = setup(tmp_path, srv.base_url)
        (repo / "p.png").write_bytes(shot)
        code, out = run(["what?", "--image", "p.png", "--output-format", "json"], repo, env)
        assert code == 0, out
        result = json.loads(out.strip().splitlines()[-1])
        executor = result["usage"]["executor"]
        assert executor["image_tokens_estimated"] == images.image_tokens(900, 700)
        # the server counts them inside the input, as DeepSeek does
        assert executor["prompt_tokens"] > executor["image_tokens_estimated"]
        # resumed: the whole-session table still knows the images' share (from the store)
        code, out = run(["-c", "/cost"], repo, env)
        assert code == 0, out
        whole = out.split("Whole session")
        assert len(whole) == 2, out
        assert f"images: about {images.image_tokens(900, 700)} of the input" in whole[1], out
    from reasonix.control.cost import RoleCost, format_cost_table

    table = format_cost_table({"executor": RoleCost(1, image_tokens=358)})
    assert "images: about 358 of the input tokens (estimated" in table
