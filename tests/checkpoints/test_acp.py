"""``/checkpoints`` and ``/rewind`` in an editor: a real ``caddie acp`` process, the official ACP client, a
fake model server, and the agent's file changes taken back."""

from __future__ import annotations

import pytest

from acp import RequestError, text_block
from tests.acp.conftest import Setup, setup  # noqa: F401  (the fixture)
from tests.acp.harness import open_agent
from tests.support import fake_llm as fl


async def test_rewind_files_and_conversation_from_the_editor(setup: Setup) -> None:  # noqa: F811
    (setup.project / "a.txt").write_text("before\n")
    setup.llm.push(
        fl.tool_call("write", {"path": "a.txt", "content": "after\n"}, id="c_w"),
        fl.tool_call("bash", {"command": "touch extra.txt"}, id="c_b"),
        fl.text("ok"),
    )
    async with open_agent(setup.home, setup.project, setup.llm) as agent:
        client = agent.client
        await agent.initialize()
        new = await agent.conn.new_session(cwd=str(setup.project))
        await agent.conn.set_session_mode(session_id=new.session_id, mode_id="auto")
        await agent.conn.prompt(session_id=new.session_id, prompt=[text_block("edit it")])
        assert (setup.project / "a.txt").read_text() == "after\n"
        requests = len(setup.llm.llm_requests)

        client.clear()
        await agent.conn.prompt(session_id=new.session_id, prompt=[text_block("/checkpoints")])
        listing = client.message_text()
        assert "edit it" in listing
        checkpoint = listing.split("`")[1]

        with pytest.raises(RequestError, match="Usage: /rewind"):
            await agent.conn.prompt(session_id=new.session_id, prompt=[text_block("/rewind")])

        client.clear()
        response = await agent.conn.prompt(
            session_id=new.session_id, prompt=[text_block(f"/rewind {checkpoint} both")]
        )
        assert response.stop_reason == "end_turn"
        assert "Restored checkpoint" in client.message_text()
        assert (setup.project / "a.txt").read_text() == "before\n" and not (
            setup.project / "extra.txt"
        ).exists()
        assert len(setup.llm.llm_requests) == requests  # no model call
