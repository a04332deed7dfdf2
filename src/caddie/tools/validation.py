"""Tool-argument validation with Pi's exact error text, and the other error texts Pi's agent loop produces.

``validate_arguments(tool, args)`` does what Pi's loop does before running a tool: ``prepare_arguments``,
drop ``null`` optional properties, convert values the schema can take (TypeBox ``Value.Convert`` followed by
pi-ai's JSON-schema coercion: ``"5"`` -> 5, ``5`` -> ``"5"``, ``"true"`` -> true, a lone value -> ``[value]``
for arrays ...), then check the JSON Schema. On failure it raises ``ToolArgumentError`` whose message is,
byte for byte, the text Pi's loop gives the model::

    Validation failed for tool "read":
      - path: must have required properties path

    Received arguments:
    {
      "offset": 1
    }

Supported keywords: type (incl. lists), properties, required, additionalProperties, patternProperties,
min/maxProperties, items (incl. tuples), prefixItems, contains, min/maxItems, uniqueItems, min/maxLength,
pattern, minimum, maximum, exclusiveMinimum/Maximum, multipleOf, const, enum, anyOf, oneOf, allOf, not and
boolean schemas (``format`` is accepted unchecked, ``$ref`` must be inlined). Parameters given as a pydantic
model are validated through the model's JSON Schema first, then by the model (its own errors are reported
in the same layout), and the model instance is returned.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from caddie.jscompat import is_js_number, js_number, js_object_keys, js_trim, json_stringify
from caddie.tools.base import ToolDefinition, pydantic_json_schema

# --------------------------------------------------------------------------------------------------
# Texts the agent loop gives the model (pi-agent-core's agent-loop.ts)

TOOL_NOT_FOUND = "Tool {name} not found"
"""Result text for a call to an unknown tool: ``TOOL_NOT_FOUND.format(name=...)``."""
TOOL_BLOCKED = "Tool execution was blocked"
"""Result text when a ``tool_call`` handler blocks without giving a reason."""
OPERATION_ABORTED = "Operation aborted"
"""Result text when the run is aborted before a prepared call executes (and what tools raise on abort)."""
OUTPUT_TOKEN_LIMIT = (
    'Tool call "{name}" was not executed: the response hit the output token limit, so its arguments may be '
    "truncated. Re-issue the tool call with complete arguments."
)
"""Result text for every tool call of an assistant message that stopped at the output token limit."""
VALIDATION_FAILED = 'Validation failed for tool "{name}":'
UNKNOWN_VALIDATION_ERROR = "Unknown validation error"
MAX_ERRORS = 8


def tool_not_found_message(name: str) -> str:
    return TOOL_NOT_FOUND.format(name=name)


def output_token_limit_message(name: str) -> str:
    return OUTPUT_TOKEN_LIMIT.format(name=name)


class ToolArgumentError(Exception):
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
            return coerced if not schema_errors(schema, coerced) else value

    errors = schema_errors(schema, value)
    if errors:
        lines = [(format_error_path(e), error_message(e)) for e in errors[:MAX_ERRORS]]
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


def schema_of(parameters: dict[str, Any] | type[BaseModel]) -> dict[str, Any]:
    return parameters if isinstance(parameters, dict) else pydantic_json_schema(parameters)


# --------------------------------------------------------------------------------------------------
# JS value semantics


def _is_object(value: Any) -> bool:
    return isinstance(value, dict)


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


def _deep_equal(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_deep_equal(x, y) for x, y in zip(a, b, strict=True))
    return _same(a, b)


_JS_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)")
_JS_RADIX = re.compile(r"0([xXoObB])([0-9a-fA-F]+)")


def js_to_number(text: str) -> float:
    """``Number(text)`` (``+text``) for a string."""
    body = js_trim(text)
    if not body:
        return 0.0
    if body in ("Infinity", "+Infinity"):
        return math.inf
    if body == "-Infinity":
        return -math.inf
    radix = _JS_RADIX.fullmatch(body)
    if radix:
        base = {"x": 16, "o": 8, "b": 2}[radix.group(1).lower()]
        try:
            return float(int(radix.group(2), base))
        except ValueError:
            return math.nan
    if _JS_DECIMAL.fullmatch(body):
        return float(body)
    return math.nan


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
            and schema_errors(prop, None)
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
        if any(not schema_errors(v, value) for v in variants):
            return value
        for variant in variants:
            candidate = typebox_convert(variant, copy.deepcopy(value))
            if not schema_errors(schema, candidate):
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
        if not schema_errors(sub, value):
            return value
    for sub in schemas:
        coerced = coerce_with_json_schema(copy.deepcopy(value), sub)
        if not schema_errors(sub, coerced):
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


# --------------------------------------------------------------------------------------------------
# TypeBox's error engine (keyword order and accumulation as in typebox/schema/engine)

SchemaError = tuple[str, str, dict[str, Any]]
"""``(keyword, instance_path, params)``."""


def schema_errors(schema: Any, value: Any, path: str = "") -> list[SchemaError]:
    """Every error TypeBox reports for ``value`` against ``schema``, in its order (empty = valid)."""
    errors: list[SchemaError] = []
    _collect(schema, value, path, errors)
    return errors


def _collect(schema: Any, value: Any, path: str, out: list[SchemaError]) -> bool:
    if schema is True:
        return True
    if schema is False:
        out.append(("boolean", path, {}))
        return False
    if not isinstance(schema, dict):
        return True
    ok = True

    def fail(keyword: str, params: dict[str, Any], at: str = path) -> None:
        nonlocal ok
        ok = False
        out.append((keyword, at, params))

    if "type" in schema:
        kind = schema["type"]
        kinds = kind if isinstance(kind, list) else [kind]
        if not any(_type_ok(value, k) for k in kinds):
            fail("type", {"type": kind})

    if isinstance(value, dict):
        ok = _collect_object(schema, value, path, out) and ok
    if isinstance(value, list):
        ok = _collect_array(schema, value, path, out) and ok
    if isinstance(value, str):
        if isinstance(schema.get("maxLength"), int | float) and _grapheme_count(value) > schema["maxLength"]:
            fail("maxLength", {"limit": schema["maxLength"]})
        if isinstance(schema.get("minLength"), int | float) and _grapheme_count(value) < schema["minLength"]:
            fail("minLength", {"limit": schema["minLength"]})
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                matched = re.search(pattern, value) is not None
            except re.error:
                matched = True
            if not matched:
                fail("pattern", {"pattern": pattern})
    if _is_finite_number(value):
        for keyword, comparison in _NUMBER_LIMITS:
            limit = schema.get(keyword)
            if is_js_number(limit) and not _compare(value, comparison, limit):
                fail(keyword, {"comparison": comparison, "limit": limit})
        divisor = schema.get("multipleOf")
        if is_js_number(divisor) and not _is_multiple_of(value, float(divisor)):
            fail("multipleOf", {"multipleOf": divisor})

    if "const" in schema and not _deep_equal(value, schema["const"]):
        fail("const", {"allowedValue": schema["const"]})
    if isinstance(schema.get("enum"), list) and not any(_deep_equal(value, o) for o in schema["enum"]):
        fail("enum", {"allowedValues": schema["enum"]})
    if "not" in schema and not schema_errors(schema["not"], value):
        fail("not", {})
    if isinstance(schema.get("allOf"), list):
        for sub in schema["allOf"]:
            sub_errors = schema_errors(sub, value, path)
            if sub_errors:
                ok = False
                out.extend(sub_errors)
    if isinstance(schema.get("anyOf"), list):
        branch_errors = [schema_errors(sub, value, path) for sub in schema["anyOf"]]
        if all(branch_errors):
            for errs in branch_errors:
                out.extend(errs)
            fail("anyOf", {})
    if isinstance(schema.get("oneOf"), list):
        branch_errors = [schema_errors(sub, value, path) for sub in schema["oneOf"]]
        passing = [i for i, errs in enumerate(branch_errors) if not errs]
        if len(passing) != 1:
            if not passing:
                for errs in branch_errors:
                    out.extend(errs)
            fail("oneOf", {"passingSchemas": passing})
    return ok


_NUMBER_LIMITS = (("exclusiveMaximum", "<"), ("exclusiveMinimum", ">"), ("maximum", "<="), ("minimum", ">="))


def _compare(value: float, comparison: str, limit: float) -> bool:
    if comparison == "<":
        return value < limit
    if comparison == ">":
        return value > limit
    if comparison == "<=":
        return value <= limit
    return value >= limit


def _type_ok(value: Any, kind: Any) -> bool:
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return _is_integer(value)
    if kind == "number":
        return _is_finite_number(value)
    if kind == "null":
        return value is None
    if kind == "string":
        return isinstance(value, str)
    return kind not in ("bigint", "symbol", "function", "constructor", "undefined", "void")


def _collect_object(schema: dict[str, Any], value: dict[str, Any], path: str, out: list[SchemaError]) -> bool:
    ok = True
    required = schema.get("required")
    if isinstance(required, list):
        missing = [key for key in required if key not in value]
        if missing:
            ok = False
            out.append(("required", path, {"requiredProperties": missing}))
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else None
    patterns = schema.get("patternProperties") if isinstance(schema.get("patternProperties"), dict) else None
    if "additionalProperties" in schema:
        extra_schema = schema["additionalProperties"]
        known = set(properties or {})
        regexes = [re.compile(p) for p in (patterns or {})]
        rejected = [
            key
            for key in js_object_keys(value)
            if key not in known
            and not any(r.search(key) for r in regexes)
            and schema_errors(extra_schema, value[key], f"{path}/{key}")
        ]
        if rejected:
            ok = False
            out.append(("additionalProperties", path, {"additionalProperties": rejected}))
    if patterns:
        for pattern, sub in patterns.items():
            regex = re.compile(pattern)
            for key in js_object_keys(value):
                if regex.search(key):
                    ok = _collect(sub, value[key], f"{path}/{key}", out) and ok
    if properties:
        for key, sub in properties.items():
            if key in value:
                ok = _collect(sub, value[key], f"{path}/{key}", out) and ok
    names = schema.get("propertyNames")
    if names is not None:
        bad = [key for key in js_object_keys(value) if schema_errors(names, key)]
        if bad:
            ok = False
            out.append(("propertyNames", path, {"propertyNames": bad}))
    count = len(value)
    if is_js_number(schema.get("minProperties")) and count < schema["minProperties"]:
        ok = False
        out.append(("minProperties", path, {"limit": schema["minProperties"]}))
    if is_js_number(schema.get("maxProperties")) and count > schema["maxProperties"]:
        ok = False
        out.append(("maxProperties", path, {"limit": schema["maxProperties"]}))
    return ok


def _collect_array(schema: dict[str, Any], value: list[Any], path: str, out: list[SchemaError]) -> bool:
    ok = True
    contains = schema.get("contains")
    if contains is not None and (not value or all(schema_errors(contains, item) for item in value)):
        ok = False
        out.append(("contains", path, {"minContains": 1}))
    items = schema.get("items")
    prefix_schema = schema.get("prefixItems")
    prefix: list[Any] = prefix_schema if isinstance(prefix_schema, list) else []
    if isinstance(items, list):
        for index, sub in enumerate(items[: len(value)]):
            ok = _collect(sub, value[index], f"{path}/{index}", out) and ok
    elif items is not None:
        for index in range(len(prefix), len(value)):
            ok = _collect(items, value[index], f"{path}/{index}", out) and ok
    if is_js_number(schema.get("maxItems")) and len(value) > schema["maxItems"]:
        ok = False
        out.append(("maxItems", path, {"limit": schema["maxItems"]}))
    if is_js_number(schema.get("minItems")) and len(value) < schema["minItems"]:
        ok = False
        out.append(("minItems", path, {"limit": schema["minItems"]}))
    if prefix and value:
        for index, sub in enumerate(prefix[: len(value)]):
            ok = _collect(sub, value[index], f"{path}/{index}", out) and ok
    if schema.get("uniqueItems") is True:
        seen: list[Any] = []
        duplicates: list[int] = []
        for index, item in enumerate(value):
            if any(_deep_equal(item, s) for s in seen):
                duplicates.append(index)
            else:
                seen.append(item)
        if duplicates:
            ok = False
            out.append(("uniqueItems", path, {"duplicateItems": duplicates}))
    return ok


def _is_multiple_of(dividend: float, divisor: float) -> bool:
    if _is_integer(dividend) and divisor != 0 and (1 / divisor) % 1 == 0:
        return True
    if divisor == 0:
        return False
    mod = math.fmod(dividend, divisor)
    return min(abs(mod), abs(mod - divisor), abs(mod + divisor)) < 1e-10


def _is_modifier(cp: int) -> bool:
    return (
        0x0300 <= cp <= 0x036F
        or 0x1AB0 <= cp <= 0x1AFF
        or 0x1DC0 <= cp <= 0x1DFF
        or 0xFE20 <= cp <= 0xFE2F
        or 0xFE00 <= cp <= 0xFE0F
    )


def _grapheme_count(text: str) -> int:
    """TypeBox's simplified grapheme clusters (combining marks, variation selectors, ZWJ chains, flags)."""
    count = 0
    i = 0
    n = len(text)
    while i < n:
        start = ord(text[i])
        i += 1
        while i < n and _is_modifier(ord(text[i])):
            i += 1
        while i < n - 1 and text[i] == "\u200d":
            i += 2
            while i < n and _is_modifier(ord(text[i])):
                i += 1
        if 0x1F1E6 <= start <= 0x1F1FF and i < n and 0x1F1E6 <= ord(text[i]) <= 0x1F1FF:
            i += 1
        count += 1
    return count


