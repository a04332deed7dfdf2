"""A header of your own (Pi's custom-header example): at the session's start the first block of the
transcript (caddie's logo and key hints) becomes a small mascot drawn with the theme's colours;
``/builtin-header`` brings caddie's back.

``ui.set_header(factory)`` takes ``(tui, theme) -> component``; the component draws lines with ANSI colours.
Only the terminal UI has a header (``ui.supports("header")``), so the other modes skip it.

Load it with ``caddie -e examples/extensions/custom_header.py``.
"""

from __future__ import annotations

from caddie import __version__
from caddie.extensions.api import CommandContext, ExtensionAPI, ExtensionContext, ThemeView

BLOCK, PUPIL = "█", "▌"


def mascot(theme: ThemeView) -> list[str]:
    """A creature with sideways-looking eyes on a roof and four legs, in the accent colour."""
    eye = BLOCK + theme.fg("dim", PUPIL)
    legs = "     " + theme.fg("accent", BLOCK * 2) + "    " + theme.fg("accent", BLOCK * 2)
    return ["", f"     {eye}  {eye}", "  " + theme.fg("accent", BLOCK * 14), legs, legs, legs, legs, ""]


class MascotHeader:
    def __init__(self, theme: ThemeView) -> None:
        self.theme = theme

    def render(self, width: int) -> list[str]:
        subtitle = self.theme.fg("muted", "   a coding agent for the terminal") + self.theme.fg(
            "dim", f" v{__version__}"
        )
        return [*mascot(self.theme), subtitle]


def register(api: ExtensionAPI) -> None:
    async def on_start(event: object, ctx: ExtensionContext) -> None:
        if ctx.ui.supports("header"):
            ctx.ui.set_header(lambda tui, theme: MascotHeader(theme))

    async def builtin_header(args: str, ctx: CommandContext) -> None:
        ctx.ui.set_header(None)
        ctx.ui.notify("Built-in header restored", "info")

    api.on("session_start", on_start)
    api.register_command("builtin-header", builtin_header, "Restore built-in header with keybinding hints")
