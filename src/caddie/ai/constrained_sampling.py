"""Constrained sampling for tool arguments (Pi's experimental ``constrainedSampling`` on a tool): the provider
makes the model's arguments follow the tool's JSON Schema exactly (``strict`` tools), or a grammar (OpenAI's
custom tools).

``JsonSchemaSampling(strict="prefer")`` asks for strict mode where the provider supports it and the schema
fits the strict subset (else the tool is sent as usual); ``strict="require"`` makes the request fail with a
sentence instead. Sent strict, the schema is rewritten as the providers demand: every object lists all its
properties in ``required`` (the optional ones may be null) and allows no others. ``GrammarSampling`` sends
the tool as an OpenAI custom tool whose input follows a Lark or regex grammar, where the model's compat says
the server takes them (``supportsOpenAIGrammarTools``); its schema must have one required string property,
which receives the input. Everything here is pure.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from caddie.errors import ProviderError
from caddie.jscompat import json_stringify

if TYPE_CHECKING:
    from caddie.ai.model import Tool


@dataclass(frozen=True, slots=True)
class JsonSchemaSampling:
    """Pi's ``{type: "json_schema", strict}``: the arguments follow the tool's schema exactly."""

    strict: Literal["prefer", "require"] = "prefer"
    type: Literal["json_schema"] = "json_schema"


@dataclass(frozen=True, slots=True)
class GrammarSampling:
    """Pi's ``{type: "grammar", variants}``: the tool's input follows a grammar (OpenAI custom tools); the Lark
    grammar is used when both are given."""

    openai_lark: str | None = None
    openai_regex: str | None = None
    type: Literal["grammar"] = "grammar"


ConstrainedSampling: TypeAlias = JsonSchemaSampling | GrammarSampling


class ConstrainedSamplingError(ProviderError):
    """A tool's constrained sampling cannot be honoured for this request (the sentence says why)."""


class UnsupportedStrictSchema(ProviderError):
    """The schema is outside the subset strict mode accepts."""


@dataclass(frozen=True, slots=True)
class Grammar:
    syntax: Literal["lark", "regex"]
    definition: str
    input_property: str
    """The one string property that receives the custom tool's input."""


UNSUPPORTED_STRICT_KEYS = (
    "$ref", "$defs", "definitions", "allOf", "oneOf", "patternProperties", "dependentSchemas", "dependencies",
    "unevaluatedProperties", "propertyNames", "contains", "prefixItems", "not", "if", "then", "else",
)  # fmt: skip


def constrained_sampling_of(value: Any) -> ConstrainedSampling | None:
    """A tool's setting as caddie holds it: the dataclasses as they are, Pi's dict shape
    (``{"type": "json_schema", "strict": "prefer"}``, ``{"type": "grammar", "variants": {...}}``) converted."""
    if value is None or isinstance(value, JsonSchemaSampling | GrammarSampling):
        return value
    if isinstance(value, dict):
        if value.get("type") == "json_schema" and value.get("strict", "prefer") in ("prefer", "require"):
            return JsonSchemaSampling(value.get("strict", "prefer"))
        variants = value.get("variants")
        if value.get("type") == "grammar" and isinstance(variants, dict):
            return GrammarSampling(variants.get("openai_lark"), variants.get("openai_regex"))
    raise ValueError(
        f"constrained_sampling {value!r} is not JsonSchemaSampling(strict='prefer'|'require') or "
        "GrammarSampling(openai_lark=..., openai_regex=...)"
    )


def constrained_sampling_json(setting: ConstrainedSampling) -> dict[str, Any]:
    """Pi's JSON of a setting (``pi-messages`` sends a tool as Pi's context holds it)."""
    if isinstance(setting, JsonSchemaSampling):
        return {"type": "json_schema", "strict": setting.strict}
    variants = {"openai_lark": setting.openai_lark, "openai_regex": setting.openai_regex}
    return {"type": "grammar", "variants": {k: v for k, v in variants.items() if v is not None}}


