"""``@path`` mentions: what is attached, what is left alone."""

from __future__ import annotations

from pathlib import Path

from reasonix.app.mentions import MAX_FILE_CHARS, attach_mentions


def test_a_mentioned_file_is_attached_after_the_words(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    out = attach_mentions("why does @calc.py, fail?", tmp_path)
    assert out.paths == ("calc.py",)
    assert out.text.startswith(
        "why does @calc.py, fail?\n\nAttached by the user: calc.py (2 lines)"
    )
    assert out.text.endswith("```\ndef add(a, b):\n    return a + b\n```")


def test_folders_are_listed_and_each_path_attached_once(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("")
    (tmp_path / "src" / "sub").mkdir()
    out = attach_mentions("look at @src and @src/ again", tmp_path)
    assert out.paths == ("src",)
    assert "folder src/ (2 entries)\nsub/\na.py" in out.text


def test_what_is_not_a_workspace_path_is_left_as_typed(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("top secret")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "bin.dat").write_bytes(b"\0\1\2")
    text = "mail me@example.com, see @../secret.txt, @missing.py, @bin.dat and @decorator"
    out = attach_mentions(text, ws)
    assert out.paths == ()
    assert out.text == text
    assert "top secret" not in out.text
    assert out.notes == ("@bin.dat is a binary file; not attached",)


def test_a_huge_file_is_cut_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * (MAX_FILE_CHARS + 10))
    out = attach_mentions("@big.txt", tmp_path)
    assert out.paths == ("big.txt",)
    assert "[... 10 more]" in out.text and out.notes


def test_an_image_mention_and_a_pasted_image_path_become_image_parts(tmp_path: Path) -> None:
    from tests.support.images import png

    (tmp_path / "shot.png").write_bytes(png(8, 8, seed=1))
    outside = tmp_path.parent / f"{tmp_path.name}-drop"
    outside.mkdir()
    dropped = outside / "My Shot.png"
    dropped.write_bytes(png(6, 6, seed=2))
    pasted = str(dropped).replace(" ", "\\ ")
    got = attach_mentions(f"compare @shot.png with {pasted} and shot.png", tmp_path)
    assert [i.name for i in got.images] == ["My Shot.png", "shot.png"]
    assert got.text == f"compare @shot.png with {pasted} and shot.png"  # no text block
    quoted = attach_mentions(f"see '{dropped}'", tmp_path)
    assert [i.name for i in quoted.images] == ["My Shot.png"]


def test_an_image_deepseek_would_refuse_stops_the_message(tmp_path: Path) -> None:
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 8)
    got = attach_mentions("what is @broken.png", tmp_path)
    assert got.refused is not None and "not sent" in got.refused
