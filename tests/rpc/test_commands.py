"""Every RPC command of Pi 0.84.4, with Pi's response shapes (docs/rpc.md), against ``caddie --mode rpc``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.rpc.conftest import Host
from tests.support import fake_llm as fl

STATE_KEYS = [
    "model",
    "thinkingLevel",
    "isStreaming",
    "isCompacting",
    "steeringMode",
    "followUpMode",
    "sessionFile",
    "sessionId",
    "autoCompactionEnabled",
    "messageCount",
    "pendingMessageCount",
]


def test_state_models_thinking_and_modes(host: Host) -> None:
    rpc = host.rpc()
    state = rpc.ok({"type": "get_state"})
    assert list(state) == STATE_KEYS  # no sessionName until one is set; nothing caddie-only
    assert state["model"] == {
        "id": "fake-model",
        "name": "Fake Model",
        "api": "openai-completions",
        "provider": "fake",
        "baseUrl": host.llm.openai_base_url,
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 100_000,
        "maxTokens": 16_384,
    }
    assert state["steeringMode"] == "one-at-a-time" and state["autoCompactionEnabled"] is True

    models = rpc.ok({"type": "get_available_models"})["models"]
    assert [m["id"] for m in models] == ["fake-model", "fake-model-2", "fake-reasoner"]
    assert rpc.ok({"type": "get_available_thinking_levels"}) == {"levels": ["off"]}
    assert rpc.request({"type": "cycle_thinking_level"})["data"] is None  # present and null, as Pi

    cycled = rpc.ok({"type": "cycle_model"})
    assert cycled["model"]["id"] == "fake-model-2" and cycled["isScoped"] is False
    assert cycled["thinkingLevel"] == "off"

    assert (
        rpc.ok({"type": "set_model", "provider": "fake", "modelId": "fake-reasoner"})["id"] == "fake-reasoner"
    )
    assert rpc.ok({"type": "get_available_thinking_levels"}) == {
        "levels": ["off", "minimal", "low", "medium", "high"]
    }
    response = rpc.request({"type": "set_thinking_level", "level": "medium"})
    assert {k: v for k, v in response.items() if k != "id"} == {
        "type": "response",
        "command": "set_thinking_level",
        "success": True,
    }
    changed = rpc.event("thinking_level_changed")
    assert changed == {"type": "thinking_level_changed", "level": "medium", "_taken": True}
    assert rpc.ok({"type": "cycle_thinking_level"}) == {"level": "high"}
    assert rpc.ok({"type": "cycle_thinking_level"}) == {"level": "off"}  # xhigh/max need a thinking map
    bad = rpc.request({"type": "set_model", "provider": "fake", "modelId": "nope"})
    assert bad["success"] is False and bad["error"] == "Model not found: fake/nope"

    for command in (
        {"type": "set_steering_mode", "mode": "all"},
        {"type": "set_follow_up_mode", "mode": "all"},
        {"type": "set_auto_compaction", "enabled": False},
        {"type": "set_auto_retry", "enabled": False},
        {"type": "abort_retry"},
        {"type": "abort_bash"},
    ):
        response = rpc.request(command)
        assert response["success"] is True and "data" not in response, response
    state = rpc.ok({"type": "get_state"})
    assert state["steeringMode"] == "all" and state["followUpMode"] == "all"
    assert state["autoCompactionEnabled"] is False and state["thinkingLevel"] == "off"
    assert rpc.request({"type": "set_steering_mode", "mode": "sometimes"})["success"] is False
    assert rpc.close() == 0
    saved = json.loads((host.home / "agent" / "settings.json").read_text())  # saved as Pi saves them
    assert saved["steeringMode"] == "all" and saved["followUpMode"] == "all"
    assert saved["compaction"]["enabled"] is False and saved["retry"]["enabled"] is False


def test_scoped_models_cycle_with_their_thinking_level(host: Host) -> None:
    rpc = host.rpc("--models", "fake/fake-reasoner:high,fake/fake-model")
    first = rpc.ok({"type": "cycle_model"})
    assert first["model"]["id"] == "fake-reasoner" and first["thinkingLevel"] == "high"
    assert first["isScoped"] is True
    assert rpc.ok({"type": "cycle_model"})["model"]["id"] == "fake-model"
    assert rpc.close() == 0


def test_prompt_events_usage_and_tool_call_start(host: Host) -> None:
    host.llm.push(
        fl.tool_call("bash", {"command": "echo hi"}, id="call_7", usage=fl.UsageSpec(100, 20)),
        fl.text("done", usage=fl.UsageSpec(150, 5)),
    )
    rpc = host.rpc()
    response = rpc.request({"type": "prompt", "message": "go"})
    assert response == {"id": "r1", "type": "response", "command": "prompt", "success": True}
    rpc.event("agent_settled")
    updates = [o for o in rpc.seen if o.get("type") == "message_update"]
    assert all(set(u) - {"_taken"} == {"type", "usage", "assistantMessageEvent"} for u in updates)
    assert all("partial" not in u["assistantMessageEvent"] for u in updates)
    start = next(
        u["assistantMessageEvent"] for u in updates if u["assistantMessageEvent"]["type"] == "toolcall_start"
    )
    assert start == {"type": "toolcall_start", "contentIndex": 0, "id": "call_7", "toolName": "bash"}
    assert updates[-1]["usage"]["input"] == 150 and "totalTokens" in updates[-1]["usage"]
    turn_start = rpc.event("turn_start")
    assert set(turn_start) - {"_taken"} == {"type"}
    assert rpc.ok({"type": "get_last_assistant_text"}) == {"text": "done"}
    assert rpc.close() == 0


def test_second_prompt_at_once_is_refused_in_its_response(host: Host) -> None:
    host.llm.push(fl.text("slow reply that takes a while", delay_s=0.1, chunk_size=2), fl.text("queued"))
    rpc = host.rpc()
    rpc.send({"id": "a", "type": "prompt", "message": "first"})
    rpc.send({"id": "b", "type": "prompt", "message": "second"})
    first = rpc.wait_for(lambda o: o.get("id") == "a")
    second = rpc.wait_for(lambda o: o.get("id") == "b")
    assert first["success"] is True
    assert second["success"] is False
    assert second["error"] == (
        "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
    )
    queued = rpc.request({"type": "prompt", "message": "third", "streamingBehavior": "followUp"})
    assert queued["success"] is True
    rpc.event("agent_settled")
    assert [m["role"] for m in rpc.ok({"type": "get_messages"})["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert rpc.close() == 0


EXT_COMMAND = """
import asyncio

