"""The terminal's background, light or dark, for the first run without a ``theme`` setting (as Pi picks one).

Asked before the app draws: ``OSC 11`` (``ESC ] 11 ; ? BEL``) asks the terminal for its background colour,
and a ``DA1`` query (``ESC [ c``) right after it, which every VT100-style terminal answers, marks the end of
the replies — a terminal that does not know ``OSC 11`` answers only ``DA1``, so the wait ends at once and
no late reply can reach the editor as typed text. A terminal that answers nothing is waited for
``TIMEOUT_S`` at most (long enough for a slow ssh round trip; answering terminals end it at once). Without
an answer ``COLORFGBG`` decides (its last field, a colour index), else nothing does and the theme stays
``dark``. A confident answer is saved as the ``theme`` setting, as Pi saves it, so it is asked once; so is
``dark`` after a wait that nothing ended (not even ``DA1``), so a silent terminal is not waited for again.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, NamedTuple

from caddie.modes.interactive.themes import DARK, LIGHT, xterm_color

TIMEOUT_S = 1.0
"""The longest wait for a terminal that answers neither query (a terminal that answers ends it at once:
one round trip, also over a slow ssh link)."""

QUERY = b"\x1b]11;?\x07\x1b[c"
"""OSC 11 (the background colour), then DA1 (the device attributes: the end of the replies)."""

_OSC11_REPLY = re.compile(rb"\x1b\]11;([^\x07\x1b]*)(?:\x07|\x1b\\)")
_DA1_REPLY = re.compile(rb"\x1b\[\?[0-9;]*c")
_CUT_REPLY = re.compile(rb"\x1b(?:\][^\x07]*|\[\?[0-9;]*)\Z")
"""The start of a reply cut off by the end of the wait (an OSC without its end, a DA1 without its ``c``)."""

Rgb = tuple[int, int, int]
Shade = Literal["light", "dark"]


@dataclass(frozen=True, slots=True)
class Background:
    theme: Shade
    source: str
    """``terminal background`` (OSC 11), ``COLORFGBG`` or ``fallback`` (nothing said it)."""
    typed_ahead: str = ""
    """What the user typed while the terminal was asked (read with its answers; the editor gets it)."""
    silent: bool = False
    """The terminal was asked and answered nothing (no DA1 reply) within the wait."""

    @property
    def confident(self) -> bool:
        return self.source != "fallback"


def _channel(text: str) -> int | None:
    """One ``rgb:`` channel (1-4 hex digits) scaled to 0-255."""
    if not text or len(text) > 4 or not all(c in "0123456789abcdefABCDEF" for c in text):
        return None
    return round(int(text, 16) / ((1 << 4 * len(text)) - 1) * 255)


def parse_background_reply(data: bytes) -> Rgb | None:
    """The colour of an OSC 11 reply somewhere in ``data``: ``rgb:RRRR/GGGG/BBBB`` (1-4 digits a channel,
    ``rgba:`` too), ``#rrggbb`` or ``#rrrrggggbbbb``; None when there is none or it cannot be read."""
    match = _OSC11_REPLY.search(data)
    if match is None:
        return None
    value = match.group(1).decode("ascii", "replace").strip()
    if value.startswith("#"):
        digits = value[1:]
        if len(digits) not in (6, 12):
            return None
        step = len(digits) // 3
        parts = [digits[i * step : (i + 1) * step] for i in range(3)]
    else:
        parts = re.sub(r"^rgba?:", "", value, flags=re.IGNORECASE).split("/")[:3]
        if len(parts) < 3:
            return None
    channels = [_channel(p) for p in parts]
    if any(c is None for c in channels):
        return None
    r, g, b = (c or 0 for c in channels)
    return (r, g, b)


def shade_of(rgb: Rgb) -> Shade:
    """Light when the colour's relative luminance (sRGB, linearised) is at least one half."""

    def linear(channel: int) -> float:
        value = channel / 255
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

    r, g, b = rgb
    return "light" if 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b) >= 0.5 else "dark"


def shade_from_colorfgbg(value: str) -> Shade | None:
    """``COLORFGBG`` (``15;0``: foreground 15 on background 0): the shade of its last colour index."""
    for part in reversed(value.split(";")):
        part = part.strip()
        if part.isdigit() and int(part) <= 255:
            h = xterm_color(int(part)).lstrip("#")
            return shade_of((int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)))
    return None


_KEY_SEQUENCE = re.compile(r"\x1b(?:\[[0-9;?<>=]*[ -/]*[@-~]|O.|.)?", re.S)


def typed_text(data: bytes) -> str:
    """The text in what was read besides the replies: keys typed ahead, as editor text (Backspace applied;
    escape sequences such as arrow keys and other control keys dropped; Enter becomes a line break). A
    reply cut off by the end of the wait is dropped too, never typed."""
    rest = _CUT_REPLY.sub(b"", _DA1_REPLY.sub(b"", _OSC11_REPLY.sub(b"", data))).decode("utf-8", "ignore")
    text: list[str] = []
    for c in _KEY_SEQUENCE.sub("", rest).replace("\r", "\n"):
        if c in "\x7f\x08":  # Backspace
            text = text[:-1]
        elif c == "\n" or c.isprintable():
            text.append(c)
    return "".join(text).rstrip("\n")


