"""``models.json`` in Pi's format: custom providers and models, and overrides of built-in ones.

A file that cannot be used never raises: each problem becomes one line (naming the file, where in it, what
is wrong and what caddie does about it) and the rest still loads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import msgspec

from caddie.ai import secrets
from caddie.ai.catalogue import ProviderInfo
from caddie.ai.model import APIS, Api, Model, ModelCompat, ModelCost, ModelCostTier, as_api
from caddie.config.settings import read_json_object
from caddie.models.config_value import resolve_config_value

__all__ = ["ProviderConfig", "load_models_json"]


@dataclass
class ProviderConfig:
    """One ``providers.<name>`` entry of models.json, checked."""

    name: str
    base_url: str | None = None
    api: Api | None = None
    api_key: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    compat: ModelCompat | None = None
    auth_header: bool = False
    """``authHeader``: send the key as ``Authorization: Bearer`` too."""
    oauth: str | None = None
    """``oauth``: the login this provider uses (models.json: ``"radius"``, a Radius gateway at ``baseUrl``)."""


class _Problems:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: list[str] = []

    def add(self, where: str, problem: str, consequence: str) -> None:
        self.lines.append(f"{self.path}: {where}: {problem}; {consequence}.")


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def _tiers_ok(value: Any) -> bool:
    """Pi's ``cost.tiers``: a list of ``{inputTokensAbove, input, output, cacheRead, cacheWrite}``."""
    return isinstance(value, list) and all(
        isinstance(t, dict)
        and _number(t.get("inputTokensAbove"))
        and all(_number(t.get(k, 0)) for k in ("input", "output", "cacheRead", "cacheWrite"))
        for t in value
    )


def _tiers(value: list[dict[str, Any]]) -> tuple[ModelCostTier, ...]:
    return tuple(
        ModelCostTier(
            int(t["inputTokensAbove"]),
            float(t.get("input", 0)),
            float(t.get("output", 0)),
            float(t.get("cacheRead", 0)),
            float(t.get("cacheWrite", 0)),
        )
        for t in value
    )


def _compat(value: Any, where: str, problems: _Problems, consequence: str) -> ModelCompat | bool | None:
    """The typed flags; False (after reporting it) when they are not Pi's shape."""
    if not isinstance(value, dict):
        problems.add(f"{where}.compat", "must be an object", consequence)
        return False
    try:
        compat = ModelCompat.from_json(value)
    except msgspec.ValidationError as e:
        detail = str(e).replace("$.", f"{where}.compat.").replace("`$`", f"`{where}.compat`")
        problems.add(f"{where}.compat", detail, consequence)
        return False
    for key, why in REFUSED_COMPAT.items():
        if value.get(key) not in (None, False):
            problems.add(f"{where}.compat.{key}", "is not supported", f"ignoring it: {why}")
    return compat


REFUSED_COMPAT = {
    "supportsToolSearch": "caddie activates deferred tools by sending the whole tool list again (Pi's fallback), "
    "not with OpenAI's tool_search items",
    "deferredToolsMode": "caddie activates deferred tools by sending the whole tool list again (Pi's fallback), "
    "not in Kimi's deferred format",
}
"""Pi's compat flags that caddie parses but does not act on: set, each gets one line."""


