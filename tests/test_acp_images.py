"""ACP prompt image blocks (the real ``reasonix acp`` process, driven by the ACP SDK's client):
the agent advertises the image capability, an image block reaches the executor as an image
part, and a block that is no image is a JSON-RPC error with nothing sent."""

from __future__ import annotations

import asyncio
import base64

import pytest
from acp import RequestError
from acp import schema as s

from reasonix.testing import Reply
from tests.support.acp import EditorClient, acp_agent
from tests.support.images import png
from tests.support.project import Project, project

__all__ = ["project"]


def image_block(data: bytes, mime: str = "image/png") -> s.ImageContentBlock:
    return s.ImageContentBlock(type="image", data=base64.b64encode(data).decode(), mime_type=mime)


@pytest.mark.slow
async def test_an_image_block_reaches_the_executor_and_a_bad_one_is_refused(
    project: Project,
) -> None:
    shot = png(20, 20, seed=4)
    project.ex.push(Reply.text("A red square."))
    client = EditorClient()
    async with acp_agent(project, client) as conn:
        init = await asyncio.wait_for(conn.initialize(protocol_version=1), 30)
        assert init.agent_capabilities is not None
        assert init.agent_capabilities.prompt_capabilities.image is True
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        with pytest.raises(RequestError) as refused:
            await conn.prompt(
                session_id=new.session_id,
                prompt=[s.TextContentBlock(type="text", text="see"), image_block(b"BM" * 40)],
            )
        assert "not a JPEG, PNG, GIF or WebP" in str(refused.value)
        assert project.ex.requests == []
        done = await conn.prompt(
            session_id=new.session_id,
            prompt=[s.TextContentBlock(type="text", text="what is it?"), image_block(shot)],
        )
    assert done.stop_reason == "end_turn"
    user = project.ex.requests[0].messages[-1]
    url = "data:image/png;base64," + base64.b64encode(shot).decode()
    assert user["content"][-1] == {"type": "image_url", "image_url": {"url": url}}


@pytest.mark.slow
async def test_a_search_asks_in_ask_mode_and_its_price_rides_in_acp_usage(
    project: Project,
) -> None:
    from reasonix.tools.builtin.web_search import SEARCH_PRICE_USD

    project.ex.push(
        Reply.call("more_tools", {"name": "web_search", "arguments": {"query": "acp spec"}}),
        Reply.text("Found it."),
    )
    client = EditorClient(answers=["allow_once"])
    async with acp_agent(project, client) as conn:
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        done = await conn.prompt(
            session_id=new.session_id, prompt=[s.TextContentBlock(type="text", text="search")]
        )
    assert done.stop_reason == "end_turn"
    assert len(client.permission_calls) == 1  # ask mode asked before searching
    assert [q.body["query"] for q in project.ex.searches] == ["acp spec"]
    last = client.of(s.UsageUpdate)[-1]
    roles = last.field_meta["reasonix"]["roles"]
    assert roles["web_search"]["requests"] == 1
    assert roles["web_search"]["cost"] == pytest.approx(SEARCH_PRICE_USD)
