"""A goal's budget counts every model call made for it — compaction summaries included — and spend passes
the budget by at most one call. Real ``caddie -p --goal`` processes against the fake LLM server; the
server's own ledger is the truth."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from caddie.config.paths import agent_dir
from caddie.session.compaction import SUMMARIZATION_SYSTEM_PROMPT
from tests.support import fake_llm as fl

BUDGET = 60_000


class Ledger:
    """Serves the goal's turns (a bash call each, so the context grows) and summaries, and bills each
    response by its size, as a real provider would."""

    def __init__(self, summary_output: int = 900) -> None:
        self.summary_output = summary_output
        self.calls: list[tuple[str, int]] = []
        self.lock = threading.Lock()

    def __call__(self, request: fl.RecordedRequest) -> fl.Reply:
        tokens_in = len(request.raw) // 4
        if request.system == SUMMARIZATION_SYSTEM_PROMPT:
            kind = "summary"
            usage = fl.UsageSpec(tokens_in, self.summary_output)
            reply = fl.text("## Goal\nCount.\n## Progress\nCounted a lot.", usage=usage)
            cost = tokens_in + self.summary_output
        else:
            kind = "turn"
            reply = fl.tool_call("bash", {"command": "seq 1 1500"}, usage=fl.UsageSpec(tokens_in, 120))
            cost = tokens_in + 120
        with self.lock:
            self.calls.append((kind, cost))
        return reply

    @property
    def billed(self) -> int:
        return sum(cost for _, cost in self.calls)


def _setup(llm: fl.FakeLLM) -> None:
    llm.write_models_json(agent_dir(), provider="fake", model_id="fake-model", contextWindow=16_000)
    (agent_dir() / "settings.json").write_text(
        json.dumps(
            {
                "disabledExtensions": ["mulligan"],
                "compaction": {"reserveTokens": 6_000, "keepRecentTokens": 2_000},
                "retry": {"enabled": False},
            }
        )
    )


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "caddie", "-p", "--model", "fake/fake-model", *args],
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _last_goal(cwd: Path) -> dict[str, Any]:
    [session] = sorted((agent_dir() / "sessions").rglob("*.jsonl"))
    states: list[dict[str, Any]] = [
        json.loads(line)["data"]
        for line in session.read_text().splitlines()
        if '"customType":"goal:state"' in line
    ]
    return states[-1]


def test_compaction_summaries_are_charged_and_the_budget_holds(tmp_path: Path) -> None:
    ledger = Ledger()
    with fl.FakeLLM(default_reply=ledger) as llm:
        _setup(llm)
        result = _run(tmp_path, "--goal", "count forever", "--goal-budget", str(BUDGET))

    assert result.returncode == 3, result.stderr  # budget reached
    kinds = [kind for kind, _ in ledger.calls]
    assert "summary" in kinds, kinds  # automatic compaction ran during the goal
    goal = _last_goal(tmp_path)
    assert goal["status"] == "budget_limited"
    assert goal["tokensUsed"] == ledger.billed  # every call the server billed was counted
    last = ledger.calls[-1][1]
    assert ledger.billed - last < BUDGET <= ledger.billed  # at most one call past the budget


def test_extra_prompts_count_while_the_goal_is_active_and_are_not_sent_after_its_budget(
    tmp_path: Path,
) -> None:
    ledger = Ledger()
    with fl.FakeLLM(default_reply=ledger) as llm:
        _setup(llm)
        result = _run(
            tmp_path,
            "--goal",
            "count forever",
            "--goal-budget",
            str(BUDGET),
            "PROMPT-ONE also",
            "PROMPT-TWO too",
        )
        sent = [r.raw for r in llm.llm_requests]

    assert result.returncode == 3, result.stderr
    assert any(b"PROMPT-ONE" in raw for raw in sent)  # the first prompt is the goal's first turn
    assert not any(b"PROMPT-TWO" in raw for raw in sent)  # nothing is sent after the budget
    assert "PROMPT-TWO" in result.stderr  # the skipped prompt is named
    goal = _last_goal(tmp_path)
    assert goal["tokensUsed"] == ledger.billed
    assert ledger.billed - ledger.calls[-1][1] < BUDGET <= ledger.billed


def test_a_summary_that_reaches_the_budget_ends_the_run_at_once(tmp_path: Path) -> None:
    ledger = Ledger(summary_output=BUDGET)  # the first compaction alone uses up the budget
    with fl.FakeLLM(default_reply=ledger) as llm:
        _setup(llm)
        result = _run(tmp_path, "--goal", "count forever", "--goal-budget", str(BUDGET))

    assert result.returncode == 3, result.stderr
    kinds = [kind for kind, _ in ledger.calls]
    assert kinds[-1] == "summary" and kinds.count("summary") == 1, kinds  # no request after it
    goal = _last_goal(tmp_path)
    assert goal["status"] == "budget_limited" and goal["tokensUsed"] == ledger.billed
    assert ledger.billed - ledger.calls[-1][1] < BUDGET <= ledger.billed
