"""``caddie.jscompat`` against Node's own output: numbers, ``JSON.stringify``, ``toFixed``, ``Math.round``,
``Number(string)``, ``trim``, string lengths and sort order, over many values (one Node process)."""

from __future__ import annotations

import json
import math
import random
import subprocess
from typing import Any

import pytest

from caddie.jscompat import (
    js_number,
    js_round,
    js_to_fixed,
    js_to_number,
    js_trim,
    js_trim_end,
    json_stringify,
    utf16_len,
    utf16_prefix,
    utf16_sort_key,
)
from tests.interop.pi import find_node, skip_or_fail

SCRIPT = r"""
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const num = (v) => (typeof v === "string" ? Number(v) : v);  // "NaN", "Infinity", "-Infinity", "-0"
const out = {
  numbers: input.numbers.map((v) => String(num(v))),
  stringify: input.objects.map((o) => [JSON.stringify(o), JSON.stringify(o, null, 2), JSON.stringify(o, null, 4)]),
  fixed: input.fixed.map(([v, p]) => v.toFixed(p)),
  round: input.round.map((v) => String(Math.round(v))),
  toNumber: input.strings.map((s) => String(Number(s))),
  trim: input.strings.map((s) => [s.trim(), s.trimEnd()]),
  length: input.strings.map((s) => s.length),
  slice: input.strings.map((s) => s.slice(0, 3)),
  sorted: [...input.strings].sort(),
};
process.stdout.write(JSON.stringify(out));
"""

SPECIAL_NUMBERS: list[Any] = [
    0, -0.0, "-0", 1, -1, 0.1, 0.2, 0.1 + 0.2, 1 / 3, 2 / 3, 1e-7, 1e-6, 1.5e-6, 1e-5, 123e-20, 1e20, 1e21, 1e22,
    1.2345678901234568e20, 1.2345678901234568e21, 123456789012345680000.0, 2**31, 2**32, 2**53 - 1, 2**53,
    2**53 + 1, 2**60, 2**64, -(2**63), 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 4.35, 0.000001234,
    100.0, 1e100, -1e-100, 2147483.647, 123.456, 9007199254740993.0, 0.5, 1.5, 2.5, -2.5, 1234.5678, 1e16, 1e15 + 0.3,
    "NaN", "Infinity", "-Infinity",
]  # fmt: skip

STRINGS: list[str] = [
    "", " ", "12", "  12  ", "\u00a012\u3000", "\ufeff7\ufeff", "1e3", "1E+3", ".5", "5.", "+.5e-3", "-0", "0x1F",
    "0X1f", "0o17", "0b101", "0b102", "-0x10", "0x", "1_000", "12px", "abc", "Infinity", "-Infinity", "+Infinity",
    "infinity", "NaN", "\t\n3\r\v\f", "a\x1c", "x\u2028", "9007199254740993", "1e400", "-1e-400", "😀a", "a😀", "ab😀c",
    "é", "e\u0301", "\U0001f468\u200d\U0001f469", "Z", "a", "\uff21", "\U00010000", "\ue000", "ß", "aa", "a b ",
]  # fmt: skip

KEYS = ["0", "1", "2", "10", "01", "-1", "1.5", "4294967294", "4294967295", "b", "a", "é", "😀", "__proto_", ""]  # fmt: skip
LEAVES: list[Any] = [
    None, True, False, 0, -3, 2.5, 1e21, 1e-7, 7.0, "s", 'q"\\\n\t\x01\x1f\x7f\u2028 😀', "\ud800", "",
]  # fmt: skip


def _random_numbers(rng: random.Random, count: int) -> list[float]:
    values: list[float] = []
    for _ in range(count):
        kind = rng.randrange(4)
        if kind == 0:
            values.append(rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30))
        elif kind == 1:
            values.append(float(rng.randint(-(10**18), 10**18)) / 10 ** rng.randint(0, 12))
        elif kind == 2:
            values.append(round(rng.uniform(-1e6, 1e6), rng.randint(0, 8)))
        else:
            values.append(rng.choice([1, -1]) * math.ldexp(rng.random(), rng.randint(-1074, 1023)))
    return values


