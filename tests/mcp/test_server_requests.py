"""What a server asks of caddie — elicitation and sampling answered through the UI, refused with a reason
without one — and how MCP results live with the rest of caddie: mulligan shrinks them, a goal's budget
sees sampling's cost, and quitting ends every server process."""

from __future__ import annotations

import os
from pathlib import Path

from caddie.ai.messages import AssistantMessage, TextContent, ToolResultMessage, Usage
from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.extensions.api import CustomEntry, ExtensionAPI, ExtensionContext, SummaryUsageEvent
from caddie.extensions.bundled.mcp.runtime import pool
from tests.mcp.helpers import McpRun, mcp_session, small, until
from tests.runtime.harness import inline_extension


def last_result(run: McpRun) -> str:
    result = [m for m in run.session.messages if isinstance(m, ToolResultMessage)][-1]
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


async def call(run: McpRun, tool: str, args: dict[str, object] | None = None) -> str:
    run.faux.append_responses([faux_message([faux_tool_call(tool, args or {})]), faux_message("ok")])
    await run.session.prompt(f"call {tool}")
    return last_result(run)


async def test_elicitation_and_sampling_through_the_ui(tmp_path: Path) -> None:
    spent: list[SummaryUsageEvent] = []

    def recorder(api: ExtensionAPI) -> None:
        def on_usage(event: SummaryUsageEvent, ctx: ExtensionContext) -> None:
            spent.append(event)

        api.on("summary_usage", on_usage)

    run = await mcp_session(tmp_path, {"small": small()}, extensions=[inline_extension(recorder)])
    try:
        # a form: each field is a dialog; a bad answer is asked again with the reason
        run.ui.answers = ["Ann", "five", "5"]
        assert await call(run, "mcp__small__ask") == "hello Ann, 5"
        titles = [title for _kind, title in run.ui.asked]
        assert titles[0].startswith("small asks: Who are you?\nName")
        assert titles[2].endswith("Age must be a whole number")
        # Esc on a field cancels the whole form
        run.ui.answers = [None]
        assert await call(run, "mcp__small__ask") == "no answer (cancel)"

        # sampling: the user approves, the session's model answers, the cost reaches the extensions
        run.ui.answers = [True]
        run.faux.append_responses([faux_message([faux_tool_call("mcp__small__think", {"question": "2+2?"})])])
        run.faux.append_responses([faux_message("four"), faux_message("done")])
        await run.session.prompt("think")
        assert last_result(run) == "model said: four"
        sampled = [r for r in run.faux.requests if not r.tools]
        assert len(sampled) == 1 and [m.content for m in sampled[0].messages] == [[TextContent("2+2?")]]
        assert [e.kind for e in spent] == ["extension"] and spent[0].usage.input > 0
        # declined: the server gets an error, the model a result that says so
        run.ui.answers = [False]
        assert "the user declined the sampling request" in await call(
            run, "mcp__small__think", {"question": "?"}
        )
    finally:
        await run.session.shutdown("quit")


async def test_without_a_ui_requests_are_refused_with_the_reason(tmp_path: Path) -> None:
    run = await mcp_session(tmp_path, {"small": small()}, mode="print", flags={"mcp-wait": "60"})
    try:
        answer = await call(run, "mcp__small__ask")
        assert "without a user interface" in answer
        refused = await call(run, "mcp__small__think", {"question": "?"})
        assert "caddie is running without a user interface" in refused
    finally:
        await run.session.shutdown("quit")


async def test_mulligan_shrinks_an_mcp_result_and_quitting_ends_the_server(tmp_path: Path) -> None:
    run = await mcp_session(tmp_path, {"small": small()}, settings={"disabledExtensions": ["goal"]})
    try:
        pid = int(await call(run, "mcp__small__pid"))
        run.faux.append_responses(
            [
                faux_message([faux_tool_call("mcp__small__huge", {"lines": 300}, id="big")]),
                faux_message(
                    [
                        faux_tool_call(
                            "mulligan_shrink",
                            {"target": {"by_tool_call_id": "big"}, "replacement": "300 numbered lines"},
                        )
                    ]
                ),
                faux_message("shrunk"),
            ]
        )
        await run.session.prompt("look at the big output")
        sent = run.faux.requests[-1]
        big = next(m for m in sent.messages if isinstance(m, ToolResultMessage) and m.tool_call_id == "big")
        shown = "\n".join(b.text for b in big.content if isinstance(b, TextContent))
        assert "300 numbered lines" in shown and "line 299" not in shown
    finally:
        await run.session.shutdown("quit")
    assert pool() == {}
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError(f"the server process {pid} is still running after quit")


async def test_headless_runs_start_servers_once_the_first_request_is_out(tmp_path: Path) -> None:
    run = await mcp_session(tmp_path, {"small": small()}, mode="print", wait=())
    try:
        assert pool() == {}  # nothing competes with the first request
        seen: list[int] = []

        def first_reply(context: object, options: object, index: int, model: object) -> object:
            seen.append(len(pool()))
            return faux_message("hello")

        run.faux.append_responses([first_reply])  # type: ignore[list-item]
        await run.session.prompt("hi")
        assert seen == [0]  # the request went out before any server was started
        await until(
            lambda: "mcp__small__add" in run.session.core.tools.active_names(),
            what="the tools after the reply",
        )
    finally:
        await run.session.shutdown("quit")


async def test_a_goals_budget_counts_sampling_and_mcp_results(tmp_path: Path) -> None:
    run = await mcp_session(tmp_path, {"small": small()}, settings={"disabledExtensions": ["mulligan"]})
    try:
        run.ui.answers = [True]  # approve the sampling request
        run.faux.append_responses(
            [
                faux_message(
                    [faux_tool_call("create_goal", {"objective": "ask the model", "token_budget": 1_000_000})]
                ),
                faux_message([faux_tool_call("mcp__small__think", {"question": "x" * 400})]),
                faux_message("an answer", usage=Usage(input=5000, output=7)),  # the sampling request's cost
                faux_message([faux_tool_call("update_goal", {"status": "complete"})]),
                faux_message("done"),
            ]
        )
        await run.session.prompt("set a goal and ask the model")
        await run.session.wait_for_idle()
        states = [
            e.data
            for e in run.session.store.entries()
            if isinstance(e, CustomEntry) and e.custom_type == "goal:state"
        ]
        final = states[-1]
        assert final["status"] == "complete"
        replies = [m for m in run.session.messages if isinstance(m, AssistantMessage)]
        after_creation = sum(m.usage.input + m.usage.output for m in replies[1:-1])  # until complete
        assert (
            final["tokensUsed"] == after_creation + 5007
        )  # the turns while the goal was active, and the sampling
    finally:
        await run.session.shutdown("quit")
