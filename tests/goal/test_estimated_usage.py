"""A goal whose model server reports no usage still sees its spend: the estimate is charged and shown with ≈.

The issue's case: against a server that streams no token usage, ``caddie -p --goal … --goal-budget 3k``
read "0 tokens used" after nine turns and only the runaway guard stopped it. Here the fake server leaves usage
out of every reply (as llama-cpp-python's does) and the goal must stop on its budget with exit 3.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from caddie.extensions.bundled.goal.accounting import add_tokens
from caddie.extensions.bundled.goal.model import Goal, goal_from_json
from caddie.extensions.bundled.goal.render import counters_line, goal_report, goal_status_text
from tests.support import fake_llm as fl


def endless_tool_calls(req: fl.RecordedRequest) -> fl.Reply:
    n = len(req.messages)
    return fl.tool_call("bash", {"command": f"echo step {n}"}, no_usage=True)


def run_goal(cwd: Path, llm: fl.FakeLLM, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    command = [sys.executable, "-m", "caddie", "--model", "fake/fake-model", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def session_lines(caddie_dir: Path) -> list[dict[str, Any]]:
    [path] = sorted((caddie_dir / "agent" / "sessions").rglob("*.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_headless_goal_stops_on_its_budget_when_the_server_reports_no_usage(
    tmp_path: Path, isolated_caddie_dir: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with fl.FakeLLM(default_reply=endless_tool_calls) as llm:
        llm.write_models_json(isolated_caddie_dir / "agent", contextWindow=100_000)
        result = run_goal(
            project,
            llm,
            "-p",
            "--goal",
            "write hello.txt containing hello",
            "--goal-budget",
            "3k",
            "--goal-check",
            "test -f hello.txt",
        )
        replies = len(llm.llm_requests)
    assert result.returncode == 3, result.stderr
    assert "Goal budget reached: ≈" in result.stderr
    assert "Traceback" not in result.stderr
    # The system prompt and tools alone are well over 1,000 tokens a request: the budget ends it within a
    # turn or two, long before the runaway guard (three identical answers) could.
    assert 1 <= replies <= 2
    lines = session_lines(isolated_caddie_dir)
    usages = [
        e["message"]["usage"]
        for e in lines
        if e.get("type") == "message" and e["message"]["role"] == "assistant"
    ]
    assert usages and all(u["estimated"] is True and u["input"] > 1_000 for u in usages)
    states = [goal_from_json(e["data"]) for e in lines if e.get("customType") == "goal:state"]
    final = states[-1]
    assert isinstance(final, Goal) and final.status == "budget_limited" and final.tokens_estimated
    assert final.tokens_used == sum(u["input"] + u["output"] for u in usages)


def test_reported_usage_keeps_the_goal_state_as_it_was(tmp_path: Path, isolated_caddie_dir: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with fl.FakeLLM() as llm:
        llm.write_models_json(isolated_caddie_dir / "agent", contextWindow=100_000)
        llm.push(
            fl.tool_call("bash", {"command": "echo 1"}, usage=fl.UsageSpec(600, 100)),
            fl.tool_call("bash", {"command": "echo 2"}, usage=fl.UsageSpec(600, 100)),
        )
        result = run_goal(project, llm, "-p", "--goal", "count", "--goal-budget", "1k")
    assert result.returncode == 3, result.stderr
    assert "Goal budget reached: 1,400 of 1,000 tokens used" in result.stderr
    text = "\n".join(json.dumps(e) for e in session_lines(isolated_caddie_dir))
    assert "estimated" not in text and "tokensEstimated" not in text


def test_every_goal_text_marks_an_estimated_spend() -> None:
    goal = Goal(id="g", objective="ship it", token_budget=3_000, active_seconds=60)
    exact = add_tokens(goal, 1_200)
    estimated = add_tokens(exact, 300, estimated=True)
    assert not exact.tokens_estimated and estimated.tokens_estimated
    assert "≈" not in goal_status_text(exact) + counters_line(exact) + goal_report(exact)
    assert goal_status_text(estimated) == "Goal · 1m · ≈1.5k/3k tokens"
    assert counters_line(estimated) == "Goal progress: 1m active · ≈1,500 tokens used · ≈1,500 of 3,000 left."
    report = goal_report(estimated)
    assert "Tokens used: ≈1,500 of 3,000 (≈1,500 left)" in report
    assert "reported no token usage" in report
    assert goal_from_json(estimated.to_json()) == estimated
    assert "tokensEstimated" not in exact.to_json()
