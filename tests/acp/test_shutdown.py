"""``ctx.shutdown()`` over ACP: that session ends once its prompt is answered (``session_shutdown`` runs); the
agent process keeps serving the editor's other sessions."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from acp import RequestError, text_block
from tests.acp.conftest import Setup
from tests.acp.harness import open_agent
from tests.support import fake_llm as fl

EXTENSION = """
from pathlib import Path

LOG = Path(__file__).with_name("shutdown.log")

def register(api):
    def log(line):
        with LOG.open("a") as f:
            f.write(line + "\\n")

    def bye(args, ctx):
        log("bye")
        ctx.shutdown()

    api.register_command("bye", bye, "end this session")
    api.on("session_shutdown", lambda event, ctx: log(f"session_shutdown {event.reason}"))
"""


async def test_shutdown_ends_that_session_and_the_agent_keeps_serving(setup: Setup, tmp_path: Path) -> None:
    ext = tmp_path / "bye.py"
    ext.write_text(EXTENSION)
    log = tmp_path / "shutdown.log"
    setup.llm.push(fl.text("still here"))
    async with open_agent(setup.home, setup.project, setup.llm, "-e", str(ext)) as agent:
        await agent.initialize()
        first = await agent.conn.new_session(cwd=str(setup.project))
        other = await agent.conn.new_session(cwd=str(setup.project))
        response = await asyncio.wait_for(
            agent.conn.prompt(session_id=first.session_id, prompt=[text_block("/bye")]), 15
        )
        assert response.stop_reason == "end_turn"
        for _ in range(500):
            if log.exists() and "session_shutdown quit" in log.read_text():
                break
            await asyncio.sleep(0.01)
        assert log.read_text().splitlines() == ["bye", "session_shutdown quit"]
        with pytest.raises(RequestError) as err:
            await agent.conn.prompt(session_id=first.session_id, prompt=[text_block("hello?")])
        assert "Unknown session" in str(err.value.data or err.value)
        answer = await asyncio.wait_for(
            agent.conn.prompt(session_id=other.session_id, prompt=[text_block("hello")]), 15
        )
        assert answer.stop_reason == "end_turn"
        assert agent.process.returncode is None
