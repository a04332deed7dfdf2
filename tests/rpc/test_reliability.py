"""RPC reliability: a hung ``context`` handler, over-long lines, end of input (EOF) while work is in flight."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.rpc.conftest import Host
from tests.support import fake_llm as fl

HUNG_CONTEXT = """
import asyncio

def register(api):
    async def hang(event, ctx):
        while True:  # ignores cancellation: only abandoning it can end the run
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                continue
    api.on("context", hang)
"""


def test_abort_ends_a_run_stuck_in_a_hung_context_handler_and_eof_ends_the_process(host: Host) -> None:
    ext = host.extension("hang.py", HUNG_CONTEXT)
    rpc = host.rpc("-e", ext)
    assert rpc.ok({"type": "prompt", "message": "hello"}) is None
    rpc.event("turn_start")
    started = time.monotonic()
    assert rpc.request({"type": "abort"}, timeout=10)["success"] is True
    assert time.monotonic() - started < 5
    end = rpc.wait_for(lambda o: o.get("type") == "message_end" and o["message"]["role"] == "assistant")
    assert end["message"]["stopReason"] == "aborted"
    error = rpc.event("extension_error")
    assert error["event"] == "context" and error["extensionPath"] == ext
    assert "abandoned" in error["error"]
    assert rpc.ok({"type": "get_state"})["isStreaming"] is False
    assert host.llm.llm_requests == []  # nothing was sent while the handler hung

    rpc.send({"type": "prompt", "message": "again"})  # hangs again; EOF must still end the process
    rpc.event("turn_start")
    started = time.monotonic()
    assert rpc.close(timeout=30) == 0
    assert time.monotonic() - started < 20


def test_a_line_over_the_limit_is_answered_and_skipped(host: Host) -> None:
    rpc = host.rpc(env={"CADDIE_RPC_MAX_LINE_BYTES": "1000"})
    rpc.send(json.dumps({"id": "big", "type": "prompt", "message": "x" * 5000}).encode() + b"\n")
    error = rpc.wait_for(lambda o: o.get("type") == "response")
    assert error["command"] == "parse" and error["success"] is False
    assert "over the 1000-byte limit" in error["error"]
    assert rpc.ok({"type": "get_state"})["messageCount"] == 0  # the next line is read normally
    assert host.llm.llm_requests == []
    assert rpc.close() == 0


def run_file(host: Host, lines: list[dict[str, object]], *args: str) -> list[dict[str, Any]]:
    """``caddie --mode rpc < commands.jsonl``: everything it wrote."""
    commands = host.project / "commands.jsonl"
    commands.write_text("".join(json.dumps(line) + "\n" for line in lines))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(CADDIE_DIR=str(host.home), CADDIE_OLLAMA_URL="http://127.0.0.1:9")
    with commands.open("rb") as stdin:
        result = subprocess.run(
            [sys.executable, "-m", "caddie", "--mode", "rpc", "--model", "fake/fake-model", *args],
            cwd=host.project,
            env=env,
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def saved_session(host: Host) -> str:
    """A session with two exchanges, written by a previous run."""
    host.llm.push(fl.text("answer one " * 30), fl.text("answer two " * 30))
    rpc = host.rpc()
    for text in ("one", "two"):
        rpc.ok({"type": "prompt", "message": text})
        rpc.event("agent_settled")
    path = rpc.ok({"type": "get_state"})["sessionFile"]
    assert rpc.close() == 0
    assert isinstance(path, str)
    return path


def test_eof_during_compaction_never_answers_success(host: Host) -> None:
    path = saved_session(host)
    (host.home / "agent" / "settings.json").write_text(
        json.dumps({"disabledExtensions": ["mulligan", "goal", "mcp"], "compaction": {"keepRecentTokens": 1}})
    )
    host.llm.push(fl.text("a summary that streams slowly", delay_s=0.3, chunk_size=2), fl.text("prefix"))
    before = Path(path).read_text()
    out = run_file(host, [{"id": "c", "type": "compact"}], "--session", path)
    response = next(o for o in out if o.get("id") == "c")
    assert response["success"] is False and response["error"] == "Compaction cancelled"
    end = next(o for o in out if o.get("type") == "compaction_end")
    assert end["aborted"] is True and end["result"] is None
    assert Path(path).read_text() == before  # no compaction entry was written


def test_eof_after_a_prompt_from_a_file_never_reports_a_finished_run(host: Host) -> None:
    host.llm.push(fl.text("a reply that streams slowly", delay_s=0.3, chunk_size=2))
    out = run_file(host, [{"id": "p", "type": "prompt", "message": "hello"}])
    response = next(o for o in out if o.get("id") == "p")
    ends = [
        o["message"] for o in out if o.get("type") == "message_end" and o["message"]["role"] == "assistant"
    ]
    if response["success"]:  # accepted before EOF was seen: the run was aborted, as the events say
        assert ends and ends[-1]["stopReason"] == "aborted"
    else:
        assert response["error"] == "Input ended before the prompt started; it was not run."
        assert ends == []
    assert all(end["stopReason"] != "stop" for end in ends)


DIALOG_AT_EOF = """
def register(api):
    async def ask(args, ctx):
        ok = await ctx.ui.confirm("Sure?", "really")
        ctx.ui.notify(f"answer={ok}")
    api.register_command("ask", ask)
