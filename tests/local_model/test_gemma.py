"""caddie against a real model server nobody here wrote: llama-cpp-python's OpenAI-compatible server with Gemma
3 270M (see conftest.py). The model is tiny and mostly wrong, so these tests assert structure — the stream,
stop reasons, usage (this server reports none: caddie's estimate, from the server's own tokenizer), exit codes,
the goal stopping on its budget — never the model's words.

The prompts ask for text that runs on (a count, a story), so answers usually stream until ``maxTokens``; an
empty answer (which this model also gives) must end just as cleanly.
"""

from __future__ import annotations

import json
from typing import Any

from tests.local_model.conftest import MAX_TOKENS, MODEL_ID, Caddie

RUN_ON = "Continue the story: Once upon a time, there was"


def assistant_messages(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        e["message"] for e in entries if e.get("type") == "message" and e["message"]["role"] == "assistant"
    ]


def text_of(message: dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")


def check_reply(message: dict[str, Any]) -> None:
    """What every reply of this server must look like once caddie stored it."""
    assert message["stopReason"] in ("stop", "length", "toolUse"), message
    assert message["provider"] == "llamacpp" and message["model"] == MODEL_ID
    usage = message["usage"]
    assert usage["estimated"] is True  # the server reports no usage: caddie's estimate, marked
    assert usage["input"] > 100  # the system prompt alone, counted by the server's tokenizer
    assert usage["totalTokens"] == usage["input"] + usage["output"]
    if message["stopReason"] == "length":
        assert usage["output"] >= 1
    assert usage["output"] <= MAX_TOKENS + 8  # what the server's tokenizer finds in the text it sent


def test_print_mode(caddie: Caddie) -> None:
    result = caddie.run("-p", RUN_ON)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    [reply] = assistant_messages(caddie.last_session())
    check_reply(reply)
    assert result.stdout.strip() == text_of(reply).strip()
    assert "/extras/tokenize/count" in caddie.server.log.read_text()  # counted by the server's tokenizer


def test_json_mode_streams_the_answer(caddie: Caddie) -> None:
    result = caddie.run("--mode", "json", "Count from 1 to 30, separated by commas.")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "session" and "agent_start" in types and types.count("agent_end") == 1
    [end] = [e for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant"]
    check_reply(end["message"])
    deltas = [
        e["assistantMessageEvent"]["delta"]
        for e in events
        if e["type"] == "message_update" and e["assistantMessageEvent"]["type"] == "text_delta"
    ]
    assert "".join(deltas) == text_of(end["message"])  # streamed piece by piece, nothing lost or added
    if text_of(end["message"]):
        assert types.index("message_update") < events.index(end)


def test_rpc_prompt_and_session_stats(caddie: Caddie) -> None:
    proc = caddie.popen("--mode", "rpc")
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps({"id": "p1", "type": "prompt", "message": RUN_ON}) + "\n")
        proc.stdin.flush()
        seen: list[dict[str, Any]] = []
        for line in proc.stdout:
            seen.append(json.loads(line))
            if seen[-1].get("type") == "agent_end":
                break
        assert {"id": "p1", "type": "response", "command": "prompt", "success": True} in seen
        [end] = [e for e in seen if e.get("type") == "message_end" and e["message"]["role"] == "assistant"]
        check_reply(end["message"])
        proc.stdin.write(json.dumps({"id": "s1", "type": "get_session_stats"}) + "\n")
        proc.stdin.flush()
        stats = next(o for o in map(json.loads, proc.stdout) if o.get("id") == "s1")
        assert stats["success"] is True
        assert stats["data"]["tokensEstimated"] is True and stats["data"]["contextUsage"]["estimated"] is True
        assert stats["data"]["tokens"]["input"] == end["message"]["usage"]["input"]
        proc.stdin.close()
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in (proc.stderr.read() if proc.stderr else "")


def test_a_budgeted_headless_goal_stops_on_its_budget(caddie: Caddie) -> None:
    result = caddie.run(
        "-p",
        "--goal",
        "write hello.txt containing hello",
        "--goal-budget",
        "600",
        "--goal-check",
        "test -f hello.txt",
    )
    assert result.returncode == 3, result.stdout + result.stderr  # budget reached
    assert "Goal budget reached: ≈" in result.stderr
    assert "Traceback" not in result.stderr
    entries = caddie.last_session()
    replies = assistant_messages(entries)
    assert 1 <= len(replies) <= 3
    for reply in replies:
        check_reply(reply)
    [state] = [e["data"] for e in entries if e.get("customType") == "goal:state"][-1:]
    assert state["status"] == "budget_limited" and state["tokensEstimated"] is True
    assert state["tokensUsed"] == sum(r["usage"]["input"] + r["usage"]["output"] for r in replies)
