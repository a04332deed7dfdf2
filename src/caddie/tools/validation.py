"""Tool-argument validation with Pi's exact error text.

``validate_arguments(tool, args)`` does what Pi's loop does before running a tool: ``prepare_arguments``,
then the value conversion of ``caddie.tools.conversion`` (optional nulls, TypeBox ``Value.Convert``, pi-ai's
coercion), then the JSON Schema check of ``caddie.tools.schema_check`` (the ``jsonschema`` library with
TypeBox's order and messages). On failure it raises ``ToolArgumentError`` whose message is, byte for byte,
the text Pi's loop gives the model::

    Validation failed for tool "read":
      - path: must have required properties path

    Received arguments:
    {
      "offset": 1
    }

Parameters given as a pydantic model are validated through the model's JSON Schema first, then by the model
(its own errors are reported in the same layout), and the model instance is returned.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ValidationError

from caddie.errors import ToolError
from caddie.jscompat import json_stringify
from caddie.tools.base import ToolDefinition

VALIDATION_FAILED = 'Validation failed for tool "{name}":'
UNKNOWN_VALIDATION_ERROR = "Unknown validation error"
MAX_ERRORS = 8


DEFERRED_MODULES = ("caddie.tools.conversion", "caddie.tools.schema_check")
"""Imported on the first tool call (``jsonschema`` takes ~80 ms); a session imports them in the background
beforehand (``caddie.ai.providers.preload.import_later``)."""


class ToolArgumentError(ToolError):
    """Arguments a tool cannot run with; ``str(error)`` is the exact result text for the model."""

    def __init__(self, message: str, errors: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors or []
        """``(path, message)`` pairs, as listed in the text."""


# --------------------------------------------------------------------------------------------------
# Entry point


def validate_arguments(tool: ToolDefinition, args: Any, *, prepare: bool = True) -> Any:
    """Validate (and coerce) ``args`` for ``tool``; returns what ``execute`` should receive.

    With ``prepare`` (the default) the tool's ``prepare_arguments`` runs first, as in Pi's loop; an exception
    it raises becomes a ``ToolArgumentError`` with the exception's message.
    """
    prepared = args
    if prepare and tool.prepare_arguments is not None:
        try:
            prepared = tool.prepare_arguments(args)
        except Exception as exc:
            raise ToolArgumentError(str(exc)) from exc

    # DEFERRED_MODULES: not on the path to the first frame or the first request, only to the first tool call
    from caddie.tools.conversion import coerce_with_json_schema, normalize_optional_nulls, typebox_convert
    from caddie.tools.schema_check import error_line, is_valid, typebox_errors

    model = tool.parameters if isinstance(tool.parameters, type) else None
    schema = tool.json_schema()
    value = copy.deepcopy(prepared)
    normalize_optional_nulls(value, schema)
    value = typebox_convert(schema, value)
    coerced = coerce_with_json_schema(value, schema)
    if coerced is not value:
        if isinstance(value, dict) and isinstance(coerced, dict):
            value.clear()
            value.update(coerced)
        else:
            return coerced if is_valid(schema, coerced) else value

    errors = typebox_errors(schema, value)
    if errors:
        lines = [error_line(e) for e in errors[:MAX_ERRORS]]
        raise ToolArgumentError(_failure_text(tool.name, lines, prepared), lines)
    if model is None:
        return value
    assert issubclass(model, BaseModel)
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        lines = [(_pydantic_path(err["loc"]), err["msg"]) for err in exc.errors()][:MAX_ERRORS]
        raise ToolArgumentError(_failure_text(tool.name, lines, prepared), lines) from exc


def _failure_text(name: str, lines: list[tuple[str, str]], received: Any) -> str:
    listed = "\n".join(f"  - {path}: {message}" for path, message in lines) or UNKNOWN_VALIDATION_ERROR
    return f"{VALIDATION_FAILED.format(name=name)}\n{listed}\n\nReceived arguments:\n{json_stringify(received, 2)}"


def _pydantic_path(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "root"
