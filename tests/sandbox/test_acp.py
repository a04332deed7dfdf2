"""``caddie acp --sandbox workspace-write`` end to end (the real command, the ACP SDK's client as the editor,
the fake model server): the editor still asks before ``write`` and ``bash`` as in ``ask`` mode, and what it
allows runs confined — a write outside is refused, bash runs in caddie's sandbox, not the editor's terminal."""

from __future__ import annotations

from pathlib import Path

from acp import text_block
from tests.acp.conftest import Setup, setup  # noqa: F401 (the fixture)
from tests.acp.harness import EditorClient, open_agent
from tests.sandbox.conftest import require_bwrap
from tests.support import fake_llm as fl


def tool_results(request: fl.RecordedRequest) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request.messages if m["role"] == "tool"}


async def test_the_editor_asks_and_the_sandbox_confines(setup: Setup, tmp_path: Path) -> None:  # noqa: F811
    require_bwrap()
    outside = tmp_path / "outside.txt"
    setup.llm.push(
        fl.tool_call("write", {"path": str(outside), "content": "x"}, id="c_out"),
        fl.tool_call(
            "bash",
            {"command": f"echo x > {outside}; echo inside > in.txt; echo $CADDIE_SANDBOXED"},
            id="c_sh",
        ),
        fl.tool_call("write", {"path": "notes.txt", "content": "kept\n"}, id="c_in"),
        fl.text("done"),
    )
    client = EditorClient()
    client.answers = ["allow", "allow", "allow"]
    async with open_agent(
        setup.home, setup.project, setup.llm, "--sandbox", "workspace-write", client=client
    ) as agent:
        await agent.initialize(fs=True, terminal=True)
        new = await agent.conn.new_session(cwd=str(setup.project))
        response = await agent.conn.prompt(session_id=new.session_id, prompt=[text_block("go")])
        assert response.stop_reason == "end_turn"

        asked = [tc.tool_call_id for tc, _options in client.permission_requests]
        assert asked == ["c_out", "c_sh", "c_in"]  # ask mode asks as it does without a sandbox
        results = tool_results(setup.llm.llm_requests[-1])
        assert results["c_out"].startswith("Blocked by the sandbox (workspace-write)")
        assert (
            "workspace-write" in results["c_sh"]
            and "Blocked by the sandbox (workspace-write)" in results["c_sh"]
        )
        assert client.terminals == {}  # bash ran confined in caddie, not in the editor's terminal
        assert client.fs_writes == {str(setup.project / "notes.txt"): "kept\n"}  # through the editor, allowed
    assert not outside.exists() and (setup.project / "in.txt").read_text() == "inside\n"
