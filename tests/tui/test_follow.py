"""The conversation follows new output while at the bottom; scrolling up pauses it (Pilot)."""

from __future__ import annotations

from pathlib import Path

from caddie.modes.interactive.conversation import UserBlock
from tests.tui.harness import SMALL, make_app, ready, settle, submit


def _bottom_visible(app: object) -> bool:
    from caddie.modes.interactive.app import CaddieApp

    assert isinstance(app, CaddieApp)
    conv = app.conversation
    return conv.scroll_y >= conv.max_scroll_y


async def test_page_up_pauses_following_and_the_bottom_or_sending_resumes_it(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, model="faux/echo")
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        for i in range(12):
            await submit(pilot, app, f"message {i}")
            await settle(app, pilot)
        assert _bottom_visible(app)
        await pilot.press("pageup")
        await pilot.pause(0.1)
        assert not app.conversation.following
        # new output while scrolled up does not move the view
        y = app.conversation.scroll_y
        app.session.core.bridge.send_user_message("from elsewhere", None)  # type: ignore[union-attr]
        await settle(app, pilot)
        assert app.conversation.scroll_y == y
        assert not app.conversation.following
        assert not _bottom_visible(app)
        for _ in range(10):
            await pilot.press("pagedown")
        await pilot.pause(0.1)
        assert app.conversation.following
        await submit(pilot, app, "after paging down")
        await settle(app, pilot)
        assert _bottom_visible(app)
        assert app.conversation.blocks_of(UserBlock)[-1].text == "after paging down"

        await pilot.press("pageup", "pageup")
        await pilot.pause(0.1)
        assert not app.conversation.following
        await submit(pilot, app, "A")
        await settle(app, pilot)
        assert app.conversation.following
        assert _bottom_visible(app)
        await pilot.press("pageup")
        await pilot.press("end")  # tui.altScreen.bottom
        await pilot.pause(0.1)
        assert app.conversation.following


async def test_a_resize_while_scrolled_up_keeps_the_same_message_at_the_top(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, model="faux/echo")
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        for i in range(12):
            await submit(pilot, app, f"message {i} " + "words that wrap " * 8)
            await settle(app, pilot)
        await pilot.press("pageup", "pageup")
        await pilot.pause(0.1)
        conv = app.conversation
        top = conv.blocks[conv.index_at(int(conv.scroll_y))]
        assert not conv.following and top is not conv.blocks[-1]
        for width in (SMALL[0] - 17, SMALL[0] + 23, SMALL[0]):
            await pilot.resize_terminal(width, SMALL[1])
            await settle(app, pilot)
            assert conv.blocks[conv.index_at(int(conv.scroll_y))] is top, f"width {width}"
            assert not conv.following
