"""JavaScript value semantics, for texts that must come out byte-identical to Pi's (and pi-mulligan's).

Pi and its extensions are TypeScript, so the texts they give the model are shaped by JS rules: string
lengths count UTF-16 code units, numbers print with ``Number.prototype.toString``, ``toFixed`` rounds half
away from zero on the exact binary value, ``Math.round`` rounds halves up, ``JSON.stringify`` orders
integer-like keys first, ``trim`` has its own whitespace set and strings sort by UTF-16 code unit. This one
module reproduces those rules for JSON-shaped Python values; ``tests/interop/test_jscompat_node.py``
checks it against Node's own output.

It imports nothing from caddie, so every layer may use it (the import-linter contract puts it at the
bottom); bundled extensions reach it through ``caddie.extensions.api``.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, TypeGuard

from caddie.untrusted.text import clean_text, utf8

# --------------------------------------------------------------------------------------------------
# Types and truthiness


def is_js_number(value: object) -> TypeGuard[int | float]:
    """``typeof value === "number"`` for values decoded from JSON (``bool`` is not a number)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_finite_number(value: object) -> TypeGuard[int | float]:
    """``typeof value === "number" && Number.isFinite(value)``."""
    return is_js_number(value) and math.isfinite(value)


def js_truthy(value: object) -> bool:
    """``!!value``: empty containers are truthy in JavaScript, ``NaN``, ``0`` and ``""`` are not."""
    if value is None or value is False:
        return False
    if isinstance(value, bool):
        return True
    if isinstance(value, int | float):
        return value != 0 and not math.isnan(value)
    if isinstance(value, str):
        return value != ""
    return True


# --------------------------------------------------------------------------------------------------
# Strings


def utf16_len(text: str) -> int:
    """``text.length``: code points above U+FFFF count twice."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_prefix(text: str, units: int) -> str:
    """``text.slice(0, units)``. A surrogate pair cut in half is dropped (JS would keep a lone surrogate,
    which cannot be encoded as UTF-8 and which every provider replaces anyway)."""
    if units <= 0:
        return ""
    if text.isascii():
        return text[:units]
    used = 0
    for index, ch in enumerate(text):
        used += 2 if ord(ch) > 0xFFFF else 1
        if used > units:
            return text[:index]
    return text


def utf16_sort_key(text: str) -> bytes:
    """Sort key matching JavaScript's default ``Array.prototype.sort`` on strings (by UTF-16 code unit)."""
    return text.encode("utf-16-be", "surrogatepass")


