"""Nothing silent: every settings key and ``PI_*`` variable caddie will not use as written gets one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caddie.config.environment import offline, pi_variable_notices, session_dir_from_env
from caddie.config.paths import agent_dir
from caddie.config.settings import load_settings
from caddie.config.settings_keys import migrate, settings_notices


def notices(data: dict[str, object], *extensions: str) -> list[str]:
    return settings_notices([(Path("/s.json"), data)], extensions)


def test_known_keys_with_good_values_say_nothing() -> None:
    assert (
        notices(
            {
                "defaultThinkingLevel": "high",
                "defaultTools": ["read"],
                "retry": {"maxRetries": 2, "provider": {"timeoutMs": 1000}},
                "thinkingBudgets": {"low": 1000},
                "images": {"blockImages": True},
                "tuiMode": "fullscreen",  # what caddie does anyway
                "doubleEscapeAction": "tree",
                "mulligan": {},
            }
        )
        == []
    )


def test_unknown_refused_and_mistyped_keys_get_one_line_each() -> None:
    lines = notices(
        {
            "defaultThinkingLevle": "high",
            "myext": {"x": 1},
            "hideThinkingBlock": True,
            "retry": {"provider": {"maxRetries": "3"}, "bogus": 1},
            "defaultThinkingLevel": "loud",
            "npmCommand": ["npm"],
        },
        "myext",
    )
    assert lines == [
        '/s.json: unknown setting "defaultThinkingLevle" (not a Pi 0.84.4 or caddie setting, nor the name of a '
        "loaded extension); ignored",
        '/s.json: setting "hideThinkingBlock" is ignored: caddie\'s terminal UI is a full-screen Textual app; '
        "Ctrl+T collapses or expands thinking",
        '/s.json: setting "retry.provider.maxRetries" is "3"; it should be a number. Using the default',
        '/s.json: unknown setting "retry.bogus" (not a Pi 0.84.4 or caddie setting, nor the name of a loaded '
        "extension); ignored",
        '/s.json: setting "defaultThinkingLevel" is "loud"; it should be one of "off", "minimal", "low", '
        '"medium", "high", "xhigh", "max". Using the default',
        '/s.json: setting "npmCommand" is ignored: caddie installs packages with uv (Python), not npm',
    ]
    assert all("\n" not in line for line in lines)


def test_pis_legacy_keys_are_migrated_as_pi_migrates_them() -> None:
    data = migrate(
        {
            "queueMode": "all",
            "skills": {"enableSkillCommands": False, "customDirectories": ["s"]},
            "retry": {"maxDelayMs": 5},
        }
    )
    assert data == {
        "steeringMode": "all",
        "skills": ["s"],
        "enableSkillCommands": False,
        "retry": {"provider": {"maxRetryDelayMs": 5}},
    }
    assert notices(data) == []


def test_a_project_cannot_set_global_only_keys(tmp_path: Path) -> None:
    (tmp_path / ".caddie").mkdir()
    (tmp_path / ".caddie" / "settings.json").write_text(
        json.dumps({"httpProxy": "http://evil", "theme": "light"})
    )
    settings = load_settings(tmp_path, project_trusted=True)
    assert settings.http_proxy is None and settings.get("theme") == "light"
    assert any(
        'setting "httpProxy" is read from the global settings file only' in w for w in settings.warnings
    )


def test_pi_variables_get_a_line_unless_caddie_honours_them(tmp_path: Path) -> None:
    env = {
        "PI_CODING_AGENT_DIR": "/pi",
        "PI_OFFLINE": "1",
        "PI_TELEMETRY": "0",  # off: what caddie does anyway
        "PI_HARDWARE_CURSOR": "1",
        "PI_SKIP_VERSION_CHECK": "1",
    }
    lines = pi_variable_notices(env)
    assert [line.split(" ", 1)[0] for line in lines] == ["PI_CODING_AGENT_DIR", "PI_HARDWARE_CURSOR=1"]
    assert pi_variable_notices({**env, "CADDIE_CODING_AGENT_DIR": "/c"})[0].startswith("PI_HARDWARE_CURSOR")
    assert pi_variable_notices({**env, "CADDIE_DIR": "/c"})[0].startswith("PI_HARDWARE_CURSOR")
    assert offline(env) and offline({"CADDIE_OFFLINE": "true"}) and not offline({"PI_OFFLINE": "0"})
    assert session_dir_from_env({"CADDIE_CODING_AGENT_SESSION_DIR": "~/s"}) == str(Path.home() / "s")


def test_the_agent_folder_follows_caddie_coding_agent_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CADDIE_CODING_AGENT_DIR", str(tmp_path / "mine"))
    assert agent_dir() == tmp_path / "mine"


def test_only_files_caddie_reads_are_reported_on(tmp_path: Path) -> None:
    (tmp_path / ".caddie").mkdir()
    (tmp_path / ".caddie" / "settings.json").write_text(json.dumps({"bogusKey": 1}))
    untrusted = load_settings(tmp_path)
    assert settings_notices(untrusted.files) == []
    trusted = load_settings(tmp_path, project_trusted=True)
    assert [line.split(": ", 1)[1] for line in settings_notices(trusted.files)] == [
        'unknown setting "bogusKey" (not a Pi 0.84.4 or caddie setting, nor the name of a loaded extension); '
        "ignored"
    ]


def test_package_entries_are_checked_too() -> None:
    lines = notices(
        {"packages": ["plain", {"source": "x", "skills": ["a"], "autoload": False, "enabeld": False}]}
    )
    assert lines == [
        '/s.json: setting "packages[1].autoload" is ignored: caddie switches a package off with "enabled": '
        "false (caddie config off package:SOURCE)",
        '/s.json: unknown setting "packages[1].enabeld"; ignored',
    ]
