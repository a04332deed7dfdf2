"""Argument validation texts, coercion, pydantic parameters, loop constants and the registry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field, field_validator

from caddie.agent.loop import OPERATION_ABORTED, OUTPUT_TOKEN_LIMIT, TOOL_BLOCKED, TOOL_NOT_FOUND
from caddie.tools import (
    DEFAULT_ACTIVE,
    ToolArgumentError,
    ToolResult,
    create_builtin_tools,
    validate_arguments,
)
from caddie.tools.base import ToolDefinition


async def _never(*_: Any) -> ToolResult:
    raise AssertionError("not executed")


def _tool(parameters: Any, **kw: Any) -> ToolDefinition:
    return ToolDefinition(name="t", description="d", parameters=parameters, execute=_never, **kw)


def _error(tool: ToolDefinition, args: Any) -> str:
    with pytest.raises(ToolArgumentError) as info:
        validate_arguments(tool, args)
    return str(info.value)


def test_builtin_read_errors(tmp_path: Path) -> None:
    read = create_builtin_tools(str(tmp_path))["read"]
    assert _error(read, {"offset": "x", "extra": [1, 2.0]}) == (
        'Validation failed for tool "read":\n'
        "  - path: must have required properties path\n"
        "  - offset: must be number\n"
        "\n"
        "Received arguments:\n"
        '{\n  "offset": "x",\n  "extra": [\n    1,\n    2\n  ]\n}'
    )


def test_coercion_and_optional_nulls(tmp_path: Path) -> None:
    tools = create_builtin_tools(str(tmp_path))
    assert validate_arguments(tools["read"], {"path": 12, "offset": "3", "limit": None}) == {
        "path": "12",
        "offset": 3,
    }
    assert validate_arguments(tools["grep"], {"pattern": "x", "ignoreCase": "true", "context": "2"}) == {
        "pattern": "x",
        "ignoreCase": True,
        "context": 2,
    }


def test_edit_prepare_runs_before_validation(tmp_path: Path) -> None:
    edit = create_builtin_tools(str(tmp_path))["edit"]
    args = {"path": "a", "edits": '[{"oldText": "x"}]'}
    assert _error(edit, args) == (
        'Validation failed for tool "edit":\n  - edits.0.newText: must have required properties newText\n\n'
        'Received arguments:\n{\n  "path": "a",\n  "edits": [\n    {\n      "oldText": "x"\n    }\n  ]\n}'
    )


def test_schema_keywords() -> None:
    schema = {
        "type": "object",
        "required": ["mode"],
        "properties": {
            "mode": {"anyOf": [{"type": "string", "const": "a"}, {"type": "string", "const": "b"}]},
            "n": {"type": "integer", "minimum": 1, "maximum": 5},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 1},
        },
        "additionalProperties": False,
    }
    assert _error(_tool(schema), {"mode": "c", "n": 9, "tags": ["x", "y"], "zz": 1}).split("\n\n")[0] == (
        'Validation failed for tool "t":\n'
        "  - root: must not have additional properties\n"
        "  - mode: must be equal to constant\n"
        "  - mode: must be equal to constant\n"
        "  - mode: must match a schema in anyOf\n"
        "  - n: must be <= 5\n"
        "  - tags: must not have more than 1 items"
    )
    assert validate_arguments(_tool(schema), {"mode": "b", "tags": "solo"}) == {"mode": "b", "tags": ["solo"]}


def test_at_most_eight_errors() -> None:
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(12)}}
    text = _error(_tool(schema), {f"p{i}": [] for i in range(12)})
    assert text.count("must be string") == 8


class Params(BaseModel):
    path: str
    count: int = Field(default=1, ge=1)
    mode: str | None = None

    @field_validator("path")
    @classmethod
    def no_spaces(cls, value: str) -> str:
        if " " in value:
            raise ValueError("path must not contain spaces")
        return value


def test_pydantic_parameters() -> None:
    tool = _tool(Params)
    value = validate_arguments(tool, {"path": "a", "count": "3", "mode": None})
    assert isinstance(value, Params) and value == Params(path="a", count=3, mode=None)
    assert _error(tool, {"count": 0}).split("\n\n")[0] == (
        'Validation failed for tool "t":\n  - path: must have required properties path\n  - count: must be >= 1'
    )
    assert _error(tool, {"path": "a b"}).split("\n\n")[0] == (
        'Validation failed for tool "t":\n  - path: Value error, path must not contain spaces'
    )


def test_prepare_arguments_failure_is_the_message() -> None:
    def boom(_: Any) -> Any:
        raise ValueError("cannot prepare")

    assert _error(_tool({"type": "object"}, prepare_arguments=boom), {}) == "cannot prepare"


def test_loop_constants() -> None:
    assert TOOL_NOT_FOUND.format(name="nope") == "Tool nope not found"
    assert TOOL_BLOCKED == "Tool execution was blocked"
    assert OPERATION_ABORTED == "Operation aborted"
    assert OUTPUT_TOKEN_LIMIT.format(name="bash") == (
        'Tool call "bash" was not executed: the response hit the output token limit, so its arguments may be '
        "truncated. Re-issue the tool call with complete arguments."
    )


def test_registry(tmp_path: Path) -> None:
    tools = create_builtin_tools(str(tmp_path))
    assert list(tools) == ["read", "bash", "edit", "write", "grep", "find", "ls"]
    assert DEFAULT_ACTIVE == ["read", "bash", "edit", "write"]
    assert all(name == tool.name for name, tool in tools.items())
    assert tools["edit"].prepare_arguments is not None
    assert tools["grep"].prompt_guidelines == [] and tools["grep"].prompt_snippet
