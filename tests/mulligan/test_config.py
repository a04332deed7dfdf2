"""Configuration: defaults, lenient coercion, exact warnings, the settings merge."""

from __future__ import annotations

import logging
import math
from typing import Any

import pytest

from caddie.extensions.bundled.mulligan.config import (
    DEFAULT_CONFIG,
    MulliganConfig,
    config_from_settings,
    validate_config,
)


class LiveMessages(list[str]):
    """The warnings logged so far (re-read on every comparison)."""

    def __init__(self, caplog: pytest.LogCaptureFixture) -> None:
        super().__init__()
        self._caplog = caplog

    def _now(self) -> list[str]:
        return [r.getMessage() for r in self._caplog.records if r.name == "caddie.ext.mulligan"]

    def __eq__(self, other: object) -> bool:
        return self._now() == other

    def __len__(self) -> int:
        return len(self._now())

    def __getitem__(self, i: Any) -> Any:
        return self._now()[i]

    def __bool__(self) -> bool:
        return bool(self._now())

    __hash__ = None


@pytest.fixture
def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    caplog.set_level(logging.WARNING, logger="caddie.ext.mulligan")
    return LiveMessages(caplog)


def test_defaults_match_the_spec() -> None:
    c = DEFAULT_CONFIG
    assert c.enabled is True
    assert (c.rewind.enabled, c.rewind.protected_roles, c.rewind.max_depth) == (
        True,
        ("first:user", "latest:user"),
        5,
    )
    assert (
        c.rewind.max_retries_per_prompt,
        c.rewind.abort_context_fraction,
        c.rewind.require_mutation_warning,
    ) == (
        5,
        0.9,
        True,
    )
    assert (c.shrink.enabled, c.shrink.max_active, c.shrink.stale_after_fires, c.shrink.notify_max_chars) == (
        True,
        32,
        3,
        2048,
    )
    n = c.nudges
    assert (
        n.bloat_reminder,
        n.per_turn_drift,
        n.bloat_threshold_bytes,
        dict(n.bloat_threshold_bytes_by_tool),
    ) == (
        True,
        True,
        16384,
        {"read": 24576},
    )
    assert (n.drift_threshold_tokens, n.drift_window_turns, n.high_water_fraction) == (4000, 3, 0.7)
    assert (c.audit.estimate_confidence, c.ui.active_checkpoint_banner, c.log.file) == ("medium", True, None)


@pytest.mark.parametrize("raw", [None, {}, "x", 3, [], [1]])
def test_absent_or_non_object_input_gives_defaults(raw: object, warnings: list[str]) -> None:
    assert validate_config(raw) == MulliganConfig()
    assert warnings == []


def test_partial_overrides_merge_over_defaults() -> None:
    c = validate_config({"rewind": {"maxDepth": 2}, "nudges": {"perTurnDrift": False}})
    assert (
        c.rewind.max_depth == 2
        and c.rewind.enabled
        and not c.nudges.per_turn_drift
        and c.nudges.bloat_reminder
    )


def test_a_full_override_applies() -> None:
    raw = {
        "enabled": True,
        "rewind": {
            "enabled": False,
            "protectedRoles": ["first:user"],
            "maxDepth": 0,
            "maxRetriesPerPrompt": 2,
            "abortContextFraction": 1,
            "requireMutationWarning": False,
        },
        "shrink": {"enabled": False, "maxActive": 4, "staleAfterFires": 1, "notifyMaxChars": 10},
        "nudges": {
            "bloatReminder": False,
            "perTurnDrift": False,
            "bloatThresholdBytes": 100,
            "bloatThresholdBytesByTool": {"bash": 50},
            "driftThresholdTokens": 10,
            "driftWindowTurns": 1,
            "highWaterFraction": 0.5,
        },
        "audit": {"estimateConfidence": "high"},
        "ui": {"activeCheckpointBanner": False},
        "log": {"file": "/tmp/m.jsonl"},
    }
    c = validate_config(raw)
    assert (
        c.rewind.enabled,
        c.rewind.protected_roles,
        c.rewind.max_depth,
        c.rewind.max_retries_per_prompt,
    ) == (
        False,
        ("first:user",),
        0,
        2,
    )
    assert (c.rewind.abort_context_fraction, c.rewind.require_mutation_warning) == (1, False)
    assert (c.shrink.enabled, c.shrink.max_active, c.shrink.stale_after_fires, c.shrink.notify_max_chars) == (
        False,
        4,
        1,
        10,
    )
    assert dict(c.nudges.bloat_threshold_bytes_by_tool) == {"read": 24576, "bash": 50}
    assert (c.nudges.bloat_threshold_bytes, c.nudges.drift_threshold_tokens, c.nudges.drift_window_turns) == (
        100,
        10,
        1,
    )
    assert (c.nudges.high_water_fraction, c.audit.estimate_confidence, c.ui.active_checkpoint_banner) == (
        0.5,
        "high",
        False,
    )
    assert c.log.file == "/tmp/m.jsonl"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("false", True),
        ("", False),
        (None, False),
        (0, False),
        (1, True),
        ([], True),
        ({}, True),
        (math.nan, False),
    ],
)
def test_booleans_are_javascript_truthiness(value: object, expected: bool, warnings: list[str]) -> None:
    c = validate_config(
        {"enabled": value, "rewind": {"enabled": value}, "ui": {"activeCheckpointBanner": value}}
    )
    assert (c.enabled, c.rewind.enabled, c.ui.active_checkpoint_banner) == (expected, expected, expected)
    assert warnings == []


