"""Pi's ``project_trust``: extensions loaded from the user's own places (and ``-e``) decide whether a project
is trusted before its own extensions load — headless through ``open_session``."""

from __future__ import annotations

import json
from pathlib import Path

from caddie.config.paths import agent_dir
from caddie.runtime.factory import SessionRequest, open_session
from caddie.runtime.trust import remembered_trust
from tests.runtime.harness import RecordingUI

VOTER = """
from caddie.extensions.api import ProjectTrustResult

SEEN = []

def register(api):
    def vote(event, ctx):
        SEEN.append((event.cwd, ctx.mode, ctx.has_ui))
        api.events.emit("voted", event.cwd)
        return ProjectTrustResult({answer!r}, remember={remember!r})
    api.on("project_trust", vote)
"""


def _project(root: Path) -> Path:
    project = root / "project"
    (project / ".caddie" / "extensions").mkdir(parents=True)
    (project / ".caddie" / "extensions" / "projext.py").write_text(
        "def register(api):\n    api.register_command('project-only', lambda args, ctx: None)\n"
    )
    path = agent_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"disabledExtensions": ["mulligan", "goal", "mcp"]}))
    return project


async def _open(project: Path, voter: Path | None) -> list[str]:
    build = await open_session(
        SessionRequest(
            cwd=str(project),
            mode="print",
            session="memory",
            require_model=False,
            ui=RecordingUI(),
            extension_paths=[str(voter)] if voter else [],
        )
    )
    await build.session.start()
    names = [c.name for c in build.session.commands()]
    await build.session.shutdown("quit")
    return names


async def test_a_yes_from_a_cli_extension_trusts_the_project_for_this_run(tmp_path: Path) -> None:
    project = _project(tmp_path)
    voter = tmp_path / "voter.py"
    voter.write_text(VOTER.format(answer="yes", remember=False))
    assert "project-only" in await _open(project, voter)
    assert remembered_trust(project) is None  # not remembered


async def test_remember_saves_the_decision_and_no_keeps_the_project_out(tmp_path: Path) -> None:
    project = _project(tmp_path)
    voter = tmp_path / "voter.py"
    voter.write_text(VOTER.format(answer="no", remember=True))
    assert "project-only" not in await _open(project, voter)
    assert remembered_trust(project) is False


async def test_undecided_leaves_the_usual_rules_and_no_voter_changes_nothing(tmp_path: Path) -> None:
    project = _project(tmp_path)
    voter = tmp_path / "voter.py"
    voter.write_text(VOTER.format(answer="undecided", remember=True))
    assert "project-only" not in await _open(project, voter)
    assert remembered_trust(project) is None
    assert "project-only" not in await _open(project, None)


async def test_a_project_extension_never_votes_on_its_own_project(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / ".caddie" / "extensions" / "selfvote.py").write_text(VOTER.format(answer="yes", remember=True))
    assert "project-only" not in await _open(project, None)
    assert remembered_trust(project) is None
