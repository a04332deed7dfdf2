"""The first prompt of a process never freezes the UI: no event-loop callback may take over 100 ms.

The provider SDK (``openai``, ``anthropic``) takes a second or two to import; imported on the event loop it
froze the screen on the first prompt. The probe runs in a fresh interpreter (so the SDK is not imported
yet) against the fake LLM server with the real SDK, with asyncio's slow-callback detection on from the
moment the UI is ready. ``CADDIE_SLOW_CALLBACK_S`` raises the limit on a very slow machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import fake_llm as fl

REPO = Path(__file__).resolve().parents[2]
LIMIT_S = float(os.environ.get("CADDIE_SLOW_CALLBACK_S", "0.1"))


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_first_prompt_runs_without_slow_event_loop_callbacks(tmp_path: Path, api: str) -> None:
    home = Path(os.environ["CADDIE_DIR"])
    with fl.FakeLLM() as llm:
        llm.write_models_json(home / "agent", api=api)
        llm.push(fl.text("Hello back from the fake server."))
        done = subprocess.run(
            [sys.executable, "-m", "tests.tui.first_prompt_probe", str(tmp_path / "project"), "fake/fake-model",
             str(LIMIT_S)],
            cwd=REPO, capture_output=True, text=True, timeout=180,
            env={**os.environ, "PYTHONASYNCIODEBUG": ""},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["answer"] == "Hello back from the fake server."
    assert report["slow"] == [], f"callbacks over {LIMIT_S * 1000:.0f} ms on the event loop: {report['slow']}"