@pytest.mark.parametrize("value", ["5", math.nan, math.inf, -1, True, None])
def test_numbers_are_not_coerced(value: object, warnings: list[str]) -> None:
    assert validate_config({"rewind": {"maxDepth": value}}).rewind.max_depth == 5
    assert len(warnings) == 1 and warnings[0].startswith('[mulligan] config: invalid "rewind.maxDepth"=')


def test_the_warning_text_is_exact(warnings: list[str]) -> None:
    validate_config(
        {"nudges": {"highWaterFraction": "0.7"}, "rewind": {"maxDepth": -1.5}, "log": {"file": 5}}
    )
    assert warnings == [
        '[mulligan] config: invalid "rewind.maxDepth"=-1.5, using default',
        '[mulligan] config: invalid "nudges.highWaterFraction"="0.7", using default',
        '[mulligan] config: invalid "log.file"=5, using default',
    ]


def test_max_depth_accepts_zero_and_keeps_fractions() -> None:
    assert validate_config({"rewind": {"maxDepth": 0}}).rewind.max_depth == 0
    assert validate_config({"rewind": {"maxDepth": 2.5}}).rewind.max_depth == 2.5


@pytest.mark.parametrize(
    ("block", "key", "attr", "default"),
    [
        ("rewind", "maxRetriesPerPrompt", "max_retries_per_prompt", 5),
        ("shrink", "maxActive", "max_active", 32),
        ("shrink", "staleAfterFires", "stale_after_fires", 3),
        ("nudges", "driftWindowTurns", "drift_window_turns", 3),
    ],
)
class TestCounts:
    def test_fractions_are_floored(self, block: str, key: str, attr: str, default: int) -> None:
        assert getattr(getattr(validate_config({block: {key: 5.7}}), block), attr) == 5
        assert getattr(getattr(validate_config({block: {key: 1}}), block), attr) == 1

    def test_a_fraction_below_one_falls_back_silently(
        self, block: str, key: str, attr: str, default: int, warnings: list[str]
    ) -> None:
        assert getattr(getattr(validate_config({block: {key: 0.5}}), block), attr) == default
        assert warnings == []

    @pytest.mark.parametrize("value", [0, -1, math.nan, "abc", math.inf])
    def test_invalid_values_fall_back_with_one_warning(
        self, block: str, key: str, attr: str, default: int, value: object, warnings: list[str]
    ) -> None:
        assert getattr(getattr(validate_config({block: {key: value}}), block), attr) == default
        assert len(warnings) == 1 and f'"{block}.{key}"=' in warnings[0]


@pytest.mark.parametrize("value", [0, 1.5, -0.5, math.nan, "0.9"])
def test_abort_context_fraction_must_be_in_zero_to_one(value: object, warnings: list[str]) -> None:
    assert validate_config({"rewind": {"abortContextFraction": value}}).rewind.abort_context_fraction == 0.9
    assert len(warnings) == 1 and '"rewind.abortContextFraction"' in warnings[0]


@pytest.mark.parametrize("value", [0, 1, -0.5, 1.5, math.nan, "0.7"])
def test_high_water_fraction_must_be_strictly_between_zero_and_one(
    value: object, warnings: list[str]
) -> None:
    assert validate_config({"nudges": {"highWaterFraction": value}}).nudges.high_water_fraction == 0.7
    assert len(warnings) == 1


@pytest.mark.parametrize("value", [0.01, 0.99])
def test_high_water_fraction_near_the_bounds_is_kept(value: float) -> None:
    assert validate_config({"nudges": {"highWaterFraction": value}}).nudges.high_water_fraction == value


