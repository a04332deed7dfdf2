"""The everyday affordances Pi users look for, driven with Pilot: kill ring, undo, external editor,
@ files and Tab paths, /copy, /settings, themes, /tree search and labels, /session, bash run time."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest

from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.config.paths import agent_dir
from caddie.modes.interactive import files as files_module
from caddie.modes.interactive.conversation import BashBlock, InfoBlock, ToolBlock
from caddie.modes.interactive.dialogs import InputScreen, SelectScreen
from caddie.modes.interactive.pickers import TreePicker
from caddie.modes.interactive.settings_dialog import SettingsScreen
from caddie.session.entries import MessageEntry
from caddie.tools.find import find_fd
from tests.interop.pi import skip_or_fail
from tests.tui.harness import (
    LARGE,
    SMALL,
    make_app,
    plain,
    ready,
    settle,
    submit,
    type_text,
    until,
    widget_text,
    write_settings,
)


def executable(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


async def test_kill_ring_yank_and_yank_pop_and_undo(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        editor = app.editor
        await type_text(pilot, "alpha beta gamma")
        await pilot.press("ctrl+w", "ctrl+w")  # two kills in a row join into one entry
        after_kills = editor.text
        await pilot.press("ctrl+y")
        yanked = editor.text
        await pilot.press("ctrl+a", "ctrl+k")  # a separate kill: the whole line
        await pilot.press("ctrl+y")
        whole = editor.text
        await pilot.press("alt+y")  # right after a yank: the entry before replaces it
        popped = editor.text
        await pilot.press("ctrl+underscore")  # Ctrl+- undoes
        undone = editor.text
        ring = list(editor.kill_ring.entries)
    assert after_kills == "alpha "
    assert yanked == "alpha beta gamma"
    assert whole == "alpha beta gamma"
    assert popped == "beta gamma"
    assert undone != popped
    assert ring[-1] == "beta gamma" and "alpha beta gamma" in ring


async def test_ctrl_g_edits_the_prompt_in_the_external_editor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = executable(tmp_path / "fake-editor", 'printf "%s and more\\n" "$(cat "$1")" > "$1"\n')
    monkeypatch.setenv("VISUAL", str(script))
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        app.editor.set_text("a draft")
        await pilot.press("ctrl+g")
        await until(pilot, lambda: app.editor.text == "a draft and more")
        monkeypatch.delenv("VISUAL")
        monkeypatch.delenv("EDITOR", raising=False)
        await pilot.press("ctrl+g")
        await until(pilot, lambda: "Set $VISUAL or $EDITOR" in widget_text(app.conversation))
        kept = app.editor.text
    assert kept == "a draft and more"


def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src" / "parsing").mkdir(parents=True)
    (root / "src" / "parsing" / "parser.py").write_text("x = 1\n")
    (root / "src" / "main.py").write_text("")
    (root / "build").mkdir()
    (root / "build" / "parser_generated.py").write_text("")
    (root / ".gitignore").write_text("build/\n")
    return root


@pytest.mark.parametrize("use_fd", [True, False], ids=["fd", "python-walk"])
async def test_at_offers_project_files_fuzzily_honouring_gitignore(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use_fd: bool
) -> None:
    if use_fd and find_fd() is None:
        skip_or_fail(
            "fd is not installed (Debian: apt-get install fd-find; the python-walk case covers the fallback)"
        )
    monkeypatch.setattr(files_module, "USE_FD", use_fd)
    root = project(tmp_path)
    (root / "src" / "parsing" / "lexer.py").write_text("y = 2\n")  # "prsr" is in its directory only
    app, _ = make_app(root)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await type_text(pilot, "look at @prsr")
        await until(pilot, lambda: app.menu.is_open)
        offered = [c.label for c in app.menu.completions]
        await pilot.press("enter")  # accepts the file; does not send
        accepted = app.editor.text
        sent = app.session.messages  # type: ignore[union-attr]
    assert offered[0] == "src/parsing/parser.py"
    assert not any(o.startswith("build/") for o in offered), "a .gitignore'd file was offered"
    assert accepted == "look at @src/parsing/parser.py "
    assert sent == []


async def test_tab_completes_paths_in_place(tmp_path: Path) -> None:
    root = project(tmp_path)
    app, _ = make_app(root)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await type_text(pilot, "read sr")
        await pilot.press("tab")
        first = app.editor.text
        await type_text(pilot, "pa")
        await pilot.press("tab")
        second = app.editor.text
        await pilot.press("tab")
        third = app.editor.text
        app.editor.set_text("read src/")
        await pilot.press("tab")  # two candidates: a menu, Tab picks the highlighted one
        menu = [c.label for c in app.menu.completions]
    assert first == "read src/"
    assert second == "read src/parsing/"
    assert third == "read src/parsing/parser.py "
    assert menu == ["main.py", "parsing/"]


async def test_copy_puts_the_last_answer_on_the_clipboard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sink = tmp_path / "clipboard.txt"
    executable(bin_dir / "xclip", f'cat > "{sink}"\n')
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DISPLAY", ":99")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    app, _ = make_app(tmp_path, [faux_message("the **answer**")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/copy")
        await until(pilot, lambda: "no answer to copy" in widget_text(app.conversation))
        await submit(pilot, app, "question")
        await settle(app, pilot)
        await pilot.press("ctrl+x")
        await until(pilot, lambda: sink.exists() and sink.read_text() == "the **answer**")
        clipboard = app.clipboard
    assert clipboard == "the **answer**"  # what went out as OSC 52


async def test_settings_dialog_applies_and_saves(tmp_path: Path) -> None:
    write_settings(theme="dark", somethingElse=42)
    app, _ = make_app(tmp_path)
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/settings")
        await until(pilot, lambda: isinstance(app.screen, SettingsScreen))
        rows = widget_text(app.screen)
        screen = app.screen
        assert isinstance(screen, SettingsScreen)
        for _ in range([c.id for c in screen.shown].index("steeringMode")):
            await pilot.press("down")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, SelectScreen))
        await pilot.press("down", "enter")  # one-at-a-time → all
        await until(pilot, lambda: isinstance(app.screen, SettingsScreen))
        screen = app.screen
        assert isinstance(screen, SettingsScreen)
        for _ in range([c.id for c in screen.shown].index("theme") - (screen.option_list.highlighted or 0)):
            await pilot.press("down")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, SelectScreen))
        await pilot.press("down", "enter")  # dark → light
        await until(pilot, lambda: app.theme == "light")
        await until(pilot, lambda: isinstance(app.screen, SettingsScreen))
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, SettingsScreen))
        mode = app.session.state().steering_mode  # type: ignore[union-attr]
    saved = json.loads((agent_dir() / "settings.json").read_text())
    for label in ("Thinking level", "Steering mode", "Follow-up mode", "Auto-compaction", "Retry", "Theme"):
        assert label in rows
    assert "Extension goal" in rows and "Extension mulligan" in rows
    assert mode == "all"
    assert saved["steeringMode"] == "all" and saved["theme"] == "light"
    assert saved["somethingElse"] == 42, "other settings were lost"


async def test_a_pi_theme_file_is_used_and_a_broken_one_is_explained(tmp_path: Path) -> None:
    themes = agent_dir() / "themes"
    themes.mkdir(parents=True)
    (themes / "ocean.json").write_text(
        json.dumps(
            {
                "name": "ocean",
                "vars": {"sea": "#0077be", "grey": 244},
                "colors": {
                    "accent": "sea",
                    "muted": "grey",
                    "error": "#ff0000",
                    "text": "",
                    "userMessageBg": "#102030",
                    "mdHeading": "#ffaa00",
                },
            }
        )
    )
    (themes / "broken.json").write_text('{"name": "broken", "colors": {"accent": "nope"}}')
    write_settings(theme="ocean")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await until(pilot, lambda: app.theme == "ocean")
        primary = app.current_theme.primary
        secondary = app.current_theme.secondary
        notices = [widget_text(b) for b in app.conversation.blocks_of(InfoBlock)]
    assert primary.lower() == "#0077be"
    assert secondary is not None and secondary.lower() == "#808080"  # xterm colour 244
    assert any("broken.json" in n and "'nope'" in n for n in notices)


def installed_theme_package(tmp_path: Path, themes: dict[str, str]) -> str:
    """A local package with a ``caddie.themes`` folder, laid out on disk as ``caddie install`` leaves it
    (its environment with caddie's marker, the distribution's metadata, the package's files). Its source."""
    from caddie.resources.packages import MARKER, install_dir, parse_source

    source = tmp_path / "theme-pack"
    source.mkdir()
    spec = parse_source(str(source), "user", str(tmp_path))
    env = install_dir(spec, str(tmp_path))
    site = env / "lib" / "python3.11" / "site-packages"
    folder = site / "theme_pack" / "themes"
    folder.mkdir(parents=True)
    (site / "theme_pack" / "__init__.py").write_text("")
    for name, accent in themes.items():
        (folder / f"{name}.json").write_text(json.dumps({"name": name, "colors": {"accent": accent}}))
    info = site / "theme_pack-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: theme-pack\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[caddie.themes]\npack = theme_pack:themes\n")
    (env / MARKER).write_text(json.dumps({"source": str(source)}))
    return str(source)


