"""Text from outside the process: lone UTF-16 surrogates become U+FFFD, control characters are shown, not
obeyed, on a terminal.

**Lone surrogates.** A JavaScript client that cuts a string between the two halves of an emoji sends
``"\\ud83d"``; ``json.loads`` turns that into a one-character ``str`` that no UTF-8 writer accepts (the
session file, stdout, a request body). Pi reads such text with ``JSON.parse`` and writes it as UTF-8, which
turns every lone surrogate into U+FFFD. caddie does the same, once, where text comes in: RPC and ACP lines,
command-line arguments, session files, tool output (``clean_text`` / ``clean_strings``), and every writer
encodes with ``REPLACE_SURROGATES`` so text that slipped past still cannot fail a write.
"""

from __future__ import annotations

import codecs
import re
from typing import Any

REPLACEMENT = "\ufffd"
REPLACE_SURROGATES = "caddie-replace-surrogates"
"""The name of a codec error handler for UTF-8: ``text.encode("utf-8", REPLACE_SURROGATES)`` writes U+FFFD
for each lone surrogate (``sys.stdout.reconfigure(errors=REPLACE_SURROGATES)`` likewise)."""
_REPLACEMENT_UTF8 = REPLACEMENT.encode("utf-8")

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _replace_surrogates(error: UnicodeError) -> tuple[bytes, int]:
    if isinstance(error, UnicodeEncodeError):
        # bytes: CPython's UTF-8 encoder takes only ASCII text from an error handler
        return _REPLACEMENT_UTF8 * (error.end - error.start), error.end
    raise error


codecs.register_error(REPLACE_SURROGATES, _replace_surrogates)


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (the same object when there is none)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub(REPLACEMENT, text)
    return text


def clean_strings(value: Any) -> Any:
    """Decoded JSON with ``clean_text`` applied to every string, keys included. Containers are changed in
    place; the (possibly new) value is returned. The caller bounds the nesting (``json_input``)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        for index, item in enumerate(value):
            if not isinstance(item, int | float | bool) and item is not None:
                value[index] = clean_strings(item)
        return value
    if isinstance(value, dict):
        if not all(isinstance(k, str) and (k.isascii() or clean_text(k) is k) for k in value):
            items = [(clean_strings(k), v) for k, v in value.items()]
            value.clear()
            value.update(items)
        for key, item in value.items():
            if isinstance(item, str | list | dict):
                value[key] = clean_strings(item)
        return value
    return value


def utf8(text: str) -> bytes:
    """``text`` as UTF-8, lone surrogates written as U+FFFD (never an error)."""
    return text.encode("utf-8", REPLACE_SURROGATES)


# -- terminals ---------------------------------------------------------------------------------------------

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟ (ESC shows as ␛)
    if code == 0x7F:
        return "\u2421"  # ␡
    return REPLACEMENT  # C1 controls (0x80–0x9f: CSI, OSC … in their one-byte forms)


def for_terminal(text: str, *, newlines: bool = True) -> str:
    """``text`` safe to print on a terminal as plain text: control characters (ESC, BEL, CR, the C1 range)
    are shown as their Unicode pictures (``␛``) instead of being obeyed, so stored text cannot move the
    cursor, retitle the window or hide what it says. Tabs and (with ``newlines``) line feeds stay; lone
    surrogates become U+FFFD."""
    text = clean_text(text)
    if not newlines:
        text = text.replace("\n", "\u2424")  # ␤
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(_picture, text)
