"""``ctx.shutdown()`` in RPC mode: the process ends by itself once the session is idle (the command's response
and the run come first), after ``session_shutdown``, with everything written to the session file."""

from __future__ import annotations

import json
from pathlib import Path

from tests.rpc.conftest import Host
from tests.support import fake_llm as fl

SHUTDOWN = """
import json
from pathlib import Path

LOG = Path(__file__).with_name("shutdown.log")

def register(api):
    def log(line):
        with LOG.open("a") as f:
            f.write(line + "\\n")

    def bye(args, ctx):
        log("bye")
        ctx.shutdown()

    def on_turn_end(event, ctx):
        if "during-run" in ctx.settings().get("shutdownTest", ""):
            log("requested during the run")
            ctx.shutdown()

    api.register_command("bye", bye, "quit gracefully")
    api.on("turn_end", on_turn_end)
    api.on("session_shutdown", lambda event, ctx: log(f"session_shutdown {event.reason}"))
"""


def _log(host: Host) -> list[str]:
    return (host.project / "shutdown.log").read_text().splitlines()


def test_a_command_calling_shutdown_ends_the_process_after_its_response(host: Host) -> None:
    rpc = host.rpc("-e", host.extension("bye.py", SHUTDOWN))
    rpc.ok({"type": "get_state"})
    response = rpc.request({"type": "prompt", "message": "/bye"})
    assert response["success"] is True
    assert rpc.proc.wait(20) == 0  # stdin is still open: the extension ended it
    assert _log(host) == ["bye", "session_shutdown quit"]


def test_shutdown_during_a_run_lets_the_run_finish_first(host: Host) -> None:
    settings = host.home / "agent" / "settings.json"
    data = json.loads(settings.read_text())
    settings.write_text(json.dumps({**data, "shutdownTest": "during-run"}))
    host.llm.push(fl.text("the whole answer"))
    rpc = host.rpc("-e", host.extension("bye.py", SHUTDOWN))
    rpc.ok({"type": "prompt", "message": "question"})
    settled = rpc.event("agent_settled")
    assert rpc.proc.wait(20) == 0
    assert _log(host) == ["requested during the run", "session_shutdown quit"]
    ends = [o for o in rpc.seen if o.get("type") == "message_end"]
    assert ends[-1]["message"]["role"] == "assistant"
    assert rpc.index(ends[-1]) < rpc.index(settled)
    files = sorted((host.home / "agent" / "sessions").rglob("*.jsonl"))
    lines = [json.loads(line) for line in Path(files[-1]).read_text().splitlines()]
    replies = [e for e in lines if e.get("type") == "message" and e["message"]["role"] == "assistant"]
    assert replies[-1]["message"]["content"][0]["text"] == "the whole answer"
