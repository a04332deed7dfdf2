"""``mulligan.tools: "when-needed"`` through the real ``caddie -p`` against the fake server: what each request
carries, across turns and across processes."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import Caddie
from tests.support import fake_llm as fl

WHEN_NEEDED = {"mulligan": {"tools": "when-needed"}}


@pytest.fixture
def caddie(tmp_path: Path) -> Iterator[Caddie]:
    (tmp_path / "project").mkdir()
    with fl.FakeLLM() as llm:
        agent = tmp_path / "home" / "agent"
        llm.write_models_json(agent, provider="fake", model_id="fake-model", contextWindow=100_000)
        (agent / "settings.json").write_text(json.dumps(WHEN_NEEDED))
        yield Caddie(tmp_path / "home", tmp_path / "project", llm)


def mulligan_tools(request: fl.RecordedRequest) -> list[str]:
    names = [t["function"]["name"] for t in request.body.get("tools") or []]
    return [n for n in names if n.startswith("mulligan_")]


def test_the_tools_come_with_the_first_reminder_and_the_list_changes_once(caddie: Caddie) -> None:
    (caddie.project / "big.txt").write_text("w" * 30_000 + "\n")
    caddie.llm.push(
        fl.tool_call("bash", {"command": "echo small"}, id="c1"),
        fl.tool_call("bash", {"command": "cat big.txt"}, id="c2"),
        fl.tool_call(
            "mulligan_shrink", {"target": {"by_tool_call_id": "c2"}, "replacement": "30,000 w."}, id="c3"
        ),
        fl.tool_call("bash", {"command": "echo after"}, id="c4"),
        fl.text("done"),
    )
    result = caddie.run("-p", "--model", "fake/fake-model", "look")
    assert result.returncode == 0, result.stderr
    requests = caddie.llm.llm_requests
    carried = [bool(mulligan_tools(r)) for r in requests]
    assert carried == [False, False, True, True, True]  # from the request carrying the reminder on
    assert "KB added to your context" in json.dumps(requests[2].messages)
    tool_lists = [json.dumps(r.body.get("tools")) for r in requests]
    assert sum(a != b for a, b in itertools.pairwise(tool_lists)) == 1  # one cache break


def test_a_checkpoint_brings_them_in_and_a_resumed_session_keeps_them(caddie: Caddie) -> None:
    caddie.llm.push(fl.text("hello"), fl.text("going on"))
    first = caddie.run("-p", "--model", "fake/fake-model", "hi")
    assert first.returncode == 0, first.stderr
    assert mulligan_tools(caddie.llm.llm_requests[0]) == []
    checkpoint = caddie.run("-c", "-p", "--model", "fake/fake-model", "/mulligan_checkpoint before-refactor")
    assert checkpoint.returncode == 0, checkpoint.stderr
    assert len(caddie.llm.llm_requests) == 1  # a command: no model request
    again = caddie.run("-c", "-p", "--model", "fake/fake-model", "go on")
    assert again.returncode == 0, again.stderr
    assert mulligan_tools(caddie.llm.llm_requests[-1]) == [
        "mulligan_rewind",
        "mulligan_shrink",
        "mulligan_audit",
        "mulligan_cancel",
    ]
    [session_file] = caddie.session_files()
    entries = [json.loads(line) for line in session_file.read_text().splitlines()]
    [tools] = [e for e in entries if e.get("customType") == "mulligan:tools"]
    assert tools["data"]["reason"] == "checkpoint"
