"""JavaScript semantics the built-in tools must reproduce to give the model Pi's exact bytes.

Pi is written in TypeScript, so its tool texts are shaped by JS rules: string lengths count UTF-16 code
units, numbers print with ``Number.prototype.toString``, ``toFixed`` rounds half away from zero on the
exact binary value, ``JSON.stringify`` orders integer-like keys first, ``trimEnd`` has its own whitespace
set, and Node formats file-system errors as ``CODE: description, syscall 'path'``.
"""

from __future__ import annotations

import errno
import math
import os
import re
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, TypeGuard

# --------------------------------------------------------------------------------------------------
# Strings


def utf16_len(text: str) -> int:
    """``text.length`` in JavaScript: code points above U+FFFF count twice."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def utf16_prefix(text: str, units: int) -> str:
    """``text.slice(0, units)``. A surrogate pair cut in half is dropped (JS would keep a lone surrogate,
    which cannot be encoded as UTF-8 and which every provider replaces anyway)."""
    if units >= len(text) * 2 or utf16_len(text) <= units:
        return text
    out: list[str] = []
    used = 0
    for ch in text:
        width = 2 if ord(ch) > 0xFFFF else 1
        if used + width > units:
            break
        out.append(ch)
        used += width
    return "".join(out)


_JS_WHITESPACE = frozenset(
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_JS_WHITESPACE_STR = "".join(_JS_WHITESPACE)


def js_trim_end(text: str) -> str:
    return text.rstrip(_JS_WHITESPACE_STR)


def js_trim(text: str) -> str:
    return text.strip(_JS_WHITESPACE_STR)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(text: str) -> str:
    """``text`` with lone surrogates as U+FFFD, as any JS string becomes when encoded."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def utf8_bytes(text: str) -> bytes:
    """``Buffer.from(text, "utf-8")``: lone surrogates become U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub("\ufffd", text).encode("utf-8")


def utf8_len(text: str) -> int:
    """``Buffer.byteLength(text, "utf-8")``."""
    return len(text.encode("utf-8", "surrogatepass"))


# --------------------------------------------------------------------------------------------------
# Numbers


def js_number(value: float | int) -> str:
    """``String(value)`` for a JS number."""
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
    digits, exponent = _shortest_digits(abs(value))
    k = len(digits)
    n = exponent  # the decimal point sits after n digits
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
        body = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + body


def _shortest_digits(value: float) -> tuple[str, int]:
    """The shortest round-tripping decimal digits of ``value`` and the position of the decimal point."""
    text = repr(value)
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    if frac_part == "0":
        frac_part = ""
    digits = int_part + frac_part
    point = len(int_part) + exponent
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    return digits, point


def js_to_fixed(value: float, places: int) -> str:
    """``value.toFixed(places)``: the exact binary value rounded half away from zero."""
    quantum = Decimal(1).scaleb(-places)
    return str(Decimal(value).quantize(quantum, rounding=ROUND_HALF_UP))


def js_round(value: float) -> int:
    """``Math.round``: halves round up (towards +infinity)."""
    return math.floor(value + 0.5)


def is_js_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


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


def _json_string(text: str) -> str:
    out = ['"']
    for ch in text:
        esc = _ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ord(ch) < 0x20 or 0xD800 <= ord(ch) <= 0xDFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def js_json_stringify(value: Any, indent: int = 0) -> str:
    """``JSON.stringify(value, null, indent)`` for JSON-like Python data."""
    return _stringify(value, " " * indent, "") or "undefined"


def _stringify(value: Any, gap: str, current: str) -> str | None:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _json_string(value)
    if is_js_number(value):
        if isinstance(value, float) and not math.isfinite(value):
            return "null"
        return js_number(value)
    inner = current + gap
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        items = [_stringify(v, gap, inner) or "null" for v in value]
        if not gap:
            return "[" + ",".join(items) + "]"
        return "[\n" + inner + (",\n" + inner).join(items) + "\n" + current + "]"
    if isinstance(value, dict):
        parts: list[str] = []
        by_key = {str(k): v for k, v in value.items()}
        for key in js_object_keys(by_key):
            item = _stringify(by_key[key], gap, inner)
            if item is None:
                continue
            parts.append(_json_string(key) + (": " if gap else ":") + item)
        if not parts:
            return "{}"
        if not gap:
            return "{" + ",".join(parts) + "}"
        return "{\n" + inner + (",\n" + inner).join(parts) + "\n" + current + "}"
    return None  # undefined, functions, ... are skipped like in JS


# --------------------------------------------------------------------------------------------------
# Node file-system errors

# libuv's uv_strerror texts, which Node puts in fs error messages.
_UV_DESCRIPTIONS: dict[str, str] = {
    "E2BIG": "argument list too long",
    "EACCES": "permission denied",
    "EAGAIN": "resource temporarily unavailable",
    "EBADF": "bad file descriptor",
    "EBUSY": "resource busy or locked",
    "EEXIST": "file already exists",
    "EFBIG": "file too large",
    "EINTR": "interrupted system call",
    "EINVAL": "invalid argument",
    "EIO": "i/o error",
    "EISDIR": "illegal operation on a directory",
    "ELOOP": "too many symbolic links encountered",
    "EMFILE": "too many open files",
    "ENAMETOOLONG": "name too long",
    "ENFILE": "file table overflow",
    "ENODEV": "no such device",
    "ENOENT": "no such file or directory",
    "ENOMEM": "not enough memory",
    "ENOSPC": "no space left on device",
    "ENOTDIR": "not a directory",
    "ENOTEMPTY": "directory not empty",
    "ENXIO": "no such device or address",
    "EPERM": "operation not permitted",
    "EROFS": "read-only file system",
    "ETXTBSY": "text file is busy",
    "EXDEV": "cross-device link not permitted",
}


def errno_code(error: OSError) -> str:
    """Node's ``error.code`` for an OS error (``ENOENT``...)."""
    if error.errno is None:
        return "EIO"
    return errno.errorcode.get(error.errno, f"E{error.errno}")


def node_fs_message(error: OSError, syscall: str, path: str | None = None) -> str:
    """The message Node gives a failed ``fs`` call, e.g. ``ENOENT: no such file or directory, open '/x'``."""
    return fs_error_text(errno_code(error), syscall, path)


def fs_error_text(code: str, syscall: str, path: str | None = None) -> str:
    """Node's ``fs`` error message for an error code (``EISDIR`` ...)."""
    description = _UV_DESCRIPTIONS.get(code)
    if description is None:
        number = getattr(errno, code, None)
        description = os.strerror(number).lower() if isinstance(number, int) else "unknown error"
    text = f"{code}: {description}, {syscall}"
    if path is not None:
        text += f" '{path}'"
    return text


def access_error(path: str, mode: int) -> str | None:
    """The error code ``fs.access(path, mode)`` fails with, or None when access is allowed."""
    if os.access(path, mode):
        return None
    try:
        os.stat(path)
    except OSError as exc:
        return errno_code(exc)
    return "EACCES"
