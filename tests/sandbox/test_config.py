"""The sandbox configuration: caddie's ``sandbox`` block, Pi's sandbox.json files, and how they combine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caddie.config.settings import load_settings
from caddie.sandbox import NetworkRule, SandboxConfigError, choose_mode, load_config, read_config
from caddie.sandbox.config import PI_EXAMPLE_DEFAULTS


def test_nothing_configured_leaves_the_mode_to_the_run() -> None:
    config = read_config("/p", [], None)
    assert config.mode is None and config.network == NetworkRule("off")
    assert choose_mode(None, config.mode, "off") == "off"
    assert choose_mode(None, config.mode, "workspace-write") == "workspace-write"


def test_the_command_line_wins_over_the_settings_and_the_default() -> None:
    assert choose_mode("off", "workspace-write", "workspace-write") == "off"
    assert choose_mode("read-only", None, "off") == "read-only"
    with pytest.raises(
        SandboxConfigError, match="--sandbox full: use one of off, read-only, workspace-write"
    ):
        choose_mode("full", None, "off")


def test_the_environment_names_a_mode_below_the_command_line() -> None:
    assert choose_mode(None, "workspace-write", "workspace-write", env="off") == "off"
    assert choose_mode("read-only", None, "off", env="off") == "read-only"
    assert choose_mode(None, "read-only", "off", env="") == "read-only"
    with pytest.raises(
        SandboxConfigError, match=r"^CADDIE_SANDBOX=none: use one of off, read-only, workspace-write\."
    ):
        choose_mode(None, None, "off", env="none")


def test_a_caddie_inside_a_caddie_sandbox_defaults_to_off_and_cannot_nest() -> None:
    assert choose_mode(None, None, "workspace-write", inside="workspace-write") == "off"
    assert choose_mode(None, "read-only", "workspace-write", inside="workspace-write") == "read-only"


def test_caddie_block_paths_resolve_against_the_project_and_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/me")
    block = {
        "mode": "workspace-write",
        "network": ["pypi.org", "*.pythonhosted.org"],
        "writable": ["~/.cache/uv", "build-out"],
        "denyRead": ["secrets"],
        "denyWrite": [".env", "~/x.pem"],
    }
    config = read_config("/p", [], block)
    assert config.mode == "workspace-write"
    assert config.network == NetworkRule("allow-list", ("pypi.org", "*.pythonhosted.org"))
    assert config.writable == ("/home/me/.cache/uv", "/p/build-out")
    assert config.deny_read == ("/p/secrets",)
    assert config.deny_write == (".env", "/home/me/x.pem")


def test_network_forms() -> None:
    assert read_config("/p", [], {"network": []}).network == NetworkRule("off")  # nothing allowed: no network
    assert read_config("/p", [], {"network": {"allowedDomains": []}}).network == NetworkRule("off")
    assert read_config("/p", [], {"network": "on"}).network == NetworkRule("on")
    assert read_config("/p", [], {"network": "off"}).network == NetworkRule("off")
    pi_shape = {"network": {"allowedDomains": ["github.com"], "deniedDomains": ["gist.github.com"]}}
    assert read_config("/p", [], pi_shape).network == NetworkRule(
        "allow-list", ("github.com",), ("gist.github.com",)
    )


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"mode": "workspace_write"}, 'settings sandbox.mode is \'workspace_write\'; use "off", "read-only"'),
        ({"network": "some"}, 'settings sandbox.network is "some"; use "off", "on", a list of hosts'),
        ({"writable": "/tmp"}, "settings sandbox.writable must be a list of strings."),
        ({"enabled": "yes"}, "settings sandbox.enabled must be true or false."),
    ],
)
def test_a_value_that_means_nothing_safe_is_an_error(block: dict[str, object], message: str) -> None:
    with pytest.raises(SandboxConfigError) as caught:
        read_config("/p", [], block)
    assert str(caught.value).startswith(message)


def test_a_pi_file_carries_over_with_the_example_extensions_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/me")
    pi_global = {"filesystem": {"denyRead": ["~/.kube"]}}
    config = read_config("/p", [("/home/me/.pi/agent/extensions/sandbox.json", pi_global)], None)
    assert config.mode == "workspace-write"  # "enabled" defaults to true in Pi's example
    assert config.network.kind == "allow-list"
    assert config.network.allowed == tuple(PI_EXAMPLE_DEFAULTS["network"]["allowedDomains"])
    assert config.deny_read == ("/home/me/.kube",)  # the file's list replaces the example's (as Pi merges)
    assert config.writable == ("/p", "/tmp")  # allowWrite [".", "/tmp"]
    assert config.deny_write == (".env", ".env.*", "*.pem", "*.key")


def test_pi_project_file_overrides_the_global_one_key_by_key_and_caddie_settings_win() -> None:
    pi_files = [
        ("global", {"network": {"allowedDomains": ["a.com"], "deniedDomains": ["x.a.com"]}}),
        ("project", {"network": {"allowedDomains": ["b.com"]}}),
    ]
    config = read_config("/p", pi_files, None)
    assert config.network == NetworkRule("allow-list", ("b.com",), ("x.a.com",))
    disabled = read_config("/p", [("global", {"enabled": False})], None)
    assert disabled.mode == "off"
    assert read_config("/p", [("global", {"enabled": False})], {"mode": "read-only"}).mode == "read-only"


def test_load_config_reads_pi_files_and_ignores_an_untrusted_projects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_caddie_dir: Path
) -> None:
    pi_dir = tmp_path / "pi"
    (pi_dir / "extensions").mkdir(parents=True)
    (pi_dir / "extensions" / "sandbox.json").write_text(
        json.dumps({"network": {"allowedDomains": ["g.com"]}})
    )
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(pi_dir))
    project = tmp_path / "project"
    (project / ".pi").mkdir(parents=True)
    (project / ".pi" / "sandbox.json").write_text(json.dumps({"enabled": False}))
    (project / ".caddie").mkdir()
    (project / ".caddie" / "settings.json").write_text(json.dumps({"sandbox": {"mode": "off"}}))

    untrusted = load_config(str(project), load_settings(project), project_trusted=False)
    assert untrusted.mode == "workspace-write"  # neither project file could switch it off
    assert untrusted.network.allowed == ("g.com",)
    assert any("not trusted" in w for w in untrusted.warnings)
    # as in Pi, an untrusted project's settings file is not read at all (its sandbox block with it)
    assert any("ignored because this project is not trusted" in w for w in load_settings(project).warnings)

    trusted = load_config(str(project), load_settings(project, project_trusted=True), project_trusted=True)
    assert trusted.mode == "off"


def test_a_broken_pi_file_is_an_error_not_an_open_door(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pi_dir = tmp_path / "pi"
    (pi_dir / "extensions").mkdir(parents=True)
    (pi_dir / "extensions" / "sandbox.json").write_text("{ not json")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(pi_dir))
    with pytest.raises(SandboxConfigError, match="is not valid JSON"):
        load_config(str(tmp_path), load_settings(tmp_path), project_trusted=False)
