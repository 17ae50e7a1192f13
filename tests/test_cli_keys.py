"""Keys read while a turn runs: Esc interrupts, text is kept for type-ahead, and the slash
command table feeds /help and completion."""

from __future__ import annotations

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from reasonix.cli.interactive import KeyWatcher, SlashCompleter


def watcher() -> tuple[KeyWatcher, list[str]]:
    seen: list[str] = []
    return KeyWatcher(lambda: seen.append("esc"), lambda: seen.append("change")), seen


def test_typed_text_is_kept_and_enter_queues_it() -> None:
    keys, seen = watcher()
    keys.feed(b"fix the tests\rand thn\x7fen docs")
    assert keys.queued == ["fix the tests"]
    assert keys.typed == "and then docs"
    assert "esc" not in seen
    assert keys.take() == (["fix the tests"], "and then docs")
    assert keys.take() == ([], "")


def test_a_lone_escape_interrupts_but_arrows_and_alt_keys_do_not() -> None:
    keys, seen = watcher()
    keys.feed(b"\x1b[A\x1b[1;5C\x1bOP\x1bx")
    assert "esc" not in seen and keys.typed == ""
    keys.feed("héllo".encode())
    assert keys.typed == "héllo"
    keys.feed(b"\x1b")
    assert "esc" in seen


def test_completion_offers_the_command_table(tmp_path: object) -> None:
    from reasonix.app.commands import listing

    got = SlashCompleter(tmp_path).get_completions(  # type: ignore[arg-type]
        Document("/re"), CompleteEvent(completion_requested=True)
    )
    table = [f"/{c.name}" for c in listing("app") if c.name.startswith("re")]
    assert [c.text for c in got] == table and "/rewind" in table
