"""``ctx.ui`` in the terminal UI: toasts, footer statuses, widgets, dialogs, editor text, project trust."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import Input

from caddie.extensions.api import ExtensionAPI
from caddie.modes.interactive.conversation import InfoBlock
from caddie.modes.interactive.dialogs import ConfirmScreen, EditorScreen, InputScreen, SelectScreen
from caddie.runtime.trust import remembered_trust
from tests.tui.harness import (
    SMALL,
    inline_extension,
    make_app,
    ready,
    settle,
    submit,
    type_text,
    until,
    widget_text,
)


def ui_extension(results: dict[str, Any]) -> Any:
    """Commands that exercise each ``ctx.ui`` method and record what it returned."""

    def register(api: ExtensionAPI) -> None:
        async def toast(args: str, ctx: Any) -> None:
            ctx.ui.notify(f"deployed {args}", "warning")

        async def status(args: str, ctx: Any) -> None:
            ctx.ui.set_status("build", args or None)

        async def widget(args: str, ctx: Any) -> None:
            ctx.ui.set_widget("todo", ["☐ write tests", "\x1b[32m☑ build UI\x1b[0m"], "aboveEditor")
            ctx.ui.set_widget("tip", ["tip: /help"], "belowEditor")

        async def unwidget(args: str, ctx: Any) -> None:
            ctx.ui.set_widget("todo", None)

        async def confirm(args: str, ctx: Any) -> None:
            results["confirm"] = await ctx.ui.confirm("Deploy?", "This ships to production.")

        async def confirm_timeout(args: str, ctx: Any) -> None:
            results["confirm"] = await ctx.ui.confirm("Deploy?", "No answer in time.", timeout=0.2)

        async def select(args: str, ctx: Any) -> None:
            results["select"] = await ctx.ui.select("Environment", ["dev", "staging", "production"])

        async def ask(args: str, ctx: Any) -> None:
            results["input"] = await ctx.ui.input("Ticket number", "e.g. 123")

        async def edit(args: str, ctx: Any) -> None:
            results["editor"] = await ctx.ui.editor("Release notes", "Fixed:")

        async def draft(args: str, ctx: Any) -> None:
            results["before"] = ctx.ui.get_editor_text()
            ctx.ui.set_editor_text("drafted by an extension")

        for name, handler in {
            "toast": toast, "status": status, "widget": widget, "unwidget": unwidget, "confirm": confirm,
            "confirm-timeout": confirm_timeout, "select": select, "ask": ask, "edit": edit, "draft": draft,
        }.items():  # fmt: skip
            api.register_command(name, handler, f"ui test: {name}")

    return inline_extension(register, "uiext")


async def test_notify_puts_the_notice_in_the_transcript_with_its_level(tmp_path: Path) -> None:
    def register(api: ExtensionAPI) -> None:
        async def on_start(event: Any, ctx: Any) -> None:
            ctx.ui.notify("hello from session_start")

        api.on("session_start", on_start)

    app, _ = make_app(tmp_path, extensions=[ui_extension({}), inline_extension(register, "early")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/toast v2")
        await until(pilot, lambda: "deployed v2" in widget_text(app.conversation))
        await pilot.pause(0.2)
        notices = [(b.level, widget_text(b)) for b in app.conversation.blocks_of(InfoBlock)]
        toasts = list(app._notifications)
    assert ("warning", "Warning: deployed v2") in notices
    assert ("notice", "hello from session_start") in notices, "a notice sent during start-up was lost"
    assert not toasts, "extension notices are not toasts"


async def test_set_status_appears_in_the_footer_beside_model_usage_and_cost(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, extensions=[ui_extension({})])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/status build: green")
        await until(pilot, lambda: "build: green" in widget_text(app.footer))
        footer = widget_text(app.footer)
        await submit(pilot, app, "/status")
        await until(pilot, lambda: "build: green" not in widget_text(app.footer))
    assert "faux/faux-1" in footer and "/128k" in footer  # no usage yet: Pi shows no zero figures


async def test_set_widget_places_lines_above_or_below_the_editor(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, extensions=[ui_extension({})])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/widget")
        await until(pilot, lambda: "write tests" in widget_text(app.above))
        above, below = widget_text(app.above), widget_text(app.below)
        order = [app.above.region.y, app.editor.region.y, app.below.region.y]
        await submit(pilot, app, "/unwidget")
        await until(pilot, lambda: "write tests" not in widget_text(app.above))
    assert "☐ write tests" in above and "☑ build UI" in above and "\x1b" not in above
    assert "tip: /help" in below
    assert order == sorted(order)


async def test_confirm_dialog_answers_with_y_or_enter(tmp_path: Path) -> None:
    results: dict[str, Any] = {}
    app, _ = make_app(tmp_path, extensions=[ui_extension(results)])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/confirm")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: "confirm" in results)
        first = results.pop("confirm")
        await submit(pilot, app, "/confirm")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("down", "enter")
        await until(pilot, lambda: "confirm" in results)
        second = results.pop("confirm")
        await submit(pilot, app, "/confirm")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("escape")
        await until(pilot, lambda: "confirm" in results)
    assert first is True and second is False and results["confirm"] is False


async def test_confirm_times_out_to_no_and_closes(tmp_path: Path) -> None:
    results: dict[str, Any] = {}
    app, _ = make_app(tmp_path, extensions=[ui_extension(results)])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/confirm-timeout")
        await until(pilot, lambda: "confirm" in results)
        await pilot.pause()
        still_open = isinstance(app.screen, ConfirmScreen)
    assert results["confirm"] is False and not still_open


async def test_select_dialog_is_keyboard_driven(tmp_path: Path) -> None:
    results: dict[str, Any] = {}
    app, _ = make_app(tmp_path, extensions=[ui_extension(results)])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/select")
        await until(pilot, lambda: isinstance(app.screen, SelectScreen))
        await pilot.press("down", "down", "up", "enter")
        await until(pilot, lambda: "select" in results)
        picked = results.pop("select")
        await submit(pilot, app, "/select")
        await until(pilot, lambda: isinstance(app.screen, SelectScreen))
        await pilot.press("ctrl+c")
        await until(pilot, lambda: "select" in results)
    assert picked == "staging" and results["select"] is None


async def test_input_dialog_returns_the_typed_line(tmp_path: Path) -> None:
    results: dict[str, Any] = {}
    app, _ = make_app(tmp_path, extensions=[ui_extension(results)])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/ask")
        await until(pilot, lambda: isinstance(app.screen, InputScreen))
        placeholder = app.screen.query_one(Input).placeholder
        await type_text(pilot, "481")
        await pilot.press("enter")
        await until(pilot, lambda: "input" in results)
    assert placeholder == "e.g. 123" and results["input"] == "481"


async def test_editor_dialog_edits_multiline_text(tmp_path: Path) -> None:
    results: dict[str, Any] = {}
    app, _ = make_app(tmp_path, extensions=[ui_extension(results)])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/edit")
        await until(pilot, lambda: isinstance(app.screen, EditorScreen))
        await pilot.press("shift+enter")
        await type_text(pilot, "bug")
        await pilot.press("enter")
        await until(pilot, lambda: "editor" in results)
        focused_editor = app.focused is app.editor
    assert results["editor"] == "Fixed:\nbug"
    assert focused_editor, "the prompt editor gets the focus back"


async def test_extensions_read_and_replace_the_editor_text(tmp_path: Path) -> None:
    results: dict[str, Any] = {}
    app, _ = make_app(tmp_path, extensions=[ui_extension(results)])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/draft")
        await until(pilot, lambda: app.editor.text == "drafted by an extension")
    assert results["before"] == ""


async def test_extension_errors_are_shown_and_the_ui_keeps_working(tmp_path: Path) -> None:
    def register(api: ExtensionAPI) -> None:
        async def broken(args: str, ctx: Any) -> None:
            raise RuntimeError("kaput")

        api.register_command("broken", broken, "fails")

    app, _ = make_app(tmp_path, extensions=[inline_extension(register)])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/broken")
        await until(pilot, lambda: "kaput" in widget_text(app.conversation))
        shown = widget_text(app.conversation)
        running = app.is_running
    assert "failed in command /broken: kaput" in shown and running


def project_with_extension(root: Path) -> Path:
    project = root / "project"
    (project / ".caddie" / "extensions").mkdir(parents=True)
    (project / ".caddie" / "extensions" / "projext.py").write_text(
        "def register(api):\n"
        "    api.register_command('project-only', lambda args, ctx: None, 'from the project')\n"
    )
    return project


async def test_untrusted_project_asks_once_and_loads_its_extensions_when_trusted(tmp_path: Path) -> None:
    project = project_with_extension(tmp_path)
    app, _ = make_app(project)
    async with app.run_test(size=SMALL) as pilot:
        await until(
            pilot, lambda: isinstance(app.screen, ConfirmScreen) and "Trust" in widget_text(app.screen)
        )
        question = widget_text(app.screen)
        await pilot.press("y")
        await ready(app, pilot)
        names = [c.name for c in app.command_infos()]
    assert "Trust this project?" in question
    assert remembered_trust(project) is True
    assert "project-only" in names
    again, _ = make_app(project)
    async with again.run_test(size=SMALL) as pilot:
        await ready(again, pilot)
        asked_again = isinstance(again.screen, ConfirmScreen)
    assert not asked_again


async def test_declining_trust_skips_project_extensions_and_is_remembered(tmp_path: Path) -> None:
    project = project_with_extension(tmp_path)
    app, _ = make_app(project)
    async with app.run_test(size=SMALL) as pilot:
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await ready(app, pilot)
        await settle(app, pilot)
        names = [c.name for c in app.command_infos()]
    assert remembered_trust(project) is False
    assert "project-only" not in names


async def test_a_project_trust_handler_decides_with_its_own_dialog_instead_of_the_question(
    tmp_path: Path,
) -> None:
    project = project_with_extension(tmp_path)
    voter = tmp_path / "voter.py"
    voter.write_text(
        "from caddie.extensions.api import ProjectTrustResult\n"
        "def register(api):\n"
        "    async def vote(event, ctx):\n"
        "        choice = await ctx.ui.select('Project trust for ' + event.cwd, ['Trust this session', 'No'])\n"
        "        return ProjectTrustResult('yes' if choice == 'Trust this session' else 'undecided')\n"
        "    api.on('project_trust', vote)\n"
    )
    app, _ = make_app(project)
    app.startup.request.extension_paths = [str(voter)]
    async with app.run_test(size=SMALL) as pilot:
        await until(
            pilot,
            lambda: isinstance(app.screen, SelectScreen) and "Project trust for" in widget_text(app.screen),
        )
        await pilot.press("enter")
        await ready(app, pilot)
        names = [c.name for c in app.command_infos()]
        asked_builtin = isinstance(app.screen, ConfirmScreen)
    assert not asked_builtin
    assert "project-only" in names
    assert remembered_trust(project) is None  # this session only
