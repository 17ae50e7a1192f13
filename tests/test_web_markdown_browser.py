"""The model's markdown in the dashboard (issue 29), in Debian's Chromium against the real
``reasonix serve``: headings, tables and highlighted code render; a hostile answer
(``javascript:`` and data links, raw HTML, SVG, ``<img onerror>``) runs no script and causes
no CSP violation, and its links are only http/https/mailto with ``rel="noopener noreferrer"``.
A control injects the same ``<img onerror>`` past the sanitiser and sees the violation, so the
probe is shown to catch a break."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from reasonix.testing import Reply
from tests.support.browser import WAIT, browser, csp_violations, needs_chromium, open_logged_in
from tests.support.project import Project, project
from tests.support.web import serve

__all__ = ["browser", "project"]

pytestmark = [needs_chromium, pytest.mark.slow]

_REPO = Path(__file__).resolve().parent.parent
SHOTS = _REPO / os.environ.get("REASONIX_SCREENSHOTS", "build/screenshots")

ANSWER = """\
## Fixed the cache

The **cause** was a stale key; see [the docs](https://example.com/docs) or
[mail us](mailto:dev@example.com).

| file | change |
|:-----|-------:|
| cache.py | 3 lines |

```python
def key(name):
    return "v2:" + name  # the new prefix
```
"""

HOSTILE = """\
[click](javascript:document.title='pwned') [data](data:text/html,<script>alert(1)</script>)
[vb](vbscript:msgbox) <a href="javascript:document.title='pwned'">raw link</a>
<script>document.title='pwned'</script>
<img id="pwned" src="x" onerror="document.title='pwned'">
<svg onload="document.title='pwned'"><circle r="5"/></svg>
![pic](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9ImFsZXJ0KDEpIj48L3N2Zz4=)
<iframe src="https://example.com"></iframe>
<b style="color:red" onclick="document.title='pwned'">bold?</b>
[ok](https://example.com/safe)
"""


def test_markdown_renders_and_hostile_markdown_runs_nothing(project: Project, browser: Any) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    project.ex.push(Reply.text(ANSWER + "\n" + HOSTILE))
    with serve(project) as served:
        context, page = open_logged_in(browser, served, {"width": 1280, "height": 800})
        page.fill(".new-session textarea", "fix the cache")
        page.click("button:text-is('New session')")
        page.wait_for_selector(".note:has-text('Turn 1 ended')", timeout=WAIT)
        answer = page.locator(".msg.assistant .text.md").last
        answer.wait_for(timeout=WAIT)
        assert answer.locator("h2").text_content() == "Fixed the cache"
        assert answer.locator("strong").first.inner_text() == "cause"
        assert answer.locator("table td").first.inner_text() == "cache.py"
        assert answer.locator("pre code .hl-k").first.inner_text() == "def"
        hrefs = [a.get_attribute("href") for a in answer.locator("a").all()]
        assert hrefs == [
            "https://example.com/docs",
            "mailto:dev@example.com",
            "https://example.com/safe",
        ]
        for a in answer.locator("a").all():
            assert a.get_attribute("rel") == "noopener noreferrer"
        # the hostile parts stayed text: no element, no script, no handler, no violation
        for selector in ("script", "svg", "iframe", "img", "#pwned", "[onclick]", "[style]"):
            assert answer.locator(selector).count() == 0, selector
        assert "<script>" in answer.inner_text()
        assert page.title() != "pwned"
        assert csp_violations(page) == []
        page.screenshot(path=str(SHOTS / "session-markdown-desktop.png"), full_page=True)

        # Control: the same <img onerror> put in past the sanitiser is caught by the probe.
        page.evaluate(
            """() => { const t = document.createElement('template');
            t.innerHTML = '<img src="x" onerror="document.title=\\'pwned\\'">';
            document.body.append(t.content); }"""
        )
        page.wait_for_function("() => window.__csp.length > 0", timeout=WAIT)
        assert page.title() != "pwned"  # the CSP still stops it
        assert any("script-src" in v for v in csp_violations(page))
        context.close()