@pytest.mark.parametrize("value", [0, -1, math.nan, "2048"])
def test_notify_max_chars_must_be_positive(value: object, warnings: list[str]) -> None:
    assert validate_config({"shrink": {"notifyMaxChars": value}}).shrink.notify_max_chars == 2048
    assert len(warnings) == 1
    assert validate_config({"shrink": {"notifyMaxChars": 1}}).shrink.notify_max_chars == 1


class TestByToolThresholds:
    def test_a_partial_map_merges_over_the_defaults_and_keeps_unknown_tools(self) -> None:
        c = validate_config({"nudges": {"bloatThresholdBytesByTool": {"bash": 1000, "future_tool": 5}}})
        assert dict(c.nudges.bloat_threshold_bytes_by_tool) == {"read": 24576, "bash": 1000, "future_tool": 5}

    def test_invalid_entries_are_dropped_with_a_warning_each(self, warnings: list[str]) -> None:
        c = validate_config({"nudges": {"bloatThresholdBytesByTool": {"bash": -1, "grep": "x", "ls": 10}}})
        assert dict(c.nudges.bloat_threshold_bytes_by_tool) == {"read": 24576, "ls": 10}
        assert warnings == [
            '[mulligan] config: invalid "nudges.bloatThresholdBytesByTool entry"={"bash":-1}, using default',
            '[mulligan] config: invalid "nudges.bloatThresholdBytesByTool entry"={"grep":"x"}, using default',
        ]

    @pytest.mark.parametrize("value", [5, "x", [1, 2], None])
    def test_a_non_object_is_discarded_with_one_warning(self, value: object, warnings: list[str]) -> None:
        c = validate_config({"nudges": {"bloatThresholdBytesByTool": value}})
        assert dict(c.nudges.bloat_threshold_bytes_by_tool) == {"read": 24576}
        assert len(warnings) == 1

    def test_absent_is_not_warned(self, warnings: list[str]) -> None:
        validate_config({"nudges": {"bloatReminder": True}})
        assert warnings == []


def test_protected_roles_keep_known_selectors_only(warnings: list[str]) -> None:
    c = validate_config({"rewind": {"protectedRoles": ["first:user", "bogus", 3, "latest:user"]}})
    assert c.rewind.protected_roles == ("first:user", "latest:user")
    assert warnings == [
        '[mulligan] config: invalid "rewind.protectedRoles entry"="bogus", using default',
        '[mulligan] config: invalid "rewind.protectedRoles entry"=3, using default',
    ]
    assert validate_config({"rewind": {"protectedRoles": "first:user"}}).rewind.protected_roles == (
        "first:user",
        "latest:user",
    )
    assert validate_config({"rewind": {"protectedRoles": []}}).rewind.protected_roles == ()


@pytest.mark.parametrize("value", ["LOW", "", 3, None])
def test_estimate_confidence_is_an_enum(value: object, warnings: list[str]) -> None:
    assert validate_config({"audit": {"estimateConfidence": value}}).audit.estimate_confidence == "medium"
    assert len(warnings) == 1


@pytest.mark.parametrize(
    ("value", "expected", "warned"),
    [(None, None, False), ("/x/y.jsonl", "/x/y.jsonl", False), (3, None, True), ([], None, True)],
)
def test_log_file(value: object, expected: str | None, warned: bool, warnings: list[str]) -> None:
    assert validate_config({"log": {"file": value}}).log.file == expected
    assert bool(warnings) == warned


def test_unknown_keys_and_non_object_blocks_are_ignored_silently(warnings: list[str]) -> None:
    c = validate_config(
        {"shrink": {"autoOnBloat": True, "maxActive": 7}, "rewind": 5, "ui": "x", "mystery": 1}
    )
    assert c.shrink.max_active == 7 and c.rewind == DEFAULT_CONFIG.rewind and c.ui == DEFAULT_CONFIG.ui
    assert warnings == []


def test_never_raises_on_hostile_input() -> None:
    class Hostile(dict[str, Any]):
        def get(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("trap")

    assert validate_config(Hostile()) == MulliganConfig()
    assert validate_config({"nudges": {"bloatThresholdBytesByTool": Hostile(a=1)}}) is not None


def test_the_defaults_are_never_mutated() -> None:
    validate_config({"nudges": {"bloatThresholdBytesByTool": {"bash": 1}}, "rewind": {"protectedRoles": []}})
    assert dict(DEFAULT_CONFIG.nudges.bloat_threshold_bytes_by_tool) == {"read": 24576}
    assert DEFAULT_CONFIG.rewind.protected_roles == ("first:user", "latest:user")


def test_config_from_settings_reads_the_mulligan_block() -> None:
    assert config_from_settings({"mulligan": {"enabled": False}}).enabled is False
    assert config_from_settings({"theme": "x"}) == MulliganConfig()
    assert config_from_settings(None) == MulliganConfig()
