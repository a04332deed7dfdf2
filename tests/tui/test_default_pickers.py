"""Ctrl+S in the /model and /thinking pickers: pick the row and save it as the startup default, as Pi does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from caddie.config.paths import agent_dir
from caddie.modes.interactive.pickers import ModelPicker, ThinkingPicker
from tests.tui.harness import (
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
from tests.tui.test_model_cycling import local_models


def saved_settings() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((agent_dir() / "settings.json").read_text())
    return data


async def test_ctrl_s_in_the_model_picker_switches_and_saves_the_startup_default(tmp_path: Path) -> None:
    local_models("alpha", "beta-r")
    write_settings(theme="dark")
    app, _ = make_app(tmp_path, model="local/alpha")
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/model")
        await until(pilot, lambda: isinstance(app.screen, ModelPicker))
        hint = widget_text(app.screen.query_one("#hint"))
        await type_text(pilot, "beta")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "Default model: local/beta-r" in statuses(app))
        assert app.session is not None and app.session.model is not None
        switched = app.session.model.ref
        # The picker marks the saved default; typing "default" finds it.
        await submit(pilot, app, "/model")
        await until(pilot, lambda: isinstance(app.screen, ModelPicker))
        rows = [c.prompt.plain for c in app.screen.shown]  # type: ignore[attr-defined]
        await type_text(pilot, "default")
        found = [c.id for c in app.screen.shown]  # type: ignore[attr-defined]
        await pilot.press("escape")
    settings = saved_settings()
    assert hint == "Enter to select · Ctrl+S to set as default · Esc to cancel"  # Pi's words
    assert switched == "local/beta-r"
    assert settings["defaultProvider"] == "local" and settings["defaultModel"] == "beta-r"
    assert settings["theme"] == "dark", "the other settings stay"
    assert rows[0].startswith("local/beta-r") and "· default" in rows[0] and "✓ current" in rows[0]
    assert "· default" not in rows[1]
    assert found == ["local/beta-r"]


async def test_enter_in_the_model_picker_does_not_touch_the_default(tmp_path: Path) -> None:
    local_models("alpha", "beta-r")
    app, _ = make_app(tmp_path, model="local/alpha")
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/model")
        await until(pilot, lambda: isinstance(app.screen, ModelPicker))
        await type_text(pilot, "beta")
        await pilot.press("enter")
        await until(pilot, lambda: "Model: local/beta-r" in statuses(app))
    assert "defaultModel" not in saved_settings()


async def test_a_saved_default_model_joins_the_model_scope(tmp_path: Path) -> None:
    local_models("alpha", "beta-r", "gamma")
    write_settings(enabledModels=["local/alpha", "local/gamma"])
    app, _ = make_app(tmp_path, model="local/alpha")
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/model")
        await until(pilot, lambda: isinstance(app.screen, ModelPicker))
        await type_text(pilot, "beta")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "Default model: local/beta-r" in statuses(app))
        assert app.session is not None
        scope = [m.ref for m in app.session.state().scoped_models]
    assert scope == ["local/alpha", "local/gamma", "local/beta-r"]
    assert saved_settings()["enabledModels"] == ["local/alpha", "local/gamma", "local/beta-r"]


async def test_ctrl_s_in_the_thinking_picker_saves_the_default_thinking_level(tmp_path: Path) -> None:
    local_models("beta-r")
    app, _ = make_app(tmp_path, model="local/beta-r")
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/thinking")
        await until(pilot, lambda: isinstance(app.screen, ThinkingPicker))
        picker = app.screen
        rows = {c.id: c.prompt.plain for c in picker.shown}  # type: ignore[attr-defined]
        message = widget_text(picker.query_one("#message"))
        await type_text(pilot, "high")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "Default thinking level: high" in statuses(app))
        assert app.session is not None
        level = app.session.thinking_level
        # Enter changes the session's level only.
        await submit(pilot, app, "/thinking")
        await until(pilot, lambda: isinstance(app.screen, ThinkingPicker))
        marked = [c.id for c in app.screen.shown if "· default" in c.prompt.plain]  # type: ignore[attr-defined]
        await type_text(pilot, "low")
        await pilot.press("enter")
        await until(pilot, lambda: "Thinking level: low" in statuses(app))
    assert "Moderate reasoning (~8k tokens) · default" in rows["medium"], "medium is the default when unset"
    assert message == "Shift+Tab cycles thinking levels in-session"
    assert level == "high"
    assert marked == ["high"]
    assert saved_settings()["defaultThinkingLevel"] == "high"


async def test_a_default_that_cannot_be_saved_is_said_and_the_switch_stays(tmp_path: Path) -> None:
    local_models("alpha", "beta-r")
    (agent_dir() / "settings.json").write_text("{ not json")
    app, _ = make_app(tmp_path, model="local/alpha")
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/model")
        await until(pilot, lambda: isinstance(app.screen, ModelPicker))
        await type_text(pilot, "beta")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "Could not save" in " ".join(widget_text(app.conversation).split()))
        assert app.session is not None and app.session.model is not None
        ref = app.session.model.ref
    assert ref == "local/beta-r"
    assert "Default model: local/beta-r" not in statuses(app)
