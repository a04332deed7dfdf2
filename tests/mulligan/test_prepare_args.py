"""The JSON-string shim for object parameters, alone and in front of schema validation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from caddie.extensions.bundled.mulligan.prepare_args import prepare_object_args
from tests.mulligan.fakehost import Harness


def conforms(value: Any, schema: dict[str, Any]) -> bool:
    """A minimal JSON Schema check (type/properties/required/anyOf/const) standing in for host validation."""
    if "anyOf" in schema:
        return any(conforms(value, s) for s in schema["anyOf"])
    if "const" in schema and value != schema["const"]:
        return False
    kind = schema.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            return False
        if any(k not in value for k in schema.get("required", [])):
            return False
        return all(conforms(value[k], s) for k, s in schema.get("properties", {}).items() if k in value)
    if kind == "string":
        return isinstance(value, str)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return True


class TestShim:
    prepare = staticmethod(prepare_object_args(["target", "note"]))

    def test_a_json_encoded_object_becomes_an_object(self) -> None:
        args = {"target": '{"by_tool_call_id": "call_bash_pclntab"}', "replacement": "r"}
        assert self.prepare(args) == {"target": {"by_tool_call_id": "call_bash_pclntab"}, "replacement": "r"}

    def test_an_object_is_left_alone_and_the_same_dict_returned(self) -> None:
        args = {"target": {"by_tool_name": "bash", "occurrence": "last"}}
        assert self.prepare(args) is args and args["target"] == {"by_tool_name": "bash", "occurrence": "last"}

    @pytest.mark.parametrize("raw", ["{not json", "[1, 2]", '"text"', "42", "null", "true", ""])
    def test_malformed_json_and_non_objects_are_left_as_strings(self, raw: str) -> None:
        assert self.prepare({"target": raw}) == {"target": raw}

    def test_several_keys_in_one_call(self) -> None:
        out = self.prepare({"target": '{"a": 1}', "note": '{"b": 2}', "other": '{"c": 3}'})
        assert out == {"target": {"a": 1}, "note": {"b": 2}, "other": '{"c": 3}'}

    @pytest.mark.parametrize("args", [None, "x", [1], 3])
    def test_non_object_arguments_pass_through(self, args: object) -> None:
        assert self.prepare(args) is args

    def test_never_raises_on_deeply_nested_json(self) -> None:
        deep = "[" * 100_000 + "]" * 100_000
        assert self.prepare({"target": deep}) == {"target": deep}


@pytest.fixture
def harness() -> Harness:
    return Harness({})


def pipeline(h: Harness, tool_name: str, args: dict[str, Any], shim: bool = True) -> bool:
    tool = h.tool(tool_name)
    prepared = tool.prepare_arguments(json.loads(json.dumps(args))) if shim else args
    return conforms(prepared, tool.parameters)


SHRINK_ARMS = [
    {"by_tool_call_id": "call_bash_pclntab"},
    {"by_tool_name": "bash", "occurrence": "last"},
    {"by_tool_name": "read", "occurrence": "first"},
    {"by_content_includes": "pclntab"},
]


@pytest.mark.parametrize("target", SHRINK_ARMS)
def test_shrink_accepts_every_target_arm_sent_as_a_json_string(
    harness: Harness, target: dict[str, str]
) -> None:
    args = {"target": json.dumps(target), "replacement": "summary"}
    assert not pipeline(harness, "mulligan_shrink", args, shim=False)
    assert pipeline(harness, "mulligan_shrink", args)
    prepared = harness.tool("mulligan_shrink").prepare_arguments(dict(args))
    assert prepared["target"] == target


def test_shrink_still_takes_objects_and_rejects_garbage(harness: Harness) -> None:
    assert pipeline(harness, "mulligan_shrink", {"target": SHRINK_ARMS[0], "replacement": "s"})
    assert not pipeline(harness, "mulligan_shrink", {"target": "not json", "replacement": "s"})


def test_cancel_accepts_a_string_target_and_a_bare_marker_id(harness: Harness) -> None:
    args = {"target": json.dumps({"by_tool_call_id": "c1"})}
    assert not pipeline(harness, "mulligan_cancel", args, shim=False)
    assert pipeline(harness, "mulligan_cancel", args)
    assert pipeline(harness, "mulligan_cancel", {"markerId": "e0000001"})


def test_rewind_accepts_a_string_note(harness: Harness) -> None:
    note = {"what_happened": "a", "true_current_state": "b", "next": "c"}
    args = {"note": json.dumps(note), "granularity": "last_turn"}
    assert not pipeline(harness, "mulligan_rewind", args, shim=False)
    assert pipeline(harness, "mulligan_rewind", args)
    assert pipeline(harness, "mulligan_rewind", {"note": note, "granularity": "last_turn"})


def test_audit_has_no_shim(harness: Harness) -> None:
    assert harness.tool("mulligan_audit").prepare_arguments is None