def register(api):
    async def slow(args, ctx):
        await asyncio.sleep(0.5)
        ctx.ui.notify("slow done")
    api.register_command("slow", slow, description="Takes its time")
"""


def test_extension_command_prompt_is_answered_after_its_handler(host: Host) -> None:
    ext = host.extension("slow.py", EXT_COMMAND)
    rpc = host.rpc("-e", ext)
    response = rpc.request({"type": "prompt", "message": "/slow"})
    notice = next(o for o in rpc.seen if o.get("method") == "notify")
    assert response["success"] is True
    assert rpc.index(notice) < rpc.index(next(o for o in rpc.seen if o.get("id") == "r1"))
    commands = rpc.ok({"type": "get_commands"})["commands"]
    assert commands == [
        {
            "name": "slow",
            "description": "Takes its time",
            "source": "extension",
            "sourceInfo": {"path": ext, "source": "cli", "scope": "temporary", "origin": "top-level"},
        }
    ]
    assert rpc.close() == 0


def test_abort_is_answered_once_the_run_has_ended(host: Host) -> None:
    host.llm.push(fl.stall(after_events=2, seconds=30))
    rpc = host.rpc()
    rpc.ok({"type": "prompt", "message": "hang"})
    rpc.event("message_update")
    response = rpc.request({"type": "abort"})
    assert response["success"] is True
    settled = next(o for o in rpc.seen if o.get("type") == "agent_settled")
    assert rpc.index(settled) < rpc.index(next(o for o in rpc.seen if o.get("id") == response["id"]))
    assert rpc.ok({"type": "get_state"})["isStreaming"] is False
    assert rpc.close() == 0


def test_bash_streams_and_returns_pi_bash_result(host: Host) -> None:
    rpc = host.rpc()
    data = rpc.ok({"type": "bash", "command": "printf 'one\\n'; printf 'two\\n'"})
    assert data == {"output": "one\ntwo\n", "exitCode": 0, "cancelled": False, "truncated": False}
    deltas = [o for o in rpc.seen if o.get("type") == "bash_execution_update"]
    assert deltas and all(d["id"] == "r1" for d in deltas)
    assert "".join(d["delta"] for d in deltas) == "one\ntwo\n"
    assert not [o for o in rpc.seen if o.get("type") in ("message_start", "message_end")]
    messages = rpc.ok({"type": "get_messages"})["messages"]
    assert messages[-1]["role"] == "bashExecution" and messages[-1]["output"] == "one\ntwo\n"

    failing = rpc.ok({"type": "bash", "command": "echo oops; exit 3"})
    assert failing["exitCode"] == 3 and failing["output"] == "oops\n"

    rpc.send({"id": "long", "type": "bash", "command": "echo started; sleep 30"})
    rpc.wait_for(lambda o: o.get("type") == "bash_execution_update" and o.get("id") == "long")
    assert rpc.request({"type": "abort_bash"})["success"] is True
    cancelled = rpc.wait_for(lambda o: o.get("id") == "long", timeout=10)
    assert cancelled["data"] == {"output": "started\n", "cancelled": True, "truncated": False}

    big = rpc.ok({"type": "bash", "command": "seq 1 5000"})
    assert big["truncated"] is True and big["output"].rstrip("\n").endswith("\n5000")
    full = Path(big["fullOutputPath"])
    assert full.read_text().splitlines()[-1] == "5000" and (full.stat().st_mode & 0o777) == 0o600
    assert rpc.close() == 0


def test_session_name_entries_tree_and_stats(host: Host) -> None:
    host.llm.push(fl.text("first answer", usage=fl.UsageSpec(300, 10)))
    rpc = host.rpc()
    blank = rpc.request({"type": "set_session_name", "name": "   "})
    assert blank["success"] is False and blank["error"] == "Session name cannot be empty"
    named = rpc.request({"type": "set_session_name", "name": "  my work  "})
    info = next(o for o in rpc.seen if o.get("type") == "session_info_changed")
    assert info["name"] == "my work"
    assert rpc.index(info) < rpc.index(next(o for o in rpc.seen if o.get("id") == named["id"]))
    assert rpc.ok({"type": "get_state"})["sessionName"] == "my work"

    rpc.ok({"type": "prompt", "message": "hello"})
    rpc.event("agent_settled")
    entries = rpc.ok({"type": "get_entries"})
    assert entries["leafId"] == entries["entries"][-1]["id"]
    assert [e["type"] for e in entries["entries"]][:2] == ["model_change", "thinking_level_change"]
    since = rpc.ok({"type": "get_entries", "since": entries["entries"][-2]["id"]})
    assert [e["id"] for e in since["entries"]] == [entries["leafId"]]
    missing = rpc.request({"type": "get_entries", "since": "nope"})
    assert missing["success"] is False and missing["error"] == "Entry not found: nope"
    tree = rpc.ok({"type": "get_tree"})
    assert tree["leafId"] == entries["leafId"] and "label" not in tree["tree"][0]

    stats = rpc.ok({"type": "get_session_stats"})
    assert list(stats) == [
        "sessionFile",
        "sessionId",
        "userMessages",
        "assistantMessages",
        "toolCalls",
        "toolResults",
        "totalMessages",
        "tokens",
        "cost",
        "contextUsage",
    ]
    assert stats["tokens"] == {"input": 300, "output": 10, "cacheRead": 0, "cacheWrite": 0, "total": 310}
    assert stats["userMessages"] == 1 and stats["assistantMessages"] == 1 and stats["totalMessages"] == 2
    assert set(stats["contextUsage"]) == {"tokens", "contextWindow", "percent"}
    assert rpc.close() == 0


def test_compact_returns_the_result_and_stats_cover_the_whole_session(host: Host) -> None:
    (host.home / "agent" / "settings.json").write_text(
        json.dumps({"disabledExtensions": ["mulligan", "goal", "mcp"], "compaction": {"keepRecentTokens": 1}})
    )
    host.llm.push(
        fl.text("answer one " * 20, usage=fl.UsageSpec(400, 25)),
        fl.text("answer two", usage=fl.UsageSpec(500, 5)),
        fl.text("## Goal\nsummary", usage=fl.UsageSpec(60, 8)),
        fl.text("prefix", usage=fl.UsageSpec(7, 1)),
    )
    rpc = host.rpc()
    for text in ("one", "two"):
        rpc.ok({"type": "prompt", "message": text})
        rpc.event("agent_settled")
    result = rpc.ok({"type": "compact", "customInstructions": "keep it short"})
    assert list(result) == [
        "summary",
        "firstKeptEntryId",
        "tokensBefore",
        "estimatedTokensAfter",
        "usage",
        "details",
    ]
    assert result["summary"].startswith("## Goal\nsummary") and isinstance(
        result["estimatedTokensAfter"], int
    )
    end = rpc.event("compaction_end")
    assert (
        end["result"]["summary"] == result["summary"]
        and end["aborted"] is False
        and "errorMessage" not in end
    )
    stats = rpc.ok({"type": "get_session_stats"})
    assert stats["tokens"]["input"] == 400 + 500 + 60 + 7  # compacted turns and both summary calls count
    assert stats["contextUsage"]["tokens"] is None and stats["contextUsage"]["percent"] is None
    again = rpc.request({"type": "compact"})
    assert again["success"] is False
    assert rpc.close() == 0


def test_fork_clone_fork_messages_switch_and_new_session(host: Host, tmp_path: Path) -> None:
    host.llm.push(fl.text("a1"), fl.text("a2"))
    rpc = host.rpc()
    for text in ("first question", "second question"):
        rpc.ok({"type": "prompt", "message": text})
        rpc.event("agent_settled")
    original = rpc.ok({"type": "get_state"})["sessionFile"]
    fork_messages = rpc.ok({"type": "get_fork_messages"})["messages"]
    assert [m["text"] for m in fork_messages] == ["first question", "second question"]
    assert set(fork_messages[0]) == {"entryId", "text"}
    not_user = rpc.ok({"type": "get_entries"})["entries"][0]["id"]
    bad = rpc.request({"type": "fork", "entryId": not_user})
    assert bad["success"] is False and bad["error"] == "Invalid entry ID for forking"

    forked = rpc.ok({"type": "fork", "entryId": fork_messages[1]["entryId"]})
    assert forked == {"text": "second question", "cancelled": False}
    state = rpc.ok({"type": "get_state"})
    assert state["sessionFile"] != original and state["messageCount"] == 2
    cloned = rpc.ok({"type": "clone"})
    assert cloned == {"cancelled": False}
    assert rpc.ok({"type": "get_state"})["messageCount"] == 2

    missing = tmp_path / "elsewhere" / "new-session.jsonl"
    assert rpc.ok({"type": "switch_session", "sessionPath": str(missing)}) == {"cancelled": False}
    state = rpc.ok({"type": "get_state"})
    assert state["sessionFile"] == str(missing) and state["messageCount"] == 0
    assert rpc.ok({"type": "switch_session", "sessionPath": original}) == {"cancelled": False}
    assert rpc.ok({"type": "get_state"})["messageCount"] == 4
    assert rpc.ok({"type": "new_session"}) == {"cancelled": False}
    assert rpc.ok({"type": "get_state"})["messageCount"] == 0
    exported = rpc.ok({"type": "export_html", "outputPath": str(tmp_path / "page.html")})
    assert exported == {"path": str(tmp_path / "page.html")} and (tmp_path / "page.html").exists()
    assert rpc.close() == 0


GUARD = """
from caddie.extensions.api import SessionBeforeForkResult, SessionBeforeSwitchResult

