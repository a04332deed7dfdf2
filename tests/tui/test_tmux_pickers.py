"""Ctrl+S in the /model and /thinking pickers in a real terminal: typed-ahead filter keys come first (a key
binding that jumped the queue saved the row highlighted before the filter), and Ctrl+S is not flow control."""

from __future__ import annotations

import json
from pathlib import Path

from tests.tui.tmux import caddie_command, tmux_server

MODELS = {
    "providers": {
        "local": {
            "baseUrl": "http://127.0.0.1:9/v1",
            "api": "openai-completions",
            "models": [{"id": "beta-r", "reasoning": True}, {"id": "alpha"}],
        }
    }
}


def test_ctrl_s_saves_the_filtered_model_and_thinking_level(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "caddie-home"
    project.mkdir()
    (home / "agent").mkdir(parents=True)
    (home / "agent" / "settings.json").write_text(json.dumps({"theme": "dark"}))
    (home / "agent" / "models.json").write_text(json.dumps(MODELS))
    with tmux_server(tmp_path) as tmux:
        tmux.type(caddie_command(project, home, "--model local/beta-r"))
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "local/beta-r" in s and "Type a message" in s, "the interactive UI")
        tmux.type("/thinking")
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "Ctrl+S to set as default" in s, "the thinking picker")
        tmux.type("high")
        tmux.keys("C-s")  # at once, as a fast typist does
        tmux.wait_for(lambda s: "Default thinking level: high" in s, "the saved thinking level")
        tmux.type("/model")
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "Choose a model" in s, "the model picker")
        tmux.type("alpha")
        tmux.keys("C-s")
        screen = tmux.wait_for(lambda s: "Default model: local/alpha" in s, "the saved model")
        tmux.keys("C-c")
        tmux.keys("C-c")
        tmux.wait_for(lambda s: s.rstrip().endswith("$"), "the shell after caddie quit")
    settings = json.loads((home / "agent" / "settings.json").read_text())
    assert settings["defaultProvider"] == "local" and settings["defaultModel"] == "alpha"
    assert settings["defaultThinkingLevel"] == "high"
    assert "local/alpha" in screen.splitlines()[-2], "the footer shows the new model"
