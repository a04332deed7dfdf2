"""The value conversion Pi applies to tool arguments before it checks them.

In order, as pi-ai's ``validateToolArguments`` does: drop ``null`` values of optional properties whose
schema does not accept null (``normalize_optional_nulls``), TypeBox's ``Value.Convert`` (``typebox_convert``:
``"5"`` -> 5, ``5`` -> ``"5"``, ``"true"`` -> true, a lone value -> ``[value]`` for arrays, a union member
that converts ...), then pi-ai's own lenient ``coerce_with_json_schema`` for plain JSON schemas. The kinds
TypeBox would have built are inferred from the JSON Schema. Objects and arrays are converted in place.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable
from typing import Any

from caddie.jscompat import is_js_number, js_number, js_to_number, js_trim
from caddie.tools.schema_check import is_valid

# --------------------------------------------------------------------------------------------------
# JS value semantics


def _is_finite_number(value: Any) -> bool:
    return is_js_number(value) and math.isfinite(value)


def _is_integer(value: Any) -> bool:
    return _is_finite_number(value) and float(value).is_integer()


def _same(a: Any, b: Any) -> bool:
    """``a === b``: primitives by type and value, objects by identity."""
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return a is b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_js_number(a) and is_js_number(b):
        return bool(a == b)
    return type(a) is type(b) and a == b


def _js_num(value: float) -> int | float:
    """Store integral floats as ints so they print like JS numbers."""
    if math.isfinite(value) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


# --------------------------------------------------------------------------------------------------
# Optional nulls


def normalize_optional_nulls(value: Any, schema: Any) -> None:
    """Delete ``null`` values of optional properties whose schema does not accept null (in place)."""
    if not isinstance(schema, dict):
        return
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, list):
            for item, item_schema in zip(value, items, strict=False):
                normalize_optional_nulls(item, item_schema)
        elif items is not None:
            for item in value:
                normalize_optional_nulls(item, items)
        return
    properties = schema.get("properties")
    if not isinstance(value, dict) or not isinstance(properties, dict):
        return
    required = set(schema.get("required") or [])
    for key, prop in properties.items():
        if key not in value:
            continue
        if (
            value[key] is None
            and key not in required
            and not (isinstance(prop, dict) and isinstance(prop.get("$ref"), str))
            and not is_valid(prop, None)
        ):
            del value[key]
        else:
            normalize_optional_nulls(value[key], prop)


# --------------------------------------------------------------------------------------------------
# TypeBox Value.Convert (kinds inferred from the JSON Schema as TypeBox would have built it)


def _kind(schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return None
    if isinstance(schema.get("anyOf"), list):
        return "Union"
    if "const" in schema:
        return "Literal"
    if "enum" in schema:
        return None
    kind = schema.get("type")
    return (
        {
            "object": "Object",
            "array": "Array",
            "string": "String",
            "number": "Number",
            "integer": "Integer",
            "boolean": "Boolean",
            "null": "Null",
        }.get(kind)
        if isinstance(kind, str)
        else None
    )


_MISSING = object()


def _try_string(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if is_js_number(value):
        return js_number(value)
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    return _MISSING


def _try_number(value: Any) -> Any:
    if isinstance(value, bool):
        return 1 if value else 0
    if is_js_number(value):
        return value
    if value is None:
        return 0
    if isinstance(value, str):
        number = js_to_number(value)
        if math.isfinite(number):
            return _js_num(number)
        lower = value.lower()
        if lower == "false":
            return 0
        if lower == "true":
            return 1
        match = re.fullmatch(r"-?(?:0|[1-9]\d*)(?:n|\.\d+)?", value)
        if match:
            big = int(value.rstrip("n").split(".")[0])
            return big if abs(big) <= 2**53 - 1 else _MISSING
        return _MISSING
    return _MISSING


def _try_boolean(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if is_js_number(value):
        return False if value == 0 else True if value == 1 else _MISSING
    if value is None:
        return False
    if isinstance(value, str):
        lower = value.lower()
        if lower == "false" or value == "0":
            return False
        if lower == "true" or value == "1":
            return True
    return _MISSING


def _try_null(value: Any) -> Any:
    if value is None:
        return None
    if value is False or (is_js_number(value) and value == 0):
        return None
    if isinstance(value, str) and (value.lower() in ("undefined", "null") or value in ("", "0")):
        return None
    return _MISSING


def typebox_convert(schema: Any, value: Any) -> Any:
    """TypeBox ``Value.Convert``: objects are converted in place; returns the (possibly new) value."""
    kind = _kind(schema)
    if kind is None:
        return value
    if kind == "Object":
        if not isinstance(value, dict):
            return value
        properties = schema.get("properties") or {}
        for key, prop in properties.items():
            if key in value:
                value[key] = typebox_convert(prop, value[key])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in list(value):
                if key not in properties:
                    value[key] = typebox_convert(extra, value[key])
        return value
    if kind == "Array":
        items = schema.get("items")
        values = value if isinstance(value, list) else [value]
        if not isinstance(items, dict):
            return list(values)
        return [typebox_convert(items, v) for v in values]
    if kind == "Union":
        variants: list[Any] = schema["anyOf"]
        if any(is_valid(v, value) for v in variants):
            return value
        for variant in variants:
            candidate = typebox_convert(variant, copy.deepcopy(value))
            if is_valid(schema, candidate):
                return candidate
        return value
    if kind == "Literal":
        const = schema["const"]
        if _same(const, value):
            return value
        attempt: Callable[[Any], Any]
        if isinstance(const, bool):
            attempt = _try_boolean
        elif is_js_number(const):
            attempt = _try_number
        elif isinstance(const, str):
            attempt = _try_string
        else:
            return value
        converted = attempt(value)
        return converted if converted is not _MISSING and _same(const, converted) else value
    converter = {
        "String": _try_string,
        "Number": _try_number,
        "Integer": _try_number,
        "Boolean": _try_boolean,
        "Null": _try_null,
    }[kind]
    converted = converter(value)
    if converted is _MISSING:
        return value
    if kind == "Integer" and is_js_number(converted):
        converted = _js_num(float(math.trunc(converted)))
    return converted


# --------------------------------------------------------------------------------------------------
# pi-ai's coerceWithJsonSchema


def _schema_types(schema: dict[str, Any]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    return []


def _matches_json_type(value: Any, kind: str) -> bool:
    if kind == "number":
        return is_js_number(value)
    if kind == "integer":
        return _is_integer(value)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "null":
        return value is None
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return False


def _coerce_primitive(value: Any, kind: str) -> Any:
    if kind in ("number", "integer"):
        if value is None:
            return 0
        if isinstance(value, str) and js_trim(value):
            parsed = js_to_number(value)
            if (kind == "number" and math.isfinite(parsed)) or (kind == "integer" and _is_integer(parsed)):
                return _js_num(parsed)
        if isinstance(value, bool):
            return 1 if value else 0
        return value
    if kind == "boolean":
        if value is None:
            return False
        if value == "true" and isinstance(value, str):
            return True
        if value == "false" and isinstance(value, str):
            return False
        if is_js_number(value) and value in (0, 1):
            return value == 1
        return value
    if kind == "string":
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if is_js_number(value):
            return js_number(value)
        return value
    if kind == "null":
        if _same(value, "") or _same(value, 0) or value is False:
            return None
        return value
    return value


def _coerce_union(value: Any, schemas: list[Any]) -> Any:
    for sub in schemas:
        if is_valid(sub, value):
            return value
    for sub in schemas:
        coerced = coerce_with_json_schema(copy.deepcopy(value), sub)
        if is_valid(sub, coerced):
            return coerced
    return value


def coerce_with_json_schema(value: Any, schema: Any) -> Any:
    """pi-ai's lenient coercion toward ``schema`` (objects and arrays are coerced in place)."""
    if not isinstance(schema, dict):
        return value
    current = value
    if isinstance(schema.get("allOf"), list):
        for nested in schema["allOf"]:
            current = coerce_with_json_schema(current, nested)
    if isinstance(schema.get("anyOf"), list):
        current = _coerce_union(current, schema["anyOf"])
    if isinstance(schema.get("oneOf"), list):
        current = _coerce_union(current, schema["oneOf"])
    types = _schema_types(schema)
    union_match = len(types) > 1 and any(_matches_json_type(current, t) for t in types)
    if types and not union_match:
        for kind in types:
            candidate = _coerce_primitive(current, kind)
            if not _same(candidate, current):
                current = candidate
                break
    if "object" in types and isinstance(current, dict):
        properties = schema.get("properties")
        defined = set(properties or {})
        if isinstance(properties, dict):
            for key, prop in properties.items():
                if key in current:
                    current[key] = coerce_with_json_schema(current[key], prop)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in list(current):
                if key not in defined:
                    current[key] = coerce_with_json_schema(current[key], extra)
    if "array" in types and isinstance(current, list):
        items = schema.get("items")
        if isinstance(items, list):
            for index in range(min(len(items), len(current))):
                current[index] = coerce_with_json_schema(current[index], items[index])
        elif isinstance(items, dict):
            for index in range(len(current)):
                current[index] = coerce_with_json_schema(current[index], items)
    return current