COUNT = {"starts": 0}

def register(api):
    state = {"starts": 0}

    async def before_switch(event, ctx):
        ok = await ctx.ui.confirm("Switch?", f"{event.reason} {event.target_session_file}")
        return SessionBeforeSwitchResult(cancel=not ok)

    async def before_fork(event, ctx):
        ok = await ctx.ui.confirm("Fork?", f"{event.entry_id} {event.position}")
        return SessionBeforeForkResult(cancel=not ok)

    def on_start(event, ctx):
        state["starts"] += 1
        ctx.ui.notify(f"start {event.reason} instance-starts={state['starts']}")

    api.on("session_before_switch", before_switch)
    api.on("session_before_fork", before_fork)
    api.on("session_start", on_start)
"""


def test_extensions_can_cancel_switches_and_forks_and_are_recreated(host: Host) -> None:
    host.llm.push(fl.text("a1"))
    ext = host.extension("guard.py", GUARD)
    rpc = host.rpc("-e", ext)

    def answer(confirmed: bool) -> dict[str, Any]:
        request = rpc.wait_for(lambda o: o.get("method") == "confirm")
        rpc.send({"type": "extension_ui_response", "id": request["id"], "confirmed": confirmed})
        return request

    first = rpc.wait_for(lambda o: o.get("method") == "notify")
    assert first["message"] == "start startup instance-starts=1"
    rpc.send({"id": "n1", "type": "new_session"})
    asked = answer(False)
    assert asked["title"] == "Switch?" and asked["message"] == "new None"
    assert rpc.wait_for(lambda o: o.get("id") == "n1")["data"] == {"cancelled": True}

    rpc.send({"id": "n2", "type": "new_session"})
    answer(True)
    assert rpc.wait_for(lambda o: o.get("id") == "n2")["data"] == {"cancelled": False}
    started = rpc.wait_for(lambda o: o.get("method") == "notify")
    assert started["message"] == "start new instance-starts=1"  # a fresh instance, as Pi re-creates them

    rpc.ok({"type": "prompt", "message": "q"})
    rpc.event("agent_settled")
    user = rpc.ok({"type": "get_fork_messages"})["messages"][0]["entryId"]
    rpc.send({"id": "f1", "type": "fork", "entryId": user})
    asked = answer(False)
    assert asked["message"] == f"{user} before"
    assert rpc.wait_for(lambda o: o.get("id") == "f1")["data"] == {"cancelled": True}
    rpc.send({"id": "c1", "type": "clone"})
    assert answer(False)["message"].endswith(" at")
    assert rpc.wait_for(lambda o: o.get("id") == "c1")["data"] == {"cancelled": True}
    assert rpc.close() == 0


def test_parse_errors_and_unknown_commands(host: Host) -> None:
    rpc = host.rpc()
    rpc.send(b"{not json\n")
    bad = rpc.wait_for(lambda o: o.get("type") == "response")
    assert bad["command"] == "parse" and bad["success"] is False
    assert bad["error"].startswith("Failed to parse command: ")
    rpc.send(b"[1, 2]\r\n")
    assert rpc.wait_for(lambda o: o.get("type") == "response")["command"] == "parse"
    unknown = rpc.request({"type": "warp_drive"})
    assert unknown["command"] == "warp_drive" and unknown["error"] == "Unknown command: warp_drive"
    assert rpc.ok({"type": "get_state"})["isStreaming"] is False  # still serving
    assert rpc.close() == 0


def test_system_prompt_flag_gives_pis_text(host: Host) -> None:
    host.llm.push(fl.text("ok"))
    rpc = host.rpc("--system-prompt", "You are terse.", "--no-context-files")
    rpc.ok({"type": "prompt", "message": "hi"})
    rpc.event("agent_settled")
    system = host.llm.llm_requests[0].system
    assert system == f"You are terse.\nCurrent working directory: {host.project.resolve()}\n"
    assert rpc.close() == 0


def test_get_tree_of_a_session_thousands_of_entries_deep(host: Host) -> None:
    """A long session is one chain of entries; its tree is as deep as it is long (json.dumps alone stops at
    ~1,000 levels)."""
    from caddie.ai.messages import AssistantMessage, TextContent, UserMessage
    from caddie.session.store import SessionStore

    store = SessionStore.create(str(host.project), host.home / "deep")
    store.append_message(AssistantMessage([TextContent("hi")], api="faux", provider="faux", model="echo"))
    for i in range(3000):  # (a file is written from the first assistant message on, as Pi does)
        store.append_message(UserMessage([TextContent(f"message {i}")]))
    path = store.session_file
    leaf = store.leaf_id
    store.close()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)  # for the test's own json.loads of the answer
    try:
        rpc = host.rpc("--session", str(path))
        tree = rpc.ok({"type": "get_tree"})
        depth, node = 0, tree["tree"][-1]
        while node["children"]:
            depth, node = depth + 1, node["children"][0]
        assert rpc.close() == 0
    finally:
        sys.setrecursionlimit(limit)
    assert node["entry"]["id"] == leaf == tree["leafId"]
    assert node["entry"]["message"]["content"][0]["text"] == "message 2999"
    assert depth >= 3000


RELOAD_COMMAND = """
def register(api):
    async def reload(args, ctx):
        await ctx.reload()
    api.register_command("re", reload, description="Reload")
