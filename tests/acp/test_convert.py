"""The pure translations between caddie's message model and ACP's."""

from __future__ import annotations

from acp import (
    embedded_blob_resource,
    embedded_text_resource,
    resource_block,
    resource_link_block,
    text_block,
)
from caddie.ai.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from caddie.modes.acp.convert import fenced, goal_plan, message_updates, prompt_to_user, tool_kind, tool_title


def test_prompt_blocks_become_one_user_message() -> None:
    text, images = prompt_to_user(
        [
            text_block("see"),
            resource_link_block("a.py", "file:///w/a%20b.py"),
            text_block("and"),
            resource_link_block("docs", "https://example.com/d"),
            resource_block(embedded_text_resource("file:///w/c.py", "x = 1")),
            resource_block(embedded_blob_resource("file:///w/i.png", "iVBORw0=", mime_type="image/png")),
            resource_block(embedded_blob_resource("file:///w/z.bin", "AAEC", mime_type="application/zip")),
        ]
    )
    assert text == (
        "see @/w/a b.py and [docs](https://example.com/d)\n\n"
        '<context ref="/w/c.py">\nx = 1\n</context>\n\n'
        '<context ref="/w/z.bin">[binary, application/zip, 3 bytes]</context>'
    )
    assert [(i.mime_type, i.data) for i in images] == [("image/png", "iVBORw0=")]
    assert prompt_to_user([text_block("hel"), text_block("lo")])[0] == "hello"


def test_tool_titles_and_kinds() -> None:
    assert tool_title("read", {"path": "a.py", "offset": 10, "limit": 5}, "/w") == "Read a.py (lines 10-14)"
    assert tool_title("bash", {"command": "ls  -la\n| wc"}, "/w") == "`ls -la | wc`"
    assert tool_title("grep", {"pattern": "def", "path": "src"}, "/w") == "grep def in src"
    assert tool_title("something", {}, "/w") == "something"
    assert [tool_kind(n) for n in ("read", "edit", "write", "bash", "grep", "zzz")] == [
        "read",
        "edit",
        "edit",
        "execute",
        "search",
        "other",
    ]


def test_fences_outgrow_backticks_inside() -> None:
    assert fenced("a\n") == "```\na\n```"
    assert fenced("x ```y``` z") == "````\nx ```y``` z\n````"


def test_goal_state_as_a_plan() -> None:
    goal = {
        "objective": "ship it",
        "status": "active",
        "check": "pytest -q",
        "notes": "- [x] parser\n- [ ] cli\n",
    }
    plan = goal_plan(goal)
    assert [(e.content, e.status, e.priority) for e in plan] == [
        ("Goal: ship it", "in_progress", "high"),
        ("Check passes: pytest -q", "pending", "high"),
        ("parser", "completed", "medium"),
        ("cli", "pending", "medium"),
    ]
    assert goal_plan({**goal, "status": "budget_limited"})[0].content == "Goal: ship it (budget limited)"
    assert all(e.status == "completed" for e in goal_plan({**goal, "status": "complete"}))
    assert goal_plan(None) == [] and goal_plan({**goal, "status": "cleared"}) == []


def test_stored_messages_replay_as_updates() -> None:
    calls: dict[str, ToolCall] = {}
    assistant = AssistantMessage(
        [ThinkingContent("hmm"), TextContent("Let me look."), ToolCall("c1", "read", {"path": "x.py"})],
        api="openai-completions",
        provider="p",
        model="m",
        stop_reason="toolUse",
    )
    updates = [
        *message_updates(UserMessage("hi"), "/w", calls),
        *message_updates(assistant, "/w", calls),
        *message_updates(ToolResultMessage("c1", "read", [TextContent("print(1)")]), "/w", calls),
    ]
    assert [u.session_update for u in updates] == [
        "user_message_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
    ]
    assert updates[3].locations[0].path == "/w/x.py"
    assert updates[4].status == "completed" and updates[4].content[0].content.text == "```\nprint(1)\n```"
