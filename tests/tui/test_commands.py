"""Slash commands: completion (built-in and extension commands, arguments) and what each built-in does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from caddie.ai.providers.faux import faux_message
from caddie.extensions.api import ExtensionAPI, SessionBeforeSwitchResult
from caddie.modes.interactive.commands import (
    BUILTIN_COMMANDS,
    CommandInfo,
    complete,
    merge_commands,
    parse_command,
)
from caddie.modes.interactive.conversation import InfoBlock, SummaryBlock, UserBlock
from tests.tui.harness import (
    SMALL,
    inline_extension,
    make_app,
    ready,
    settle,
    statuses,
    submit,
    type_text,
    until,
    widget_text,
    write_settings,
)

EXPECTED_BUILTINS = {
    "model", "thinking", "new", "resume", "tree", "fork", "compact",
    "session", "export", "reload", "hotkeys", "help", "quit",
}  # fmt: skip


def deploy_extension(calls: list[str]) -> Any:
    def register(api: ExtensionAPI) -> None:
        async def deploy(args: str, ctx: Any) -> None:
            calls.append(args)

        api.register_command(
            "deploy", deploy, "Ship it to an environment", lambda prefix: ["production", "staging"]
        )

    return inline_extension(register)


def last_info(app: Any) -> str:
    return widget_text(app.conversation.blocks_of(InfoBlock)[-1])


async def test_slash_lists_builtin_and_extension_commands_with_descriptions(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, extensions=[deploy_extension([])])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await pilot.press("slash")
        names = [c.label for c in app.menu.completions]
        descriptions = {c.label: c.description for c in app.menu.completions}
        shown = widget_text(app.menu)
        await type_text(pilot, "dep")
        narrowed = [c.label for c in app.menu.completions]
    assert {f"/{n}" for n in EXPECTED_BUILTINS} <= set(names)
    assert descriptions["/deploy"] == "Ship it to an environment"
    assert descriptions["/resume"].startswith("Pick a previous session")
    assert "/model" in shown
    assert narrowed == ["/deploy"]


async def test_tab_completes_the_name_then_offers_arguments(tmp_path: Path) -> None:
    calls: list[str] = []
    app, _ = make_app(tmp_path, extensions=[deploy_extension(calls)])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await type_text(pilot, "/dep")
        await pilot.press("tab")
        after_tab = app.editor.text
        arguments = [c.label for c in app.menu.completions]
        await pilot.press("down")
        await pilot.press("enter")
        await settle(app, pilot)
    assert after_tab == "/deploy "
    assert arguments == ["production", "staging"]
    assert calls == ["staging"]


async def test_enter_on_a_partial_name_runs_the_highlighted_command(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await type_text(pilot, "/sess")
        await pilot.press("enter")
        await until(pilot, lambda: "Session id" in last_info(app))
        info = last_info(app)
    assert "Session file" in info and "Model" in info and "faux/faux-1" in info


async def test_escape_closes_the_completion_menu(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await type_text(pilot, "/mo")
        opened = app.menu.is_open
        await pilot.press("escape")
        closed = not app.menu.is_open
    assert opened and closed
    assert app.editor.text == "/mo"


async def test_enter_decides_on_the_text_typed_not_on_suggestions_for_an_earlier_text(tmp_path: Path) -> None:
    """Keys can arrive faster than the menu follows them (tmux, a paste): "/session⏎" must run /session,
    not /model, the first suggestion for "/"."""
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await type_text(pilot, "/session")
        app.menu.show(complete("/", app.editor.commands()), "/")  # what the menu showed one key ago
        assert app.menu.current() is not None and app.menu.current().label != "/session"  # type: ignore[union-attr]
        await pilot.press("enter")
        await until(pilot, lambda: "Session id" in widget_text(app.conversation.blocks_of(InfoBlock)[-1]))
    assert app.editor.text == ""


async def test_extension_commands_run_with_their_arguments(tmp_path: Path) -> None:
    calls: list[str] = []
    app, faux = make_app(tmp_path, extensions=[deploy_extension(calls)])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/deploy canary eu")
        await settle(app, pilot)
    assert calls == ["canary eu"]
    assert faux.call_count == 0


async def test_hotkeys_and_help_list_keys_and_commands(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, extensions=[deploy_extension([])])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/hotkeys")
        await until(pilot, lambda: "Ctrl+O" in last_info(app))
        hotkeys = last_info(app)
        await submit(pilot, app, "/help")
        await until(pilot, lambda: "/deploy" in last_info(app))
        help_text = last_info(app)
    assert "Alt+Enter" in hotkeys and "Esc" in hotkeys and "!!cmd" in hotkeys
    assert "Ctrl+P / Ctrl+Shift+P" in hotkeys
    assert "/resume" in help_text and "Ship it to an environment" in help_text


async def test_new_starts_an_empty_session(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, [faux_message("ok")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "hello")
        await settle(app, pilot)
        assert app.session is not None
        before = app.session.store.session_id
        await submit(pilot, app, "/new")
        await until(pilot, lambda: app.session is not None and app.session.store.session_id != before)
        await pilot.pause()
        users = list(app.conversation.blocks_of(UserBlock))
        messages = list(app.session.messages)
    assert users == [] and messages == []


async def test_new_cancelled_by_an_extension_keeps_the_session_and_says_so(tmp_path: Path) -> None:
    def register(api: ExtensionAPI) -> None:
        api.on("session_before_switch", lambda event, ctx: SessionBeforeSwitchResult(cancel=True))

    app, _ = make_app(tmp_path, [faux_message("ok")], extensions=[inline_extension(register)])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "hello")
        await settle(app, pilot)
        assert app.session is not None
        before = app.session.store.session_id
        await submit(pilot, app, "/new")
        await until(pilot, lambda: "An extension kept the current session" in last_info(app))
        assert app.session.store.session_id == before
        assert [widget_text(u) for u in app.conversation.blocks_of(UserBlock)] != []


async def test_name_sets_the_session_name_shown_in_the_footer(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/name refactor parser")
        await until(pilot, lambda: "refactor parser" in widget_text(app.footer))
        assert app.session is not None
        name = app.session.store.session_name()
    assert name == "refactor parser"


async def test_thinking_rejects_unknown_levels_and_cycles_with_shift_tab(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, model="anthropic/claude-sonnet-5")
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/thinking loud")
        await until(pilot, lambda: "Unknown thinking level" in last_info(app))
        await submit(pilot, app, "/thinking high")
        assert app.session is not None
        await until(pilot, lambda: app.session is not None and app.session.thinking_level == "high")
        footer = widget_text(app.footer)
        await pilot.press("shift+tab")
        cycled = app.session.thinking_level
    assert "claude-sonnet-5 • high" in footer
    assert cycled != "high"


async def test_export_writes_html_into_the_project(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, [faux_message("ok")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "hi")
        await settle(app, pilot)
        await submit(pilot, app, "/export out/session.html")
        await until(pilot, lambda: "Exported the session to" in last_info(app))
    html = (tmp_path / "out" / "session.html").read_text()
    assert "hi" in html and "<html" in html.lower()


async def test_compact_explains_when_there_is_nothing_to_compact(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, [faux_message("ok")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "hi")
        await settle(app, pilot)
        await submit(pilot, app, "/compact")
        await until(pilot, lambda: "compact" in last_info(app).lower())
        info = app.conversation.blocks_of(InfoBlock)[-1]
        shown = widget_text(info)
    assert info.level == "error" and "Nothing to compact" in shown


async def test_compact_replaces_older_messages_with_a_summary(tmp_path: Path) -> None:
    write_settings(compaction={"keepRecentTokens": 1})
    steps = [faux_message("answer one " * 50), faux_message("answer two " * 50)]
    steps += [faux_message("THE SUMMARY"), faux_message("THE SUMMARY")]  # history and turn prefix
    app, _ = make_app(tmp_path, steps)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        for prompt in ("question one", "question two"):
            await submit(pilot, app, prompt)
            await settle(app, pilot)
        await submit(pilot, app, "/compact keep the numbers")
        await until(pilot, lambda: bool(app.conversation.blocks_of(SummaryBlock)))
        await pilot.pause()
        summary = app.conversation.blocks_of(SummaryBlock)[0]
        collapsed = widget_text(summary)
        await pilot.press("ctrl+o")
        expanded = widget_text(summary)
    assert "Context compacted" in collapsed and "THE SUMMARY" not in collapsed
    assert "THE SUMMARY" in expanded


async def test_reload_reloads_extensions(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, extensions=[deploy_extension([])])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/reload")
        await until(pilot, lambda: any("Reloaded" in m for m in statuses(app)))
        names = [c.name for c in app.command_infos()]
    assert "deploy" in names


async def test_quit_command_exits_cleanly(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/quit")
        await until(pilot, lambda: not app.is_running)
    assert app.shutdown_done and app.return_code == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/model", ("model", "")),
        ("/model  openai/gpt-5.5 ", ("model", "openai/gpt-5.5")),
        ("/compact keep the API notes", ("compact", "keep the API notes")),
        ("hello", None),
        ("//not a command", None),
        ("/", None),
    ],
)
def test_parse_command(text: str, expected: tuple[str, str] | None) -> None:
    assert parse_command(text) == expected


def test_completion_ranks_prefix_matches_before_substring_matches() -> None:
    commands = merge_commands([CommandInfo("remodel", "ext"), CommandInfo("new", "shadowed")])
    labels = [c.label for c in complete("/mod", commands)]
    assert labels == ["/model", "/scoped-models", "/remodel"]  # the name's start first, then anywhere in it
    assert [c for c in commands if c.name == "new"] == [BUILTIN_COMMANDS[2]]


def test_completion_of_arguments_uses_the_command_completer() -> None:
    commands = [CommandInfo("deploy", "", arguments=lambda prefix: ["production", "staging"])]
    assert [c.value for c in complete("/deploy st", commands)] == ["/deploy staging"]
    assert complete("/deploy st\nmore", commands) == []
    assert complete("plain text", commands) == []


def test_a_failing_argument_completer_offers_nothing() -> None:
    def broken(prefix: str) -> list[str]:
        raise RuntimeError("boom")

    assert complete("/deploy x", [CommandInfo("deploy", "", arguments=broken)]) == []


async def test_the_bundled_extensions_commands_are_offered_too(tmp_path: Path) -> None:
    write_settings(disabledExtensions=[])
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await type_text(pilot, "/mull")
        offered = {c.label: c.description for c in app.menu.completions}
    assert offered.get("/mulligan_audit")


async def test_debug_writes_the_drawn_transcript_and_the_messages_and_is_not_offered(tmp_path: Path) -> None:
    # Pi's hidden /debug: a log for bug reports, no model call
    from caddie.config.paths import agent_dir

    app, faux = make_app(tmp_path)
    faux.set_responses([faux_message("the answer is forty-two")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "what is the answer")
        await settle(app, pilot)
        await pilot.press("slash")
        offered = [c.label for c in app.menu.completions]
        await pilot.press("escape")
        await submit(pilot, app, "/debug")
        await settle(app, pilot)
        shown = last_info(app)
        sent = [m.role for m in app.session.messages] if app.session else []
    log = agent_dir() / "caddie-debug.log"
    text = log.read_text()
    assert "/debug" not in offered
    assert shown.startswith("✓ Debug log written") and str(log) in shown
    assert "=== All rendered lines with visible widths ===" in text
    drawn = text.split("=== All rendered lines with visible widths ===")[1].split("=== Agent messages")[0]
    assert "the answer is forty-two" in drawn and "(w=" in drawn
    jsonl = text.split("=== Agent messages (JSONL) ===")[1].strip().splitlines()
    assert ['"role": "user"' in jsonl[0], '"role": "assistant"' in jsonl[1]] == [True, True]
    assert sent == ["user", "assistant"], "nothing was sent to the model for /debug"
