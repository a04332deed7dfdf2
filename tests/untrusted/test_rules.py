"""The rules for outside data, one place each: lone surrogates, JSON nesting, regular files, terminal text."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caddie import untrusted
from caddie.untrusted import JsonInputError, NotRegularFileError


def reference_depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max((reference_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((reference_depth(v) for v in value.values()), default=0)
    return 0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab,:\n'),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[]{"\\'), inner, max_size=3)
    ),
    max_leaves=40,
)


@settings(deadline=None)  # timing is not the point; a loaded CI machine must not fail it
@given(json_values, st.integers(min_value=0, max_value=8))
def test_nesting_matches_the_real_depth_with_brackets_in_strings(value: object, limit: int) -> None:
    text = json.dumps(value)
    expected = reference_depth(value) > limit
    assert untrusted.nesting_exceeds(text, limit) is expected
    assert untrusted.nesting_exceeds(text.encode(), limit) is expected
    padded = b"xx" + text.encode() + b"yy"
    assert untrusted.nesting_exceeds(padded, limit, 2, len(padded) - 2) is expected


def test_deep_or_hostile_lines_are_refused_quickly() -> None:
    for data in (b"[" * 100_000, b"[" * 201 + b"]" * 201, b'{"a":' * 300 + b"1" + b"}" * 300):
        with pytest.raises(JsonInputError, match="nested more than 200 levels deep"):
            untrusted.loads(data)
    assert untrusted.loads(b"[" * 200 + b"]" * 200) is not None
    assert untrusted.loads('["' + "[" * 10_000 + '"]') == ["[" * 10_000]  # brackets inside a string
    started = time.monotonic()  # a stray quote or backslash must not make the scan quadratic
    in_string = b'["' + b"[" * 300 + b'",'  # over the cheap count: the full scan runs
    assert not untrusted.nesting_exceeds(in_string + b'"' + b"\\a" * 200_000 + b"\\")
    assert not untrusted.nesting_exceeds(in_string + b'\\"' * 200_000)
    assert time.monotonic() - started < 5


def test_lone_surrogates_become_u_fffd_pairs_stay() -> None:
    assert untrusted.clean_text("a\ud83db\udc00") == "a\ufffdb\ufffd"
    ok = "fine 😀 é"
    assert untrusted.clean_text(ok) is ok
    assert untrusted.loads('{"k\\ud83d": ["\\ud83d\\ude00", "x\\udc00"]}') == {"k\ufffd": ["😀", "x\ufffd"]}
    assert untrusted.utf8("x\ud800y") == "x\ufffdy".encode()
    assert "x\udfffy".encode("utf-8", untrusted.REPLACE_SURROGATES) == "x\ufffdy".encode()


def test_terminal_text_shows_control_characters_instead_of_obeying_them() -> None:
    assert (
        untrusted.for_terminal("hi \x1b]0;PWNED\x07 \x1b[2J\r\x9b31m\x7f") == "hi ␛]0;PWNED␇ ␛[2J␍\ufffd31m␡"
    )
    assert untrusted.for_terminal("a\tb\nc") == "a\tb\nc"
    assert untrusted.for_terminal("a\nb", newlines=False) == "a␤b"
    assert untrusted.for_terminal("half \ud83d") == "half \ufffd"


def test_only_regular_files_are_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a named pipe (FIFO)"), (Path("/dev/zero"), "a character device")):
        with pytest.raises(NotRegularFileError) as err:
            untrusted.open_regular(path)
        assert err.value.kind == kind and untrusted.non_regular_kind(path) == kind
    with pytest.raises(IsADirectoryError):
        untrusted.open_regular(tmp_path)
    (tmp_path / "f").write_bytes(b"data")
    assert untrusted.read_regular(tmp_path / "f") == b"data"
    assert untrusted.non_regular_kind(tmp_path / "f") is None


def test_deep_lines_are_found_among_many() -> None:
    lines = [b'{"a":[1,2,{"b":"[[[["}]}'] * 40
    lines[3] = b"[" * 201 + b"]" * 201
    lines[37] = b'{"x":' * 300 + b"0" + b"}" * 300
    lines[20] = b'["' + b"[" * 500 + b'"]'  # many brackets, all in a string
    data = b"\n".join(lines)
    spans, start = [], 0
    for line in lines:
        spans.append((start, start + len(line)))
        start += len(line) + 1
    assert untrusted.deep_lines(data, spans) == {3, 37}
