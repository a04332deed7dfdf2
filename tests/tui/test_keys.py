"""Keys by Pi's binding ids: keybindings.json read as Pi reads it, the editor's order of precedence, and the
keys that Pi has and caddie's editor now does too (word motions, jumps, history bindings, selection copy)."""

from __future__ import annotations

import json
from pathlib import Path

from caddie.config.paths import agent_dir
from caddie.modes.interactive.key_routing import EXTENSION, EditorState, route
from caddie.modes.interactive.keymap import Keybindings, canonical_key, load_keybindings, parse_keybindings
from tests.tui.harness import SMALL, make_app, ready, statuses, submit, until

IDLE = EditorState(empty=False, selection=False)


def test_pi_and_textual_spellings_of_a_key_are_one_key() -> None:
    assert canonical_key("shift+ctrl+p") == canonical_key("ctrl+shift+p") == "ctrl+shift+p"
    assert canonical_key("pageUp") == "pageup"
    assert canonical_key("ctrl+]") == "ctrl+right_square_bracket"
    assert canonical_key("L") == canonical_key("shift+l")
    assert Keybindings().matches("ctrl+underscore", "tui.editor.undo"), "Ctrl+- arrives as Ctrl+_"


def test_a_keybindings_file_replaces_defaults_per_id_migrates_old_names_and_says_what_it_skips(
    tmp_path: Path,
) -> None:
    path = tmp_path / "keybindings.json"
    path.write_text(
        json.dumps(
            {
                "expandTools": "ctrl+e",  # Pi's pre-namespacing name for app.tools.expand
                "tui.editor.historyPrevious": ["ctrl+p"],
                "app.thinking.toggle": [],
                "app.nonsense": "f1",
                "app.model.select": 42,
            }
        )
    )
    keys = load_keybindings(path)
    assert keys.keys("app.tools.expand") == ["ctrl+e"]
    assert keys.keys("tui.editor.historyPrevious") == ["ctrl+p"]
    assert keys.keys("app.thinking.toggle") == []
    assert keys.keys("app.model.select") == ["ctrl+l"], "a bad value keeps the default"
    assert any("unknown binding id 'app.nonsense'" in w for w in keys.warnings)
    assert any("app.model.select must be a key or a list of keys" in w for w in keys.warnings)


def test_an_unreadable_keybindings_file_keeps_the_defaults_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "keybindings.json"
    path.write_text("{ not json")
    keys = load_keybindings(path)
    assert keys.keys("app.model.select") == ["ctrl+l"]
    assert len(keys.warnings) == 1 and "not valid JSON" in keys.warnings[0]
    assert parse_keybindings(["a"], "x")[1] == [
        "x: expected a JSON object of binding ids to keys; using the default keys"
    ]


def test_the_editor_routes_keys_in_pis_order() -> None:
    keys = Keybindings()
    assert route(keys, "escape", IDLE) == ["app.interrupt"]
    assert route(keys, "ctrl+d", EditorState(empty=True, selection=False))[0] == "app.exit"
    assert route(keys, "ctrl+d", IDLE) == ["tui.editor.deleteCharForward"], (
        "Ctrl+D deletes when there is text"
    )
    assert route(keys, "ctrl+c", EditorState(empty=False, selection=True))[0] == "tui.input.copy"
    assert route(keys, "ctrl+c", IDLE) == ["app.clear"]
    assert route(keys, "pageup", IDLE)[0] == "tui.altScreen.pageUp", "full screen: the transcript first"
    assert route(keys, "ctrl+home", IDLE) == ["tui.editor.cursorLineStart"]
    assert route(keys, "f5", IDLE, {"f5"}) == [EXTENSION]
    user = Keybindings({"tui.editor.historyPrevious": ["ctrl+p"]})
    assert route(user, "ctrl+p", IDLE)[0] == "tui.editor.historyPrevious", "explicit history bindings win"
    assert route(keys, "ctrl+p", IDLE)[0] == "app.model.cycleForward"