def utf8_len(text: str) -> int:
    """``Buffer.byteLength(text, "utf-8")``."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def without_lone_surrogates(text: str) -> str:
    """``text`` with lone surrogates as U+FFFD, as any JS string becomes when encoded (the rule is
    ``caddie.untrusted.clean_text``)."""
    return clean_text(text)


def utf8_bytes(text: str) -> bytes:
    """``Buffer.from(text, "utf-8")``: lone surrogates become U+FFFD."""
    return utf8(text)


_JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def js_trim(text: str) -> str:
    """``text.trim()`` (JS whitespace, not Python's ``isspace``)."""
    return text.strip(_JS_WHITESPACE)


def js_trim_end(text: str) -> str:
    """``text.trimEnd()``."""
    return text.rstrip(_JS_WHITESPACE)


# --------------------------------------------------------------------------------------------------
# Numbers


def js_number(value: float) -> str:
    """``String(value)`` for a JS number (``5`` not ``5.0``, ``1e-7``, ``123456789012345680000``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if abs(value) < 2**53:
            return str(value)
        value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    digits, point = _shortest_digits(abs(value))
    k = len(digits)
    if k <= point <= 21:
        body = digits + "0" * (point - k)
    elif 0 < point <= 21:
        body = digits[:point] + "." + digits[point:]
    elif -6 < point <= 0:
        body = "0." + "0" * (-point) + digits
    else:
        exponent = point - 1
        mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
        body = f"{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"
    return sign + body


def _shortest_digits(value: float) -> tuple[str, int]:
    """The shortest round-tripping decimal digits of ``value`` (Python's ``repr`` picks the same ones as
    ECMAScript) and the position of the decimal point after the first digit of ``digits``."""
    mantissa, _, exp_text = repr(value).partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    if frac_part == "0":
        frac_part = ""
    digits = int_part + frac_part
    point = len(int_part) + (int(exp_text) if exp_text else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    return stripped.rstrip("0") or "0", point


def js_to_fixed(value: float, places: int) -> str:
    """``value.toFixed(places)``: the exact binary value rounded half away from zero."""
    value = float(value) if value != 0 else 0.0  # a JS number is a double; (-0).toFixed() has no sign
    return str(Decimal(value).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))


def js_round(value: float) -> int:
    """``Math.round``: halves round towards +infinity (Python's ``round`` rounds halves to even)."""
    down = math.floor(value)
    return down + 1 if value - down >= 0.5 else down  # not floor(value + 0.5): 0.49999999999999994 + 0.5 == 1


_JS_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)")
_JS_RADIX = re.compile(r"0([xXoObB])([0-9a-fA-F]+)")


def js_to_number(text: str) -> float:
    """``Number(text)`` for a string: trimmed, ``""`` is 0, hex/octal/binary literals, else ``NaN``."""
    body = js_trim(text)
    if not body:
        return 0.0
    if body in ("Infinity", "+Infinity"):
        return math.inf
    if body == "-Infinity":
        return -math.inf
    radix = _JS_RADIX.fullmatch(body)
    if radix:
        try:
            return float(int(radix.group(2), {"x": 16, "o": 8, "b": 2}[radix.group(1).lower()]))
        except ValueError:
            return math.nan
    if _JS_DECIMAL.fullmatch(body):
        return float(body)
    return math.nan


# --------------------------------------------------------------------------------------------------
# JSON.stringify


def _is_array_index(key: str) -> bool:
    return (
        key.isdigit() and key.isascii() and (key == "0" or not key.startswith("0")) and int(key) < 2**32 - 1
    )


def js_object_keys(obj: dict[str, Any]) -> list[str]:
    """Own property order of a JS object built from ``obj``: integer-like keys ascending, then the rest."""
    keys = [str(k) for k in obj]
    indices = sorted((k for k in keys if _is_array_index(k)), key=int)
    return indices + [k for k in keys if not _is_array_index(k)]


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    return _ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


def _json_string(text: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape, text) + '"'


def json_stringify(value: Any, indent: int = 0) -> str:
    """``JSON.stringify(value, null, indent)`` for JSON-shaped Python data.

    Non-finite numbers become ``null``. A circular structure raises ``TypeError``, as ``JSON.stringify``
    throws; so does any other Python object (as ``json.dumps`` does: it has no JavaScript counterpart).
    """
    return _stringify(value, " " * indent, "", set())


def _stringify(value: Any, gap: str, current: str, active: set[int]) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _json_string(value)
    if is_js_number(value):
        return js_number(value) if math.isfinite(value) else "null"
    if not isinstance(value, list | tuple | dict):
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
    if id(value) in active:
        raise TypeError("Converting circular structure to JSON")
    active.add(id(value))
    inner = current + gap
    try:
        if isinstance(value, dict):
            by_key = {str(k): v for k, v in value.items()}
            parts = []
            for key in js_object_keys(by_key):
                parts.append(
                    _json_string(key) + (": " if gap else ":") + _stringify(by_key[key], gap, inner, active)
                )
            opening, closing = "{", "}"
        else:
            parts = [_stringify(v, gap, inner, active) for v in value]
            opening, closing = "[", "]"
    finally:
        active.discard(id(value))
    if not parts:
        return opening + closing
    if not gap:
        return opening + ",".join(parts) + closing
    return f"{opening}\n{inner}" + f",\n{inner}".join(parts) + f"\n{current}{closing}"
