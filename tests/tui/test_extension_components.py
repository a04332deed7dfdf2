"""Pi's ``ctx.ui`` beyond dialogs, driven through the real app with the example extensions
(examples/extensions/ui_tour.py and vim_mode.py): components in widgets, the footer and the header,
``ui.custom`` in place of the editor and as an overlay, the working line, the hidden-thinking label, themes,
tool expansion, pasting, a dialog dismissed by a signal, autocomplete, key hooks, tool renderers and an
editor component; and what modes without a terminal answer."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from caddie.ai.messages import UserMessage
from caddie.ai.providers.faux import faux_message, faux_thinking, faux_tool_call
from caddie.extensions.api import FEATURES, KeyInput, ThemeView, matches_key
from caddie.extensions.runner import Extension
from caddie.modes.interactive.app import CaddieApp
from caddie.modes.interactive.conversation import InfoBlock, ThinkingBlock, ToolBlock, user_text
from caddie.modes.interactive.dialogs import ConfirmScreen
from caddie.modes.interactive.extension_ui import ComponentView, OverlayScreen
from caddie.modes.rpc.ui import RpcUI
from caddie.runtime.ui import HeadlessUI
from tests.tui.harness import LARGE, inline_extension, make_app, ready, settle, submit, until, widget_text

EXAMPLES = Path(__file__).parents[2] / "examples" / "extensions"


def example(name: str) -> Extension:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return inline_extension(module.register, name)


def notices(app: CaddieApp) -> list[str]:
    return [widget_text(b) for b in app.conversation.blocks_of(InfoBlock)]


async def test_components_in_a_widget_the_footer_and_the_header(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, extensions=[example("ui_tour")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/ui-panel")
        await until(pilot, lambda: "ui-tour panel · 0 bumps" in widget_text(app.above))
        await submit(pilot, app, "/ui-panel")
        await until(pilot, lambda: "ui-tour panel · 1 bumps" in widget_text(app.above))
        await submit(pilot, app, "/ui-panel off")
        await until(pilot, lambda: "ui-tour" not in widget_text(app.above))

        await submit(pilot, app, "/ui-footer")
        await until(pilot, lambda: "ui-tour footer · faux/faux-1" in widget_text(app.footer))
        await submit(pilot, app, "/ui-footer off")
        await until(pilot, lambda: "ui-tour footer" not in widget_text(app.footer))
        assert "faux/faux-1" in widget_text(app.footer)  # caddie's footer again

        first = widget_text(app.conversation.blocks[0])
        await submit(pilot, app, "/ui-header")
        await until(pilot, lambda: "ui-tour header" in widget_text(app.conversation.blocks[0]))
        await submit(pilot, app, "/ui-header off")
        await until(pilot, lambda: "ui-tour header" not in widget_text(app.conversation.blocks[0]))
        assert widget_text(app.conversation.blocks[0]) == first


async def test_custom_shows_a_component_in_place_of_the_editor_until_it_is_done(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, extensions=[example("ui_tour")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/ui-pick")
        await until(pilot, lambda: bool(app.query("#custom")))
        view = app.query_one("#custom", ComponentView)
        assert not app.editor.display and app.focused is view
        assert "› red" in widget_text(view)
        await pilot.press("down")
        await until(pilot, lambda: "› green" in widget_text(view))
        await pilot.press("enter")
        await until(pilot, lambda: any("picked green" in n for n in notices(app)))
        assert not app.query("#custom") and app.editor.display and app.focused is app.editor
        await submit(pilot, app, "/ui-pick")
        await until(pilot, lambda: bool(app.query("#custom")))
        await pilot.press("escape")
        await until(pilot, lambda: any("nothing picked" in n for n in notices(app)))


async def test_an_overlay_floats_over_the_conversation_and_closes_with_its_answer(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, extensions=[example("ui_tour")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/ui-overlay")
        await until(pilot, lambda: isinstance(app.screen, OverlayScreen))
        box = app.screen.query_one("#overlay")
        assert "ui-tour overlay" in widget_text(box)
        assert box.region.right >= LARGE[0] - 2 and box.region.y <= 2  # anchored top-right
        await pilot.press("x")  # not its key: stays
        await pilot.pause()
        assert isinstance(app.screen, OverlayScreen)
        await pilot.press("q")
        await until(pilot, lambda: any("overlay closed" in n for n in notices(app)))
        assert not isinstance(app.screen, OverlayScreen)


async def test_working_line_indicator_message_and_visibility(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, extensions=[example("ui_tour")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/ui-working")
        await until(pilot, lambda: app.working.message == "Touring…")
        app.working.set_active(True)  # as while the agent works
        await pilot.pause()
        drawn = widget_text(app.working)
        assert drawn.strip()[0] in "◐◓◑◒" and "Touring…" in drawn and app.working.has_class("-on")
        await submit(pilot, app, "/ui-working hide")
        await until(pilot, lambda: not app.working.has_class("-on"))
        assert app.working.active  # still working, only not shown
        await submit(pilot, app, "/ui-working reset")
        await until(pilot, lambda: app.working.has_class("-on"))
        assert "Working…" in widget_text(app.working) and "◐" not in widget_text(app.working)


async def test_hidden_thinking_label_and_tools_expanded(tmp_path: Path) -> None:
    steps = [faux_message([faux_thinking("secret plan"), faux_tool_call("roll_dice", {"sides": 20})]),
             faux_message("done")]  # fmt: skip
    app, _ = make_app(tmp_path, steps, extensions=[example("ui_tour")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/ui-thinking Pondering")
        await submit(pilot, app, "roll")
        await settle(app, pilot)
        thinking = app.conversation.blocks_of(ThinkingBlock)[0]
        await until(pilot, lambda: "Pondering" in widget_text(thinking))
        tool = app.conversation.blocks_of(ToolBlock)[0]
        text = widget_text(tool)
        assert "🎲 rolling a d20" in text and "rolled " in text and "(of 20)" not in text  # its own look
        await submit(pilot, app, "/ui-tools")
        await until(pilot, lambda: "(of 20)" in widget_text(tool))
        assert app.view.tools_expanded and any("tool output expanded" in n for n in notices(app))
        await submit(pilot, app, "/ui-thinking")
        await until(pilot, lambda: "Pondering" not in widget_text(thinking))


async def test_themes_listed_and_switched(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, extensions=[example("ui_tour")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/ui-theme")
        await until(pilot, lambda: any("themes:" in n for n in notices(app)))
        listing = next(n for n in notices(app) if "themes:" in n)
        assert "light" in listing and f"theme {app.theme}" in listing
        await submit(pilot, app, "/ui-theme light")
        await until(pilot, lambda: app.theme == "light")
        assert app.ui.theme.name == "light" and not app.ui.theme.dark
        await submit(pilot, app, "/ui-theme nope")
        await until(pilot, lambda: any("No theme called 'nope'" in n for n in notices(app)))


async def test_paste_to_editor_collapses_a_large_paste(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, [faux_message("ok")], extensions=[example("ui_tour")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/ui-paste")
        await until(pilot, lambda: "[paste #1 +40 lines]" in app.editor.text)
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.session is not None
        sent = app.session.messages[0]
    assert isinstance(sent, UserMessage)
    assert user_text(sent) == "\n".join(f"line {i}" for i in range(1, 41))  # the text, not the marker


async def test_a_dialog_counts_down_and_closes_when_its_signal_fires(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, extensions=[example("ui_tour")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/ui-ask")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await until(pilot, lambda: "Ship it? (5s)" in widget_text(app.screen.query_one("#title")))
        await pilot.press("f8")  # the extension's key hook aborts the dialog's signal
        await until(pilot, lambda: any("answer False" in n for n in notices(app)), timeout=3)
        assert not isinstance(app.screen, ConfirmScreen)


async def test_autocomplete_provider_and_key_hook(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, extensions=[example("ui_tour")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        for ch in "fix #2":
            await pilot.press("space" if ch == " " else "number_sign" if ch == "#" else ch)
        await until(pilot, lambda: app.menu.is_open)
        current = app.menu.current()
        assert current is not None and current.label == "#27"
        await pilot.press("tab")
        await until(pilot, lambda: app.editor.text.startswith("fix #27"))
        app.editor.set_text("")
        await pilot.press("slash", "m", "o")
        await until(pilot, lambda: app.menu.is_open)  # below it, caddie's own completions
        menu_item = app.menu.current()
        assert menu_item is not None and menu_item.value.startswith("/mo")
        await pilot.press("escape")
        await pilot.press("f7")  # consumed by the hook: it reports the keys it saw
        await until(pilot, lambda: any("keys seen" in n for n in notices(app)))
        seen = int(next(n for n in notices(app) if "keys seen" in n).split()[0])
        assert seen >= 10


async def test_vim_mode_editor_component(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, extensions=[example("vim_mode")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await until(pilot, lambda: app.editor.border_title == "INSERT")
        await pilot.press("a", "b", "c", "d")
        await pilot.press("escape")
        await until(pilot, lambda: app.editor.border_title == "NORMAL")
        await pilot.press("0", "x")  # to the start, delete a character
        await until(pilot, lambda: app.editor.text == "bcd")
        await pilot.press("q")  # not a vim key here: never typed
        await pilot.press("$", "i", "Z")
        await until(pilot, lambda: app.editor.text == "bcZd")
        assert app.editor.border_title == "INSERT"
        await pilot.press("escape", "A", "!")
        await until(pilot, lambda: app.editor.text == "bcZd!")
        await submit(pilot, app, "/vim")
        await until(pilot, lambda: any("vim mode off" in n for n in notices(app)))
        assert app.editor.border_title is None and app.editor.custom is None


async def test_a_failing_component_is_one_line_not_a_crash(tmp_path: Path) -> None:
    class Broken:
        def render(self, width: int) -> list[str]:
            raise RuntimeError("boom")

    def register(api: Any) -> None:
        async def show(args: str, ctx: Any) -> None:
            ctx.ui.set_widget("broken", lambda tui, theme: Broken())

        api.register_command("broken", show, "a broken widget")

    app, _ = make_app(tmp_path, extensions=[inline_extension(register, "broken")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/broken")
        await until(pilot, lambda: "component failed: RuntimeError: boom" in widget_text(app.above))


@pytest.mark.parametrize("make_ui", [lambda: HeadlessUI(), lambda: RpcUI(lambda record: None)])
async def test_modes_without_a_terminal_answer_unavailable(make_ui: Any) -> None:
    ui = make_ui()
    assert ui.supports("dialogs") and not any(ui.supports(f) for f in FEATURES - {"dialogs"})
    assert await ui.custom(lambda *a: None) is None
    result = ui.set_theme("light")
    assert not result.success and result.error
    assert ui.get_all_themes() == [] and ui.get_theme("dark") is None and not ui.get_tools_expanded()
    assert isinstance(ui.theme, ThemeView) and "\x1b[" in ui.theme.fg("accent", "x")
    stop = ui.on_terminal_input(lambda key: True)
    stop()
    ui.set_widget("w", lambda tui, theme: None)  # a component: ignored, no error
    for call in (ui.set_footer, ui.set_header, ui.set_editor_component):
        call(lambda *a: None)
    ui.set_working_indicator(["x"], 50)
    ui.set_working_visible(False)
    ui.set_hidden_thinking_label("x")
    ui.add_autocomplete_provider(lambda below: below)


def test_rpc_sends_lines_but_not_a_component_and_pastes_as_editor_text() -> None:
    sent: list[Any] = []
    ui = RpcUI(sent.append)
    ui.set_widget("w", lambda tui, theme: None)
    ui.set_widget("w", ["a line"])
    ui.paste_to_editor("pasted")
    methods = [r["method"] for r in sent if isinstance(r, dict)]
    assert methods == ["setWidget", "set_editor_text"]


def test_key_names_match_pi_and_textual_spellings() -> None:
    assert matches_key(KeyInput("ctrl+shift+p"), "shift+ctrl+P")
    assert matches_key("pageup", "pageUp") and matches_key("escape", "esc")
    assert not matches_key(KeyInput("ctrl+p"), "ctrl+shift+p")


async def test_a_widget_component_is_kept_while_other_widgets_change(tmp_path: Path) -> None:
    made: list[int] = []

    class Counter:
        def render(self, width: int) -> list[str]:
            return [f"counter made {len(made)} times"]

    def factory(tui: Any, theme: Any) -> Counter:
        made.append(1)
        return Counter()

    def register(api: Any) -> None:
        async def counter(args: str, ctx: Any) -> None:
            ctx.ui.set_widget("counter", factory)

        async def note(args: str, ctx: Any) -> None:
            ctx.ui.set_widget("note", [f"note {args}"])

        api.register_command("counter", counter, "a component")
        api.register_command("note", note, "lines")

    app, _ = make_app(tmp_path, extensions=[inline_extension(register, "keep")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/counter")
        await until(pilot, lambda: "counter made 1 times" in widget_text(app.above))
        await submit(pilot, app, "/note one")
        await until(pilot, lambda: "note one" in widget_text(app.above))
        await submit(pilot, app, "/counter")  # the same factory again: the same component, drawn again
        await pilot.pause()
        order = [child.name for child in app.above.children]
    assert len(made) == 1 and order == ["counter", "note"]
