"""Truncation helpers and the JavaScript semantics the tool texts depend on."""

from __future__ import annotations

import json

import pytest

from caddie.jscompat import (
    js_number,
    js_object_keys,
    js_to_fixed,
    js_trim_end,
    json_stringify,
    utf8_bytes,
    utf16_len,
    utf16_prefix,
)
from caddie.tools.fs_errors import node_fs_message
from caddie.tools.truncate import (
    DEFAULT_MAX_BYTES,
    format_size,
    truncate_head,
    truncate_line,
    truncate_tail,
)


@pytest.mark.parametrize(
    ("size", "text"),
    [(0, "0B"), (1023, "1023B"), (1024, "1.0KB"), (1280, "1.3KB"), (1331, "1.3KB"), (51200, "50.0KB"),
     (1024 * 1024, "1.0MB"), (int(1.25 * 1024 * 1024), "1.3MB")],
)  # fmt: skip
def test_format_size_rounds_like_to_fixed(size: int, text: str) -> None:
    assert format_size(size) == text


def test_truncate_head_by_lines_and_bytes() -> None:
    result = truncate_head("\n".join(str(i) for i in range(3000)))
    assert result.truncated and result.truncated_by == "lines"
    assert result.output_lines == 2000 and result.content.endswith("1999")

    wide = "\n".join("x" * 100 for _ in range(1000))
    result = truncate_head(wide)
    assert result.truncated_by == "bytes"
    assert result.output_bytes <= DEFAULT_MAX_BYTES
    assert result.output_lines == 506  # 100 + 505 * 101 bytes fit in 50 KB

    result = truncate_head("y" * 60_000 + "\nshort")
    assert result.first_line_exceeds_limit and result.content == ""


def test_truncate_head_untouched_when_small() -> None:
    result = truncate_head("a\nb\n")
    assert not result.truncated and result.total_lines == 2 and result.content == "a\nb\n"


def test_truncate_tail_keeps_end_and_partial_last_line() -> None:
    result = truncate_tail("\n".join(str(i) for i in range(5000)))
    assert result.truncated_by == "lines" and result.content.startswith("3000\n")
    result = truncate_tail("é" * 40_000)  # 80,000 bytes on one line
    assert result.last_line_partial and result.truncated_by == "bytes"
    assert result.output_bytes == DEFAULT_MAX_BYTES and set(result.content) == {"é"}


def test_truncate_line_counts_utf16_units() -> None:
    assert truncate_line("a" * 500) == ("a" * 500, False)
    assert truncate_line("a" * 501) == ("a" * 500 + "... [truncated]", True)
    text, cut = truncate_line("\U0001f600" * 300)  # 600 UTF-16 units
    assert cut and text == "\U0001f600" * 250 + "... [truncated]"


def test_utf16_helpers() -> None:
    assert utf16_len("a\U0001f600") == 3
    assert utf16_prefix("a\U0001f600b", 2) == "a"
    assert utf16_prefix("a\U0001f600b", 3) == "a\U0001f600"
    assert utf8_bytes("x\ud800y") == "x\ufffdy".encode()


@pytest.mark.parametrize(
    ("value", "text"),
    [(1, "1"), (1.0, "1"), (-0.0, "0"), (0.1 + 0.2, "0.30000000000000004"), (1e21, "1e+21"), (1e20, "100000000000000000000"),
     (1e-7, "1e-7"), (1.5e-6, "0.0000015"), (123.456, "123.456"), (2147483.647, "2147483.647"), (float("inf"), "Infinity"),
     (2**60, "1152921504606847000"), (-2.5, "-2.5"), (1.7976931348623157e308, "1.7976931348623157e+308")],
)  # fmt: skip
def test_js_number(value: float, text: str) -> None:
    assert js_number(value) == text


def test_js_to_fixed_rounds_half_away_from_zero() -> None:
    assert js_to_fixed(0.25, 1) == "0.3"
    assert js_to_fixed(1.005, 2) == "1.00"  # the double is just below 1.005
    assert js_to_fixed(1.5, 2) == "1.50"


def test_json_stringify_matches_js() -> None:
    value = {"b": 1, "2": [], "a": {"x": None}, "1": 2.0, "s": 'q"\\\n\u0007\u2028'}
    assert js_object_keys(value) == ["1", "2", "b", "a", "s"]
    assert json_stringify(value) == '{"1":2,"2":[],"b":1,"a":{"x":null},"s":"q\\"\\\\\\n\\u0007\u2028"}'
    assert json_stringify({"k": [1, {}]}, 2) == '{\n  "k": [\n    1,\n    {}\n  ]\n}'
    assert json.loads(json_stringify({"x": float("nan")})) == {"x": None}


def test_js_trim_end_uses_js_whitespace() -> None:
    assert js_trim_end("a \t\u00a0\u3000\ufeff") == "a"
    assert js_trim_end("a\x1c") == "a\x1c"  # Python's isspace() would strip this


def test_node_fs_message() -> None:
    assert (
        node_fs_message(FileNotFoundError(2, "x"), "open", "/p")
        == "ENOENT: no such file or directory, open '/p'"
    )
    assert (
        node_fs_message(IsADirectoryError(21, "x"), "read")
        == "EISDIR: illegal operation on a directory, read"
    )
