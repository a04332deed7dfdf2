"""Pi 0.84's extension events that caddie fires beside the loop's own: when each fires, what it carries, and
what a handler's answer does — through the real session on the faux model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.extensions.api import (
    ExtensionAPI,
    ExtensionContext,
    SessionInfoChangedEvent,
    ThinkingLevelSelectEvent,
    ToolCallEvent,
    ToolCallResult,
)
from tests.runtime.harness import inline_extension, start_session


def _recording(names: list[str], seen: list[Any]) -> Any:
    def register(api: ExtensionAPI) -> None:
        for name in names:
            api.on(name, lambda event, ctx: seen.append(event))  # type: ignore[arg-type]

    return inline_extension(register, "recorder")


async def test_thinking_level_select_fires_on_every_change_with_the_previous_level(tmp_path: Path) -> None:
    seen: list[ThinkingLevelSelectEvent] = []
    run = await start_session(tmp_path, extensions=[_recording(["thinking_level_select"], seen)])
    session = run.session
    start = session.thinking_level
    session.set_thinking_level("high")
    session.set_thinking_level("high")  # no change: no event
    run.session.core.bridge.set_thinking_level("low")  # what api.set_thinking_level calls
    await session.wait_for_idle()
    assert [(e.level, e.previous_level) for e in seen] == [("high", start), ("low", "high")]
    await session.shutdown("quit")


async def test_session_info_changed_carries_the_new_name_or_none(tmp_path: Path) -> None:
    seen: list[SessionInfoChangedEvent] = []
    run = await start_session(tmp_path, extensions=[_recording(["session_info_changed"], seen)])
    run.session.set_session_name("refactor auth")
    run.session.set_session_name("")
    await run.session.wait_for_idle()
    assert [e.name for e in seen] == ["refactor auth", None]
    await run.session.shutdown("quit")


async def test_a_blocked_call_with_terminate_ends_the_run_after_the_batch(tmp_path: Path) -> None:
    def register(api: ExtensionAPI) -> None:
        def gate(event: ToolCallEvent, ctx: ExtensionContext) -> ToolCallResult | None:
            if event.tool_name == "bash":
                return ToolCallResult(block=True, reason="not here", terminate=True)
            return None

        api.on("tool_call", gate)

    run = await start_session(tmp_path, extensions=[inline_extension(register)])
    run.faux.set_responses(
        [
            faux_message(faux_tool_call("bash", {"command": "rm -rf build"})),
            faux_message("this reply is never asked for"),
        ]
    )
    await run.session.prompt("clean up")
    await run.session.wait_for_idle()
    assert run.faux.call_count == 1
    result = run.session.messages[-1]
    assert result.role == "toolResult" and result.is_error
    assert "not here" in result.content[0].text  # type: ignore[union-attr]
    await run.session.shutdown("quit")


async def test_a_blocked_call_without_terminate_lets_the_model_answer(tmp_path: Path) -> None:
    def register(api: ExtensionAPI) -> None:
        api.on("tool_call", lambda event, ctx: ToolCallResult(block=True, reason="no"))

    run = await start_session(tmp_path, extensions=[inline_extension(register)])
    run.faux.set_responses(
        [
            faux_message(faux_tool_call("bash", {"command": "ls"})),
            faux_message("understood"),
        ]
    )
    await run.session.prompt("list")
    await run.session.wait_for_idle()
    assert run.faux.call_count == 2
    await run.session.shutdown("quit")