class TerminalReplies(NamedTuple):
    rgb: Rgb | None
    """The background colour (None: no OSC 11 answer)."""
    typed: str
    """The text typed ahead that was read with the answers."""
    silent: bool
    """The query was sent and no DA1 reply came within the wait (False when the terminal could not be asked)."""


def query_background(fd_in: int, fd_out: int, timeout: float = TIMEOUT_S) -> TerminalReplies:
    """Ask the terminal on ``fd_in``/``fd_out`` for its background colour (blocking, at most ``timeout``).

    The terminal is put in non-canonical, no-echo mode for the wait (so the replies are neither shown nor
    held back until Enter) and restored afterwards."""
    try:
        import termios
    except ImportError:  # not a POSIX terminal
        return TerminalReplies(None, "", silent=False)
    try:
        saved = termios.tcgetattr(fd_in)
    except (termios.error, OSError):
        return TerminalReplies(None, "", silent=False)
    quiet = list(saved)
    quiet[3] = saved[3] & ~(termios.ICANON | termios.ECHO)
    cc = list(saved[6])
    cc[termios.VMIN], cc[termios.VTIME] = 0, 0
    quiet[6] = cc
    replies = b""
    asked = False
    try:
        termios.tcsetattr(fd_in, termios.TCSANOW, quiet)
        os.write(fd_out, QUERY)
        asked = True
        deadline = time.monotonic() + timeout
        while not _DA1_REPLY.search(replies):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd_in], [], [], left)[0]:
                break
            chunk = os.read(fd_in, 1024)
            if not chunk:
                break
            replies += chunk
    except OSError:
        pass
    finally:
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(fd_in, termios.TCSANOW, saved)
    silent = asked and not _DA1_REPLY.search(replies)
    return TerminalReplies(parse_background_reply(replies), typed_text(replies), silent)


def detect_background(
    env: Mapping[str, str], fd_in: int = 0, fd_out: int = 1, timeout: float = TIMEOUT_S
) -> Background:
    """The terminal's shade: its OSC 11 answer, else ``COLORFGBG``, else ``dark`` (not confident)."""
    if env.get("TERM", "") in ("", "dumb"):
        rgb, typed, silent = None, "", False
    else:
        rgb, typed, silent = query_background(fd_in, fd_out, timeout)
    if rgb is not None:
        return Background(shade_of(rgb), "terminal background", typed, silent)
    shade = shade_from_colorfgbg(env.get("COLORFGBG", ""))
    if shade is not None:
        return Background(shade, "COLORFGBG", typed, silent)
    return Background("dark", "fallback", typed, silent)


def auto_theme_pair(value: object) -> tuple[str, str] | None:
    """Pi's ``"theme": "LIGHT/DARK"`` (a theme for each shade of terminal): the two names, or None."""
    if not isinstance(value, str) or value.count("/") != 1:
        return None
    light, _, dark = value.partition("/")
    light, dark = light.strip(), dark.strip()
    return (light, dark) if light and dark else None


@dataclass(frozen=True, slots=True)
class StartupTheme:
    theme: str | None = None
    """The theme to pass for this run (None: the settings say it)."""
    typed_ahead: str = ""
    """Keys typed while the terminal was asked: the caller puts them in the editor."""


def startup_theme(
    cwd: str,
    overrides: dict[str, object] | None,
    env: Mapping[str, str],
    *,
    project_trusted: bool,
    fd_in: int = 0,
    fd_out: int = 1,
    timeout: float = TIMEOUT_S,
) -> StartupTheme:
    """The theme decided by the terminal before the app starts, when anything is left to decide:

    - no settings file (nor the command line) names a theme — the first run: ask the terminal, and save
      what a confident answer says as the global ``theme`` setting (as Pi), which the app then reads;
    - the theme is Pi's ``LIGHT/DARK`` pair: ask the terminal at every start and pick one (not saved).

    ``theme`` is what the caller passes for this run (a pair's pick, or a first-run answer that could not
    be saved); None when the settings say it all — also when nothing could be told on the first run,
    which leaves caddie's default, ``dark``: a terminal that answered DA1 only is asked again at the next
    start (at no cost), one that answered nothing at all within the wait gets ``dark`` saved as the
    ``theme`` setting (the theme caddie used), so no later start waits for it again."""
    from caddie.config.paths import agent_dir
    from caddie.config.settings import Settings, load_settings

    if overrides and "theme" in overrides:
        configured = overrides["theme"]
    else:
        configured = load_settings(cwd, project_trusted=project_trusted).get("theme")
    pair = auto_theme_pair(configured)
    if pair is not None:
        background = detect_background(env, fd_in, fd_out, timeout)
        return StartupTheme(pair[0] if background.theme == "light" else pair[1], background.typed_ahead)
    if configured is not None:
        return StartupTheme()
    background = detect_background(env, fd_in, fd_out, timeout)
    if not background.confident and not background.silent:
        return StartupTheme(None, background.typed_ahead)
    theme = LIGHT if background.theme == "light" else DARK
    try:
        Settings(global_path=agent_dir() / "settings.json").save_global({"theme": theme})
    except (OSError, ValueError):
        return StartupTheme(theme, background.typed_ahead)
    return StartupTheme(None, background.typed_ahead)
