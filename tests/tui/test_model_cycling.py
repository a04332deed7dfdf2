"""Ctrl+P / Shift+Ctrl+P cycle the model through the scoped models (settings ``enabledModels``)."""

from __future__ import annotations

import json
from pathlib import Path

from caddie.config.paths import agent_dir
from caddie.modes.interactive.scoped_models import ScopedModelsScreen
from caddie.session.entries import ModelChangeEntry
from tests.tui.harness import (
    LARGE,
    SMALL,
    make_app,
    ready,
    statuses,
    submit,
    type_text,
    until,
    widget_text,
    write_settings,
)


def local_models(*ids: str) -> None:
    """A keyless local server (so the models count as usable) with ``ids``; nothing is ever sent to it."""
    models = {
        "providers": {
            "local": {
                "baseUrl": "http://127.0.0.1:9/v1",
                "api": "openai-completions",
                "models": [{"id": i, "reasoning": i.endswith("r")} for i in ids],
            }
        }
    }
    (agent_dir() / "models.json").parent.mkdir(parents=True, exist_ok=True)
    (agent_dir() / "models.json").write_text(json.dumps(models))


async def test_ctrl_p_cycles_forward_and_shift_ctrl_p_backward(tmp_path: Path) -> None:
    local_models("alpha", "beta-r", "gamma")
    write_settings(enabledModels=["local/alpha", "local/beta-r:high", "local/gamma"])
    app, _ = make_app(tmp_path, model="local/alpha")
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        assert app.session is not None
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert app.session.model is not None and app.session.model.id == "beta-r"
        assert app.session.thinking_level == "high"  # the pattern's :high
        await pilot.press("ctrl+p")
        await pilot.pause()
        level: str = app.session.thinking_level  # a new read: the key press changed it
        assert app.session.model.id == "gamma" and level == "off"
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert app.session.model.id == "alpha"  # wraps around
        await pilot.press("ctrl+shift+p")
        await pilot.pause()
        assert app.session.model.id == "gamma"
        changes = [e.model_id for e in app.session.store.entries() if isinstance(e, ModelChangeEntry)]
        assert changes == ["alpha", "beta-r", "gamma", "alpha", "gamma"]  # every switch is recorded


async def test_ctrl_p_with_one_model_says_so(tmp_path: Path) -> None:
    local_models("alpha")
    app, _ = make_app(tmp_path, model="local/alpha")
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        assert app.session is not None
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert app.session.model is not None and app.session.model.id == "alpha"
        assert any("No other model" in m for m in statuses(app))


async def test_scoped_models_enables_reorders_and_saves_what_ctrl_p_cycles(tmp_path: Path) -> None:
    local_models("alpha", "beta", "gamma", "delta")
    app, _ = make_app(tmp_path, model="local/alpha")
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        assert app.session is not None
        await submit(pilot, app, "/scoped-models")
        await until(pilot, lambda: isinstance(app.screen, ScopedModelsScreen))
        screen = app.screen
        assert isinstance(screen, ScopedModelsScreen)
        assert screen.enabled is None  # no scope: every model
        screen.highlight(next(i for i, c in enumerate(screen.shown) if c.id == "local/gamma"))
        await pilot.press("enter")  # the first switch: gamma alone
        assert screen.enabled == ["local/gamma"]
        screen.highlight(next(i for i, c in enumerate(screen.shown) if c.id == "local/alpha"))
        await pilot.press("enter")
        await pilot.press("alt+up")  # alpha before gamma in the cycle
        assert screen.enabled == ["local/alpha", "local/gamma"]
        assert [c.id for c in screen.shown][:2] == ["local/alpha", "local/gamma"]
        assert "(unsaved)" in widget_text(screen.query_one("#hint"))
        assert [m.id for m in app.session.state().scoped_models] == [
            "alpha",
            "gamma",
        ]  # at once, for the session
        await pilot.press("ctrl+s")
        await pilot.pause()
        saved = json.loads((agent_dir() / "settings.json").read_text())["enabledModels"]
        await type_text(pilot, "bet")
        await pilot.press("ctrl+a")  # every model the filter shows: beta joins
        with_beta = screen.enabled
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ScopedModelsScreen))
        await pilot.press("ctrl+p")
        await pilot.pause()
        first_cycle = app.session.model.id if app.session.model else None
        await pilot.press("ctrl+p")
        await pilot.pause()
        second_cycle = app.session.model.id if app.session.model else None
    assert saved == ["local/alpha", "local/gamma"]
    assert with_beta == ["local/alpha", "local/gamma", "local/beta"]
    assert (first_cycle, second_cycle) == ("gamma", "beta")


async def test_scoped_models_clear_all_and_provider(tmp_path: Path) -> None:
    local_models("alpha", "beta")
    models = json.loads((agent_dir() / "models.json").read_text())
    models["providers"]["other"] = {**models["providers"]["local"], "models": [{"id": "omega"}]}
    (agent_dir() / "models.json").write_text(json.dumps(models))
    app, _ = make_app(tmp_path, model="local/alpha")
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/scoped-models")
        await until(pilot, lambda: isinstance(app.screen, ScopedModelsScreen))
        screen = app.screen
        assert isinstance(screen, ScopedModelsScreen)
        await pilot.press("ctrl+x")
        cleared = screen.enabled
        screen.highlight(next(i for i, c in enumerate(screen.shown) if c.id == "local/beta"))
        await pilot.press("ctrl+p")  # every model of local's provider
        provider_on = list(screen.enabled or [])
        await pilot.press("ctrl+p")
        provider_off = screen.enabled
        await pilot.press("ctrl+a")
        everything = screen.enabled
    assert cleared == []
    assert provider_on == ["local/alpha", "local/beta"]
    assert provider_off == []
    assert everything is None  # all on again is no scope at all
