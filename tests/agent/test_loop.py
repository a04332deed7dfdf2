"""The agent loop: Pi's event order, tool execution rules, queues, limits and abort."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from caddie.agent.agent import Agent, AgentState
from caddie.agent.events import AgentEvent, MessageEndEvent, ToolExecutionEndEvent, TurnEndEvent
from caddie.agent.loop import LoopConfig
from caddie.ai.abort import AbortSignal
from caddie.ai.messages import AssistantMessage, TextContent, ToolResultMessage, UserMessage
from caddie.ai.providers.faux import (
    FauxProvider,
    PacedStep,
    faux_message,
    faux_model,
    faux_text,
    faux_tool_call,
)
from caddie.tools.base import ToolDefinition, ToolError, ToolResult

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"value": {"type": "string"}, "delay": {"type": "number"}},
    "required": ["value"],
}


def echo_tool(name: str = "echo", log: list[str] | None = None, **kw: Any) -> ToolDefinition:
    async def execute(call_id: str, params: Any, signal: AbortSignal, on_update: Any, ctx: Any) -> ToolResult:
        await asyncio.sleep(params.get("delay", 0))
        if log is not None:
            log.append(params["value"])
        if params["value"] == "boom":
            raise ToolError("the tool failed: boom")
        return ToolResult([TextContent(f"echo: {params['value']}")], {"seen": params["value"]})

    return ToolDefinition(name, f"{name} a value", SCHEMA, execute, **kw)


class Harness:
    def __init__(self, tools: list[ToolDefinition] | None = None) -> None:
        self.faux = FauxProvider(models=[faux_model()], chunk_chars=4)
        self.events: list[AgentEvent] = []
        self.agent = Agent(
            AgentState("You are a test.", faux_model(), tools=tools or []),
            lambda: LoopConfig(model=faux_model(), stream_fn=self.faux.stream),
        )

        async def record(event: AgentEvent, signal: AbortSignal) -> None:
            self.events.append(event)

        self.agent.subscribe(record)

    def types(self) -> list[str]:
        out: list[str] = []
        for e in self.events:
            if e.type == "message_update":
                if out[-1] != "message_update*":
                    out.append("message_update*")
                continue
            role = getattr(getattr(e, "message", None), "role", None)
            out.append(f"{e.type}({role})" if e.type in ("message_start", "message_end") else e.type)
        return out


async def test_one_prompt_with_one_tool_call_emits_pis_event_sequence() -> None:
    h = Harness([echo_tool()])
    h.faux.set_responses([faux_message(faux_tool_call("echo", {"value": "x"})), faux_message("done")])
    await h.agent.prompt("go")
    assert h.types() == [
        "agent_start",
        "turn_start",
        "message_start(user)",
        "message_end(user)",
        "message_start(assistant)",
        "message_update*",
        "message_end(assistant)",
        "tool_execution_start",
        "tool_execution_end",
        "message_start(toolResult)",
        "message_end(toolResult)",
        "turn_end",
        "turn_start",
        "message_start(assistant)",
        "message_update*",
        "message_end(assistant)",
        "turn_end",
        "agent_end",
    ]
    turn_ends = [e for e in h.events if isinstance(e, TurnEndEvent)]
    assert [t.turn_index for t in turn_ends] == [0, 1]
    assert [r.tool_name for r in turn_ends[0].tool_results] == ["echo"]
    assert [m.role for m in h.agent.state.messages] == ["user", "assistant", "toolResult", "assistant"]


async def test_parallel_results_follow_call_order_while_ends_follow_completion() -> None:
    h = Harness([echo_tool()])
    h.faux.set_responses(
        [
            faux_message(
                [
                    faux_tool_call("echo", {"value": "slow", "delay": 0.15}, id="a"),
                    faux_tool_call("echo", {"value": "fast", "delay": 0.0}, id="b"),
                ]
            ),
            faux_message("ok"),
        ]
    )
    await h.agent.prompt("go")
    ends = [e.tool_call_id for e in h.events if isinstance(e, ToolExecutionEndEvent)]
    results = [m.tool_call_id for m in h.agent.state.messages if isinstance(m, ToolResultMessage)]
    assert ends == ["b", "a"]
    assert results == ["a", "b"]


async def test_a_sequential_tool_makes_the_whole_batch_sequential() -> None:
    order: list[str] = []
    h = Harness([echo_tool(log=order, execution_mode="sequential")])
    h.faux.set_responses(
        [
            faux_message(
                [
                    faux_tool_call("echo", {"value": "first", "delay": 0.1}),
                    faux_tool_call("echo", {"value": "second", "delay": 0.0}),
                ]
            ),
            faux_message("ok"),
        ]
    )
    await h.agent.prompt("go")
    assert order == ["first", "second"]


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (faux_tool_call("nope", {"value": "x"}), "Tool nope not found"),
        (faux_tool_call("echo", {"value": "boom"}), "the tool failed: boom"),
    ],
)
async def test_failed_calls_become_error_results_for_the_model(call: Any, expected: str) -> None:
    h = Harness([echo_tool()])
    h.faux.set_responses([faux_message(call), faux_message("ok")])
    await h.agent.prompt("go")
    result = next(m for m in h.agent.state.messages if isinstance(m, ToolResultMessage))
    assert result.is_error and result.content == [TextContent(expected)]
    assert h.faux.requests[1].messages[-1] == result  # the model saw it


async def test_invalid_arguments_are_reported_to_the_model_not_executed() -> None:
    ran: list[str] = []
    h = Harness([echo_tool(log=ran)])
    h.faux.set_responses([faux_message(faux_tool_call("echo", {"delay": 0})), faux_message("ok")])
    await h.agent.prompt("go")
    result = next(m for m in h.agent.state.messages if isinstance(m, ToolResultMessage))
    assert result.is_error and ran == []
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith('Validation failed for tool "echo":') and "value" in text


async def test_a_length_stop_fails_every_tool_call_without_running_it() -> None:
    ran: list[str] = []
    h = Harness([echo_tool(log=ran)])
    h.faux.set_responses(
        [
            faux_message([faux_tool_call("echo", {"value": "x"})], stop_reason="length"),
            faux_message("retried"),
        ]
    )
    await h.agent.prompt("go")
    result = next(m for m in h.agent.state.messages if isinstance(m, ToolResultMessage))
    assert ran == []
    assert result.is_error and "hit the output token limit" in result.content[0].text  # type: ignore[union-attr]
    assert result.content[0].text.startswith('Tool call "echo" was not executed')  # type: ignore[union-attr]


async def test_steering_arrives_after_the_turns_tools_one_at_a_time() -> None:
    h = Harness([echo_tool()])
    seen: list[list[str]] = []

    def reply(context: Any, options: Any, index: int, model: Any) -> AssistantMessage:
        seen.append([m.role for m in context.messages])
        if len(seen) == 1:
            h.agent.steer(UserMessage("steer one"))
            h.agent.steer(UserMessage("steer two"))
            return faux_message(faux_tool_call("echo", {"value": "x"}))
        return faux_message(f"reply {len(seen)}")

    h.faux.set_responses([reply, reply, reply])
    await h.agent.prompt("go")
    assert seen[1] == ["user", "assistant", "toolResult", "user"]  # tool result first, then one steer
    assert seen[2][-2:] == ["assistant", "user"]
    assert h.faux.pending_count == 0


async def test_follow_ups_wait_until_the_agent_would_stop() -> None:
    h = Harness([echo_tool()])
    h.agent.follow_up(UserMessage("and then this"))
    h.faux.set_responses(
        [
            faux_message(faux_tool_call("echo", {"value": "x"})),
            faux_message("first done"),
            faux_message("follow-up done"),
        ]
    )
    await h.agent.prompt("go")
    roles = [m.role for m in h.agent.state.messages]
    assert roles == ["user", "assistant", "toolResult", "assistant", "user", "assistant"]
    assert h.agent.state.messages[-1].text() == "follow-up done"  # type: ignore[union-attr]


async def test_an_error_reply_ends_the_run_without_tools() -> None:
    h = Harness([echo_tool()])
    h.faux.set_responses([faux_message("", error_message="server exploded")])
    await h.agent.prompt("go")
    assert h.types()[-2:] == ["turn_end", "agent_end"]
    last = h.agent.state.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "error"
    assert h.agent.state.error_message == "server exploded"


async def test_abort_mid_stream_ends_the_reply_as_aborted() -> None:
    h = Harness()
    h.faux.set_responses([PacedStep(faux_message("a long answer " * 20), delay_ms=20)])
    task = asyncio.ensure_future(h.agent.prompt("go"))
    while not any(e.type == "message_update" for e in h.events):
        await asyncio.sleep(0.005)
    h.agent.abort()
    await asyncio.wait_for(task, 2)
    last = h.agent.state.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "aborted"
    assert not h.agent.is_running


async def test_abort_reaches_a_running_tool() -> None:
    got_signal = asyncio.Event()

    async def execute(call_id: str, params: Any, signal: AbortSignal, on_update: Any, ctx: Any) -> ToolResult:
        await signal.wait()
        got_signal.set()
        raise ToolError("Operation aborted")

    tool = ToolDefinition("wait", "waits", {"type": "object", "properties": {}}, execute)
    h = Harness([tool])
    h.faux.set_responses([faux_message(faux_tool_call("wait", {})), faux_message("never")])
    task = asyncio.ensure_future(h.agent.prompt("go"))
    while not any(e.type == "tool_execution_start" for e in h.events):
        await asyncio.sleep(0.005)
    h.agent.abort()
    await asyncio.wait_for(task, 2)
    assert got_signal.is_set()
    assert h.faux.pending_count == 1  # no model call after the abort


async def test_when_every_result_terminates_no_further_model_call_is_made() -> None:
    async def execute(call_id: str, params: Any, signal: AbortSignal, on_update: Any, ctx: Any) -> ToolResult:
        return ToolResult([TextContent("bye")], terminate=True)

    tool = ToolDefinition("finish", "ends", {"type": "object", "properties": {}}, execute)
    h = Harness([tool])
    h.faux.set_responses([faux_message(faux_tool_call("finish", {})), faux_message("unused")])
    await h.agent.prompt("go")
    assert h.faux.pending_count == 1
    assert h.types()[-1] == "agent_end"


async def test_message_end_is_emitted_once_per_message() -> None:
    h = Harness([echo_tool()])
    h.faux.set_responses([faux_message(faux_tool_call("echo", {"value": "x"})), faux_message("done")])
    await h.agent.prompt("go")
    ends = [e.message for e in h.events if isinstance(e, MessageEndEvent)]
    assert ends == h.agent.state.messages
    assert [faux_text("done")] == h.agent.state.messages[-1].content  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("returned", "problem"),
    [
        ("just a string", "str, not a ToolResult"),
        (ToolResult("hello"), "content must be a list"),  # type: ignore[arg-type]
        (ToolResult([TextContent("ok")], {"path": Path("/tmp")}), "details cannot be saved as JSON"),
    ],
)
async def test_a_tool_returning_something_unsaveable_becomes_an_error_result(
    returned: Any, problem: str
) -> None:
    async def execute(call_id: str, params: Any, signal: AbortSignal, on_update: Any, ctx: Any) -> Any:
        return returned

    h = Harness([ToolDefinition("odd", "odd tool", {"type": "object", "properties": {}}, execute)])
    h.faux.set_responses([faux_message(faux_tool_call("odd", {})), faux_message("ok")])
    await h.agent.prompt("go")
    result = next(m for m in h.agent.state.messages if isinstance(m, ToolResultMessage))
    assert result.is_error and problem in result.content[0].text  # type: ignore[union-attr]


async def test_a_stream_that_never_waits_still_lets_the_event_loop_run() -> None:
    # A fast server's buffered chunks never suspend the stream; the loop must still let other work (the
    # UI's frames) run while the answer is handled, not only when it ends.
    import time

    faux = FauxProvider(models=[faux_model()], chunk_chars=2)
    faux.set_responses([faux_message("x" * 400)])

    def eager(model: Any, context: Any, options: Any) -> Any:
        async def replay() -> Any:
            events = [event async for event in faux.stream(model, context, options)]
            for event in events:  # no await between events: as if every chunk had already arrived
                time.sleep(0.0005)  # handling each takes a moment
                yield event

        return replay()

    agent = Agent(
        AgentState("You are a test.", faux_model()), lambda: LoopConfig(model=faux_model(), stream_fn=eager)
    )
    updates: list[float] = []

    async def record(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "message_update":
            updates.append(time.monotonic())

    agent.subscribe(record)
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    try:
        await agent.prompt("go")
    finally:
        task.cancel()
    assert len(updates) > 100
    during = [t for t in ticks if updates[0] < t < updates[-1]]
    assert len(during) >= 3, "other tasks ran while the answer streamed"
