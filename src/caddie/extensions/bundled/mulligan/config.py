"""Mulligan's configuration: the 22 knobs, their defaults, and the lenient validation of a ``mulligan`` block.

Settings come from the host (``ctx.settings()["mulligan"]``, already deep-merged global ← project). The
block is read by pydantic models with pi-mulligan's rules: camelCase keys, JavaScript truthiness for
booleans, numbers never coerced from strings. A bad value never breaks the extension: that one field
falls back to its default and logs one warning naming it (a count that floors below 1 falls back
silently); unknown keys and sections that are not objects are ignored.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, TypeAlias

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from caddie.extensions.api import is_finite_number, js_truthy, json_stringify

Granularity: TypeAlias = Literal["last_tool_call_group", "last_turn", "checkpoint"]
GRANULARITIES: tuple[Granularity, ...] = ("last_tool_call_group", "last_turn", "checkpoint")
EstimateConfidence: TypeAlias = Literal["low", "medium", "high"]

KNOWN_PROTECTED_ROLES = frozenset({"first:user", "latest:user"})

logger = logging.getLogger("caddie.ext.mulligan")

# --------------------------------------------------------------------------------------------------
# Field rules

_SILENT = "mulligan_silent_default"
"""Error type of a value that falls back to its default without a warning."""


def _invalid() -> ValueError:
    return ValueError("invalid")


def _positive(value: Any) -> Any:
    """A finite number ``> 0``, kept as given (``5`` stays an int); strings are not coerced."""
    if is_finite_number(value) and value > 0:
        return value
    raise _invalid()


def _non_negative(value: Any) -> Any:
    if is_finite_number(value) and value >= 0:
        return value
    raise _invalid()


def _count(value: Any) -> int:
    """A positive number floored to an integer; a fraction that floors below 1 falls back silently."""
    floored: int = math.floor(_positive(value))
    if floored < 1:
        raise PydanticCustomError(_SILENT, "below one")
    return floored


def _fraction_closed(value: Any) -> Any:
    if is_finite_number(value) and 0 < value <= 1:
        return float(value)
    raise _invalid()


def _fraction_open(value: Any) -> Any:
    if is_finite_number(value) and 0 < value < 1:
        return float(value)
    raise _invalid()


def _section(value: Any) -> Any:
    return value if isinstance(value, Mapping) else {}


JsBool = Annotated[bool, BeforeValidator(js_truthy)]
Positive = Annotated[int | float, BeforeValidator(_positive)]
NonNegative = Annotated[int | float, BeforeValidator(_non_negative)]
Count = Annotated[int, BeforeValidator(_count)]


class _Section(BaseModel):
    """A settings block: camelCase keys, unknown keys ignored, an invalid field falls back to its default."""

    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True, extra="ignore")
    section: ClassVar[str] = ""

    @field_validator("*", mode="wrap")
    @classmethod
    def _default_when_invalid(
        cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> Any:
        try:
            return handler(value)
        except ValidationError as error:
            name = info.field_name or ""
            if not any(e["type"] == _SILENT for e in error.errors()):
                prefix = f"{cls.section}." if cls.section else ""
                _warn(prefix + (cls.model_fields[name].alias or name), value)
            return cls.model_fields[name].get_default(call_default_factory=True)


# --------------------------------------------------------------------------------------------------
# The sections


def _protected_roles(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _invalid()
    known: list[str] = []
    for entry in value:
        if isinstance(entry, str) and entry in KNOWN_PROTECTED_ROLES:
            known.append(entry)
        else:
            _warn("rewind.protectedRoles entry", entry)
    return tuple(known)


class RewindConfig(_Section):
    section: ClassVar[str] = "rewind"

    enabled: JsBool = True
    protected_roles: Annotated[tuple[str, ...], BeforeValidator(_protected_roles)] = (
        "first:user",
        "latest:user",
    )
    max_depth: NonNegative = 5
    """Active (non-cancelled) rewind markers allowed in the whole session; 0 refuses every rewind."""
    max_retries_per_prompt: Count = 5
    abort_context_fraction: Annotated[float, BeforeValidator(_fraction_closed)] = 0.9
    require_mutation_warning: JsBool = True
    restore_files: Literal["never", "ask", "always"] | None = None
    """caddie's: restore the files a rewound turn or checkpoint span changed (None: ``ask`` with a terminal
    UI, ``never`` headless); see file_restore.py."""


class ShrinkConfig(_Section):
    section: ClassVar[str] = "shrink"

    enabled: JsBool = True
    max_active: Count = 32
    stale_after_fires: Count = 3
    notify_max_chars: Positive = 2048


_DEFAULT_BY_TOOL: Mapping[str, float] = {"read": 24576}


def _by_tool(value: Any) -> dict[str, float]:
    """Valid entries merge over the defaults (unknown tools kept); each invalid entry is dropped with a warning."""
    if not isinstance(value, Mapping):
        raise _invalid()
    merged = dict(_DEFAULT_BY_TOOL)
    for tool_name, threshold in value.items():
        if is_finite_number(threshold) and threshold > 0:
            merged[str(tool_name)] = threshold
        else:
            _warn("nudges.bloatThresholdBytesByTool entry", {tool_name: threshold})
    return merged


class NudgesConfig(_Section):
    section: ClassVar[str] = "nudges"

    bloat_reminder: JsBool = True
    per_turn_drift: JsBool = True
    bloat_threshold_bytes: Positive = 16384
    drift_threshold_tokens: Positive = 4000
    drift_window_turns: Count = 3
    high_water_fraction: Annotated[float, BeforeValidator(_fraction_open)] = 0.7
    bloat_threshold_bytes_by_tool: Annotated[Mapping[str, float], BeforeValidator(_by_tool)] = Field(
        default_factory=lambda: dict(_DEFAULT_BY_TOOL)
    )


class AuditConfig(_Section):
    section: ClassVar[str] = "audit"

    estimate_confidence: EstimateConfidence = "medium"


class UiConfig(_Section):
    section: ClassVar[str] = "ui"

    active_checkpoint_banner: JsBool = True


def _log_file(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise _invalid()


class LogConfig(_Section):
    section: ClassVar[str] = "log"

    file: Annotated[str | None, BeforeValidator(_log_file)] = None


ToolsMode: TypeAlias = Literal["always", "when-needed"]


class MulliganConfig(_Section):
    enabled: JsBool = True
    tools: ToolsMode = "always"
    """caddie's own key: ``"always"`` sends the four tool schemas on every request (pi-mulligan's behaviour);
    ``"when-needed"`` sends them from the first nudge or user checkpoint on."""
    rewind: Annotated[RewindConfig, BeforeValidator(_section)] = Field(default_factory=RewindConfig)
    shrink: Annotated[ShrinkConfig, BeforeValidator(_section)] = Field(default_factory=ShrinkConfig)
    nudges: Annotated[NudgesConfig, BeforeValidator(_section)] = Field(default_factory=NudgesConfig)
    audit: Annotated[AuditConfig, BeforeValidator(_section)] = Field(default_factory=AuditConfig)
    ui: Annotated[UiConfig, BeforeValidator(_section)] = Field(default_factory=UiConfig)
    log: Annotated[LogConfig, BeforeValidator(_section)] = Field(default_factory=LogConfig)


DEFAULT_CONFIG = MulliganConfig()


def validate_config(raw: object) -> MulliganConfig:
    """Build a config from a raw ``mulligan`` settings block. Never raises; bad values fall back (and warn)."""
    try:
        return MulliganConfig.model_validate(raw) if isinstance(raw, Mapping) else MulliganConfig()
    except Exception:  # never raises (as the reference): a bad block means the defaults
        return MulliganConfig()


def config_from_settings(settings: object) -> MulliganConfig:
    """The config of a merged settings object (its ``mulligan`` block); defaults when anything is off."""
    try:
        raw = settings.get("mulligan") if isinstance(settings, Mapping) else None
    except Exception:  # a settings object that cannot be read means the defaults, as the reference
        raw = None
    return validate_config(raw)


def config_warning(field_name: str, value: object) -> str:
    """The exact warning text for an invalid configured value."""
    try:
        shown = json_stringify(value)
    except Exception:  # only for the warning's text: any value can still be shown with str()
        shown = str(value)
    return f'[mulligan] config: invalid "{field_name}"={shown}, using default'


def _warn(field_name: str, value: object) -> None:
    try:
        logger.warning(config_warning(field_name, value))
    except Exception:  # a broken log handler must not turn a bad setting into a failed load
        pass
