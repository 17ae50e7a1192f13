"""The dashboard in a real browser: Playwright drives Debian's Chromium (headless) against the
real ``reasonix serve`` subprocess, whose two roles talk to fake DeepSeek servers on loopback.

One dual-model turn is watched from the page: the planner reads and plans, the plan appears
and ticks, the executor's edit waits for an approval given from the page, the per-role cost
table grows, a reload in the middle of the turn loses no event, a second tab sees the same
events, and model/tool text that looks like HTML stays text. A page opened without the token
shows no session data. The tests save screenshots of the main views (desktop 1280×800, phone
390×844) to ``build/screenshots/``; ``REASONIX_SCREENSHOTS=docs/screenshots`` refreshes the
README's.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from reasonix.testing import Reply
from tests.support.browser import WAIT, browser, needs_chromium, open_logged_in
from tests.support.project import Project, project
from tests.support.web import serve

__all__ = ["browser", "project"]

pytestmark = [needs_chromium, pytest.mark.slow]

# Into the ignored build/ folder, so a test run leaves the tracked files alone; the README's are
# refreshed with REASONIX_SCREENSHOTS=docs/screenshots.
_REPO = Path(__file__).resolve().parent.parent
SHOTS = _REPO / os.environ.get("REASONIX_SCREENSHOTS", "build/screenshots")
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
INJECTED = '<img id="pwned" src="x" onerror="document.title=\'pwned\'">'


def script_dual_model_turn(project: Project) -> None:
    (project.root / "calc.py").write_text(f"# {INJECTED}\ndef add(a, b):\n    return a - b\n")
    project.pl.push(
        Reply.call("read_file", {"path": "calc.py"}, reasoning="Look at the file first."),
        Reply.call(
            "submit_plan",
            {
                "objective": "Fix add()",
                "steps": [
                    {"title": "Fix the operator in calc.py", "files": ["calc.py"]},
                    {"title": "Report the change"},
                ],
            },
            reasoning="One edit, then report.",
        ),
    )
    project.ex.push(
        Reply.call(
            "edit_file",
            {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"},
            reasoning="Apply the plan's first step.",
        ),
        Reply.call("complete_step", {"step": "1", "evidence": "edited calc.py"}),
        Reply.call("read_file", {"path": "calc.py"}),
        Reply.call("complete_step", {"step": "2", "evidence": "read the fixed calc.py back"}),
        Reply.text("Fixed add() in calc.py: it now returns a + b."),
    )


def stream_state(page: Any) -> dict[str, int]:
    """The page's own record of the event stream: the last id, how many events it rendered,
    and whether an id was ever skipped."""
    data = page.eval_on_selector(
        "#session",
        "el => ({last: +el.dataset.lastId, count: +el.dataset.count, gap: +el.dataset.gap})",
    )
    return {k: int(v) for k, v in data.items()}


def wait_for_event(page: Any, number: int) -> None:
    page.wait_for_function(
        "n => +document.querySelector('#session').dataset.lastId >= n", arg=number, timeout=WAIT
    )


def role_requests(page: Any, role: str) -> int:
    cell = page.locator(f'#cost tr[data-role="{role}"] td').nth(1)
    return int(cell.inner_text())


def test_a_dual_model_turn_watched_and_steered_from_the_page(
    project: Project, browser: Any
) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    script_dual_model_turn(project)
    with serve(project) as served:
        context, page = open_logged_in(browser, served, DESKTOP)
        problems: list[str] = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        # the token left the address bar (and the history entry) once it was exchanged
        assert "token=" not in page.url

        page.fill(".new-session textarea", "/plan fix add() in calc.py")
        page.click("button:text-is('New session')")
        page.wait_for_url(re.compile(r"#/s/"), timeout=WAIT)
        sid = page.url.rsplit("/", 1)[1]

        # The planner's work streams in; the plan appears; the edit waits for us.
        approval = page.locator("[data-approval-id]")
        approval.wait_for(timeout=WAIT)
        assert "edit_file" in approval.inner_text()
        # the file's diff (as the terminal shows it), its changed line whole
        del_line = page.locator(".approval .diff .del").first.inner_text().strip()
        assert del_line == "-    return a - b"
        add_line = page.locator(".approval .diff .add").first.inner_text().strip()
        assert add_line == "+    return a + b"
        page.wait_for_selector("details.reasoning", state="attached", timeout=WAIT)
        assert page.locator("#todo li").count() == 2
        assert page.locator("#todo li").first.get_attribute("data-status") == "in_progress"
        assert role_requests(page, "planner") == 2
        executor_before = role_requests(page, "executor")
        assert executor_before == 1

        # Untrusted text is text: the file's HTML reached the page only as characters.
        read = page.locator('.call[data-tool="read_file"]').first
        assert INJECTED in read.inner_text()
        assert page.locator("#pwned").count() == 0
        assert page.title() != "pwned"

        before = stream_state(page)
        assert before["gap"] == 0 and before["count"] == before["last"] > 0

        # A second tab on the same session sees the same events.
        other = context.new_page()
        other.goto(f"{served.base}/#/s/{sid}")
        other.locator("[data-approval-id]").wait_for(timeout=WAIT)
        wait_for_event(other, before["last"])
        assert stream_state(other)["last"] == before["last"]

        # Reload in the middle of the turn (it waits for the approval): nothing is lost.
        page.reload()
        page.locator("[data-approval-id]").wait_for(timeout=WAIT)
        wait_for_event(page, before["last"])
        after = stream_state(page)
        assert after["gap"] == 0
        assert after["count"] == after["last"] >= before["last"]
        assert page.locator("#todo li").count() == 2
        assert role_requests(page, "executor") == executor_before
        page.screenshot(path=str(SHOTS / "session-approval-desktop.png"))

        # Approve from the page; the turn finishes; the plan ticks; the costs grow.
        page.click("[data-approval-id] button:text-is('Approve')")
        page.wait_for_selector(".note.ok-note:has-text('Turn 1 ended: done')", timeout=WAIT)
        assert page.locator("[data-approval-id]").count() == 0
        statuses = [li.get_attribute("data-status") for li in page.locator("#todo li").all()]
        assert statuses == ["completed", "completed"]
        assert role_requests(page, "executor") == 5
        assert role_requests(page, "planner") == 2
        assert "Fixed add() in calc.py" in page.locator("#transcript").inner_text()
        edit = page.locator('.call[data-tool="edit_file"]')
        assert edit.locator(".diff .add").first.is_visible()
        assert (project.root / "calc.py").read_text().endswith("return a + b\n")
        # the other tab followed along, event for event
        other.wait_for_selector(".note.ok-note:has-text('Turn 1 ended')", timeout=WAIT)
        assert stream_state(other)["last"] == stream_state(page)["last"]
        assert stream_state(other)["gap"] == 0
        page.screenshot(path=str(SHOTS / "session-desktop.png"))

        # The command table's commands, from the page: /turns answers in the transcript of
        # every tab, and compact, rewind, undo and goal are offered.
        offered = page.locator("#command option").evaluate_all("os => os.map(o => o.value)")
        assert {"compact", "rewind", "undo", "goal", "turns"} <= set(offered), offered
        page.select_option("#command", "turns")
        page.click("#command-run")
        page.wait_for_selector(".note:has-text('fix add() in calc.py')", timeout=WAIT)
        other.wait_for_selector(".note:has-text('fix add() in calc.py')", timeout=WAIT)

        page.goto(f"{served.base}/#/")
        page.wait_for_selector(f'.session-row[data-id="{sid}"]', timeout=WAIT)
        row = page.locator(f'.session-row[data-id="{sid}"]').inner_text()
        assert "fix add() in calc.py" in row and "plan and execute" in row and "$" in row
        page.screenshot(path=str(SHOTS / "sessions-desktop.png"))
        assert not [p for p in problems if "Content Security Policy" in p], problems
        assert not problems, problems
        context.close()

        # The same views on a phone, in the dark.
        phone, mobile = open_logged_in(browser, served, PHONE, color_scheme="dark", is_mobile=True)
        mobile.screenshot(path=str(SHOTS / "sessions-phone.png"))
        mobile.goto(f"{served.base}/#/s/{sid}")
        mobile.wait_for_selector(".note.ok-note:has-text('Turn 1 ended')", timeout=WAIT)
        width = mobile.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"the page scrolls sideways on a phone ({width}px)"
        mobile.screenshot(path=str(SHOTS / "session-phone.png"))
        phone.close()


def test_without_the_token_the_page_shows_no_session_data(project: Project, browser: Any) -> None:
    project.ex.push(Reply.text("A private answer."))
    with serve(project) as served:
        # someone with the token makes a session
        context, page = open_logged_in(browser, served, DESKTOP)
        page.fill(".new-session textarea", "a private task")
        page.click("button:text-is('New session')")
        page.wait_for_selector(".note:has-text('Turn 1 ended')", timeout=WAIT)
        sid = page.url.rsplit("/", 1)[1]
        context.close()

        stranger = browser.new_context(viewport=PHONE)
        page = stranger.new_page()
        page.goto(f"{served.base}/#/s/{sid}")
        page.wait_for_selector("#login", timeout=WAIT)
        text = page.locator("body").inner_text()
        assert "Not logged in" in text
        assert "a private task" not in text and "A private answer" not in text
        status = page.evaluate("fetch('/api/sessions').then(r => r.status)")
        assert status == 401
        page.screenshot(path=str(SHOTS / "login-phone.png"))
        stranger.close()


def test_interrupt_from_the_page_and_a_read_only_session(project: Project, browser: Any) -> None:
    from reasonix.store import SessionStore

    (project.root / "notes.txt").write_text("old\n")
    project.ex.push(
        Reply.call("edit_file", {"path": "notes.txt", "old_string": "old", "new_string": "new"})
    )
    with serve(project) as served:
        context, page = open_logged_in(browser, served, DESKTOP)
        page.fill(".new-session textarea", "change the notes")
        page.click("button:text-is('New session')")
        page.locator("[data-approval-id]").wait_for(timeout=WAIT)
        page.click("button:has-text('Interrupt')")
        page.wait_for_selector(".note:has-text('Turn 1 ended: interrupted')", timeout=WAIT)
        assert page.locator("[data-approval-id]").count() == 0
        assert "cancelled" in page.locator("#transcript").inner_text()
        assert (project.root / "notes.txt").read_text() == "old\n"
        assert page.locator("#state").inner_text() == "idle"

        # A session another process holds is shown read-only: no box to write in.
        store = SessionStore(project.data / "sessions.db")
        try:
            held = store.create_session(project.root, "held by a terminal")
            assert store.claim(held)
            page.goto(f"{served.base}/#/s/{held}")
            page.wait_for_selector("#read-only", timeout=WAIT)
            assert "another reasonix process" in page.locator("#read-only").inner_text()
            assert page.locator("#message").is_disabled()
            assert page.locator("#state").inner_text() == "read-only"
        finally:
            store.close()
        context.close()


def test_the_models_question_is_answered_from_the_page(project: Project, browser: Any) -> None:
    project.ex.push(
        Reply.call(
            "ask",
            {
                "questions": [
                    {
                        "question": "Which database should the cache use?",
                        "header": "Database",
                        "options": [
                            {"label": "SQLite", "description": "a file next to the data"},
                            {"label": "Redis", "description": "a server you run"},
                        ],
                        "multiSelect": False,
                    }
                ]
            },
        ),
        Reply.text("SQLite it is."),
    )
    with serve(project) as served:
        context, page = open_logged_in(browser, served, DESKTOP)
        page.fill(".new-session textarea", "add a cache")
        page.click("button:text-is('New session')")
        page.wait_for_selector(".note:has-text('needs_input')", timeout=WAIT)
        assert "Which database should the cache use?" in page.locator(".questions").inner_text()
        card = page.locator('.call[data-tool="ask"]')
        assert card.locator(".call-status").inner_text() == "waiting for your answer"
        assert page.locator("#transcript").inner_text().count("Which database") == 1
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "session-question-desktop.png"))
        # one click answers: the option is sent at once and the card closes
        page.click(".option:has-text('SQLite')")
        page.wait_for_selector(".note:has-text('Turn 2 ended: done')", timeout=WAIT)
        assert card.locator(".call-status").inner_text() == "answered: SQLite"
        assert not card.locator(".questions").is_visible()
        assert "SQLite it is." in page.locator("#transcript").inner_text()
        # the answer reached the model as the ask call's result
        tool_messages = [m for m in project.ex.last_request.messages if m["role"] == "tool"]
        assert "SQLite" in str(tool_messages[-1]["content"])
        context.close()


def test_an_unfinished_plan_ends_plan_incomplete_on_the_page(
    project: Project, browser: Any
) -> None:
    project.pl.push(
        Reply.call(
            "submit_plan",
            {
                "objective": "Fix add() and prove it",
                "steps": [{"title": "Fix the operator"}, {"title": "Run the tests"}],
            },
        )
    )
    # The executor stops at once, and again after being told the plan is open.
    project.ex.push(Reply.text("Done."), Reply.text("Done, nothing more."))
    with serve(project) as served:
        context, page = open_logged_in(browser, served, DESKTOP)
        page.fill(".new-session textarea", "/plan fix add()")
        page.click("button:text-is('New session')")
        page.wait_for_selector(
            ".note.warn-note:has-text('Turn 1 ended: plan_incomplete')", timeout=WAIT
        )
        assert "plan unfinished" in page.locator("#session").inner_text()
        statuses = [li.get_attribute("data-status") for li in page.locator("#todo li").all()]
        assert statuses == ["in_progress", "pending"]
        context.close()


def test_a_broken_request_is_counted_and_marked_an_estimate_on_the_page(
    project: Project, browser: Any
) -> None:
    from reasonix.testing import Fault

    answer = "A long answer that streams for a while before the connection breaks.\n" * 10
    project.ex.push(Reply(content=answer, fault=Fault(cut_in="text")), Reply.text(answer))
    with serve(project) as served:
        context, page = open_logged_in(browser, served, DESKTOP)
        page.fill(".new-session textarea", "explain it")
        page.click("button:text-is('New session')")
        page.wait_for_selector(".note:has-text('Turn 1 ended: done')", timeout=WAIT)
        cell = page.locator('#cost tr[data-role="executor"] td.usd')
        assert cell.inner_text().endswith("~")
        assert "estimate for 1 interrupted or broken" in (cell.get_attribute("title") or "")
        assert role_requests(page, "executor") == 2
        context.close()