def _is_structured(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    types = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else []
    return "object" in types or "array" in types or "properties" in schema or "items" in schema


def _allows_null(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if ("const" in schema and schema["const"] is None) or (
        isinstance(schema.get("enum"), list) and None in schema["enum"]
    ):
        return True
    variants = schema.get("anyOf")
    return isinstance(variants, list) and any(_allows_null(v) for v in variants)


def _make_strict(schema: Any) -> None:
    """Rewrite one schema node in place (Pi's ``makeJsonSchemaNodeStrict``)."""
    if not isinstance(schema, dict):
        raise UnsupportedStrictSchema("boolean schemas are unsupported")
    for key in UNSUPPORTED_STRICT_KEYS:
        if key in schema:
            raise UnsupportedStrictSchema(f"{key} schemas are unsupported")
    if "anyOf" in schema:
        variants = schema["anyOf"]
        if not isinstance(variants, list) or not variants:
            raise UnsupportedStrictSchema("anyOf must contain at least one schema")
        for variant in variants:
            if _is_structured(variant):
                raise UnsupportedStrictSchema("object and array unions are unsupported")
            _make_strict(variant)
    if "items" in schema:
        if isinstance(schema["items"], list):
            raise UnsupportedStrictSchema("tuple schemas are unsupported")
        _make_strict(schema["items"])
    is_object = schema.get("type") == "object"
    if "properties" in schema and not is_object:
        raise UnsupportedStrictSchema("properties require type object")
    if not is_object:
        return
    if "additionalProperties" in schema and schema["additionalProperties"] is not False:
        raise UnsupportedStrictSchema("schema-valued or true additionalProperties is unsupported")
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise UnsupportedStrictSchema("object properties must be a schema map")
    required = schema.get("required", [])
    if not isinstance(required, list) or any(not isinstance(k, str) for k in required):
        raise UnsupportedStrictSchema("object required must be a string array")
    if any(k not in properties for k in required):
        raise UnsupportedStrictSchema("required contains an unknown property")
    for key, prop in list(properties.items()):
        _make_strict(prop)
        if key not in required and not _allows_null(prop):
            properties[key] = {"anyOf": [prop, {"type": "null"}]}
    schema["required"] = list(properties)
    schema["additionalProperties"] = False


def make_strict_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of a tool's schema in the strict subset (raises ``UnsupportedStrictSchema`` with the reason)."""
    strict = copy.deepcopy(schema)
    if not isinstance(strict, dict):
        raise UnsupportedStrictSchema("root schema must have type object")
    _make_strict(strict)
    if strict.get("type") != "object":
        raise UnsupportedStrictSchema("root schema must have type object")
    return strict


def tool_parameters(tool: Tool, strict: bool | None) -> dict[str, Any]:
    """The schema to send: the strict rewrite when the tool goes strict."""
    return make_strict_json_schema(tool.parameters) if strict is True else tool.parameters


def resolve_strict(tool: Tool, supports_strict: bool) -> bool | None:
    """True when ``tool`` goes strict on a provider that does (``supports_strict``) or does not; None when it is
    sent as usual. Raises ``ConstrainedSamplingError`` when the tool requires strict mode and cannot have it."""
    setting = tool.constrained_sampling
    if not isinstance(setting, JsonSchemaSampling):
        return None
    if supports_strict:
        try:
            make_strict_json_schema(tool.parameters)
            return True
        except UnsupportedStrictSchema as e:
            if setting.strict != "require":
                return None
            raise ConstrainedSamplingError(
                f'Tool "{tool.name}" requires JSON-schema constrained sampling, but {e}.'
            ) from e
    if setting.strict == "require":
        raise ConstrainedSamplingError(
            f'Tool "{tool.name}" requires JSON-schema constrained sampling, but strict tools are unsupported.'
        )
    return None


def resolve_grammar(tool: Tool, supports_grammar_tools: bool) -> Grammar | None:
    """The grammar ``tool`` is sent with as an OpenAI custom tool, or None (no grammar, or the server takes
    none). Raises ``ConstrainedSamplingError`` for a grammar setting that cannot be used."""
    setting = tool.constrained_sampling
    if not isinstance(setting, GrammarSampling) or not supports_grammar_tools:
        return None
    lark = setting.openai_lark if setting.openai_lark and setting.openai_lark.strip() else None
    regex = setting.openai_regex if setting.openai_regex and setting.openai_regex.strip() else None
    if lark is None and regex is None:
        raise ConstrainedSamplingError(
            f'Tool "{tool.name}" cannot use grammar constrained sampling: no supported grammar variant was provided.'
        )
    try:
        prop = _grammar_input_property(tool.parameters)
    except ValueError as e:
        raise ConstrainedSamplingError(
            f'Tool "{tool.name}" cannot use grammar constrained sampling: {e}.'
        ) from e
    if lark is not None:
        return Grammar("lark", lark, prop)
    assert regex is not None
    return Grammar("regex", regex, prop)


def _grammar_input_property(schema: dict[str, Any]) -> str:
    if schema.get("type") != "object":
        raise ValueError("grammar constrained sampling requires an object parameter schema")
    required = schema.get("required")
    if not isinstance(required, list) or len(required) != 1 or not isinstance(required[0], str):
        raise ValueError("grammar constrained sampling requires exactly one required string property")
    name = required[0]
    prop = (schema.get("properties") or {}).get(name)
    if not prop:
        raise ValueError(f"grammar constrained sampling requires a properties entry for {name}")
    if prop.get("type") != "string":
        raise ValueError(f"grammar constrained sampling property {name} must have type string")
    return name


def grammar_input_properties(tools: list[Tool] | None, supports_grammar_tools: bool) -> dict[str, str]:
    """Tool name → the property its custom-tool input fills, for the tools sent with a grammar."""
    found: dict[str, str] = {}
    for tool in tools or []:
        grammar = resolve_grammar(tool, supports_grammar_tools)
        if grammar is not None:
            found[tool.name] = grammar.input_property
    return found


def grammar_tool_input(name: str, arguments: dict[str, Any], prop: str) -> str:
    """What a grammar tool's call sends back as its custom tool input (its one string argument)."""
    value = arguments.get(prop)
    if not isinstance(value, str):
        raise ConstrainedSamplingError(
            f'Grammar tool call "{name}" requires argument "{prop}" to be a string.'
        )
    return value


class GrammarInput:
    """A custom tool call's input as it streams in, told as the JSON of ``{prop: input}`` written so far: the
    deltas a grammar tool's call streams (Pi's ``appendGrammarToolInputJsonDelta``)."""

    def __init__(self, prop: str) -> None:
        self.prop = prop
        self.input = ""
        self.started = False
        self.closed = False

    def advance(self, text: str, close: bool) -> str | None:
        """The input is now ``text`` (it only grows); the JSON piece to stream, or None for nothing new."""
        if self.closed:
            if close and text == self.input:
                return None
            raise ProviderError(f"grammar tool input for property {self.prop!r} changed after it was closed")
        if not text.startswith(self.input):
            raise ProviderError(f"grammar tool input for property {self.prop!r} changed non-monotonically")
        added = text[len(self.input) :]
        if not close and not added:
            return None
        piece = ""
        if not self.started:
            piece += "{" + json_stringify(self.prop) + ':"'
            self.started = True
        piece += json_stringify(added)[1:-1]
        self.input = text
        if close:
            piece += '"}'
            self.closed = True
        return piece
