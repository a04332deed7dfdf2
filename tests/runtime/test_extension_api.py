"""The extension API end to end, through the example extension that uses every method."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from caddie.ai.messages import CustomMessage, TextContent, ToolResultMessage, UserMessage
from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.extensions.api import (
    ContextEvent,
    ContextResult,
    ExtensionAPI,
    ExtensionContext,
    MessageEndEvent,
    MessageEndResult,
    ToolCallEvent,
)
from caddie.runtime.session_events import ExtensionErrorEvent, ExtensionEvent
from caddie.session.entries import CustomEntry, CustomMessageEntry, LabelEntry, SessionInfoEntry
from tests.runtime.harness import Run, inline_extension, start_session

TOUR = str(Path(__file__).parents[2] / "examples" / "extensions" / "tour.py")


async def tour(tmp_path: Path, **kw: Any) -> Run:
    return await start_session(tmp_path, extension_paths=[TOUR], **kw)


async def command(run: Run, text: str) -> None:
    await run.session.prompt(text)
    await run.session.wait_for_idle()


# -- loading and registration ----------------------------------------------------------------------


async def test_the_tour_extension_loads_with_its_tool_command_flag_and_status(tmp_path: Path) -> None:
    run = await tour(tmp_path, flags={"tour-greeting": "welcome aboard"})
    assert "note" in run.session.core.tools.active_names()
    assert "- note: Remember a short note for later" in run.session.state().system_prompt
    assert "- Use note to keep track of decisions you will need later" in run.session.state().system_prompt
    assert "tour" in run.session.extensions.commands()
    assert run.ui.notices == [("welcome aboard", "info")]
    assert run.ui.statuses["tour"] == "tour ready"
    assert run.ui.widgets["tour"] == (["Tour extension loaded: try /tour tools"], "belowEditor")


async def test_an_unknown_extension_flag_is_one_clear_error(tmp_path: Path) -> None:
    from caddie.runtime.factory import SetupError

    with pytest.raises(SetupError, match=r"^Unknown option --nope\. See caddie --help\.$"):
        await tour(tmp_path, flags={"nope": "x"})


# -- events that change things ---------------------------------------------------------------------


async def test_input_before_agent_start_and_context_shape_the_request(tmp_path: Path) -> None:
    run = await tour(tmp_path)
    run.faux.set_responses([faux_message("ok"), faux_message("ok")])
    await command(run, "/tour scratch")
    await run.session.prompt("tour: be brief")

    request = run.requests[-1]
    assert request.system_prompt is not None and request.system_prompt.endswith("\n\nTour extension active.")
    assert run.request_texts() == ["BE BRIEF", "Keep the answer to one sentence."]
    assert any(isinstance(m, CustomMessage) and m.custom_type == "tour:scratch" for m in run.session.messages)
    assert run.session.state().system_prompt.endswith("Tour extension active.") is False  # only for that run


async def test_tool_call_blocks_and_tool_result_patches(tmp_path: Path) -> None:
    run = await tour(tmp_path)
    run.faux.set_responses(
        [
            faux_message(
                [
                    faux_tool_call("bash", {"command": "rm -rf / --no-preserve-root"}, id="bad"),
                    faux_tool_call("bash", {"command": "echo hi"}, id="ok"),
                ]
            ),
            faux_message("done"),
        ]
    )
    await run.session.prompt("clean up")
    results = {m.tool_call_id: m for m in run.session.messages if isinstance(m, ToolResultMessage)}
    assert results["bad"].is_error
    assert results["bad"].content == [
        TextContent("The tour extension blocked a command that deletes everything.")
    ]
    assert results["ok"].content == [TextContent("hi\n"), TextContent("(checked by the tour extension)")]
    assert run.requests[-1].messages[-1] == results["ok"]


async def test_the_note_tool_validates_prepares_updates_and_persists(tmp_path: Path) -> None:
    run = await tour(tmp_path)
    run.faux.set_responses(
        [
            faux_message(
                [
                    faux_tool_call("note", {"note": "plain string note"}, id="n1"),
                    faux_tool_call("note", {"tags": ["x"]}, id="n2"),
                ]
            ),
            faux_message("ok"),
        ]
    )
    await run.session.prompt("take notes")
    results = {m.tool_call_id: m for m in run.session.messages if isinstance(m, ToolResultMessage)}
    assert results["n1"].content == [TextContent("Noted (1 so far).")] and not results["n1"].is_error
    first = results["n2"].content[0]
    assert results["n2"].is_error and isinstance(first, TextContent)
    assert first.text.startswith('Validation failed for tool "note":')
    notes = [
        e for e in run.session.store.entries() if isinstance(e, CustomEntry) and e.custom_type == "tour:note"
    ]
    assert [n.data["text"] for n in notes] == ["plain string note"]
    assert "tool_execution_update" in run.types()


# -- commands: every action ------------------------------------------------------------------------


async def test_commands_run_without_a_model_call(tmp_path: Path) -> None:
    run = await tour(tmp_path)
    await command(run, "/tour exec")
    await command(run, "/tour name My tour")
    await command(run, "/tour usage")
    await command(run, "/tour commands")
    await command(run, "/tour settings")
    assert run.faux.call_count == 0
    notices = [n for n, _ in run.ui.notices]
    assert "exit 0: hello from exec" in notices
    assert "session name: My tour" in notices
    assert any(n.startswith("usage: ") and "idle: True, pending: False" in n for n in notices)
    assert "tour" in notices[3]
    assert run.session.store.session_name() == "My tour"
    assert any(isinstance(e, SessionInfoEntry) for e in run.session.store.entries())


async def test_labels_and_active_tools(tmp_path: Path) -> None:
    run = await tour(tmp_path)
    run.faux.set_responses([faux_message("hi"), faux_message("again")])
    await run.session.prompt("hello")
    leaf = run.session.store.leaf_id
    await command(run, "/tour label best-answer")
    assert leaf is not None and run.session.store.get_label(leaf) == "best-answer"
    assert isinstance(run.session.store.entries()[-1], LabelEntry)

    await command(run, "/tour tools")
    await run.session.prompt("list")
    tool_names = [t.name for t in run.requests[-1].tools or []]
    assert "ls" in tool_names and "ls" not in [t.name for t in run.requests[0].tools or []]


async def test_send_message_idle_next_turn_and_trigger(tmp_path: Path) -> None:
    run = await tour(tmp_path)
    run.faux.set_responses([faux_message("answer one"), faux_message("triggered answer")])
    await command(run, "/tour message hello from a command")
    entry = run.session.store.entries()[-1]
    assert isinstance(entry, CustomMessageEntry) and entry.content == "hello from a command"
    assert entry.details == {"from": "tour"}
    await command(run, "/tour next")
    await run.session.prompt("question")
    assert run.request_texts()[-3:] == ["hello from a command", "question", "Delivered with the next prompt."]

    await command(run, "/tour trigger please respond")
    assert run.faux.call_count == 2
    assert run.request_texts()[-1] == "please respond"


async def test_send_user_message_starts_a_run_when_idle(tmp_path: Path) -> None:
    run = await tour(tmp_path)
    run.faux.set_responses([faux_message("hi back")])
    await command(run, "/tour user hi from the extension")
    assert run.request_texts() == ["hi from the extension"]


async def test_dialogs_thinking_and_exit_code(tmp_path: Path) -> None:
    run = await tour(tmp_path)
    run.ui.answers = [True, "green", "Ada", "final text"]
    await command(run, "/tour ask")
    assert [k for k, _ in run.ui.asked] == ["confirm", "select", "input", "editor"]
    assert ("glad you like it", "info") in run.ui.notices
    assert '{"choice": "green", "typed": "Ada", "edited": "final text"}' in [n for n, _ in run.ui.notices]

    await command(run, "/tour thinking high")
    assert run.session.thinking_level == "high"
    await command(run, "/tour exit 4")
    assert run.session.state().exit_code == 4


async def test_every_event_reaches_the_extension_and_the_bus(tmp_path: Path) -> None:
    run = await tour(tmp_path)
    seen: list[Any] = []
    tour_ext = run.session.extensions.extensions[0]
    assert isinstance(tour_ext.api, ExtensionAPI)
    tour_ext.api.events.on("tour:counts", seen.append)
    run.faux.set_responses([faux_message(faux_tool_call("note", {"text": "a"})), faux_message("done")])
    await run.session.prompt("go")
    await run.session.wait_for_idle()
    counts = seen[-1]
    for name in (
        "agent_start",
        "agent_end",
        "turn_start",
        "turn_end",
        "message_start",
        "message_update",
        "message_end",
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_end",
        "tool_call",
        "tool_result",
        "context",
        "input",
        "before_agent_start",
        "session_start",
    ):
        assert counts.get(name, 0) > 0, name
    published = [e for e in run.events if isinstance(e, ExtensionEvent)]
    assert published and published[-1].name == "tour_counts"
    assert run.ui.statuses["tour"] == "turns 2, tools 1"


# -- failure isolation -----------------------------------------------------------------------------


async def test_a_failing_handler_is_reported_and_skipped(tmp_path: Path) -> None:
    def register(api: ExtensionAPI) -> None:
        def broken(event: ContextEvent, ctx: ExtensionContext) -> ContextResult:
            raise RuntimeError("context handler bug")

        api.on("context", broken)
        api.on("turn_end", broken)

    run = await start_session(tmp_path, extensions=[inline_extension(register, "broken")])
    run.faux.set_responses([faux_message("still works")])
    await run.session.prompt("hello")
    await run.session.wait_for_idle()
    assert run.session.messages[-1].text() == "still works"  # type: ignore[union-attr]
    errors = [e for e in run.events if isinstance(e, ExtensionErrorEvent)]
    assert {(e.event, e.error) for e in errors} == {
        ("context", "context handler bug"),
        ("turn_end", "context handler bug"),
    }


async def test_a_failing_tool_call_handler_blocks_the_call(tmp_path: Path) -> None:
    def register(api: ExtensionAPI) -> None:
        def strict(event: ToolCallEvent, ctx: ExtensionContext) -> None:
            raise ValueError("policy engine unavailable")

        api.on("tool_call", strict)

    run = await start_session(tmp_path, extensions=[inline_extension(register, "strict")])
    (tmp_path / "f.txt").write_text("x")
    run.faux.set_responses([faux_message(faux_tool_call("read", {"path": "f.txt"})), faux_message("ok")])
    await run.session.prompt("read it")
    result = next(m for m in run.session.messages if isinstance(m, ToolResultMessage))
    assert result.is_error and result.content == [TextContent("policy engine unavailable")]


async def test_message_end_can_replace_a_message_of_the_same_role_only(tmp_path: Path) -> None:
    def register(api: ExtensionAPI) -> None:
        def redact(event: MessageEndEvent, ctx: ExtensionContext) -> MessageEndResult | None:
            m = event.message
            if isinstance(m, UserMessage):
                return MessageEndResult(UserMessage("[redacted]", m.timestamp))
            if m.role == "assistant":
                return MessageEndResult(UserMessage("wrong role"))
            return None

        api.on("message_end", redact)

    run = await start_session(tmp_path, extensions=[inline_extension(register, "redact")])
    run.faux.set_responses([faux_message("fine")])
    await run.session.prompt("my password is hunter2")
    await run.session.wait_for_idle()
    assert run.request_texts() == ["[redacted]"]
    stored = run.session.store.build_context().messages
    assert stored[0] == UserMessage("[redacted]", stored[0].timestamp)
    assert stored[1].role == "assistant"
    assert any(isinstance(e, ExtensionErrorEvent) and "same role" in e.error for e in run.events)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("missing.py", "no such extension file"),
        ("raises.py", "failed to load: RuntimeError: import-time failure"),
        ("exits.py", "failed to load: SystemExit"),
        ("plain.py", "it defines no register(api) function"),
        ("syntax.py", "syntax error at line 1"),
    ],
)
async def test_broken_extensions_give_one_line_and_the_agent_still_works(
    tmp_path: Path, source: str, expected: str
) -> None:
    ext_dir = tmp_path / "ext"
    ext_dir.mkdir()
    (ext_dir / "raises.py").write_text("raise RuntimeError('import-time failure')\n")
    (ext_dir / "exits.py").write_text("import sys\nsys.exit(3)\n")
    (ext_dir / "plain.py").write_text("X = 1\n")
    (ext_dir / "syntax.py").write_text("def (:\n")
    run = await start_session(tmp_path, extension_paths=[str(ext_dir / source)])
    assert len(run.session.state().load_errors) == 1
    line = run.session.state().load_errors[0]
    assert expected in line and "\n" not in line and str(ext_dir / source) in line
    run.faux.set_responses([faux_message("fine")])
    await run.session.prompt("hello")
    assert run.session.messages[-1].text() == "fine"  # type: ignore[union-attr]


async def test_send_message_while_running_is_steered_after_the_tools(tmp_path: Path) -> None:
    def register(api: ExtensionAPI) -> None:
        async def interject(event: Any, ctx: ExtensionContext) -> None:
            if event.tool_name == "read":
                api.send_message("ext:steer", "steered in", display=False)
                api.send_message("ext:later", "follow-up", display=False, deliver_as="follow_up")

        api.on("tool_execution_start", interject)

    run = await start_session(tmp_path, extensions=[inline_extension(register, "steer")])
    (tmp_path / "f.txt").write_text("x")
    run.faux.set_responses(
        [faux_message(faux_tool_call("read", {"path": "f.txt"})), faux_message("a"), faux_message("b")]
    )
    await run.session.prompt("go")
    roles = [(m.role, getattr(m, "custom_type", None)) for m in run.session.messages]
    assert roles == [
        ("user", None),
        ("assistant", None),
        ("toolResult", None),
        ("custom", "ext:steer"),
        ("assistant", None),
        ("custom", "ext:later"),
        ("assistant", None),
    ]
    assert not run.session.state().pending_message_count


async def test_handlers_returning_the_wrong_thing_fail_open(tmp_path: Path) -> None:
    def register(api: ExtensionAPI) -> None:
        api.on("tool_result", lambda event, ctx: {"content": "not a patch"})
        api.on("input", lambda event, ctx: "not an InputResult")
        api.on("before_agent_start", lambda event, ctx: 42)
        api.on("message_end", lambda event, ctx: MessageEndResult("oops"))  # type: ignore[arg-type]
        api.on("context", lambda event, ctx: ContextResult(["not a message"]))  # type: ignore[list-item]

    run = await start_session(tmp_path, extensions=[inline_extension(register, "sloppy")])
    (tmp_path / "f.txt").write_text("content\n")
    run.faux.set_responses([faux_message(faux_tool_call("read", {"path": "f.txt"})), faux_message("fine")])
    await run.session.prompt("read it")
    await run.session.wait_for_idle()
    result = next(m for m in run.session.messages if isinstance(m, ToolResultMessage))
    assert result.content == [TextContent("content\n")] and not result.is_error
    assert run.session.messages[-1].text() == "fine"  # type: ignore[union-attr]
    failed = {e.event for e in run.events if isinstance(e, ExtensionErrorEvent)}
    assert failed == {"tool_result", "input", "before_agent_start", "message_end", "context"}


async def test_the_tour_adds_a_provider_from_a_command_and_removes_it(tmp_path: Path) -> None:
    run = await tour(tmp_path)

    def refs() -> list[str]:
        return [f"{m.provider}/{m.id}" for m in run.session.available_models()]

    assert "tour-local/local-model" not in refs()
    await command(run, "/tour provider http://127.0.0.1:9/v1")
    assert "tour-local/local-model" in refs()
    assert ("choose it with /model tour-local/local-model", "info") in run.ui.notices
    await command(run, "/tour provider off")
    assert "tour-local/local-model" not in refs()


async def test_context_messages_are_frozen_and_a_returned_draft_is_frozen(tmp_path: Path) -> None:
    from caddie.ai.messages import AssistantMessage, DraftAssistantMessage, DraftTextContent

    seen: list[type] = []

    def register(api: ExtensionAPI) -> None:
        def edit_in_place(event: ContextEvent, ctx: ExtensionContext) -> None:
            event.messages[0].timestamp = 0  # type: ignore[misc]

        def add_a_draft(event: ContextEvent, ctx: ExtensionContext) -> ContextResult:
            draft = DraftAssistantMessage(
                [DraftTextContent("noted")], "faux", "faux", "faux", stop_reason="stop"
            )
            return ContextResult([*event.messages, draft, UserMessage("go on", 1)])

        def look(event: ContextEvent, ctx: ExtensionContext) -> None:
            seen.extend(type(m) for m in event.messages)

        api.on("context", edit_in_place)
        api.on("context", add_a_draft)
        api.on("context", look)

    run = await start_session(tmp_path, extensions=[inline_extension(register, "ctx")])
    run.faux.set_responses([faux_message("ok")])
    await run.session.prompt("hello")
    await run.session.wait_for_idle()
    assert seen == [UserMessage, AssistantMessage, UserMessage]
    sent = run.requests[-1].messages
    assert [type(m) for m in sent] == [UserMessage, AssistantMessage, UserMessage]
    assert isinstance(sent[1], AssistantMessage) and sent[1].text() == "noted"
    assert run.session.messages[0].timestamp != 0
    assert [e.event for e in run.events if isinstance(e, ExtensionErrorEvent)] == ["context"]
