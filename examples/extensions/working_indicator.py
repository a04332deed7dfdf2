"""The working line's spinner (Pi's working-indicator example): ``/working-indicator dot|pulse|none|spinner``
picks the indicator shown while the agent works, ``reset`` brings caddie's back, no argument says which one
is in use. The choice is shown in the footer as a status.

``ui.set_working_indicator(frames, interval_ms)`` takes the frames (ANSI colours allowed) and how long each
shows; ``[]`` hides the indicator, ``None`` restores caddie's.

Load it with ``caddie -e examples/extensions/working_indicator.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from caddie.extensions.api import CommandContext, ExtensionAPI, ExtensionContext

SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
PASTEL_RAINBOW = [(255, 179, 186), (255, 223, 186), (255, 255, 186), (186, 255, 201), (186, 225, 255),
                  (218, 186, 255)]  # fmt: skip


def pastel(text: str, index: int) -> str:
    r, g, b = PASTEL_RAINBOW[index % len(PASTEL_RAINBOW)]
    return f"\x1b[38;2;{r};{g};{b}m{text}\x1b[39m"


@dataclass(frozen=True, slots=True)
class Indicator:
    description: str
    frames: list[str] | None
    """None: caddie's own spinner."""
    interval_ms: int | None = None


INDICATORS = {
    "dot": Indicator("static dot", [pastel("●", 0)]),
    "pulse": Indicator("custom pulse", [pastel("·", 0), pastel("•", 2), pastel("●", 4), pastel("•", 5)], 120),
    "none": Indicator("hidden", []),
    "spinner": Indicator("custom spinner", [pastel(frame, i) for i, frame in enumerate(SPINNER)], 80),
    "reset": Indicator("caddie's default spinner", None),
}
USAGE = "Usage: /working-indicator [dot|pulse|none|spinner|reset]"


def register(api: ExtensionAPI) -> None:
    chosen = ["spinner"]

    def apply(ctx: ExtensionContext) -> None:
        indicator = INDICATORS[chosen[0]]
        ctx.ui.set_working_indicator(indicator.frames, indicator.interval_ms)
        ctx.ui.set_status("working-indicator", ctx.ui.theme.fg("dim", f"Indicator: {indicator.description}"))

    async def on_start(event: object, ctx: ExtensionContext) -> None:
        apply(ctx)

    async def working_indicator(args: str, ctx: CommandContext) -> None:
        wanted = args.strip().lower()
        if not wanted:
            ctx.ui.notify(f"Working indicator: {INDICATORS[chosen[0]].description}", "info")
            return
        if wanted not in INDICATORS:
            ctx.ui.notify(USAGE, "error")
            return
        chosen[0] = wanted
        apply(ctx)
        ctx.ui.notify(f"Working indicator set to: {INDICATORS[wanted].description}", "info")

    api.on("session_start", on_start)
    api.register_command(
        "working-indicator",
        working_indicator,
        "Set the streaming working indicator: dot, pulse, none, spinner, or reset.",
    )
