"""Images in the transcript are drawn inline (half blocks here; the kitty protocol where the terminal has it),
as wide as ``terminal.imageWidthCells``; ``terminal.showImages: false`` leaves an ``[image]`` line."""

from __future__ import annotations

import base64
import io
from pathlib import Path

from PIL import Image

from caddie.ai.messages import ImageContent, TextContent, UserMessage
from caddie.ai.providers.faux import faux_message
from caddie.modes.interactive.conversation import ImageBlock
from caddie.modes.interactive.images import image_kind
from caddie.session.store import SessionStore
from tests.tui.harness import SMALL, make_app, ready, widget_text, write_settings


def png(width: int, height: int) -> str:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, "PNG")
    return base64.b64encode(out.getvalue()).decode()


def session_with_an_image(tmp_path: Path) -> str:
    store = SessionStore.create(str(tmp_path), session_dir=str(tmp_path / "sessions"))
    store.append_message(UserMessage([TextContent("what is this?"), ImageContent(png(80, 40), "image/png")]))
    store.append_message(faux_message("A red rectangle."))  # a session file is written once a reply is in it
    assert store.session_file is not None
    return store.session_file


def test_the_kind_of_drawing_comes_from_the_terminals_environment() -> None:
    assert image_kind({"TERM": "xterm-kitty"}) == "kitty"
    assert image_kind({"TERM_PROGRAM": "WezTerm", "TERM": "xterm-256color"}) == "kitty"
    assert image_kind({"TERM": "xterm-256color"}) == "halfcell"
    assert image_kind({"TERM": "xterm-kitty"}, show=False) == "off"


async def test_an_image_is_drawn_inline_as_wide_as_the_setting(tmp_path: Path) -> None:
    write_settings(terminal={"imageWidthCells": 20})
    app, _ = make_app(tmp_path, session="file", session_file=session_with_an_image(tmp_path))
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        [block] = app.conversation.blocks_of(ImageBlock)
        lines = [line.strip() for line in widget_text(block).splitlines() if line.strip()]
    assert lines and all(set(line) == {"▀"} for line in lines)
    assert max(len(line) for line in lines) == 20
    assert len(lines) == 5, "80x40 pixels at 20 cells: 10 pixel rows, two per cell"


async def test_show_images_off_leaves_a_line_saying_so(tmp_path: Path) -> None:
    write_settings(terminal={"showImages": False})
    app, _ = make_app(tmp_path, session="file", session_file=session_with_an_image(tmp_path))
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        [block] = app.conversation.blocks_of(ImageBlock)
        shown = widget_text(block)
    assert shown.strip() == "[image image/png]"