"""


def test_an_extension_commands_reload_reads_agents_md_again(host: Host) -> None:
    """RPC has no reload command (nor has Pi's); an extension command's ``ctx.reload()`` reads the context
    files again, so the next request's system prompt carries the edited AGENTS.md."""
    host.llm.push(fl.text("a1"), fl.text("a2"))
    (host.project / "AGENTS.md").write_text("Use tabs.")
    rpc = host.rpc("-e", host.extension("reloader.py", RELOAD_COMMAND))
    rpc.ok({"type": "prompt", "message": "first"})
    rpc.event("agent_settled")
    (host.project / "AGENTS.md").write_text("Use spaces.")
    rpc.ok({"type": "prompt", "message": "/re"})
    rpc.ok({"type": "prompt", "message": "second"})
    rpc.event("agent_settled")
    first, second = (r.system or "" for r in host.llm.llm_requests)
    assert "Use tabs." in first and "Use spaces." not in first
    assert "Use spaces." in second and "Use tabs." not in second
    assert rpc.close() == 0


def test_an_entry_renderers_custom_entries_arrive_as_entry_appended_and_stay_out_of_the_context(
    host: Host,
) -> None:
    example = Path(__file__).parents[2] / "examples" / "extensions" / "entry_renderer.py"
    rpc = host.rpc("-e", str(example))
    assert rpc.ok({"type": "prompt", "message": "/status-card deploy is green"}) is None
    appended = rpc.event("entry_appended")["entry"]
    assert (appended["type"], appended["customType"]) == ("custom", "status-card")
    assert appended["data"]["message"] == "deploy is green"
    host.llm.push(fl.text("ok"))
    rpc.ok({"type": "prompt", "message": "what now?"})
    rpc.event("agent_end")
    assert "deploy is green" not in json.dumps(host.llm.requests[-1].body)
    assert rpc.close() == 0
