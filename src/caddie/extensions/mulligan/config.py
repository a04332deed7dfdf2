"""Mulligan's configuration: the 21 knobs, their defaults, and the lenient validation of a ``mulligan`` block.

Settings come from the host (``ctx.settings()["mulligan"]``, already deep-merged global ← project). A bad
value never breaks the extension: it falls back to its default and logs one warning naming the field.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from caddie.extensions.api import is_finite_number, js_truthy, json_stringify

Granularity: TypeAlias = Literal["last_tool_call_group", "last_turn", "checkpoint"]
GRANULARITIES: tuple[Granularity, ...] = ("last_tool_call_group", "last_turn", "checkpoint")
EstimateConfidence: TypeAlias = Literal["low", "medium", "high"]

KNOWN_PROTECTED_ROLES = frozenset({"first:user", "latest:user"})

logger = logging.getLogger("caddie.ext.mulligan")


@dataclass(frozen=True, slots=True)
class RewindConfig:
    enabled: bool = True
    protected_roles: tuple[str, ...] = ("first:user", "latest:user")
    max_depth: float = 5
    """Active (non-cancelled) rewind markers allowed in the whole session; 0 refuses every rewind."""
    max_retries_per_prompt: int = 5
    abort_context_fraction: float = 0.9
    require_mutation_warning: bool = True


@dataclass(frozen=True, slots=True)
class ShrinkConfig:
    enabled: bool = True
    max_active: int = 32
    stale_after_fires: int = 3
    notify_max_chars: float = 2048


def _default_by_tool() -> dict[str, float]:
    return {"read": 24576}


@dataclass(frozen=True, slots=True)
class NudgesConfig:
    bloat_reminder: bool = True
    per_turn_drift: bool = True
    bloat_threshold_bytes: float = 16384
    bloat_threshold_bytes_by_tool: Mapping[str, float] = field(default_factory=_default_by_tool)
    drift_threshold_tokens: float = 4000
    drift_window_turns: int = 3
    high_water_fraction: float = 0.7


@dataclass(frozen=True, slots=True)
class AuditConfig:
    estimate_confidence: EstimateConfidence = "medium"


@dataclass(frozen=True, slots=True)
class UiConfig:
    active_checkpoint_banner: bool = True


@dataclass(frozen=True, slots=True)
class LogConfig:
    file: str | None = None


@dataclass(frozen=True, slots=True)
class MulliganConfig:
    enabled: bool = True
    rewind: RewindConfig = field(default_factory=RewindConfig)
    shrink: ShrinkConfig = field(default_factory=ShrinkConfig)
    nudges: NudgesConfig = field(default_factory=NudgesConfig)
    audit: AuditConfig = field(default_factory=AuditConfig)
    ui: UiConfig = field(default_factory=UiConfig)
    log: LogConfig = field(default_factory=LogConfig)


DEFAULT_CONFIG = MulliganConfig()

_ABSENT: Any = object()


def validate_config(raw: object) -> MulliganConfig:
    """Build a config from a raw ``mulligan`` settings block. Never raises; bad values fall back (and warn)."""
    try:
        return _validate(raw)
    except Exception:
        return MulliganConfig()


def config_from_settings(settings: object) -> MulliganConfig:
    """The config of a merged settings object (its ``mulligan`` block); defaults when anything is off."""
    try:
        raw = settings.get("mulligan") if isinstance(settings, Mapping) else None
    except Exception:
        raw = None
    return validate_config(raw)


def deep_merge_settings(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Pi's settings merge: objects recurse, everything else (arrays, primitives, null) replaces."""
    out: dict[str, Any] = dict(base)
    for key, value in override.items():
        current = base.get(key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            out[key] = deep_merge_settings(current, value)
        else:
            out[key] = value
    return out


# --------------------------------------------------------------------------------------------------


def _validate(raw: object) -> MulliganConfig:
    if not isinstance(raw, Mapping):
        return MulliganConfig()
    enabled = _boolean(raw, "enabled", True)

    rewind = RewindConfig()
    block = raw.get("rewind", _ABSENT)
    if isinstance(block, Mapping):
        rewind = RewindConfig(
            enabled=_boolean(block, "enabled", rewind.enabled),
            protected_roles=_protected_roles(block, rewind.protected_roles),
            max_depth=_number(block, "rewind.maxDepth", "maxDepth", rewind.max_depth, positive=False),
            max_retries_per_prompt=_count(
                block, "rewind.maxRetriesPerPrompt", "maxRetriesPerPrompt", rewind.max_retries_per_prompt
            ),
            abort_context_fraction=_fraction(
                block,
                "rewind.abortContextFraction",
                "abortContextFraction",
                rewind.abort_context_fraction,
                True,
            ),
            require_mutation_warning=_boolean(
                block, "requireMutationWarning", rewind.require_mutation_warning
            ),
        )

    shrink = ShrinkConfig()
    block = raw.get("shrink", _ABSENT)
    if isinstance(block, Mapping):
        shrink = ShrinkConfig(
            enabled=_boolean(block, "enabled", shrink.enabled),
            max_active=_count(block, "shrink.maxActive", "maxActive", shrink.max_active),
            stale_after_fires=_count(
                block, "shrink.staleAfterFires", "staleAfterFires", shrink.stale_after_fires
            ),
            notify_max_chars=_number(
                block, "shrink.notifyMaxChars", "notifyMaxChars", shrink.notify_max_chars
            ),
        )

    nudges = NudgesConfig()
    block = raw.get("nudges", _ABSENT)
    if isinstance(block, Mapping):
        nudges = NudgesConfig(
            bloat_reminder=_boolean(block, "bloatReminder", nudges.bloat_reminder),
            per_turn_drift=_boolean(block, "perTurnDrift", nudges.per_turn_drift),
            bloat_threshold_bytes=_number(
                block, "nudges.bloatThresholdBytes", "bloatThresholdBytes", nudges.bloat_threshold_bytes
            ),
            drift_threshold_tokens=_number(
                block, "nudges.driftThresholdTokens", "driftThresholdTokens", nudges.drift_threshold_tokens
            ),
            drift_window_turns=_count(
                block, "nudges.driftWindowTurns", "driftWindowTurns", nudges.drift_window_turns
            ),
            high_water_fraction=_fraction(
                block, "nudges.highWaterFraction", "highWaterFraction", nudges.high_water_fraction, False
            ),
            bloat_threshold_bytes_by_tool=_by_tool(block, nudges.bloat_threshold_bytes_by_tool),
        )

    audit = AuditConfig()
    block = raw.get("audit", _ABSENT)
    if isinstance(block, Mapping):
        value = block.get("estimateConfidence", _ABSENT)
        if value is not _ABSENT:
            if value in ("low", "medium", "high"):
                audit = AuditConfig(value)
            else:
                _warn("audit.estimateConfidence", value)

    ui = UiConfig()
    block = raw.get("ui", _ABSENT)
    if isinstance(block, Mapping):
        ui = UiConfig(_boolean(block, "activeCheckpointBanner", ui.active_checkpoint_banner))

    log = LogConfig()
    block = raw.get("log", _ABSENT)
    if isinstance(block, Mapping):
        value = block.get("file", _ABSENT)
        if isinstance(value, str):
            log = LogConfig(value)
        elif value is not _ABSENT and value is not None:
            _warn("log.file", value)

    return MulliganConfig(enabled, rewind, shrink, nudges, audit, ui, log)


def _boolean(block: Mapping[str, Any], key: str, default: bool) -> bool:
    value = block.get(key, _ABSENT)
    return default if value is _ABSENT else js_truthy(value)


def _number(block: Mapping[str, Any], name: str, key: str, default: float, positive: bool = True) -> float:
    """A finite number, ``> 0`` (or ``>= 0`` when not ``positive``); strings are not coerced."""
    value = block.get(key, _ABSENT)
    if value is _ABSENT:
        return default
    if is_finite_number(value) and (value > 0 if positive else value >= 0):
        return float(value) if isinstance(value, float) else int(value)
    _warn(name, value)
    return default


def _count(block: Mapping[str, Any], name: str, key: str, default: int) -> int:
    """A positive number floored to an integer; a fraction that floors below 1 falls back silently."""
    value = _number(block, name, key, default)
    floored = math.floor(value)
    return floored if floored >= 1 else default


def _fraction(block: Mapping[str, Any], name: str, key: str, default: float, closed_top: bool) -> float:
    value = block.get(key, _ABSENT)
    if value is _ABSENT:
        return default
    if is_finite_number(value) and value > 0 and (value <= 1 if closed_top else value < 1):
        return float(value)
    _warn(name, value)
    return default


def _protected_roles(block: Mapping[str, Any], default: tuple[str, ...]) -> tuple[str, ...]:
    value = block.get("protectedRoles", _ABSENT)
    if value is _ABSENT:
        return default
    if not isinstance(value, list):
        _warn("rewind.protectedRoles", value)
        return default
    known: list[str] = []
    for entry in value:
        if isinstance(entry, str) and entry in KNOWN_PROTECTED_ROLES:
            known.append(entry)
        else:
            _warn("rewind.protectedRoles entry", entry)
    return tuple(known)


def _by_tool(block: Mapping[str, Any], default: Mapping[str, float]) -> Mapping[str, float]:
    value = block.get("bloatThresholdBytesByTool", _ABSENT)
    if value is _ABSENT:
        return default
    if not isinstance(value, Mapping):
        _warn("nudges.bloatThresholdBytesByTool", value)
        return default
    merged = dict(default)
    for tool_name, threshold in value.items():
        if is_finite_number(threshold) and threshold > 0:
            merged[str(tool_name)] = threshold
        else:
            _warn("nudges.bloatThresholdBytesByTool entry", {tool_name: threshold})
    return merged


def config_warning(field_name: str, value: object) -> str:
    """The exact warning text for an invalid configured value."""
    try:
        shown = json_stringify(value)
    except Exception:
        shown = str(value)
    return f'[mulligan] config: invalid "{field_name}"={shown}, using default'


def _warn(field_name: str, value: object) -> None:
    try:
        logger.warning(config_warning(field_name, value))
    except Exception:
        pass