def _check_model_fields(spec: dict[str, Any], where: str, problems: _Problems) -> dict[str, Any] | None:
    """Validated model fields (or None when the model must be skipped)."""
    out: dict[str, Any] = {}
    checks: list[tuple[str, Any, str]] = [
        ("name", lambda v: isinstance(v, str), "must be a string"),
        ("api", lambda v: isinstance(v, str), "must be a string"),
        ("reasoning", lambda v: isinstance(v, bool), "must be true or false"),
        (
            "input",
            lambda v: isinstance(v, list) and all(x in ("text", "image") for x in v),
            'must be a list of "text"/"image"',
        ),
        ("contextWindow", _positive_int, "must be a positive integer"),
        ("maxTokens", _positive_int, "must be a positive integer"),
        (
            "headers",
            lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
            "must map names to strings",
        ),
        ("samplingParams", lambda v: isinstance(v, dict), "must be an object"),
        (
            "thinkingLevelMap",
            lambda v: isinstance(v, dict) and all(x is None or isinstance(x, str) for x in v.values()),
            "must map thinking levels to strings or null",
        ),
    ]
    for key, ok, rule in checks:
        if key in spec:
            if not ok(spec[key]):
                problems.add(f"{where}.{key}", rule, "skipping this model")
                return None
            out[key] = spec[key]
    if "compat" in spec:
        compat = _compat(spec["compat"], where, problems, "skipping this model")
        if compat is False:
            return None
        out["compat"] = compat
    if "cost" in spec:
        cost = spec["cost"]
        if not isinstance(cost, dict) or not all(
            _number(cost.get(k, 0)) for k in ("input", "output", "cacheRead", "cacheWrite")
        ):
            problems.add(
                f"{where}.cost",
                "must hold non-negative numbers input/output/cacheRead/cacheWrite",
                "skipping this model",
            )
            return None
        if "tiers" in cost and not _tiers_ok(cost["tiers"]):
            problems.add(
                f"{where}.cost.tiers",
                "must be a list of objects with a non-negative inputTokensAbove and rates",
                "skipping this model",
            )
            return None
        out["cost"] = cost
    if out.get("api") is not None:
        api = as_api(out["api"])
        if api is None:
            problems.add(
                f"{where}.api",
                f"'{out['api']}' is not an API caddie supports ({', '.join(APIS)})",
                "skipping this model",
            )
            return None
        out["api"] = api
    return out


def _apply_fields(
    model: Model, fields: dict[str, Any], env: Mapping[str, str], problems: _Problems, where: str
) -> Model:
    changes: dict[str, Any] = {}
    if "name" in fields:
        changes["name"] = fields["name"]
    if "api" in fields:
        changes["api"] = fields["api"]
    if "reasoning" in fields:
        changes["reasoning"] = fields["reasoning"]
    if "input" in fields:
        changes["input"] = list(fields["input"])
    if "contextWindow" in fields:
        changes["context_window"] = fields["contextWindow"]
    if "maxTokens" in fields:
        changes["max_tokens"] = fields["maxTokens"]
    if "cost" in fields:
        c = fields["cost"]
        base = model.cost
        changes["cost"] = ModelCost(
            float(c.get("input", base.input)),
            float(c.get("output", base.output)),
            float(c.get("cacheRead", base.cache_read)),
            float(c.get("cacheWrite", base.cache_write)),
            _tiers(c["tiers"]) if "tiers" in c else base.tiers,  # Pi: override.cost.tiers ?? model's
        )
    if fields.get("compat") is not None:
        changes["compat"] = (model.compat or ModelCompat()).merged(fields["compat"])
    if "thinkingLevelMap" in fields:
        changes["thinking_level_map"] = dict(fields["thinkingLevelMap"])
    if "samplingParams" in fields:  # an override merges per key, as Pi's modelOverrides
        changes["sampling_params"] = {**(model.sampling_params or {}), **fields["samplingParams"]}
    if "headers" in fields:
        changes["headers"] = {
            **(model.headers or {}),
            **_resolve_headers(fields["headers"], env, problems, where),
        }
    return replace(model, **changes)


def _resolve_headers(
    raw: dict[str, str], env: Mapping[str, str], problems: _Problems, where: str
) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in raw.items():
        resolved = resolve_config_value(value, env)
        if resolved is None:
            problems.add(
                f"{where}.headers.{name}",
                f"'{value}' did not resolve (unset variable or failed command)",
                "leaving the header out",
            )
        else:
            out[name] = resolved
    secrets.register_headers(out)
    return out