# --------------------------------------------------------------------------------------------------
# Messages (TypeBox's en_US locale) and paths (pi-ai's formatValidationPath)


def error_message(error: SchemaError) -> str:
    keyword, _, params = error
    if keyword == "additionalProperties":
        return "must not have additional properties"
    if keyword == "anyOf":
        return "must match a schema in anyOf"
    if keyword == "boolean":
        return "schema is false"
    if keyword == "const":
        return "must be equal to constant"
    if keyword == "contains":
        return "must contain at least 1 valid item"
    if keyword == "enum":
        return "must be equal to one of the allowed values"
    if keyword in ("exclusiveMaximum", "exclusiveMinimum", "maximum", "minimum"):
        return f"must be {params['comparison']} {js_number(params['limit'])}"
    if keyword == "format":
        return f'must match format "{params["format"]}"'
    if keyword == "maxItems":
        return f"must not have more than {js_number(params['limit'])} items"
    if keyword == "maxLength":
        return f"must not have more than {js_number(params['limit'])} characters"
    if keyword == "maxProperties":
        return f"must not have more than {js_number(params['limit'])} properties"
    if keyword == "minItems":
        return f"must not have fewer than {js_number(params['limit'])} items"
    if keyword == "minLength":
        return f"must not have fewer than {js_number(params['limit'])} characters"
    if keyword == "minProperties":
        return f"must not have fewer than {js_number(params['limit'])} properties"
    if keyword == "multipleOf":
        return f"must be multiple of {js_number(params['multipleOf'])}"
    if keyword == "not":
        return "must not be valid"
    if keyword == "oneOf":
        return "must match exactly one schema in oneOf"
    if keyword == "pattern":
        return f'must match pattern "{params["pattern"]}"'
    if keyword == "propertyNames":
        return f"property names {', '.join(params['propertyNames'])} are invalid"
    if keyword == "required":
        return f"must have required properties {', '.join(params['requiredProperties'])}"
    if keyword == "type":
        kind = params["type"]
        return f"must be {kind}" if isinstance(kind, str) else f"must be either {' or '.join(kind)}"
    if keyword == "uniqueItems":
        return "must not have duplicate items"
    return "an unknown validation error occurred"


def format_error_path(error: SchemaError) -> str:
    keyword, instance_path, params = error
    base = instance_path.removeprefix("/").replace("/", ".")
    if keyword == "required" and params.get("requiredProperties"):
        first = params["requiredProperties"][0]
        return f"{base}.{first}" if base else first
    return base or "root"
