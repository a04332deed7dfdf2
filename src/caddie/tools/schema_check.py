"""JSON Schema checks with TypeBox's semantics and error text, on top of the ``jsonschema`` library.

Pi validates tool arguments with TypeBox's compiled checker. ``jsonschema`` does the validating here; this
module only adjusts it where TypeBox differs, so the errors (their order, paths and messages) read byte for
byte as Pi's:

- keywords are checked in TypeBox's order (``type``, then object, array, string and number keywords, then
  ``const`` ... ``oneOf``), and the errors of failed ``anyOf``/``oneOf`` branches come before the
  ``anyOf``/``oneOf`` error itself;
- ``required`` is one error listing every missing property; ``additionalProperties`` and
  ``propertyNames`` are one error for the object (not one per offending property);
- ``minLength``/``maxLength`` count TypeBox's simplified grapheme clusters, ``multipleOf`` has TypeBox's
  tolerance, ``type`` is JavaScript's (finite numbers), ``items`` may also be a list (tuples);
- ``format`` is accepted unchecked (as before; Pi's TypeBox registers no formats for tool schemas).

``typebox_errors(schema, value)`` lists the errors; ``error_line(error)`` is the ``path: message`` pair of
pi-ai's report (TypeBox's en_US messages, pi-ai's ``formatValidationPath``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from typing import Any, cast

from jsonschema import Draft202012Validator, ValidationError, validators

from caddie.jscompat import is_js_number, js_number, js_object_keys

# TypeBox's keyword order (typebox/schema/engine/schema.mjs); unlisted keywords (annotations) come last.
_ORDER = [
    "type",
    "required",
    "additionalProperties",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "properties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "additionalItems",
    "contains",
    "items",
    "maxContains",
    "maxItems",
    "minContains",
    "minItems",
    "prefixItems",
    "uniqueItems",
    "maxLength",
    "minLength",
    "format",
    "pattern",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "maximum",
    "minimum",
    "multipleOf",
    "$ref",
    "$recursiveRef",
    "$dynamicRef",
    "const",
    "enum",
    "if",
    "not",
    "allOf",
    "anyOf",
    "oneOf",
    "unevaluatedItems",
    "unevaluatedProperties",
]
_RANK = {keyword: index for index, keyword in enumerate(_ORDER)}


def _in_typebox_order(schema: Any) -> Iterable[tuple[str, Any]]:
    if not isinstance(schema, dict):  # true/false schemas: jsonschema handles them itself
        return []
    return sorted(schema.items(), key=lambda item: _RANK.get(item[0], len(_ORDER)))


# --------------------------------------------------------------------------------------------------
# Keywords where TypeBox differs from the JSON Schema reference behaviour


def _type_matches(value: Any, kind: Any) -> bool:
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return is_js_number(value) and math.isfinite(value) and float(value).is_integer()
    if kind == "number":
        return is_js_number(value) and math.isfinite(value)
    if kind == "null":
        return value is None
    if kind == "string":
        return isinstance(value, str)
    return kind not in ("bigint", "symbol", "function", "constructor", "undefined", "void")


def _type(validator: Any, kind: Any, value: Any, schema: Any) -> Iterator[ValidationError]:
    if not any(_type_matches(value, k) for k in (kind if isinstance(kind, list) else [kind])):
        yield ValidationError("type")


def _required(validator: Any, required: Any, value: Any, schema: Any) -> Iterator[ValidationError]:
    if isinstance(value, dict) and isinstance(required, list):
        missing = [key for key in required if key not in value]
        if missing:
            yield ValidationError(f"must have required properties {', '.join(missing)}", instance=missing)


def _additional_properties(validator: Any, extra: Any, value: Any, schema: Any) -> Iterator[ValidationError]:
    if not isinstance(value, dict):
        return
    known = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    patterns = [re.compile(p) for p in schema.get("patternProperties") or {}]
    rejected = [
        key
        for key in js_object_keys(value)
        if key not in known
        and not any(p.search(key) for p in patterns)
        and not validator.evolve(schema=extra).is_valid(value[key])
    ]
    if rejected:
        yield ValidationError("must not have additional properties")


def _pattern_properties(validator: Any, patterns: Any, value: Any, schema: Any) -> Iterator[ValidationError]:
    if isinstance(value, dict):
        for pattern, sub in patterns.items():
            regex = re.compile(pattern)
            for key in js_object_keys(value):
                if regex.search(key):
                    yield from validator.descend(value[key], sub, path=key, schema_path=pattern)


def _property_names(validator: Any, names: Any, value: Any, schema: Any) -> Iterator[ValidationError]:
    if isinstance(value, dict):
        check = validator.evolve(schema=names)
        bad = [key for key in js_object_keys(value) if not check.is_valid(key)]
        if bad:
            yield ValidationError(f"property names {', '.join(bad)} are invalid")


def _items(validator: Any, items: Any, value: Any, schema: Any) -> Iterator[ValidationError]:
    if not isinstance(value, list):
        return
    if isinstance(items, list):  # a tuple, in the older drafts' spelling
        for index, sub in enumerate(items[: len(value)]):
            yield from validator.descend(value[index], sub, path=index, schema_path=index)
        return
    prefix = schema.get("prefixItems")
    for index in range(len(prefix) if isinstance(prefix, list) else 0, len(value)):
        yield from validator.descend(value[index], items, path=index)


def _graphemes(text: str) -> int:
    """TypeBox's simplified grapheme clusters (combining marks, variation selectors, ZWJ chains, flags)."""

    def modifier(ch: str) -> bool:
        cp = ord(ch)
        return (
            0x0300 <= cp <= 0x036F
            or 0x1AB0 <= cp <= 0x1AFF
            or 0x1DC0 <= cp <= 0x1DFF
            or 0xFE20 <= cp <= 0xFE2F
            or 0xFE00 <= cp <= 0xFE0F
        )

    count, i, n = 0, 0, len(text)
    while i < n:
        start = ord(text[i])
        i += 1
        while i < n and modifier(text[i]):
            i += 1
        while i < n - 1 and text[i] == "\u200d":
            i += 2
            while i < n and modifier(text[i]):
                i += 1
        if 0x1F1E6 <= start <= 0x1F1FF and i < n and 0x1F1E6 <= ord(text[i]) <= 0x1F1FF:
            i += 1
        count += 1
    return count


