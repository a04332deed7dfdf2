"""The line-based transcript view: thousands of blocks open at once, only what is near the screen is drawn,
what is on screen stays put when blocks above turn out taller than estimated, and it follows new output."""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from rich.text import Text
from textual.app import App

from caddie.modes.interactive.transcript_view import Block, TranscriptView


class Lines(Block):
    def __init__(self, text: str, *, claims: int | None = None) -> None:
        super().__init__()
        self.body = text
        self.claims = claims

    def content(self) -> RenderableType:
        return Text(self.body)

    def search_text(self) -> str:
        return self.body

    def estimate(self, width: int) -> int:
        return self.claims if self.claims is not None else super().estimate(width)


class Host(App[None]):
    def compose(self) -> Any:
        self.view = TranscriptView()
        yield self.view


def screen_lines(app: Host) -> list[str]:
    return [strip.text.strip() for strip in app.screen._compositor.render_strips()]


async def test_thousands_of_blocks_draw_only_those_near_the_screen() -> None:
    app = Host()
    async with app.run_test(size=(60, 20)) as pilot:
        blocks = [Lines(f"message {i}") for i in range(5000)]
        app.view.add(*blocks)
        await pilot.pause()
        drawn = sum(b.measured_width > 0 for b in blocks)
        bottom = screen_lines(app)
        app.view.scroll_home(animate=False)
        await pilot.pause()
        top = screen_lines(app)
    assert drawn < 100
    assert "message 4999" in bottom
    assert top[0] == "message 0"


async def test_what_is_on_screen_stays_put_when_blocks_above_are_taller_than_guessed() -> None:
    app = Host()
    async with app.run_test(size=(60, 10)) as pilot:
        blocks = [Lines("\n".join(f"block {i} line {j}" for j in range(5)), claims=1) for i in range(200)]
        app.view.add(*blocks)
        await pilot.pause()
        app.view.scroll_to_block(blocks[100])
        await pilot.pause()
        before = screen_lines(app)[0]
        app.view.scroll_relative(y=-3, animate=False)  # into blocks whose height was a guess
        await pilot.pause()
        app.view.scroll_relative(y=3, animate=False)
        await pilot.pause()
        after = screen_lines(app)[0]
    assert before == "block 100 line 0"
    assert after == before


async def test_it_follows_new_output_until_scrolled_up_and_redraws_a_changed_block() -> None:
    app = Host()
    async with app.run_test(size=(60, 10)) as pilot:
        app.view.add(*[Lines(f"old {i}") for i in range(50)])
        live = Lines("streaming")
        app.view.add(live)
        await pilot.pause()
        live.body = "streaming, now longer\nwith a second line"
        live.changed()
        await pilot.pause()
        following = screen_lines(app)
        app.view.scroll_relative(y=-20, animate=False)
        await pilot.pause()
        paused = app.view.following
        app.view.add(Lines("newer"))
        await pilot.pause()
        still_up = "newer" not in screen_lines(app)
        app.view.follow()
        await pilot.pause()
        back = screen_lines(app)
    assert "with a second line" in following
    assert not paused and still_up
    assert "newer" in back
