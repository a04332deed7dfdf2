"""``api.register_shortcut`` and ``api.register_message_renderer`` in the terminal UI (Textual Pilot)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.panel import Panel

from caddie.extensions.api import CustomMessage, ExtensionAPI, ExtensionContext, MessageRenderOptions
from caddie.modes.interactive.conversation import CustomBlock, InfoBlock
from caddie.modes.interactive.dialogs import ConfirmScreen
from caddie.modes.interactive.extension_hooks import RenderedMessage
from tests.tui.harness import SMALL, inline_extension, make_app, ready, submit, until, widget_text


def _infos(app: Any) -> list[tuple[str, str]]:
    """The transcript's notices as (level, text), long lines unwrapped."""
    return [(b.level, " ".join(widget_text(b).split())) for b in app.conversation.blocks_of(InfoBlock)]


async def test_a_shortcut_runs_its_handler_with_the_extension_context_while_the_editor_has_focus(
    tmp_path: Path,
) -> None:
    pressed: list[str] = []

    def register(api: ExtensionAPI) -> None:
        async def on_key(ctx: ExtensionContext) -> None:
            pressed.append(ctx.cwd)
            ctx.ui.notify("plan mode on")

        api.register_shortcut("F7", on_key, "toggle plan mode")

    app, _ = make_app(tmp_path, extensions=[inline_extension(register, "plan")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        app.editor.set_text("draft")
        assert app.focused is app.editor
        await pilot.press("f7")
        await until(pilot, lambda: bool(pressed))
        await until(pilot, lambda: any("plan mode on" in text for _, text in _infos(app)))
        draft = app.editor.text
        await submit(pilot, app, "/hotkeys")
        await until(pilot, lambda: "toggle plan mode" in widget_text(app.conversation))
    assert pressed == [str(tmp_path.resolve())]
    assert draft == "draft", "the key reached the editor too"


async def test_reserved_keys_stay_caddies_and_conflicts_are_reported_with_pis_texts(tmp_path: Path) -> None:
    calls: list[str] = []

    def first(api: ExtensionAPI) -> None:
        api.register_shortcut("ctrl+c", lambda ctx: calls.append("ctrl+c"))
        api.register_shortcut("ctrl+w", lambda ctx: calls.append("first ctrl+w"))
        api.register_shortcut("f8", lambda ctx: calls.append("first f8"))

    def second(api: ExtensionAPI) -> None:
        api.register_shortcut("f8", lambda ctx: calls.append("second f8"))

    app, _ = make_app(
        tmp_path, extensions=[inline_extension(first, "first"), inline_extension(second, "second")]
    )
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        app.editor.set_text("some words")
        await pilot.press("ctrl+c")  # still clears the editor
        await pilot.pause()
        cleared = app.editor.text
        await pilot.press("f8", "ctrl+w")
        await until(pilot, lambda: len(calls) == 2)
        warnings = [text for level, text in _infos(app) if level == "warning"]
    assert cleared == ""
    assert calls == ["second f8", "first ctrl+w"]
    text = " ".join(warnings)
    assert (
        "Extension shortcut 'ctrl+c' from /inline/first.py conflicts with built-in shortcut. Skipping."
        in text
    )
    assert (
        "Extension shortcut conflict: 'ctrl+w' is built-in shortcut for tui.editor.deleteWordBackward and "
        "/inline/first.py. Using /inline/first.py." in text
    )
    assert (
        "Extension shortcut conflict: 'f8' registered by both /inline/first.py and /inline/second.py. "
        "Using /inline/second.py." in text
    )


async def test_shortcuts_stay_out_of_the_way_while_a_dialog_is_open(tmp_path: Path) -> None:
    pressed: list[str] = []
    answers: list[bool] = []

    def register(api: ExtensionAPI) -> None:
        api.register_shortcut("f4", lambda ctx: pressed.append("f4"))

        async def ask(args: str, ctx: Any) -> None:
            answers.append(await ctx.ui.confirm("Deploy?", "Ship it."))

        api.register_command("ask", ask)

    app, _ = make_app(tmp_path, extensions=[inline_extension(register, "dialog")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/ask")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("f4")
        await pilot.pause(0.1)
        during = list(pressed)
        await pilot.press("y")
        await until(pilot, lambda: bool(answers))
        await pilot.press("f4")
        await until(pilot, lambda: bool(pressed))
    assert during == [] and answers == [True] and pressed == ["f4"]


async def test_a_failing_shortcut_handler_is_reported_and_the_ui_goes_on(tmp_path: Path) -> None:
    def register(api: ExtensionAPI) -> None:
        def boom(ctx: ExtensionContext) -> None:
            raise RuntimeError("no plan today")

        api.register_shortcut("f9", boom)

    app, _ = make_app(tmp_path, extensions=[inline_extension(register, "boom")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await pilot.press("f9")
        await until(pilot, lambda: any("no plan today" in text for _, text in _infos(app)))
        await pilot.press("h", "i")
        await pilot.pause()
        text = app.editor.text
        errors = [text for level, text in _infos(app) if level == "error"]
    assert any("/inline/boom.py failed in shortcut f9: no plan today" in e for e in errors)
    assert text == "hi"


async def test_shortcuts_follow_reload_and_leave_unbound_keys_to_the_editor(tmp_path: Path) -> None:
    ext = tmp_path / "keys.py"
    ext.write_text(
        "def register(api):\n    api.register_shortcut('f6', lambda ctx: ctx.ui.set_editor_text('from f6'))\n"
    )
    app, _ = make_app(tmp_path, trust=True)
    app.startup.request.extension_paths = [str(ext)]
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await pilot.press("f6")
        await until(pilot, lambda: app.editor.text == "from f6")
        ext.write_text(
            "def register(api):\n"
            "    api.register_shortcut('f5', lambda ctx: ctx.ui.set_editor_text('from f5'))\n"
        )
        await submit(pilot, app, "/reload")
        await until(pilot, lambda: "f5" in app.hooks.shortcuts)
        app.editor.set_text("")
        await pilot.press("f6")
        await pilot.pause(0.1)
        after_f6 = app.editor.text
        await pilot.press("f5")
        await until(pilot, lambda: app.editor.text == "from f5")
    assert after_f6 == "", "the shortcut removed by /reload still ran"
    assert set(app.hooks.shortcuts) == {"f5"}


def _renderer_extension(seen: list[bool]) -> Any:
    def register(api: ExtensionAPI) -> None:
        def render(message: CustomMessage, options: MessageRenderOptions) -> object:
            seen.append(options.expanded)
            body = f"deploy {message.details['version']}"
            if options.expanded:
                body += f" to {message.details['target']}"
            return Panel(body, title="deploy card")

        def render_plain(message: CustomMessage, options: MessageRenderOptions) -> object:
            return None if message.details == "default" else "plain: " + str(message.content)

        def render_broken(message: CustomMessage, options: MessageRenderOptions) -> object:
            raise ValueError("renderer bug")

        api.register_message_renderer("deploy", render)
        api.register_message_renderer("plain", render_plain)
        api.register_message_renderer("broken", render_broken)

        async def send(args: str, ctx: Any) -> None:
            api.send_message("deploy", "shipping", details={"version": "v2", "target": "prod"})
            api.send_message("plain", "hello")
            api.send_message("plain", "untouched", details="default")
            api.send_message("broken", "still shown")
            api.send_message("unrendered", "as before")

        api.register_command("send", send)

    return inline_extension(register, "cards")


async def test_a_message_renderer_draws_its_custom_messages_and_redraws_them_expanded(tmp_path: Path) -> None:
    seen: list[bool] = []
    app, _ = make_app(tmp_path, extensions=[_renderer_extension(seen)])
    async with app.run_test(size=(100, 40)) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/send")
        await until(
            pilot,
            lambda: (
                len(app.conversation.blocks_of(CustomBlock))
                + len(app.conversation.blocks_of(RenderedMessage))
                == 5
            ),
        )
        await pilot.pause()
        rendered = {b.custom_type: widget_text(b) for b in app.conversation.blocks_of(RenderedMessage)}
        defaults = {b.custom_type: widget_text(b) for b in app.conversation.blocks_of(CustomBlock)}
        await pilot.press("ctrl+o")
        await pilot.pause()
        expanded = widget_text(app.conversation.blocks_of(RenderedMessage)[0])
        errors = [text for level, text in _infos(app) if level == "error"]
        assert app.session is not None
        sent = [m for m in app.session.messages if isinstance(m, CustomMessage)]
    assert "deploy card" in rendered["deploy"] and "deploy v2" in rendered["deploy"]
    assert "prod" not in rendered["deploy"]
    assert "deploy v2 to prod" in expanded and seen[:2] == [False, True]
    assert "plain: hello" in rendered["plain"]
    assert set(defaults) == {"plain", "broken", "unrendered"}
    assert "[broken]" in defaults["broken"] and "still shown" in defaults["broken"]
    assert any("failed in the renderer for broken: renderer bug" in e for e in errors)
    assert [m.content for m in sent][:1] == ["shipping"], "rendering changed the message itself"
