"""``ctx.shutdown()`` in print and json mode: the current run settles, the prompts left are not sent, and the
process exits after ``session_shutdown`` with the session written."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import Caddie
from tests.support import fake_llm as fl

EXTENSION = """
from pathlib import Path

LOG = Path(__file__).with_name("shutdown.log")

def register(api):
    def log(line):
        with LOG.open("a") as f:
            f.write(line + "\\n")

    def on_agent_end(event, ctx):
        log("agent_end")
        ctx.shutdown()

    api.on("agent_end", on_agent_end)
    api.on("session_shutdown", lambda event, ctx: log(f"session_shutdown {event.reason}"))
"""


@pytest.mark.parametrize("mode", [["-p"], ["--mode", "json"]])
def test_shutdown_ends_the_run_and_skips_the_prompts_left(caddie: Caddie, mode: list[str]) -> None:
    ext = caddie.project / "bye.py"
    ext.write_text(EXTENSION)
    caddie.llm.push(fl.text("first answer"), fl.text("never asked"))
    result = caddie.run(*mode, "-e", str(ext), "first question", "second question")
    assert result.returncode == 0, result.stderr
    assert len(caddie.llm.requests) == 1
    assert (caddie.project / "shutdown.log").read_text().splitlines() == [
        "agent_end",
        "session_shutdown quit",
    ]
    if mode == ["-p"]:
        assert result.stdout == "first answer\n"
    else:
        events = [json.loads(line) for line in result.stdout.splitlines()]
        assert events[-1]["type"] == "agent_settled"
    entries = [json.loads(line) for line in caddie.session_files()[-1].read_text().splitlines()]
    texts = [
        e["message"]["content"][0]["text"]
        for e in entries
        if e.get("type") == "message" and e["message"]["role"] in ("user", "assistant")
    ]
    assert texts == ["first question", "first answer"]
