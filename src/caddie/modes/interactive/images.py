"""Images in the transcript (your ``@image`` attachments, images tools return), drawn inline.

On terminals that speak the kitty graphics protocol (kitty, Ghostty, WezTerm) the picture itself is shown,
through ``textual-image``'s unicode-placeholder renderer, which fits a line-based view; everywhere else (and
in tests) it is drawn with coloured half blocks — two pixels per cell — which every colour terminal shows.
Sixel is not used: a Sixel image is drawn at the cursor and takes no cells, so a transcript drawn line by
line cannot place or clip it (docs/interactive.md). Pi's settings apply: ``terminal.showImages`` (off: a
``[image]`` line) and ``terminal.imageWidthCells`` (default 60).

Which kind is known from the environment, never by querying the terminal (a query while the app reads
the keyboard would turn the terminal's answer into keys).
"""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Mapping
from typing import Any, Literal

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

ImageKind = Literal["kitty", "halfcell", "off"]
DEFAULT_WIDTH_CELLS = 60


def image_kind(environ: Mapping[str, str] | None = None, show: bool = True) -> ImageKind:
    """How images are drawn in this terminal (from its environment variables)."""
    env = os.environ if environ is None else environ
    if not show:
        return "off"
    term, program = env.get("TERM", ""), env.get("TERM_PROGRAM", "")
    if (
        env.get("KITTY_WINDOW_ID")
        or "kitty" in term
        or program in ("ghostty", "WezTerm")
        or "ghostty" in term
    ):
        return "kitty"
    return "halfcell"


def prepare_terminal(kind: ImageKind) -> None:
    """Before the app takes the terminal: measure the cell size ``textual-image`` needs (by ioctl, else a
    short query the terminal answers before the app reads the keyboard)."""
    if kind != "kitty":
        return
    from textual_image._terminal import get_cell_size  # the library measures once and keeps the answer

    try:
        get_cell_size()
    except Exception:  # a terminal that does not answer: the library falls back to a default cell size
        pass


class HalfcellImage:
    """A picture as coloured half blocks (``▀``: the top pixel as foreground, the bottom as background)."""

    def __init__(self, picture: Any, width: int) -> None:
        self.picture = picture
        """A PIL image in RGB."""
        self.width = width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        picture = self.picture
        cells = max(1, min(self.width, options.max_width, picture.width))
        rows = max(1, round(picture.height * cells / picture.width / 2))
        small = picture.resize((cells, rows * 2))
        pixels: Any = small.load()
        for y in range(0, rows * 2, 2):
            for x in range(cells):
                top, bottom = pixels[x, y], pixels[x, y + 1]
                yield Segment("▀", Style(color=f"rgb({top[0]},{top[1]},{top[2]})",
                                         bgcolor=f"rgb({bottom[0]},{bottom[1]},{bottom[2]})"))  # fmt: skip
            yield Segment.line()


def image_renderable(data_base64: str, mime: str, kind: ImageKind, width: int) -> RenderableType:
    """What an image content block shows: the picture, or ``[image]`` when it cannot be drawn."""
    if kind == "off":
        return Text(f"[image {mime}]", style="dim")
    try:
        data = base64.b64decode(data_base64)
        if kind == "kitty":
            from textual_image.renderable import TGPImage

            return TGPImage(io.BytesIO(data), width=width)
        from PIL import Image

        with Image.open(io.BytesIO(data)) as opened:
            return HalfcellImage(opened.convert("RGB"), width)
    except Exception:  # an undecodable image must not break the transcript
        return Text(f"[image {mime}: cannot be shown]", style="dim")
