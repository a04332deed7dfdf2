"""Pi 0.84.4's session commands caddie lacked: /clone, /export to JSONL, /import, /share (a secret gist through
the real ``gh`` command line, here a stand-in script on PATH) and /trust."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from caddie.ai.providers.faux import faux_message
from caddie.modes.interactive.conversation import InfoBlock
from caddie.runtime.trust import remembered_trust
from caddie.session.store import SessionStore
from tests.tui.harness import SMALL, make_app, ready, settle, submit, until, widget_text, write_settings


def last_info(app: object) -> str:
    """The newest notice, its lines joined (a long one wraps on the small test screen)."""
    blocks = app.conversation.blocks_of(InfoBlock)  # type: ignore[attr-defined]
    return " ".join(widget_text(blocks[-1]).split()) if blocks else ""


async def test_clone_copies_the_branch_into_a_new_session(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, [faux_message("first answer")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "hello")
        await settle(app, pilot)
        assert app.session is not None
        before = app.session.store.session_id
        await submit(pilot, app, "/clone")
        await until(pilot, lambda: app.session is not None and app.session.store.session_id != before)
        texts = [getattr(m, "content", None) for m in app.session.messages]
    assert len(texts) == 2 and app.session.store.header.parent_session is not None


async def test_export_jsonl_then_import_resumes_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    app, _ = make_app(project, [faux_message("the answer")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "remember this")
        await settle(app, pilot)
        await submit(pilot, app, "/export ../saved.jsonl")
        await until(pilot, lambda: "Exported the session to" in last_info(app))
        assert app.session is not None
        original = app.session.store.session_id
        await submit(pilot, app, "/new")
        await until(pilot, lambda: app.session is not None and app.session.store.session_id != original)
        await submit(pilot, app, "/import ../nothing.jsonl")
        await until(pilot, lambda: "No session file at" in last_info(app))
        await submit(pilot, app, "/import ../saved.jsonl")
        await until(pilot, lambda: app.session is not None and app.session.store.session_id == original)
        imported = app.session.store.path
    saved = tmp_path / "saved.jsonl"
    lines = [json.loads(line) for line in saved.read_text().splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["id"] == original
    assert imported is not None and imported.parent != tmp_path and imported.name == "saved.jsonl"
    assert [e.id for e in SessionStore.open(imported, repair=False).entries()] == [
        line["id"] for line in lines[1:]
    ]


def fake_gh(folder: Path, script: str) -> None:
    folder.mkdir()
    gh = folder / "gh"
    gh.write_text("#!/bin/sh\n" + script)
    gh.chmod(gh.stat().st_mode | stat.S_IEXEC)


async def test_share_uploads_a_secret_gist_or_says_gh_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    uploads = tmp_path / "uploads.txt"
    fake_gh(
        tmp_path / "bin",
        f'echo "$@" > {uploads}; cp "$5" {tmp_path}/shared.html\necho https://gist.github.com/abc123\n',
    )
    app, _ = make_app(project, [faux_message("shared answer")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "hi")
        await settle(app, pilot)
        monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
        await submit(pilot, app, "/share")
        await until(pilot, lambda: "GitHub CLI, which is not installed" in last_info(app))
        monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin")
        await submit(pilot, app, "/share")
        await until(
            pilot, lambda: "Shared as a secret gist: https://gist.github.com/abc123" in last_info(app), 15
        )
    args = uploads.read_text().split()
    assert args[:2] == ["gist", "create"] and "--public" not in args
    assert "shared answer" in (tmp_path / "shared.html").read_text()


async def test_trust_saves_the_decision_for_the_next_start(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    app, _ = make_app(project)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/trust maybe")
        await until(pilot, lambda: "Usage: /trust [parent|no]" in last_info(app))
        await submit(pilot, app, "/trust")
        await until(pilot, lambda: "is trusted from the next start" in last_info(app))
        assert remembered_trust(project) is True
        await submit(pilot, app, "/trust no")
        await until(pilot, lambda: "is not trusted from the next start" in last_info(app))
        assert remembered_trust(project) is False
        await submit(pilot, app, "/trust parent")
        await until(pilot, lambda: f"{tmp_path.resolve()} is trusted from the next start" in last_info(app))
    assert remembered_trust(tmp_path / "elsewhere") is True and remembered_trust(project) is False


async def test_settings_external_editor_wins_over_visual(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_gh(tmp_path / "bin", "")  # the folder; the editors are scripts beside it
    mine = tmp_path / "bin" / "mine"
    mine.write_text('#!/bin/sh\nprintf "%s from settings" "$(cat "$2")" > "$2"\n')
    mine.chmod(0o755)
    visual = tmp_path / "bin" / "visual"
    visual.write_text('#!/bin/sh\nprintf "from VISUAL" > "$1"\n')
    visual.chmod(0o755)
    monkeypatch.setenv("VISUAL", str(visual))
    write_settings(externalEditor=f"{mine} --wait")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        app.editor.set_text("draft")
        await pilot.press("ctrl+g")
        await until(pilot, lambda: app.editor.text == "draft from settings")
