"""A server's tool input schema, made safe to send to a model API. Pure.

Model APIs reject a request whose tool schema is not a JSON Schema object, and one broken tool must not
break every turn. A schema that is not an object, or that ``jsonschema`` says is invalid, is replaced by
an open object schema (the server still checks its arguments) and the reason is returned for the log.
"""

from __future__ import annotations

import copy
from typing import Any

OPEN_OBJECT: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": True}


def input_schema(schema: Any) -> tuple[dict[str, Any], str | None]:
    """The schema to register and, when it had to be replaced, why."""
    if not isinstance(schema, dict):
        return copy.deepcopy(OPEN_OBJECT), "its input schema is not an object"
    if schema.get("type", "object") != "object":
        return copy.deepcopy(OPEN_OBJECT), f"its input schema has type {schema.get('type')!r}, not object"
    from jsonschema import exceptions, validators

    try:
        validators.validator_for(schema).check_schema(schema)
    except exceptions.SchemaError as e:
        return copy.deepcopy(OPEN_OBJECT), f"its input schema is invalid: {e.message}"
    except Exception as e:  # an unresolvable $schema, a recursion…: still not usable
        return copy.deepcopy(OPEN_OBJECT), f"its input schema cannot be checked: {e}"
    out = copy.deepcopy(schema)
    out.setdefault("type", "object")
    if not isinstance(out.get("properties"), dict):
        out["properties"] = {}
    return out, None
