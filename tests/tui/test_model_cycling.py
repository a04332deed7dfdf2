"""Ctrl+P / Shift+Ctrl+P cycle the model through the scoped models (settings ``enabledModels``)."""

from __future__ import annotations

import json
from pathlib import Path

from caddie.config.paths import agent_dir
from caddie.session.entries import ModelChangeEntry
from tests.tui.harness import SMALL, make_app, ready, statuses, write_settings


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