def load_models_json(
    path: Path,
    models: list[Model],
    builtin: Mapping[str, ProviderInfo],
    env: Mapping[str, str],
) -> tuple[list[Model], dict[str, ProviderConfig], list[str]]:
    """``models`` changed by the file at ``path``: (models, provider configs by name, warnings)."""
    data, warning = read_json_object(path)
    if warning:
        return models, {}, [f"{warning}. Fix it, or see docs/providers.md for the format."]
    if not data:
        return models, {}, []
    problems = _Problems(path)
    configs: dict[str, ProviderConfig] = {}
    providers = data.get("providers")
    if not isinstance(providers, dict):
        problems.add("top level", 'expected {"providers": {...}}', "ignoring the file")
        return models, configs, problems.lines
    for name, spec in providers.items():
        where = f"providers.{name}"
        if not isinstance(spec, dict):
            problems.add(where, "must be an object", "skipping this provider")
            continue
        _report_unknown_fields(spec, where, problems)
        models = _load_provider(name, spec, models, builtin.get(name), env, configs, problems, where)
    return models, configs, problems.lines


PROVIDER_FIELDS = frozenset(
    ("baseUrl", "api", "apiKey", "oauth", "headers", "authHeader", "models", "modelOverrides", "compat")
)
"""A models.json provider's fields (Pi 0.84.4's docs/models.md)."""
MODEL_FIELDS = frozenset(
    {"id", "name", "api", "reasoning", "thinkingLevelMap", "input", "contextWindow", "maxTokens", "cost"}
    | {"compat", "headers", "samplingParams"}
)
"""A models.json model's (and model override's) fields that caddie uses."""
REFUSED_MODEL_FIELDS: dict[str, str] = {}
"""Pi's model fields caddie does not use, with what it does instead (each gets one line when set)."""


def _report_unknown_fields(spec: Mapping[str, Any], where: str, problems: _Problems) -> None:
    """One line per field caddie would otherwise ignore without a word: a typo, or Pi's ``samplingParams``."""
    for key in spec:
        if key not in PROVIDER_FIELDS:
            problems.add(f"{where}.{key}", "is not a models.json provider field", "ignoring it")
    items = [(f"{where}.models[{n}]", m) for n, m in enumerate(spec.get("models") or [])]
    overrides = spec.get("modelOverrides")
    if isinstance(overrides, dict):
        items += [(f"{where}.modelOverrides.{k}", m) for k, m in overrides.items()]
    for model_where, model in items:
        if not isinstance(model, dict):
            continue  # _load_provider says what is wrong with it
        for key in model:
            if key in REFUSED_MODEL_FIELDS:
                problems.add(
                    f"{model_where}.{key}", "is not supported", f"ignoring it: {REFUSED_MODEL_FIELDS[key]}"
                )
            elif key not in MODEL_FIELDS:
                problems.add(f"{model_where}.{key}", "is not a models.json model field", "ignoring it")


def apply_provider(
    name: str,
    spec: dict[str, Any],
    source: str,
    models: list[Model],
    builtin: Mapping[str, ProviderInfo],
    env: Mapping[str, str],
    configs: dict[str, ProviderConfig],
) -> tuple[list[Model], list[str]]:
    """``models`` with one provider added or changed by ``spec`` (models.json's provider shape), as an
    extension's ``api.register_provider`` asks; ``source`` names it in the problems returned."""
    problems = _Problems(Path(source))
    if "models" in spec:  # as in Pi: a registered provider's models replace the ones it had
        models = [m for m in models if m.provider != name]
    models = _load_provider(name, spec, models, builtin.get(name), env, configs, problems, f"provider {name}")
    return models, problems.lines


