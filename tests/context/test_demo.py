"""``caddie demo``: the printed tour end to end (as CI runs it), and the interactive one under Pilot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from caddie.modes.demo import DemoResult, _goal_status, _prepare, _provider, _tests_pass, tour
from caddie.modes.interactive.context_view import ContextBlock


def test_the_printed_demo_runs_end_to_end_and_its_goal_completes(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(NO_COLOR="1", TMPDIR=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, "-m", "caddie", "demo", "--no-tui"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "goal: complete · unit tests: pass" in out
    assert out.count("Context window") == 2  # /context before and after
    assert "Tool results: bash" in out and "hidden by mulligan_rewind" in out
    assert "shrunk by mulligan_shrink" in out and "Mulligan audit" in out
    assert "The goal was not marked complete" in out  # the check refused the early claim
    assert "saved so far: mulligan \u2212" in out
    assert "throwaway repository was removed" in out
    assert not list(tmp_path.glob("caddie-demo-*"))  # nothing left behind


def test_the_demo_rejects_unknown_options() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "caddie", "demo", "--bogus"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and "caddie demo:" in proc.stderr and "Traceback" not in proc.stderr


async def test_the_interactive_demo_plays_the_tour_in_the_tui(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from caddie.modes.demo_app import DemoApp
    from caddie.modes.interactive.app import Startup
    from caddie.modes.interactive.startup import Launcher
    from caddie.runtime.factory import SessionRequest

    monkeypatch.setenv("CADDIE_DIR", str(tmp_path / "home"))
    project, _ = _prepare(tmp_path)
    faux = _provider(0)
    request = SessionRequest(
        cwd=str(project), mode="tui", model="faux/faux-1", stream_fn=faux.stream, trust=True
    )
    opened: list[object] = []
    open_session = Launcher.open_session

    async def counted(self: Launcher) -> object:
        opened.append(self.host)
        return await open_session(self)

    monkeypatch.setattr(Launcher, "open_session", counted)
    app = DemoApp(Startup(request), None, tour(), type_delay=0, pause=0)
    async with app.run_test(size=(160, 50)) as pilot:
        await app.tour_done.wait()
        await pilot.pause()
        blocks = list(app.conversation.blocks_of(ContextBlock))
        assert app.session is not None
        result = DemoResult(_goal_status(app.session), _tests_pass(project), project)
    assert opened == [app]  # one session: Textual runs CaddieApp.on_mount itself, not via super()
    assert len(blocks) == 2
    assert blocks[1].stats.used_tokens < blocks[0].stats.used_tokens / 3
    assert result.goal_status == "complete" and result.tests_pass
