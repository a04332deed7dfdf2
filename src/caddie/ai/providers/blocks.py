"""Assembling streamed blocks: text in linear work, and tool-call arguments from partial JSON."""

from __future__ import annotations

import json
import re
from typing import Any

import jiter

EXACT_PREVIEW_BELOW = 4096
"""Up to this many characters a block's live text (and a tool call's argument preview) is rebuilt on every
delta; past it, only when the part not yet included reaches 1/``REFRESH_FRACTION`` of what is."""
REFRESH_FRACTION = 8


class StreamBuffer:
    """The streamed pieces of one block (text, thinking or tool-call argument JSON), assembled in linear work.

    A Python string cannot grow in place, so ``block.text += piece`` copies the whole text on every delta
    and a long reply costs the square of its length. Pieces go into a list instead; ``add`` says when the
    live view is due for a rebuild — on every delta while the buffer is small, then each time the new part
    reaches 1/8 of the last rebuild — so every rebuild together copies (or parses) at most about nine times
    the reply, plus a fixed allowance for the first ``EXACT_PREVIEW_BELOW`` characters. ``text()`` is always
    exact, and is what ends a block.
    """

    __slots__ = ("_length", "_pieces", "_shown")

    def __init__(self, initial: str = "") -> None:
        self._pieces: list[str] = [initial] if initial else []
        self._length = len(initial)
        self._shown = len(initial)

    def __len__(self) -> int:
        return self._length

    def add(self, piece: str) -> bool:
        """Append ``piece``; True when the live view should be rebuilt now (then call ``text()``)."""
        if not piece:
            return False
        self._pieces.append(piece)
        self._length += len(piece)
        if self._length <= EXACT_PREVIEW_BELOW:
            return True
        return (self._length - self._shown) * REFRESH_FRACTION >= self._shown

    def text(self) -> str:
        """The whole buffer (joined once; later calls reuse the joined string)."""
        if len(self._pieces) > 1:
            self._pieces = ["".join(self._pieces)]
        self._shown = self._length
        return self._pieces[0] if self._pieces else ""


# --------------------------------------------------------------------------------------------------
# Streaming JSON (tool-call arguments arrive in pieces)


_VALID_ESCAPES = frozenset('"\\/bfnrtu')
_SHORT_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")


def repair_json(text: str) -> str:
    """``text`` with the two slips models make inside JSON strings mended, as Pi mends them before parsing
    tool arguments: raw control characters (a newline in a file's content) are escaped, and a backslash
    that starts no valid escape (``\\d`` in a regex) is kept as a literal backslash."""
    out: list[str] = []
    in_string = False
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if not in_string:
            out.append(char)
            in_string = char == '"'
        elif char == '"':
            out.append(char)
            in_string = False
        elif char == "\\":
            following = text[i + 1] if i + 1 < n else ""
            if following == "u" and _HEX4.fullmatch(text, i + 2, i + 6):
                out.append(text[i : i + 6])
                i += 6
                continue
            if following and following in _VALID_ESCAPES:
                out.append(text[i : i + 2])
                i += 2
                continue
            out.append("\\\\")
        elif char < " ":
            out.append(_SHORT_ESCAPES.get(char) or f"\\u{ord(char):04x}")
        else:
            out.append(char)
        i += 1
    return "".join(out)


def parse_partial_json(text: str) -> dict[str, Any]:
    """The object a possibly incomplete JSON text describes so far ({} when nothing usable yet): ``jiter``'s
    partial mode (a dependency of both SDKs), keeping a string cut off at the end (``{"path": "src/ma`` →
    ``{"path": "src/ma"}``, trailing blanks trimmed) and dropping a member whose value has not started; a
    text ``jiter`` refuses is tried again mended (``repair_json``), as Pi does."""
    if not text.strip():
        return {}
    stripped = text.strip()  # as Pi's partial parser: a string cut off after a space shows without it
    for attempt in (stripped, None):
        candidate = attempt if attempt is not None else repair_json(stripped)
        if attempt is None and candidate == stripped:
            break
        try:
            value = jiter.from_json(
                candidate.encode("utf-8", "surrogatepass"), partial_mode="trailing-strings"
            )
        except ValueError:
            continue
        return value if isinstance(value, dict) else {}
    return {}


def final_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """A finished tool call's arguments and, when they are not one complete JSON object, why not.

    The repaired object is still returned (to show what the model meant), but a call with an error is
    never executed: a cut-off ``{"command": "rm -rf build/tmp`` must not run as ``rm -rf build``.
    """
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        repaired = repair_json(raw)
        try:
            value = json.loads(repaired) if repaired != raw else None
        except json.JSONDecodeError:
            value = None
        if value is None:
            return parse_partial_json(raw), f"{exc.msg} at character {exc.pos} of {len(raw)}"
    if not isinstance(value, dict):
        return {}, f"expected a JSON object, got {type(value).__name__}"
    return value, None
