"""Every view of token counts says "≈" when a server reported no usage, and nothing changes when it did.

One real ``caddie -p`` run per kind of server (the fake leaves usage out, as llama-cpp-python's server does,
or reports it), then the views read its session: ``caddie export``, ``caddie context``, the session stats
(RPC ``get_session_stats``), and a one-task ``caddie batch`` with a ``--total-budget``.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from caddie.modes.batch import run_batch_command
from caddie.modes.rpc.wire import stats_json
from caddie.runtime.factory import SessionRequest, open_session
from tests.support import fake_llm as fl

MODEL = "fake/fake-model"


@dataclass
class Run:
    project: Path
    session: Path
    caddie_dir: Path


def caddie(cwd: Path, caddie_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CADDIE_DIR": str(caddie_dir), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "caddie", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def one_run(root: Path, no_usage: bool) -> Run:
    caddie_dir = root / "home"
    project = root / "project"
    project.mkdir(parents=True)
    (caddie_dir / "agent").mkdir(parents=True)
    (caddie_dir / "agent" / "settings.json").write_text(
        json.dumps({"disabledExtensions": ["mulligan", "goal"]})
    )
    usage = {"no_usage": True} if no_usage else {"usage": fl.UsageSpec(1_500, 20)}
    with fl.FakeLLM() as llm:
        llm.write_models_json(caddie_dir / "agent", contextWindow=32_768)
        llm.push(fl.tool_call("bash", {"command": "echo hi"}, **usage), fl.text("Said hi.", **usage))
        result = caddie(project, caddie_dir, "-p", "--model", MODEL, "say hi with bash")
    assert result.returncode == 0, result.stderr
    [session] = sorted((caddie_dir / "agent" / "sessions").rglob("*.jsonl"))
    return Run(project, session, caddie_dir)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[bool, Run]]:
    root = tmp_path_factory.mktemp("usage-views")
    yield {flag: one_run(root / ("none" if flag else "reported"), flag) for flag in (True, False)}


def test_the_session_records_estimates_only_for_the_server_without_usage(runs: dict[bool, Run]) -> None:
    estimated = runs[True].session.read_text()
    assert estimated.count('"estimated":true') == 2
    assert '"estimated"' not in runs[False].session.read_text()


def test_the_export_marks_estimated_usage(runs: dict[bool, Run], tmp_path: Path) -> None:
    pages = {}
    for flag, run in runs.items():
        out = tmp_path / f"{flag}.html"
        result = caddie(run.project, run.caddie_dir, "export", str(run.session), "-o", str(out))
        assert result.returncode == 0, result.stderr
        pages[flag] = out.read_text()
    assert "the server reported no usage" in pages[True] and "≈" in pages[True]
    assert "≈" not in pages[False] and "reported no usage" not in pages[False]


def test_context_stats_and_session_stats_say_their_figures_rest_on_an_estimate(runs: dict[bool, Run]) -> None:
    texts = {}
    for flag, run in runs.items():
        context = caddie(run.project, run.caddie_dir, "context", str(run.session), "--stats")
        assert context.returncode == 0, context.stderr
        show = caddie(run.project, run.caddie_dir, "session", "show", str(run.session), "--stats")
        assert show.returncode == 0, show.stderr
        texts[flag] = (context.stdout, show.stdout)
    context_text, show_text = texts[True]
    assert "tokens: estimated" in context_text and "server reports no usage" in context_text
    assert "≈" in context_text.splitlines()[0] + context_text.splitlines()[1]
    assert "input tokens   ≈" in show_text and "reported no usage" in show_text
    context_text, show_text = texts[False]
    assert "provider-reported" in context_text and "≈" not in context_text.split("tokens:")[0]
    assert "≈" not in show_text


async def test_session_stats_carry_the_mark(runs: dict[bool, Run], monkeypatch: pytest.MonkeyPatch) -> None:
    for flag, run in runs.items():
        monkeypatch.setenv("CADDIE_DIR", str(run.caddie_dir))
        build = await open_session(
            SessionRequest(
                cwd=str(run.project),
                mode="rpc",
                session="file",
                session_file=str(run.session),
                read_only=True,
            )
        )
        stats = stats_json(build.session.stats())
        usage = build.session.context_usage()
        await build.session.shutdown()
        assert stats["tokens"]["input"] > 1_000
        assert usage is not None and usage.estimated is flag
        if flag:
            assert stats["tokensEstimated"] is True and stats["contextUsage"]["estimated"] is True
        else:
            assert "tokensEstimated" not in stats and "estimated" not in stats["contextUsage"]


def test_batch_totals_show_the_estimate_and_the_cap_sees_it(
    tmp_path: Path, isolated_caddie_dir: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    (repo / "README").write_text("hi\n")
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=repo, check=True)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        "".join(
            json.dumps({"id": f"t{i}", "repo": str(repo), "objective": "count forever"}) + "\n"
            for i in range(2)
        )
    )
    with fl.FakeLLM(
        default_reply=lambda req: fl.tool_call("bash", {"command": "echo 1"}, no_usage=True)
    ) as llm:
        llm.write_models_json(isolated_caddie_dir / "agent", contextWindow=100_000)
        out, err = io.StringIO(), io.StringIO()
        code = run_batch_command(
            [str(tasks), "--workers", "1", "--total-budget", "2k", "--model", MODEL], out=out, err=err
        )
    assert code == 3, err.getvalue()  # the spend cap, seen through the estimates, left a task unfinished
    results = [json.loads(line) for line in (tmp_path / "tasks-results.jsonl").read_text().splitlines()]
    assert results and all(r["tokens_estimated"] is True and r["tokens_in"] > 1_000 for r in results)
    summary = out.getvalue()
    assert "≈" in summary and "tokens spent of a 2,000 cap" in summary