"""


def test_eof_cancels_open_dialogs_and_commands_still_answer(host: Host) -> None:
    ext = host.extension("ask.py", DIALOG_AT_EOF)
    out = run_file(
        host, [{"id": "a", "type": "prompt", "message": "/ask"}, {"id": "s", "type": "get_state"}], "-e", ext
    )
    assert next(o for o in out if o.get("id") == "s")["success"] is True
    assert any(o.get("method") == "notify" and o.get("message") == "answer=False" for o in out)
    assert next(o for o in out if o.get("id") == "a")["success"] is True  # the command ran (with "no")


HUNG_SHUTDOWN = """
import asyncio

def register(api):
    async def never(event, ctx):
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                continue
    api.on("session_shutdown", never)
"""


def test_eof_ends_the_process_even_when_a_shutdown_handler_hangs(host: Host) -> None:
    ext = host.extension("stuck.py", HUNG_SHUTDOWN)
    rpc = host.rpc("-e", ext, env={"CADDIE_RPC_EOF_GRACE_S": "0.5"})
    assert rpc.ok({"type": "get_state"})["isStreaming"] is False
    started = time.monotonic()
    assert rpc.close(timeout=20) == 0
    assert time.monotonic() - started < 10
    assert rpc.proc.stderr is not None
    assert "did not shut down in time" in rpc.proc.stderr.read().decode()


HUNG_BEFORE_START = """
import asyncio

def register(api):
    async def hang(event, ctx):
        await asyncio.Event().wait()
    api.on("before_agent_start", hang)
"""


def test_abort_while_a_before_agent_start_handler_hangs(host: Host) -> None:
    ext = host.extension("slowstart.py", HUNG_BEFORE_START)
    rpc = host.rpc("-e", ext)
    rpc.send({"id": "p", "type": "prompt", "message": "hello"})
    time.sleep(1.0)  # the handler is waiting by now
    started = time.monotonic()
    assert rpc.request({"type": "abort"}, timeout=10)["success"] is True
    assert time.monotonic() - started < 5
    refused = rpc.wait_for(lambda o: o.get("id") == "p")
    assert (
        refused["success"] is False and refused["error"] == "The prompt was aborted before its run started."
    )
    error = rpc.event("extension_error")
    assert error["event"] == "before_agent_start" and "cancelled" in error["error"]
    assert host.llm.llm_requests == []
    assert rpc.close() == 0