async def test_themes_from_packages_are_offered_and_used_with_the_packages_filter(tmp_path: Path) -> None:
    source = installed_theme_package(tmp_path, {"harbour": "#336699", "dusk": "#aa5500"})
    write_settings(theme="harbour", packages=[{"source": source, "themes": ["-dusk"]}])
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await until(pilot, lambda: app.theme == "harbour")
        primary = app.current_theme.primary
        offered = set(app.themes.names())
    assert primary.lower() == "#336699"
    assert "harbour" in offered and "dusk" not in offered  # "-dusk": the package's filter leaves it out


async def test_tree_search_and_labels(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, [faux_message("first answer"), faux_message("second answer")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        for prompt in ("the first question", "the second question"):
            await submit(pilot, app, prompt)
            await settle(app, pilot)
        await submit(pilot, app, "/tree")
        await until(pilot, lambda: isinstance(app.screen, TreePicker))
        picker = app.screen
        assert isinstance(picker, TreePicker)
        await type_text(pilot, "first question")
        await pilot.pause()
        found = [c.search for c in picker.shown]
        await pilot.press("L")  # Shift+L: label the highlighted entry
        await until(pilot, lambda: isinstance(app.screen, InputScreen))
        await type_text(pilot, "milestone")
        await pilot.press("enter")
        await until(pilot, lambda: app.screen is picker)
        for _ in range(len("first question")):
            await pilot.press("backspace")
        await pilot.press("ctrl+l")  # only labelled entries (the rows are computed in a worker thread)
        await until(pilot, lambda: not picker.rows_loading)
        await pilot.pause()
        labelled = [c.search for c in picker.shown]
        await pilot.press("escape")
        store = app.session.store  # type: ignore[union-attr]
        first = next(e for e in store.entries() if isinstance(e, MessageEntry) and e.message.role == "user")
    assert len(found) == 1 and "the first question" in found[0]
    assert store.labels().get(first.id) == "milestone"
    assert len(labelled) == 1 and "milestone" in labelled[0]


async def test_session_wraps_long_paths(tmp_path: Path) -> None:
    deep = tmp_path / ("a-rather-long-directory-name-" * 4).rstrip("-") / "and-another-level"
    deep.mkdir(parents=True)
    write_settings(sessionDir=str(deep))
    app, _ = make_app(tmp_path, [faux_message("ok")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "hi")
        await settle(app, pilot)
        await submit(pilot, app, "/session")
        await until(pilot, lambda: "Session file" in widget_text(app.conversation.blocks_of(InfoBlock)[-1]))
        shown = widget_text(app.conversation.blocks_of(InfoBlock)[-1])
        path = app.session.store.session_file  # type: ignore[union-attr]
    joined = "".join(line.split("  ", 1)[-1].strip() if "Session file" in line else line.strip()
                     for line in shown.splitlines()[: shown.index("Session id") and None])  # fmt: skip
    assert path is not None and len(path) > 80
    assert path in re.sub(r"\s+", "", joined), "the session file path was cut"


async def test_bash_shows_elapsed_time_while_running_and_the_duration_after(tmp_path: Path) -> None:
    call = faux_message([faux_tool_call("bash", {"command": "sleep 3; echo done"}, id="b1")])
    app, _ = make_app(tmp_path, [call, faux_message("finished")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "run")
        await until(
            pilot,
            lambda: (
                bool(app.conversation.blocks_of(ToolBlock))
                and app.conversation.blocks_of(ToolBlock)[0].status == "running"
            ),
        )
        await pilot.pause(1.2)  # the command runs 3 s: a loaded machine still finds it running
        running = plain(app.conversation.blocks_of(ToolBlock)[0].build())
        await settle(app, pilot)
        finished = plain(app.conversation.blocks_of(ToolBlock)[0].build())
        await submit(pilot, app, "!!sleep 0.3")
        await settle(app, pilot)
        await until(
            pilot,
            lambda: (
                bool(app.conversation.blocks_of(BashBlock))
                and "exit" in widget_text(app.conversation.blocks_of(BashBlock)[0])
            ),
        )
        user_bash = widget_text(app.conversation.blocks_of(BashBlock)[0])
    assert re.search(r"running… [1-9]\.\ds", running), running
    took = re.search(r"exit 0  (\d+\.\d)s", finished)
    assert took is not None and float(took.group(1)) >= 3.0, finished  # a loaded machine may take longer
    took = re.search(r"\$ sleep 0\.3  exit 0  (\d+\.\d)s", user_bash)
    assert took is not None and float(took.group(1)) >= 0.3, user_bash


async def test_settings_switches_a_skill_off_as_caddie_config_does(tmp_path: Path) -> None:
    skill = agent_dir() / "skills" / "tidy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: tidy\ndescription: Tidy imports.\n---\nSort them.\n")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/settings")
        await until(pilot, lambda: isinstance(app.screen, SettingsScreen))
        screen = app.screen
        assert isinstance(screen, SettingsScreen)
        assert "Skill tidy" in widget_text(screen)
        for _ in range([c.id for c in screen.shown].index("resource:skill:tidy")):
            await pilot.press("down")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, SelectScreen))
        await pilot.press("down", "enter")  # on → off
        await until(pilot, lambda: isinstance(app.screen, SettingsScreen))
        await pilot.press("escape")
    saved = json.loads((agent_dir() / "settings.json").read_text())
    assert saved["skills"] == ["-skills/tidy"]  # the entry `caddie config off skill:tidy` writes
