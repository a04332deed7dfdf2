"""Pi 0.84's extension events that caddie fires beside the loop's own: when each fires, what it carries, and
what a handler's answer does — through the real session on the faux model."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.extensions.api import (
    BashResult,
    BeforeAgentStartEvent,
    CommandContext,
    CustomEntry,
    ExtensionAPI,
    ExtensionContext,
    ReplacedSessionContext,
    SessionInfoChangedEvent,
    ThinkingLevelSelectEvent,
    ToolCallEvent,
    ToolCallResult,
    ToolDefinition,
    ToolResult,
    UserBashEvent,
    UserBashResult,
    text_result,
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


async def test_user_bash_can_hand_back_a_whole_result(tmp_path: Path) -> None:
    seen: list[UserBashEvent] = []

    def register(api: ExtensionAPI) -> None:
        def intercept(event: UserBashEvent, ctx: ExtensionContext) -> UserBashResult:
            seen.append(event)
            return UserBashResult(result=BashResult("ran on the build box\n", 3))

        api.on("user_bash", intercept)
        api.on("user_bash", lambda event, ctx: pytest.fail("only the first answer counts"))

    run = await start_session(tmp_path, extensions=[inline_extension(register)])
    (tmp_path / "marker").write_text("")
    message = await run.session.run_bash("rm marker", exclude_from_context=True)
    assert (tmp_path / "marker").exists()  # nothing ran locally
    assert [(e.command, e.exclude_from_context, e.cwd) for e in seen] == [("rm marker", True, str(tmp_path))]
    assert (message.output, message.exit_code, message.exclude_from_context) == (
        "ran on the build box\n",
        3,
        True,
    )
    assert run.session.messages[-1] is message
    await run.session.shutdown("quit")


async def test_user_bash_operations_run_the_command_elsewhere_and_stream_its_output(tmp_path: Path) -> None:
    calls: list[tuple[str, str]] = []

    async def remote(command: str, cwd: str, on_output: Any, signal: Any) -> int | None:
        calls.append((command, cwd))
        on_output("remote: ")
        on_output("\x1b[31mred\x1b[0m done\n")
        return 0

    def register(api: ExtensionAPI) -> None:
        api.on("user_bash", lambda event, ctx: UserBashResult(operations=remote))

    run = await start_session(tmp_path, extensions=[inline_extension(register)])
    message = await run.session.run_bash("uptime")
    await run.session.wait_for_idle()
    assert calls == [("uptime", str(tmp_path))]
    assert (message.output, message.exit_code, message.cancelled) == ("remote: red done\n", 0, False)
    updates = [e for e in run.events if e.type == "bash_execution_update"]
    assert "".join(e.delta for e in updates) == "remote: red done\n"
    await run.session.shutdown("quit")


async def test_user_bash_without_an_answer_runs_locally_and_a_failing_runner_is_a_failed_command(
    tmp_path: Path,
) -> None:
    async def broken(command: str, cwd: str, on_output: Any, signal: Any) -> int | None:
        raise ConnectionError("ssh: host unreachable")

    mode = {"broken": False}

    def register(api: ExtensionAPI) -> None:
        api.on("user_bash", lambda event, ctx: UserBashResult(operations=broken) if mode["broken"] else None)

    run = await start_session(tmp_path, extensions=[inline_extension(register)])
    local = await run.session.run_bash("echo local")
    assert (local.output, local.exit_code) == ("local\n", 0)
    mode["broken"] = True
    failed = await run.session.run_bash("echo remote")
    assert failed.output == "ssh: host unreachable\n" and failed.exit_code is None and not failed.cancelled
    await run.session.shutdown("quit")


async def test_ui_prompt_events_wrap_dialogs_and_overlapping_ones_count_once(tmp_path: Path) -> None:
    seen: list[tuple[str, str, str | None]] = []

    def register(api: ExtensionAPI) -> None:
        async def ask(args: str, ctx: Any) -> None:
            await ctx.ui.confirm("Deploy?", "to production")
            await asyncio.gather(ctx.ui.input("Name"), ctx.ui.select("Pick", ["a", "b"]))
            ctx.ui.notify("not a dialog")

        api.register_command("ask", ask)
        for name in ("ui_prompt_start", "ui_prompt_end"):
            api.on(name, lambda event, ctx: seen.append((event.type, event.kind, event.title)))

    run = await start_session(tmp_path, extensions=[inline_extension(register)])

    async def slow_input(
        title: str, placeholder: str | None = None, timeout: float | None = None, *, signal: Any = None
    ) -> str:
        await asyncio.sleep(0.02)  # still open while the select opens and closes
        return "x"

    run.ui.input = slow_input  # type: ignore[method-assign]
    await run.session.prompt("/ask")
    await run.session.wait_for_idle()
    assert seen == [
        ("ui_prompt_start", "confirm", "Deploy?"),
        ("ui_prompt_end", "confirm", "Deploy?"),
        ("ui_prompt_start", "input", "Name"),
        ("ui_prompt_end", "input", "Name"),
    ]
    assert [kind for kind, _ in run.ui.asked] == ["confirm", "select"]
    assert run.ui.notices[-1] == ("not a dialog", "info")
    await run.session.shutdown("quit")


async def test_before_agent_start_carries_the_system_prompt_options(tmp_path: Path) -> None:
    seen: list[BeforeAgentStartEvent] = []
    (tmp_path / "AGENTS.md").write_text("Use tabs.\n")

    async def deploy(*args: Any) -> ToolResult:
        return text_result("ok")

    def register(api: ExtensionAPI) -> None:
        api.register_tool(
            ToolDefinition(
                name="deploy",
                label="Deploy",
                description="Deploy the app",
                parameters={"type": "object", "properties": {}},
                execute=deploy,
                prompt_snippet="Deploy the current build",
                prompt_guidelines=["Deploy only when asked."],
            )
        )
        api.on("before_agent_start", lambda event, ctx: seen.append(event))

    run = await start_session(tmp_path, extensions=[inline_extension(register)])
    run.faux.set_responses([faux_message("ok")])
    await run.session.prompt("hello")
    options = seen[0].system_prompt_options
    assert options is not None
    assert options.cwd == str(tmp_path)
    assert "deploy" in options.selected_tools and "read" in options.selected_tools
    assert options.tool_snippets["deploy"] == "Deploy the current build"
    assert "Deploy only when asked." in options.prompt_guidelines
    assert any(path.endswith("AGENTS.md") and "Use tabs." in text for path, text in options.context_files)
    await run.session.shutdown("quit")


async def test_ctx_knows_thinking_level_trust_models_and_prompt_options(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def register(api: ExtensionAPI) -> None:
        def probe(args: str, ctx: CommandContext) -> None:
            seen["level"] = ctx.thinking_level
            seen["trusted"] = ctx.is_project_trusted()
            seen["scoped"] = ctx.scoped_models
            seen["found"] = ctx.model_registry.find("faux", "faux-1")
            seen["missing"] = ctx.model_registry.find("nobody", "nope")
            seen["available"] = ctx.model_registry.get_available()
            seen["options"] = ctx.get_system_prompt_options()

        api.register_command("probe", probe)

    run = await start_session(tmp_path, extensions=[inline_extension(register)], trust=True)
    run.session.set_thinking_level("high")
    await run.session.prompt("/probe")
    assert seen["level"] == "high" and seen["trusted"] is True and seen["scoped"] == []
    assert seen["found"] is not None and seen["found"].id == "faux-1" and seen["missing"] is None
    assert isinstance(seen["available"], list)
    assert seen["options"].selected_tools == [t.name for t in run.session.state().tools]
    await run.session.shutdown("quit")


async def test_new_session_setup_and_with_session_work_on_the_new_session(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def register(api: ExtensionAPI) -> None:
        async def handoff(args: str, ctx: CommandContext) -> None:
            old = ctx.session.session_id

            def setup(store: Any) -> None:
                store.append_custom("handoff", {"from": old})

            async def then(new: ReplacedSessionContext) -> None:
                seen["new_id"] = new.session.session_id
                seen["setup_entry"] = [
                    e.custom_type for e in new.session.entries() if isinstance(e, CustomEntry)
                ]
                new.send_user_message(f"continue: {args}")

            seen["old_id"] = old
            seen["done"] = await ctx.new_session(setup=setup, with_session=then)

        api.register_command("handoff", handoff)

    run = await start_session(tmp_path, extensions=[inline_extension(register)])
    run.faux.set_responses([faux_message("on it")])
    await run.session.prompt("/handoff the tests")
    await run.session.wait_for_idle()
    assert seen["done"] is True and seen["new_id"] != seen["old_id"]
    assert seen["new_id"] == run.session.store.session_id
    assert seen["setup_entry"] == ["handoff"]
    assert run.request_texts() == ["continue: the tests"]
    await run.session.shutdown("quit")


async def test_the_session_view_has_its_folder_and_the_tree(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def register(api: ExtensionAPI) -> None:
        def probe(args: str, ctx: CommandContext) -> None:
            seen["dir"] = ctx.session.session_dir
            seen["file"] = ctx.session.session_file
            seen["tree"] = ctx.session.tree()

        api.register_command("probe", probe)

    run = await start_session(tmp_path, extensions=[inline_extension(register)], session="new")
    run.faux.set_responses([faux_message("one"), faux_message("two")])
    await run.session.prompt("first")
    first_answer = run.session.store.leaf_id
    await run.session.prompt("second")
    assert first_answer is not None and await run.session.navigate_tree(first_answer)
    run.faux.set_responses([faux_message("three")])
    await run.session.prompt("other branch")
    await run.session.prompt("/probe")
    assert seen["dir"] is not None and seen["file"].startswith(seen["dir"])
    (root,) = seen["tree"]
    node = root
    while len(node.children) == 1:
        node = node.children[0]
    assert node.entry.id == first_answer and len(node.children) == 2  # the fork point has both branches
    await run.session.shutdown("quit")


async def test_send_user_message_expands_templates_and_runs_commands_only_when_asked(tmp_path: Path) -> None:
    (tmp_path / ".caddie" / "prompts").mkdir(parents=True)
    (tmp_path / ".caddie" / "prompts" / "review.md").write_text("Review $1 carefully.\n")
    ran: list[str] = []

    def register(api: ExtensionAPI) -> None:
        api.register_command("send", lambda args, ctx: api.send_user_message(args))
        api.register_command(
            "expand", lambda args, ctx: api.send_user_message(args, expand_prompt_templates=True)
        )
        api.register_command("ping", lambda args, ctx: ran.append(args))

    run = await start_session(tmp_path, extensions=[inline_extension(register)], trust=True)
    run.faux.set_responses([faux_message("a"), faux_message("b")])
    await run.session.prompt("/send /review parser.py")
    await run.session.wait_for_idle()
    await run.session.prompt("/expand /review lexer.py")
    await run.session.wait_for_idle()
    await run.session.prompt("/expand /ping hello")
    await run.session.wait_for_idle()
    assert run.request_texts(0)[-1] == "/review parser.py"  # as Pi: not expanded by default
    assert run.request_texts(1)[-1].strip() == "Review lexer.py carefully."
    assert ran == ["hello"] and run.faux.call_count == 2  # the command ran, no model request
    await run.session.shutdown("quit")


async def test_a_user_bash_handler_wraps_caddies_local_shell(tmp_path: Path) -> None:
    from caddie.extensions.api import create_local_bash_operations

    local = create_local_bash_operations()

    async def wrapped(command: str, cwd: str, on_output: Any, signal: Any) -> int | None:
        return await local(f"GREETING=wrapped\n{command}", cwd, on_output, signal)

    def register(api: ExtensionAPI) -> None:
        api.on("user_bash", lambda event, ctx: UserBashResult(operations=wrapped))

    run = await start_session(tmp_path, extensions=[inline_extension(register)])
    message = await run.session.run_bash('echo "$GREETING in $(pwd)"; printf "h\\xc3\\xa9"; exit 4')
    assert (message.output, message.exit_code) == (f"wrapped in {tmp_path}\nhé", 4)
    started = asyncio.create_task(run.session.run_bash("echo started; sleep 30"))
    while not any(e.type == "bash_execution_update" and "started" in e.delta for e in run.events):
        await asyncio.sleep(0.01)
    run.session.abort("bash")
    cancelled = await asyncio.wait_for(started, 10)
    assert cancelled.cancelled and cancelled.exit_code is None and cancelled.output == "started\n"
    await run.session.shutdown("quit")