async def test_keybindings_json_rebinds_the_editor_and_reload_reads_it_again(tmp_path: Path) -> None:
    path = agent_dir() / "keybindings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"tui.editor.historyPrevious": "ctrl+p"}))
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        app.editor.prompt_history.add("an earlier prompt")
        await pilot.press("ctrl+p")
        recalled = app.editor.text
        path.write_text(json.dumps({"app.tools.expand": "f2"}))
        app.editor.set_text("")
        await submit(pilot, app, "/reload")
        await until(pilot, lambda: any("Reloaded" in m for m in statuses(app)))
        await pilot.press("f2")
        expanded = app.view.tools_expanded
        await pilot.press("ctrl+o")
        still = app.view.tools_expanded
    assert recalled == "an earlier prompt"
    assert expanded, "the new key for app.tools.expand works after /reload"
    assert still, "Ctrl+O no longer toggles once app.tools.expand is bound to F2 alone"


async def test_word_motions_jumps_and_line_keys_move_as_in_pi(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        app.editor.set_text("one two three")
        await pilot.press("alt+left", "X")
        after_word = app.editor.text
        await pilot.press("ctrl+a", "ctrl+right_square_bracket", "t", "Y")
        after_jump = app.editor.text
        await pilot.press("ctrl+end", "Z")
        after_end = app.editor.text
    assert after_word == "one two Xthree"
    assert after_jump == "one Ytwo Xthree"
    assert after_end == "one Ytwo XthreeZ"


async def test_pickers_and_dialogs_take_their_keys_from_keybindings_json(tmp_path: Path) -> None:
    from caddie.ai.providers.faux import faux_message
    from caddie.modes.interactive.dialogs import InputScreen
    from caddie.modes.interactive.pickers import SessionPicker, TreePicker
    from tests.tui.harness import settle, widget_text

    path = agent_dir() / "keybindings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "app.session.toggleNamedFilter": "f3",
                "app.session.togglePath": [],
                "tui.select.cancel": "f9",
                "app.tree.filter.cycleForward": "f4",
                "app.tree.editLabel": "ctrl+e",
            }
        )
    )
    app, _ = make_app(tmp_path, [faux_message("an answer")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "a question")
        await settle(app, pilot)
        await submit(pilot, app, "/resume")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        sessions = app.screen
        assert isinstance(sessions, SessionPicker)
        hint = widget_text(sessions.query_one("#hint"))
        await pilot.press("ctrl+n")  # its default key no longer toggles
        named_by_default_key = sessions.named_only
        await pilot.press("f3")
        named_by_new_key = sessions.named_only
        await pilot.press("ctrl+p")  # unbound: nothing
        path_shown = sessions.show_path
        await pilot.press("escape")  # the cancel key is F9 alone now
        still_open = app.screen is sessions
        await pilot.press("f9")
        await until(pilot, lambda: not isinstance(app.screen, SessionPicker))
        await submit(pilot, app, "/tree")
        await until(pilot, lambda: isinstance(app.screen, TreePicker))
        tree = app.screen
        assert isinstance(tree, TreePicker)
        await pilot.press("ctrl+o")
        mode_after_default_key = tree.mode
        await pilot.press("f4")
        mode_after_new_key = tree.mode
        await pilot.press("ctrl+e")
        await until(pilot, lambda: isinstance(app.screen, InputScreen))
        label_dialog = True
        await pilot.press("f9")
        await until(pilot, lambda: app.screen is tree)
        await pilot.press("f9")
        await until(pilot, lambda: not isinstance(app.screen, TreePicker))
        path.write_text(json.dumps({}))
        await submit(pilot, app, "/reload")
        await until(pilot, lambda: any("Reloaded" in m for m in statuses(app)))
        await submit(pilot, app, "/resume")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        await pilot.press("ctrl+n")
        named_after_reload = app.screen.named_only  # type: ignore[attr-defined]
    assert "f3 named only" in hint and "f9 cancel" in hint and "unbound path" in hint
    assert not named_by_default_key and named_by_new_key
    assert not path_shown, "an id bound to [] has no key"
    assert still_open, "Esc no longer cancels once tui.select.cancel is F9 alone"
    assert mode_after_default_key == "default" and mode_after_new_key == "no-tools"
    assert label_dialog
    assert named_after_reload, "/reload brings the default keys back"
