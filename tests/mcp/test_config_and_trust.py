"""Where servers come from and who may start them: a project's ``.mcp.json`` and settings start only in a
trusted project; ``caddie config`` lists and switches servers; ``--tools`` / ``-xt`` name MCP tools."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caddie.config.settings import load_settings
from caddie.extensions.bundled.mcp.runtime import pool
from caddie.modes.manage import run_manage
from caddie.runtime.factory import SetupError
from caddie.runtime.trust import project_has_code
from tests.mcp.helpers import mcp_session, small


def write_mcp_json(project: Path, servers: dict[str, object]) -> None:
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))


async def test_an_untrusted_projects_servers_are_listed_not_started(tmp_path: Path) -> None:
    write_mcp_json(tmp_path, {"proj": small()})
    (tmp_path / ".caddie").mkdir()
    (tmp_path / ".caddie" / "settings.json").write_text(json.dumps({"mcpServers": {"more": small()}}))
    assert project_has_code(tmp_path)
    settings = load_settings(tmp_path, project_trusted=False)
    assert "mcpServers" not in settings.data
    assert any("ignored because this project is not trusted" in w for w in settings.warnings)

    run = await mcp_session(tmp_path, {}, wait=())
    try:
        assert pool() == {}
        assert (
            "MCP servers proj, more come from this project, which is not trusted: not started"
            in run.notices()
        )
        await run.session.prompt("/mcp")
        assert "proj — not started (project not trusted)  [project .mcp.json:" in run.notices()
        await run.session.prompt("/mcp reconnect proj")
        assert '"proj" comes from this project, which is not trusted' in run.notices()
    finally:
        await run.session.shutdown("quit")


async def test_a_trusted_projects_mcp_json_starts_and_tools_can_be_chosen(tmp_path: Path) -> None:
    write_mcp_json(tmp_path, {"proj": small()})
    with pytest.raises(SetupError, match=r"Unknown tool\(s\): mcp_typo"):
        await mcp_session(tmp_path, {}, trust=True, tools=["read", "mcp_typo"], wait=())
    run = await mcp_session(
        tmp_path, {}, wait=("proj",), trust=True, tools=["read", "mcp__proj__add", "mcp__proj__sh*"],
        exclude_tools=["mcp__proj__shout"],
    )  # fmt: skip
    try:
        assert pool()["proj"].state == "ready"
        assert sorted(run.session.core.tools.active_names()) == ["mcp__proj__add", "read"]
        # --tools is an allowlist over every tool, as Pi's: the server's other tools do not exist for the run
        assert [t.name for t in run.session.core.tools.all() if t.name.startswith("mcp__proj__")] == [
            "mcp__proj__add"
        ]
        mcp_tool = next(t for t in run.session.core.tools.all() if t.name == "mcp__proj__add")
        # Pi's sourceInfo: the extension that serves MCP (here loaded inline as ``<mcp>``; as shipped ``bundled:mcp``)
        assert mcp_tool.source_info.to_json() == {
            "path": "<mcp>",
            "source": "mcp",
            "scope": "temporary",
            "origin": "top-level",
        }
    finally:
        await run.session.shutdown("quit")


def test_caddie_config_lists_and_switches_servers(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    isolated_caddie_dir: Path,
) -> None:
    agent = isolated_caddie_dir / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "settings.json").write_text(json.dumps({"mcpServers": {"mine": {"command": "my-server"}}}))
    write_mcp_json(tmp_path, {"theirs": {"url": "https://example.com/mcp", "type": "http"}})
    monkeypatch.chdir(tmp_path)
    assert run_manage(["config"]) == 0
    out = capsys.readouterr().out
    assert "mcp (from an extension):" in out
    assert "[x] mcp:mine" in out and "user settings" in out
    assert "[x] mcp:theirs" in out and "project .mcp.json" in out
    assert run_manage(["config", "off", "mcp:mine"]) == 0
    assert "mcp mine is now off" in capsys.readouterr().out
    assert json.loads((agent / "settings.json").read_text())["disabledMcpServers"] == ["mine"]
    assert run_manage(["config", "--json"]) == 0
    listed = {i["name"]: i for i in json.loads(capsys.readouterr().out) if i["kind"] == "mcp"}
    assert listed["mine"]["enabled"] is False and listed["theirs"]["enabled"] is True
    assert run_manage(["config", "toggle", "mcp:mine"]) == 0
    assert json.loads((agent / "settings.json").read_text())["disabledMcpServers"] == []