def json_text(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _load_provider(
    name: str,
    spec: dict[str, Any],
    models: list[Model],
    builtin: ProviderInfo | None,
    env: Mapping[str, str],
    configs: dict[str, ProviderConfig],
    problems: _Problems,
    where: str,
) -> list[Model]:
    for key, kind in (
        ("baseUrl", str),
        ("api", str),
        ("apiKey", str),
        ("headers", dict),
        ("compat", dict),
        ("models", list),
        ("modelOverrides", dict),
        ("authHeader", bool),
    ):
        if key in spec and not isinstance(spec[key], kind):
            problems.add(
                f"{where}.{key}",
                f"must be a{'n object' if kind is dict else ' list' if kind is list else ' string'}",
                "skipping this provider",
            )
            return models
    api: Api | None = None
    if spec.get("api") is not None:
        api = as_api(spec["api"])
        if api is None:
            problems.add(
                f"{where}.api",
                f"'{spec['api']}' is not an API caddie supports ({', '.join(APIS)}; for OpenAI-style servers use openai-completions)",
                "skipping this provider",
            )
            return models
    oauth = spec.get("oauth")
    if oauth is not None and oauth != "radius":
        problems.add(
            f"{where}.oauth", f'{json_text(oauth)} is not a login caddie knows (only "radius")', "ignoring it"
        )
        oauth = None
    if oauth == "radius" and not spec.get("baseUrl"):
        problems.add(f"{where}.oauth", '"radius" needs the gateway\'s "baseUrl"', "ignoring it")
        oauth = None
    compat: ModelCompat | None = None
    if "compat" in spec:
        checked = _compat(spec["compat"], where, problems, "skipping this provider")
        if checked is False:
            return models
        compat = checked if isinstance(checked, ModelCompat) else None
    secrets.register_url(spec.get("baseUrl"))
    config = ProviderConfig(
        name=name,
        base_url=spec.get("baseUrl"),
        api=api,
        api_key=spec.get("apiKey"),
        headers=_resolve_headers(spec.get("headers") or {}, env, problems, where),
        compat=compat,
        auth_header=spec.get("authHeader") is True,
        oauth=oauth,
    )
    configs[name] = config

    # Provider-level overrides of models this provider already has (built-in ones).
    def adjust(m: Model) -> Model:
        if m.provider != name:
            return m
        changes: dict[str, Any] = {}
        if config.base_url:
            changes["base_url"] = config.base_url
        if config.api:
            changes["api"] = config.api
        if config.headers:
            changes["headers"] = {**(m.headers or {}), **config.headers}
        if config.compat:
            changes["compat"] = config.compat.merged(m.compat)
        return replace(m, **changes) if changes else m

    models = [adjust(m) for m in models]

    for model_id, override in (spec.get("modelOverrides") or {}).items():
        owhere = f"{where}.modelOverrides.{model_id}"
        if not isinstance(override, dict):
            problems.add(owhere, "must be an object", "ignoring this override")
            continue
        fields = _check_model_fields(override, owhere, problems)
        if fields is None:
            continue
        models = [
            _apply_fields(m, fields, env, problems, owhere) if m.provider == name and m.id == model_id else m
            for m in models
        ]

    custom = spec.get("models") or []
    if custom:
        base_url = config.base_url or (builtin.base_url if builtin else None)
        if not base_url:
            problems.add(where, "has models but no baseUrl", "skipping this provider")
            return models
    for n, item in enumerate(custom):
        mwhere = f"{where}.models[{n}]"
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
            problems.add(mwhere, 'needs a string "id"', "skipping this model")
            continue
        fields = _check_model_fields(item, mwhere, problems)
        if fields is None:
            continue
        model_api: Api | None = fields.get("api") or config.api or (builtin.api if builtin else None)
        if not model_api:
            problems.add(mwhere, 'has no "api" (set it on the provider or the model)', "skipping this model")
            continue
        base = Model(
            id=item["id"],
            name=item["id"],
            api=model_api,
            provider=name,
            base_url=str(config.base_url or (builtin.base_url if builtin else "")),
            reasoning=False,
            input=["text"],
            cost=ModelCost(),
            context_window=128_000,
            max_tokens=16_384,
            headers=dict(config.headers) if config.headers else None,
            compat=config.compat,
        )
        model = _apply_fields(base, fields, env, problems, mwhere)
        models = [m for m in models if not (m.provider == name and m.id == model.id)]
        models.append(model)
    return models