def _random_object(rng: random.Random, depth: int = 0) -> Any:
    if depth > 2 or rng.random() < 0.3:
        return rng.choice(LEAVES)
    if rng.random() < 0.5:
        return [_random_object(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(KEYS): _random_object(rng, depth + 1) for _ in range(rng.randint(0, 5))}


@pytest.fixture(scope="module")
def node_cases() -> tuple[dict[str, Any], dict[str, Any]]:
    node = find_node()
    if node is None:
        skip_or_fail("Node >= 22.19 not found (set CADDIE_PI_DIR to a Pi install, see tests/interop/pi.py)")
    assert node is not None
    rng = random.Random(20261201)
    numbers = SPECIAL_NUMBERS + _random_numbers(rng, 3000)
    objects = [
        {"b": 1, "2": [], "a": {"x": None}, "1": 2.0, "10": 0.1 + 0.2},
        {"nested": {"k": [1, {}, [], {"z": 1, "0": 0}]}},
        *(_random_object(rng) for _ in range(300)),
    ]
    fixed = [[v, p] for v in (*SPECIAL_NUMBERS[1:45], *_random_numbers(rng, 500)) for p in (0, 1, 2, 5)]
    fixed = [[v, p] for v, p in fixed if isinstance(v, int | float) and abs(v) < 1e21]
    rounds = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, 4.5, -4.5, *_random_numbers(rng, 300)]
    rounds = [v for v in rounds if abs(v) < 2**52]
    cases = {"numbers": numbers, "objects": objects, "fixed": fixed, "round": rounds, "strings": STRINGS}
    proc = subprocess.run(
        [node, "-e", SCRIPT], input=json.dumps(cases), capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return cases, json.loads(proc.stdout)


def _num(value: Any) -> float:
    return float(value) if isinstance(value, str) else value


def test_number_to_string(node_cases: tuple[dict[str, Any], dict[str, Any]]) -> None:
    cases, node = node_cases
    mine = [js_number(_num(v)) for v in cases["numbers"]]
    assert len(mine) > 3000
    assert [m for m, n in zip(mine, node["numbers"], strict=True) if m != n] == []
    assert mine == node["numbers"]


def test_json_stringify(node_cases: tuple[dict[str, Any], dict[str, Any]]) -> None:
    cases, node = node_cases
    mine = [[json_stringify(o), json_stringify(o, 2), json_stringify(o, 4)] for o in cases["objects"]]
    assert mine == node["stringify"]


def test_to_fixed_and_math_round(node_cases: tuple[dict[str, Any], dict[str, Any]]) -> None:
    cases, node = node_cases
    assert [js_to_fixed(v, p) for v, p in cases["fixed"]] == node["fixed"]
    assert [js_number(js_round(v)) for v in cases["round"]] == node["round"]


def test_strings(node_cases: tuple[dict[str, Any], dict[str, Any]]) -> None:
    cases, node = node_cases
    strings: list[str] = cases["strings"]
    assert [js_number(js_to_number(s)) for s in strings] == node["toNumber"]
    assert [[js_trim(s), js_trim_end(s)] for s in strings] == node["trim"]
    assert [utf16_len(s) for s in strings] == node["length"]
    # JS keeps half of a cut surrogate pair where caddie drops it; compare where no pair is cut.
    whole = [i for i, n in enumerate(node["slice"]) if not any(0xD800 <= ord(c) <= 0xDFFF for c in n)]
    assert len(whole) < len(strings)  # the cut case is there
    assert [utf16_prefix(strings[i], 3) for i in whole] == [node["slice"][i] for i in whole]
    assert sorted(strings, key=utf16_sort_key) == node["sorted"]


def test_circular_structures_raise_like_json_stringify() -> None:
    loop: dict[str, Any] = {"a": 1}
    loop["self"] = loop
    with pytest.raises(TypeError, match="circular"):
        json_stringify(loop)
    shared = [1]
    assert json_stringify({"x": shared, "y": shared}) == '{"x":[1],"y":[1]}'  # repeated, not circular
    with pytest.raises(TypeError, match="not JSON serializable"):
        json_stringify({"f": object()})