def _max_length(validator: Any, limit: Any, value: Any, schema: Any) -> Iterator[ValidationError]:
    if isinstance(value, str) and is_js_number(limit) and _graphemes(value) > limit:
        yield ValidationError(f"must not have more than {js_number(limit)} characters")


def _min_length(validator: Any, limit: Any, value: Any, schema: Any) -> Iterator[ValidationError]:
    if isinstance(value, str) and is_js_number(limit) and _graphemes(value) < limit:
        yield ValidationError(f"must not have fewer than {js_number(limit)} characters")


def _pattern(validator: Any, pattern: Any, value: Any, schema: Any) -> Iterator[ValidationError]:
    if isinstance(value, str) and isinstance(pattern, str):
        try:
            matched = re.search(pattern, value) is not None
        except re.error:  # a JavaScript-only pattern: let it pass rather than fail every call
            matched = True
        if not matched:
            yield ValidationError(f'must match pattern "{pattern}"')


def _multiple_of(validator: Any, divisor: Any, value: Any, schema: Any) -> Iterator[ValidationError]:
    if not (is_js_number(value) and math.isfinite(value) and is_js_number(divisor)):
        return
    if float(value).is_integer() and divisor != 0 and (1 / divisor) % 1 == 0:
        return
    if divisor != 0:
        mod = math.fmod(value, divisor)
        if min(abs(mod), abs(mod - divisor), abs(mod + divisor)) < 1e-10:
            return
    yield ValidationError(f"must be multiple of {js_number(divisor)}")


_OWN = {
    "type": _type,
    "required": _required,
    "additionalProperties": _additional_properties,
    "patternProperties": _pattern_properties,
    "propertyNames": _property_names,
    "items": _items,
    "maxLength": _max_length,
    "minLength": _min_length,
    "pattern": _pattern,
    "multipleOf": _multiple_of,
    "format": None,
}
"""Keywords checked here; the message of each of their errors is already TypeBox's (except ``type``)."""

TypeBoxValidator = validators.create(
    meta_schema=Draft202012Validator.META_SCHEMA,
    validators={
        **{k: v for k, v in Draft202012Validator.VALIDATORS.items() if k not in _OWN},
        **{k: v for k, v in _OWN.items() if v is not None},
    },
    type_checker=Draft202012Validator.TYPE_CHECKER,
    applicable_validators=_in_typebox_order,
)


# --------------------------------------------------------------------------------------------------
# Entry points


def is_valid(schema: Any, value: Any) -> bool:
    """``Compile(schema).Check(value)``."""
    return bool(TypeBoxValidator(schema).is_valid(value))


def typebox_errors(schema: Any, value: Any) -> list[ValidationError]:
    """Every error TypeBox reports for ``value`` against ``schema``, in its order (empty when valid)."""
    return list(_flatten(TypeBoxValidator(schema).iter_errors(value)))


def _flatten(errors: Iterable[ValidationError]) -> Iterator[ValidationError]:
    for error in errors:
        if error.validator in ("anyOf", "oneOf") and error.context:
            yield from _flatten(error.context)  # the branches' errors, in branch order
        yield error


_LIMITS = {"exclusiveMaximum": "<", "exclusiveMinimum": ">", "maximum": "<=", "minimum": ">="}
_SIZES = {
    "maxItems": "must not have more than {} items",
    "minItems": "must not have fewer than {} items",
    "maxProperties": "must not have more than {} properties",
    "minProperties": "must not have fewer than {} properties",
}
_FIXED = {
    "anyOf": "must match a schema in anyOf",
    "const": "must be equal to constant",
    "contains": "must contain at least 1 valid item",
    "enum": "must be equal to one of the allowed values",
    "not": "must not be valid",
    "oneOf": "must match exactly one schema in oneOf",
    "uniqueItems": "must not have duplicate items",
    "unevaluatedItems": "must not have unevaluated items",
    "unevaluatedProperties": "must not have unevaluated properties",
}


def error_message(error: ValidationError) -> str:
    """TypeBox's en_US message for an error."""
    keyword, limit = error.validator, cast(Any, error.validator_value)
    if keyword is None:  # a false schema
        return "schema is false"
    if keyword == "type":
        return f"must be {limit}" if isinstance(limit, str) else f"must be either {' or '.join(limit)}"
    if keyword in _OWN:
        return error.message
    if keyword in _LIMITS:
        return f"must be {_LIMITS[str(keyword)]} {js_number(limit)}"
    if keyword in _SIZES:
        return _SIZES[str(keyword)].format(js_number(limit))
    return _FIXED.get(str(keyword), "an unknown validation error occurred")


def error_path(error: ValidationError) -> str:
    """pi-ai's ``formatValidationPath``: dotted instance path (``root`` for the top); for ``required``,
    the first missing property."""
    base = ".".join(str(part) for part in error.absolute_path)
    if error.validator == "required":
        first = cast(list[str], error.instance)[0]  # _required puts the missing properties there
        return f"{base}.{first}" if base else str(first)
    return base or "root"


def error_line(error: ValidationError) -> tuple[str, str]:
    return error_path(error), error_message(error)
