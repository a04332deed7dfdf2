"""Large pastes collapse to ``[paste #1 +120 lines]`` markers, as in Pi; the message sent holds the paste."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from textual import events

from caddie.ai.messages import UserMessage, text_of
from caddie.modes.interactive.pastes import PasteBook, clean_paste
from tests.tui.harness import SMALL, make_app, ready, settle, until


def test_only_large_pastes_become_markers_and_markers_expand_back() -> None:
    book = PasteBook()
    assert book.add("a few\nlines") is None
    lines = "\n".join(f"line {i}" for i in range(120))
    assert book.add(lines) == "[paste #1 +120 lines]"
    assert book.add("x" * 1532) == "[paste #2 1532 chars]"
    assert (
        book.expand("see [paste #1 +120 lines] and [paste #9 +3 lines]")
        == f"see {lines} and [paste #9 +3 lines]"
    )
    assert clean_paste("a\r\nb\x07c") == "a\nbc"
    assert clean_paste("/tmp/x.png", "look at") == " /tmp/x.png"


async def test_a_large_paste_shows_a_marker_and_sends_the_text(tmp_path: Path) -> None:
    pasted = "\n".join(f"row {i}" for i in range(40))
    app, _ = make_app(tmp_path, model="faux/echo")
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        app.editor.set_text("check this: ")
        app.editor.post_message(events.Paste(pasted))
        await pilot.pause()
        shown = app.editor.text
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.session is not None
        sent = [text_of(m.content) for m in app.session.messages if isinstance(m, UserMessage)]
    assert shown == "check this: [paste #1 +40 lines]"
    assert sent == [f"check this: {pasted}"]


def fake_xclip(bin_dir: Path, image: bytes | None, text: str) -> None:
    """An ``xclip`` that serves an image (when given) and text, as X11's clipboard would."""
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "image.bin").write_bytes(image or b"")
    targets = "TARGETS\\nimage/png\\nUTF8_STRING" if image else "TARGETS\\nUTF8_STRING"
    script = f"""#!/bin/sh
case "$*" in
  *"-t TARGETS -o"*) printf '{targets}\\n' ;;
  *"-t image/png -o"*) cat "{bin_dir / "image.bin"}" ;;
  *"-o"*) printf '%s' '{text}' ;;
esac
"""
    (bin_dir / "xclip").write_text(script)
    (bin_dir / "xclip").chmod(0o755)


async def test_ctrl_v_puts_a_clipboard_image_in_a_file_and_its_path_in_the_editor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    png = b"\\x89PNG\\r\\n\\x1a\\n" + b"\\x00" * 32
    fake_xclip(tmp_path / "bin", png, "unused")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        app.editor.set_text("what is in")
        await pilot.press("ctrl+v")
        await until(pilot, lambda: ".png" in app.editor.text)
        text = app.editor.text
    path = Path(text.split(" ", 3)[-1].strip())
    assert text.startswith("what is in /") and path.suffix == ".png", "a space before the path, as Pi adds"
    assert path.read_bytes() == png


async def test_ctrl_v_without_an_image_pastes_the_clipboard_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_xclip(tmp_path / "bin", None, "from the clipboard")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await pilot.press("ctrl+v")
        await until(pilot, lambda: bool(app.editor.text))
        text = app.editor.text
    assert text == "from the clipboard"
