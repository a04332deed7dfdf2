"""Overlay positioning checks (a part of Pi's overlay-qa-tests example), each a command that floats a box
over the conversation with ``ui.custom(..., overlay=True)``:

- ``/overlay-anchors``: the box visits Pi's nine anchors in turn (Enter: the next one, Esc: stop);
- ``/overlay-margins``: ``margin`` and ``offset_x`` / ``offset_y`` move it away from its corner;
- ``/overlay-percent``: ``width="50%"`` of the screen;
- ``/overlay-maxheight``: a 40-line component cut to ``max_height=10`` rows;
- ``/overlay-stack``: ``s`` opens another overlay over the first; each closes with Esc, innermost first;
- ``/overlay-toggle``: ``t`` hides the box for a second through its ``OverlayHandle.set_hidden``;
- ``/overlay-animation``: a ball bouncing at ~30 frames a second (``tui.request_render()`` from a timer).

Not ported from Pi's (caddie's overlays do not have these): row/column positions, ``visible`` callbacks (the
responsive side panel), non-capturing overlays (the passive panel) and focus cycling between several
overlays (the focus and streaming demos); the overflow demo's streaming process output.

Load it with ``caddie -e examples/extensions/overlay_qa_tests.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from caddie.extensions.api import (
    CommandContext,
    ExtensionAPI,
    KeyInput,
    OverlayHandle,
    OverlayOptions,
    ThemeView,
    TuiHandle,
    matches_key,
)

ANCHORS = ["top-left", "top-center", "top-right", "left-center", "center", "right-center", "bottom-left",
           "bottom-center", "bottom-right"]  # fmt: skip
FPS = 30
HIDDEN_SECONDS = 1.0


class Note:
    """A box of lines; Enter answers ``next``, Esc ``stop``; other keys go to ``on_key``."""

    def __init__(self, lines: list[str], done: Any, on_key: Any = None) -> None:
        self.lines, self.done, self.on_key = lines, done, on_key

    def render(self, width: int) -> list[str]:
        return self.lines

    def handle_input(self, key: KeyInput) -> None:
        if matches_key(key, "escape"):
            self.done("stop")
        elif matches_key(key, "enter"):
            self.done("next")
        elif self.on_key is not None:
            self.on_key(key)


class Ball:
    """A ball bouncing in a 40×10 box, one step per frame."""

    def __init__(self, tui: TuiHandle, theme: ThemeView, done: Any) -> None:
        self.tui, self.theme, self.done = tui, theme, done
        self.x, self.y, self.dx, self.dy = 1, 1, 1, 1
        self.frames = 0
        self.running = asyncio.ensure_future(self.animate())

    async def animate(self) -> None:
        while True:
            await asyncio.sleep(1 / FPS)
            self.frames += 1
            self.x, self.dx = (
                (self.x + self.dx, self.dx) if 0 <= self.x + self.dx < 40 else (self.x - self.dx, -self.dx)
            )
            self.y, self.dy = (
                (self.y + self.dy, self.dy) if 0 <= self.y + self.dy < 10 else (self.y - self.dy, -self.dy)
            )
            self.tui.request_render()

    def render(self, width: int) -> list[str]:
        rows = [" " * 40 for _ in range(10)]
        rows[self.y] = rows[self.y][: self.x] + self.theme.fg("accent", "●") + rows[self.y][self.x + 1 :]
        return [f"frame {self.frames}", *rows, "Esc closes"]

    def handle_input(self, key: KeyInput) -> None:
        if matches_key(key, "escape"):
            self.running.cancel()
            self.done(self.frames)


def register(api: ExtensionAPI) -> None:
    async def show(ctx: CommandContext, lines: list[str], options: OverlayOptions, **kw: Any) -> Any:
        return await ctx.ui.custom(
            lambda tui, theme, keys, done: Note(lines, done, kw.get("on_key")),
            overlay=True,
            overlay_options=options,
            on_handle=kw.get("on_handle"),
        )

    async def anchors(args: str, ctx: CommandContext) -> None:
        for anchor in ANCHORS:
            answer = await show(ctx, [f"anchor: {anchor}", "Enter: next · Esc: stop"],
                                OverlayOptions(anchor=anchor, width=30))  # type: ignore[arg-type]  # fmt: skip
            if answer != "next":
                ctx.ui.notify(f"stopped at {anchor}")
                return
        ctx.ui.notify("all nine anchors shown")

    async def margins(args: str, ctx: CommandContext) -> None:
        options = OverlayOptions(anchor="top-left", width=30, margin=3, offset_x=4, offset_y=2)
        await show(ctx, ["top-left, margin 3, offset (4, 2)"], options)

    async def percent(args: str, ctx: CommandContext) -> None:
        await show(ctx, ["half the screen wide"], OverlayOptions(width="50%"))

    async def maxheight(args: str, ctx: CommandContext) -> None:
        await show(ctx, [f"line {i}" for i in range(1, 41)], OverlayOptions(width=30, max_height=10))

    async def stack(args: str, ctx: CommandContext) -> None:
        inner: list[asyncio.Task[Any]] = []

        def open_inner(key: KeyInput) -> None:
            if (key.character or "") == "s" and not inner:
                lines = ["second overlay, on top", "Esc closes it"]
                options = OverlayOptions(anchor="bottom-right", width=30)
                inner.append(asyncio.ensure_future(show(ctx, lines, options)))

        await show(ctx, ["first overlay", "s: open another · Esc: close"], OverlayOptions(anchor="top-left", width=34),
                   on_key=open_inner)  # fmt: skip
        ctx.ui.notify("stack closed")

    async def toggle(args: str, ctx: CommandContext) -> None:
        handles: list[OverlayHandle] = []

        def hide_for_a_second(key: KeyInput) -> None:
            if (key.character or "") == "t" and handles:
                handles[0].set_hidden(True)  # hidden, it takes no keys: it comes back by itself
                asyncio.get_running_loop().call_later(HIDDEN_SECONDS, handles[0].set_hidden, False)

        await show(ctx, ["t: hide for a second · Esc: close"], OverlayOptions(width=36), on_key=hide_for_a_second,
                   on_handle=handles.append)  # fmt: skip

    async def animation(args: str, ctx: CommandContext) -> None:
        frames = await ctx.ui.custom(
            lambda tui, theme, keys, done: Ball(tui, theme, done),
            overlay=True,
            overlay_options=OverlayOptions(width=44),
        )
        ctx.ui.notify(f"{frames} frames drawn")

    for name, handler in {
        "overlay-anchors": anchors, "overlay-margins": margins, "overlay-percent": percent,
        "overlay-maxheight": maxheight, "overlay-stack": stack, "overlay-toggle": toggle,
        "overlay-animation": animation,
    }.items():  # fmt: skip
        api.register_command(name, handler, f"overlay QA: {name.removeprefix('overlay-')}")
