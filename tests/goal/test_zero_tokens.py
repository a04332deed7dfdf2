"""Nothing until a goal exists: the bytes the provider receives, through a real HTTP client and server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from caddie.config.paths import agent_dir
from caddie.runtime.factory import SessionRequest, open_session
from tests.goal.helpers import RecordingUI, write_settings
from tests.support import fake_llm as fl


@pytest.fixture
def llm() -> Iterator[fl.FakeLLM]:
    with fl.FakeLLM() as server:
        server.write_models_json(agent_dir(), provider="fake", model_id="fake-model", contextWindow=100_000)
        yield server


async def request_bytes(cwd: Path, llm: fl.FakeLLM, prompt: str, *, goal_loaded: bool) -> bytes:
    write_settings({"disabledExtensions": ["mulligan"] if goal_loaded else ["mulligan", "goal", "mcp"]})
    llm.push(fl.text("ok"))
    before = len(llm.llm_requests)
    build = await open_session(
        SessionRequest(cwd=str(cwd), mode="tui", model="fake/fake-model", session="memory", ui=RecordingUI())
    )
    names = {c.name for c in build.session.extensions.commands().values()}
    assert ("goal" in names) is goal_loaded
    await build.session.start()
    await build.session.prompt(prompt)
    await build.session.wait_for_idle()
    await build.session.shutdown()
    [request] = llm.llm_requests[before:]
    return request.raw


async def test_without_a_goal_the_extension_adds_zero_bytes_to_a_request(
    tmp_path: Path, llm: fl.FakeLLM
) -> None:
    with_goal = await request_bytes(tmp_path, llm, "fix the failing test in calc.py", goal_loaded=True)
    without = await request_bytes(tmp_path, llm, "fix the failing test in calc.py", goal_loaded=False)
    assert with_goal == without
    assert not any(name in with_goal for name in (b"create_goal", b"get_goal", b"update_goal"))
    assert b"standing orders" not in with_goal.lower()


async def test_a_prompt_that_asks_for_a_goal_gets_the_tools_but_no_standing_orders(
    tmp_path: Path, llm: fl.FakeLLM
) -> None:
    raw = await request_bytes(tmp_path, llm, "create a goal: make the test suite pass", goal_loaded=True)
    body = json.loads(raw)
    names = [t["function"]["name"] for t in body["tools"]]
    assert names[-3:] == ["create_goal", "get_goal", "update_goal"]
    assert "standing orders" not in body["messages"][0]["content"].lower()
