"""The task file is checked whole before anything runs; every mistake is one line naming the task line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from caddie.modes.batch.tasks import BatchError, load_tasks, parse_duration
from tests.batch.helpers import COMPLETE, batch, make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", COMPLETE)


def tasks_file(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def good(repo: Path, task_id: str = "a", **extra: object) -> str:
    return json.dumps({"id": task_id, "repo": str(repo), "objective": "do it", **extra})


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '{"id": "b", "repo": "REPO", "objective": "x", "priority": 1}',
            "tasks.jsonl line 3: unknown field 'priority'",
        ),
        ('{"repo": "REPO", "objective": "x"}', "tasks.jsonl line 3: missing field 'id'"),
        ('{"id": "b", "objective": "x"}', "tasks.jsonl line 3: missing field 'repo'"),
        ('{"id": "b", "repo": "REPO"}', "tasks.jsonl line 3: give an 'objective', a 'check', or both"),
        (
            '{"id": "b", "repo": "REPO", "objective": "x", "budget": "lots"}',
            "line 3: budget 'lots' is not a token count",
        ),
        (
            '{"id": "b", "repo": "REPO", "objective": "x", "timeout": "soon"}',
            "line 3: timeout 'soon' is not a duration",
        ),
        ('{"id": "a", "repo": "REPO", "objective": "x"}', "line 3: id 'a' is already used on line 1"),
        ('{"id": "../b", "repo": "REPO", "objective": "x"}', "line 3: id '../b' must be"),
        (
            '{"id": "b", "repo": "/nonexistent/x", "objective": "x"}',
            "line 3: repo '/nonexistent/x' is not a git repository",
        ),
        ('{"id": "b", "repo": "REPO", "objective": 5}', "line 3: 'objective' must be a non-empty string"),
        ('{"id": "b", "repo": "REPO"', "tasks.jsonl line 3: not valid JSON"),
        ('["b"]', "tasks.jsonl line 3: a task is a JSON object"),
        ("[" * 100_000, "tasks.jsonl line 3: nested more than 200 levels deep"),
        (
            '{"id": "b", "repo": "REPO", "objective": "x", "ref": "--upload-pack=touch /tmp/X"}',
            "line 3: ref '--upload-pack=touch /tmp/X' is not a branch, tag or commit name",
        ),
        (
            '{"id": "b", "repo": "REPO", "objective": "x", "ref": "a..b"}',
            "line 3: ref 'a..b' is not a branch",
        ),
    ],
)
def test_a_bad_line_is_named_and_nothing_runs(
    tmp_path: Path, repo: Path, faux_env: Path, line: str, message: str
) -> None:
    path = tasks_file(tmp_path, good(repo), "", line.replace("REPO", str(repo)))
    with pytest.raises(BatchError) as caught:
        load_tasks(path)
    assert message in str(caught.value)

    code, out, err = batch(str(path))
    assert code == 2 and out == ""
    assert err.startswith("caddie batch: ") and message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "tasks-results.jsonl").exists() and not (tmp_path / "tasks-results-work").exists()


def test_fields_are_read_and_relative_repos_resolve_against_the_task_file(tmp_path: Path, repo: Path) -> None:
    path = tasks_file(
        tmp_path,
        "# a comment",
        json.dumps({"id": "a", "repo": "repo", "check": "true", "budget": "200k", "timeout": "30m"}),
        json.dumps(
            {
                "id": "b",
                "repo": "https://example.com/x.git",
                "objective": "o",
                "ref": "v1",
                "budget": 5000,
                "model": "faux/echo",
                "setup": "make",
                "timeout": 90,
            }
        ),
    )
    a, b = load_tasks(path)
    assert a.repo == str(repo) and a.budget == 200_000 and a.timeout == 1800.0
    assert a.goal_objective == "Make the check command `true` exit 0."
    assert b.repo == "https://example.com/x.git" and b.budget == 5000 and b.timeout == 90.0 and b.ref == "v1"


def test_durations() -> None:
    assert parse_duration("500ms") == 0.5 and parse_duration("2h") == 7200 and parse_duration(3) == 3.0
    for bad in ("0", -1, True, "1 week"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_usage_mistakes_are_one_line(tmp_path: Path, repo: Path, faux_env: Path) -> None:
    path = tasks_file(tmp_path, good(repo))
    for argv, message in [
        ([], "name the task file"),
        ([str(tmp_path / "missing.jsonl")], "no task file at"),
        ([str(path), "--workers", "0"], "--workers must be at least 1"),
        ([str(path), "--total-budget", "much"], "--total-budget 'much' is not a token count"),
        ([str(path), "--frobnicate"], "unrecognized arguments: --frobnicate"),
    ]:
        code, _, err = batch(*argv)
        assert code == 2 and message in err and len(err.splitlines()) == 1, (argv, err)


def test_caddie_batch_from_the_command_line(tmp_path: Path, repo: Path, faux_env: Path) -> None:
    path = tasks_file(tmp_path, good(repo, check="test -f done.txt"))
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "caddie", "batch", str(path), "--model", "faux/faux-1", "--workers", "1"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "caddie batch: [1/1] a: complete in" in done.stderr
    assert "complete" in done.stdout and "results: " + str(tmp_path / "tasks-results.jsonl") in done.stdout
    record = json.loads((tmp_path / "tasks-results.jsonl").read_text())
    assert record["status"] == "complete" and record["check_exit"] == 0

    bad = subprocess.run(
        [sys.executable, "-m", "caddie", "batch", str(tmp_path / "nope.jsonl")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("caddie batch: no task file at") and not bad.stdout


def test_with_ray_only_the_summary_reaches_stdout() -> None:
    """Ray's driver prints "(raylet) A worker died …" on stdout; with --ray, stdout leads to stderr and the
    summary goes to the real stdout alone."""
    code = (
        "import os, sys\n"
        "from caddie.modes.batch import keep_stdout_from_ray\n"
        "out = keep_stdout_from_ray(sys.stdout)\n"
        "os.write(1, b'(raylet) A worker died or was killed\\n')\n"
        "print('printed by Ray in Python')\n"
        "out.write('the summary\\n')\n"
        "out.flush()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "the summary\n"
    assert "(raylet) A worker died" in done.stderr and "printed by Ray in Python" in done.stderr
