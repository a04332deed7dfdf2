"""JavaScript semantics the mulligan spec is measured in: UTF-16 lengths, ``Math.round``, ``JSON.stringify``.

The TypeScript original counts ``string.length`` (UTF-16 code units), rounds half up, stringifies with
``JSON.stringify`` and sorts strings by code unit. Texts the model reads (token estimates, caps, numbers in
messages) must come out the same, so these helpers reproduce those rules for Python values.
"""

from __future__ import annotations

import json
import math
from typing import Any, TypeGuard


def utf16_len(s: str) -> int:
    """``s.length`` in JavaScript: astral characters count twice."""
    if s.isascii():
        return len(s)
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def utf16_prefix(s: str, units: int) -> str:
    """``s.slice(0, units)``, never splitting a surrogate pair (the partial character is dropped)."""
    if units <= 0:
        return ""
    if s.isascii():
        return s[:units]
    out_len = 0
    for i, ch in enumerate(s):
        out_len += 2 if ord(ch) > 0xFFFF else 1
        if out_len > units:
            return s[:i]
    return s


def utf8_len(s: str) -> int:
    """``Buffer.byteLength(s, "utf8")``."""
    if s.isascii():
        return len(s)
    return len(s.encode("utf-8", "surrogatepass"))


def js_round(x: float) -> int:
    """``Math.round``: halves round towards +infinity (Python's ``round`` rounds halves to even)."""
    return math.floor(x + 0.5)


def is_number(v: object) -> TypeGuard[float]:
    """``typeof v === "number"`` for values decoded from JSON (``bool`` is not a number)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_finite_number(v: object) -> TypeGuard[float]:
    """``typeof v === "number" && Number.isFinite(v)``."""
    return is_number(v) and math.isfinite(v)


def js_truthy(v: object) -> bool:
    """``!!v``: empty containers are truthy in JavaScript, ``NaN`` and ``""`` are not."""
    if v is None or v is False:
        return False
    if isinstance(v, bool):
        return True
    if isinstance(v, (int, float)):
        return v != 0 and not math.isnan(v)
    if isinstance(v, str):
        return v != ""
    return True


def js_number(x: float) -> str:
    """A number as JavaScript prints it in a template literal (``5`` not ``5.0``, ``4.2`` stays ``4.2``)."""
    if isinstance(x, float):
        if math.isnan(x):
            return "NaN"
        if math.isinf(x):
            return "Infinity" if x > 0 else "-Infinity"
        if x.is_integer() and abs(x) < 1e21:
            return str(int(x))
        return repr(x)
    return str(x)


def json_stringify(value: Any) -> str:
    """``JSON.stringify`` for JSON-shaped Python values (compact, non-ASCII kept).

    Integral floats print as integers and non-finite numbers as ``null``, as in JavaScript. Raises
    ``TypeError``/``ValueError`` for values JSON cannot hold (e.g. circular structures), as ``JSON.stringify``
    throws.
    """
    return json.dumps(_js_shaped(value, 0), separators=(",", ":"), ensure_ascii=False)


def _js_shaped(value: Any, depth: int) -> Any:
    if depth > 200:
        raise ValueError("Converting circular structure to JSON")
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        if value.is_integer() and abs(value) < 1e21:
            return int(value)
        return value
    if isinstance(value, dict):
        return {k: _js_shaped(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_js_shaped(v, depth + 1) for v in value]
    return value


def utf16_sort_key(s: str) -> bytes:
    """Sort key matching JavaScript's default ``Array.prototype.sort`` on strings (by UTF-16 code unit)."""
    return s.encode("utf-16-be", "surrogatepass")
