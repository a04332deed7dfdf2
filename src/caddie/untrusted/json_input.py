"""JSON from outside the process (RPC and ACP lines, session files): nesting is bounded, strings are clean.

A line nested thousands of levels deep (``[[[[…``) is valid JSON that Python cannot decode or walk without
running out of stack (``RecursionError``). caddie refuses any value nested more than ``MAX_JSON_DEPTH``
levels before decoding it: the line is one error (RPC, ACP) or one skipped line (a session file), and
nothing downstream — copies, serialisers, validators, each recursing once or more per level — can meet a
value deeper than that.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from caddie.errors import UsageError
from caddie.untrusted.text import clean_strings, clean_text

MAX_JSON_DEPTH = 200
"""The deepest nesting of arrays and objects caddie accepts in JSON from outside (real data stays under 20)."""

# A JSON string, or an unterminated one up to the end (so a stray quote never makes the scan quadratic).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


class JsonInputError(UsageError, ValueError):
    """JSON that caddie will not decode; the message says why in a few words. A ``ValueError`` too, like
    every other reason a JSON text cannot be decoded."""


def nesting_exceeds(
    data: bytes | str, limit: int = MAX_JSON_DEPTH, start: int = 0, end: int | None = None
) -> bool:
    """Whether the JSON text ``data[start:end]`` nests arrays and objects more than ``limit`` levels deep.

    Cheap for ordinary lines: a line with at most ``limit`` opening brackets in all cannot be deeper, and
    counting them is two passes in C over the text, without a copy. Only a line with more brackets is
    scanned properly (brackets inside strings do not count), still without a Python step per character."""
    stop = len(data) if end is None else end
    if isinstance(data, bytes):
        opened = data.count(b"[", start, stop) + data.count(b"{", start, stop)
    else:
        opened = data.count("[", start, stop) + data.count("{", start, stop)
    if opened <= limit:
        return False
    text = data[start:stop]
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    structure = _STRING.sub(b"", raw).translate(None, _NOT_BRACKET)
    depths = accumulate(map(_STEP.__getitem__, structure))  # in C: no Python-level step per bracket
    return next(filter(limit.__lt__, depths), None) is not None


def deep_lines(data: bytes, spans: list[tuple[int, int]], limit: int = MAX_JSON_DEPTH) -> set[int]:
    """The indexes of the ``(start, end)`` lines of ``data`` nested more than ``limit`` deep (a session file's
    lines). Lines are first counted in runs of ``_RUN`` (a run with at most ``limit`` opening brackets in
    all holds no deep line), so a 100 MB file costs two scans in C and few calls."""
    found: set[int] = set()
    for first in range(0, len(spans), _RUN):
        run = spans[first : first + _RUN]
        a, b = run[0][0], run[-1][1]
        if data.count(b"[", a, b) + data.count(b"{", a, b) <= limit:
            continue
        found.update(first + i for i, (x, y) in enumerate(run) if nesting_exceeds(data, limit, x, y))
    return found


_RUN = 16


def too_deep_message(limit: int = MAX_JSON_DEPTH) -> str:
    return f"nested more than {limit} levels deep"


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")


def loads(data: bytes | str) -> Any:
    """``json.loads`` for text from outside: ``JsonInputError`` when it nests more than ``MAX_JSON_DEPTH``
    levels (``json.JSONDecodeError``, also a ``ValueError``, when it is not JSON), and every string in the
    result with lone surrogates replaced by U+FFFD (walked only when the text could hold one)."""
    if nesting_exceeds(data):
        raise JsonInputError(too_deep_message())
    try:
        value = json.loads(data)
    except RecursionError:  # cannot happen below the limit; a clear error all the same
        raise JsonInputError(too_deep_message()) from None
    if isinstance(data, bytes):
        suspect = _SURROGATE_ESCAPE_BYTES.search(data) is not None
    else:
        suspect = _SURROGATE_ESCAPE.search(data) is not None or clean_text(data) is not data
    return clean_strings(value) if suspect else value
