"""Snapshots and restores on real files with real git: what is saved, what comes back, what is refused,
and that the project's own repository is untouched throughout."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from caddie.ai.providers.faux import faux_message
from caddie.checkpoints.collect import collect
from caddie.checkpoints.records import CHECKPOINT_TYPE
from caddie.checkpoints.service import CheckpointSettings, RestoreRefused, WorkspaceCheckpoints
from caddie.checkpoints.shadow import ShadowRepo, workspace_of
from caddie.session.store import SessionStore
from tests.checkpoints.conftest import fingerprint


def take(service: WorkspaceCheckpoints, store: SessionStore, *, idle: bool = True) -> dict[str, Any]:
    data = service.capture(service.last_on_branch(store.branch()), idle=idle)
    store.append_custom(CHECKPOINT_TYPE, data)
    return data


def restore(service: WorkspaceCheckpoints, store: SessionStore, ref: str, force: bool = False):  # type: ignore[no-untyped-def]
    target = service.target(store.entries(), ref)
    before = service.capture(
        service.last_on_branch(store.branch()), idle=True, reason="restore", restores=target.id
    )
    store.append_custom(CHECKPOINT_TYPE, before)
    return service.restore_files(target, before, store.branch(), force=force)


def test_restore_reverts_removes_and_recreates_and_leaves_the_project_git_alone(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An inherited GIT_DIR / GIT_INDEX_FILE (caddie started from a git hook) must not lead anywhere.
    monkeypatch.setenv("GIT_DIR", str(project / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(project / ".git" / "index"))
    before = fingerprint(project)
    store = SessionStore.in_memory(project / "lib")  # a subfolder: the workspace is the repository's top
    service = WorkspaceCheckpoints(store.cwd, store.session_id)
    assert service.workspace == project.resolve()
    first = take(service, store)

    (project / "app.py").write_text("print('agent was here')\n")
    (project / "lib" / "util.py").unlink()
    (project / "lib" / "new.py").write_text("new = True\n")
    (project / "deep" / "er").mkdir(parents=True)
    (project / "deep" / "er" / "x.txt").write_text("x\n")
    (project / "run.log").write_text("log changed\n")  # ignored: neither saved nor restored
    service.mark_run_end()
    second = take(service, store)
    statuses = {(f["status"], f["path"]) for f in second["files"]}
    assert statuses == {("M", "app.py"), ("D", "lib/util.py"), ("A", "lib/new.py"), ("A", "deep/er/x.txt")}

    report = restore(service, store, str(first["commit"])[:10])
    assert sorted(report.written) == ["app.py", "lib/util.py"]
    assert sorted(report.removed) == ["deep/er/x.txt", "lib/new.py"]
    assert (project / "app.py").read_text() == "print('v1')\n"
    assert (project / "lib" / "util.py").read_text() == "X = 2\n"  # as on disk at the checkpoint
    assert not (project / "lib" / "new.py").exists() and not (project / "deep").exists()
    assert (project / "run.log").read_text() == "log changed\n"
    assert (project / "build" / "out.bin").exists()

    # Every restore can be undone by restoring the checkpoint it took first.
    undo = restore(service, store, report.before)
    assert sorted(undo.written) == ["app.py", "deep/er/x.txt", "lib/new.py"]
    assert (project / "app.py").read_text() == "print('agent was here')\n"
    assert not (project / "lib" / "util.py").exists()

    assert fingerprint(project) == before
    assert not (project.parent / "hook-ran").exists()
    shadow = ShadowRepo(service.workspace).git_dir
    assert shadow.is_relative_to(Path(os.environ["CADDIE_DIR"]))
    assert not (project / ".git" / "caddie-index").exists()


def test_ignored_and_big_files_are_neither_saved_nor_restored(project: Path) -> None:
    store = SessionStore.in_memory(project)
    service = WorkspaceCheckpoints(project, store.session_id, CheckpointSettings(max_file_bytes=1000))
    (project / "big.bin").write_bytes(b"x" * 5000)
    first = take(service, store)
    assert first["skipped"] == ["big.bin"]
    assert (
        "big.bin"
        not in ShadowRepo(service.workspace)
        .git("ls-tree", "-r", "--name-only", str(first["commit"]))
        .decode()
    )
    (project / "big.bin").write_bytes(b"y" * 6000)
    (project / "app.py").write_text("changed\n")
    report = restore(service, store, str(first["commit"]))
    assert report.written == ["app.py"]
    assert (project / "big.bin").read_bytes() == b"y" * 6000  # untouched: it was never saved


def test_hand_edits_since_the_checkpoint_are_conflicts_unless_forced(project: Path) -> None:
    store = SessionStore.in_memory(project)
    service = WorkspaceCheckpoints(project, store.session_id)
    service.mark_run_end()
    first = take(service, store)
    (project / "app.py").write_text("the agent's edit\n")
    service.mark_run_end()  # the run ends; now the user edits by hand
    (project / "lib" / "util.py").write_text("my own edit\n")
    second = take(service, store)
    assert second["edited"] == ["lib/util.py"]

    report = restore(service, store, str(first["commit"]))
    assert report.written == ["app.py"] and report.conflicts == ["lib/util.py"]
    assert (project / "lib" / "util.py").read_text() == "my own edit\n"
    assert "--force" in report.summary()

    forced = restore(service, store, str(first["commit"]), force=True)
    assert forced.written == ["lib/util.py"]
    assert (project / "lib" / "util.py").read_text() == "X = 2\n"


def test_a_restore_never_writes_through_a_symlink_out_of_the_workspace(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    store = SessionStore.in_memory(project)
    service = WorkspaceCheckpoints(project, store.session_id)
    (project / "docs").mkdir()
    (project / "docs" / "a.md").write_text("saved\n")
    (project / "link.txt").symlink_to(outside / "target.txt")
    first = take(service, store)
    # The folder becomes a symlink leading outside; the file link gets replaced by a regular file.
    (project / "docs" / "a.md").unlink()
    (project / "docs").rmdir()
    (project / "docs").symlink_to(outside)
    (project / "link.txt").unlink()
    (project / "link.txt").write_text("now a file\n")
    report = restore(service, store, str(first["commit"]))
    assert ("docs/a.md", "its folder is a symlink leading out of the workspace") in report.not_restored
    assert not (outside / "a.md").exists()
    assert (project / "link.txt").is_symlink() and os.readlink(project / "link.txt") == str(
        outside / "target.txt"
    )
    assert not (outside / "target.txt").exists()


def test_unknown_and_ambiguous_checkpoints_are_refused_in_one_sentence(project: Path) -> None:
    store = SessionStore.in_memory(project)
    service = WorkspaceCheckpoints(project, store.session_id)
    take(service, store)
    with pytest.raises(RestoreRefused, match="No checkpoint 'deadbeef'"):
        service.target(store.entries(), "deadbeef")


def test_collection_keeps_what_sessions_name_and_drops_the_rest(project: Path, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    store = SessionStore.create(project, sessions)
    service = WorkspaceCheckpoints(project, store.session_id)
    kept = take(service, store)
    store.append_message(faux_message("saved"))  # the file appears with the first reply
    (project / "app.py").write_text("changed\n")
    orphan = service.capture(None, idle=False)  # a checkpoint no session names
    repo = ShadowRepo(service.workspace)
    later = 10**10
    done = collect(sessions, now=later)
    assert done.dropped == 1
    assert repo.has_commit(str(kept["commit"])) and not repo.has_commit(str(orphan["commit"]))
    assert store.path is not None
    store.close()
    store.path.unlink()
    done = collect(sessions, now=later)
    assert done.removed == 1 and not repo.git_dir.exists()


def test_home_and_root_take_no_checkpoints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    service = WorkspaceCheckpoints(tmp_path, "s")
    assert workspace_of(tmp_path) == tmp_path.resolve()
    assert service.unavailable() is not None and "home directory" in str(service.unavailable())
