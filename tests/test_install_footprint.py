"""What ``pip install reasonix`` brings: the whole product (MCP, ACP, the dashboard; Ray only as
an extra) in a small tree. Read from the installed metadata, so it checks what pip resolved."""

from __future__ import annotations

from tests.support.footprint import dependency_tree

#: reasonix and its dependencies after the plain install (56 with trafilatura's tree).
MAX_PACKAGES = 41
#: The HTML-extraction stack web_fetch used to bring (lxml and its cleaner, date and language
#: data) and that pip warned about ("lxml does not provide the extra 'html_clean'").
NOT_INSTALLED = {"lxml", "lxml-html-clean", "trafilatura", "justext", "babel", "dateparser"}


def test_the_plain_install_is_the_whole_product() -> None:
    tree = dependency_tree("reasonix")
    for part in ("mcp", "agent-client-protocol", "starlette", "uvicorn", "html-to-markdown"):
        assert part in tree, part
    assert "ray" not in tree
    assert "ray" in dependency_tree("reasonix", extras=("ray",))


def test_the_plain_install_stays_small() -> None:
    tree = dependency_tree("reasonix")
    assert not tree & NOT_INSTALLED, sorted(tree & NOT_INSTALLED)
    assert len(tree) <= MAX_PACKAGES, (len(tree), sorted(tree))
