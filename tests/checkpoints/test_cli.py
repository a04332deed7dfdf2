"""``caddie checkpoints`` / ``caddie restore`` / ``caddie session gc`` as a user runs them: real processes
on a real project."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from caddie.ai.providers.faux import faux_message
from caddie.checkpoints.records import CHECKPOINT_TYPE
from caddie.checkpoints.service import WorkspaceCheckpoints
from caddie.session.store import SessionStore
from tests.checkpoints.conftest import fingerprint


def caddie(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "caddie", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
    )


def test_list_restore_undo_and_refusals(project: Path) -> None:
    before_git = fingerprint(project)
    store = SessionStore.create(project)
    service = WorkspaceCheckpoints(project, store.session_id)
    store.append_custom(CHECKPOINT_TYPE, service.capture(None, idle=True))
    store.append_message(faux_message("first reply"))
    (project / "app.py").write_text("changed\n")
    (project / "added.txt").write_text("new\n")
    store.append_custom(CHECKPOINT_TYPE, service.capture(service.last_on_branch(store.branch()), idle=False))
    store.close()

    listed = caddie(project, "checkpoints", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [set(r) >= {"id", "entryId", "timestamp", "files"} for r in rows] == [True, True]
    assert rows[1]["files"] == [{"status": "A", "path": "added.txt"}, {"status": "M", "path": "app.py"}]
    text = caddie(project, "checkpoints")
    assert rows[0]["id"][:12] in text.stdout

    # A session open in another caddie is refused, in one line.
    holder = SessionStore.open(store.path)  # type: ignore[arg-type]
    refused = caddie(project, "restore", rows[0]["id"][:8])
    holder.close()
    assert refused.returncode == 2 and "use /rewind in that caddie" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1

    done = caddie(project, "restore", rows[0]["id"][:8], "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["written"] == ["app.py"] and report["removed"] == ["added.txt"]
    assert (project / "app.py").read_text() == "print('v1')\n" and not (project / "added.txt").exists()

    undo = caddie(project, "restore", report["before"])
    assert undo.returncode == 0 and "To undo, restore checkpoint" in undo.stdout
    assert (project / "app.py").read_text() == "changed\n" and (project / "added.txt").exists()

    unknown = caddie(project, "restore", "ffffffff")
    assert unknown.returncode == 2 and "No checkpoint 'ffffffff'" in unknown.stderr

    stats = caddie(project, "context", "--stats", "--json")
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["checkpoints"]["count"] == 4
    assert json.loads(stats.stdout)["checkpoints"]["bytes"] > 0

    assert caddie(project, "session", "gc").returncode == 0
    assert fingerprint(project) == before_git


def test_a_checkpoint_survives_a_killed_run_and_restores_from_the_shell(
    project: Path, tmp_path: Path
) -> None:
    """``caddie -p`` is killed (SIGKILL) while the agent's command runs: the checkpoint taken before the
    prompt is on disk, and ``caddie restore`` takes back what the agent did before it died."""
    import signal
    import time

    from tests.support import fake_llm as fl

    home = Path(os.environ["CADDIE_DIR"])
    marker = tmp_path / "started"
    with fl.FakeLLM() as llm:
        llm.write_models_json(home / "agent", provider="fake", model_id="fake-model")
        llm.push(
            fl.tool_call("write", {"path": "app.py", "content": "broken\n"}, id="w"),
            fl.tool_call("bash", {"command": f"rm lib/util.py; touch {marker}; sleep 60"}, id="b"),
        )
        proc = subprocess.Popen(
            [sys.executable, "-m", "caddie", "--model", "fake/fake-model", "-p", "break things"],
            cwd=project,
            env=dict(os.environ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    assert (project / "app.py").read_text() == "broken\n" and not (project / "lib" / "util.py").exists()
    listed = caddie(project, "checkpoints", "--json")
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert row["prompt"] == "break things"
    done = caddie(project, "restore", row["id"])
    assert done.returncode == 0, done.stderr
    assert (project / "app.py").read_text() == "print('v1')\n" and (
        project / "lib" / "util.py"
    ).read_text() == "X = 2\n"


def test_a_file_over_the_size_limit_is_said_once_in_print_mode(project: Path) -> None:
    """The notice that a checkpoint leaves a big file out reaches stderr once, not once per channel."""
    from tests.support import fake_llm as fl

    home = Path(os.environ["CADDIE_DIR"])
    (home / "agent" / "settings.json").parent.mkdir(parents=True, exist_ok=True)
    (home / "agent" / "settings.json").write_text(json.dumps({"checkpoints": {"maxFileBytes": 1000}}))
    (project / "big.dat").write_bytes(b"x" * 5000)
    with fl.FakeLLM() as llm:
        llm.write_models_json(home / "agent", provider="fake", model_id="fake-model")
        llm.push(fl.text("done"))
        done = caddie(project, "--model", "fake/fake-model", "-p", "look")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    assert done.stderr.count("File checkpoints leave out files over the size limit") == 1, done.stderr
    assert "big.dat" in done.stderr
