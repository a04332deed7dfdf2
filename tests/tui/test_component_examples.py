"""Pi's terminal-component example extensions in Python (examples/extensions/), each loaded into the real
interactive app on the faux model and driven with Textual Pilot: footers, headers, the working line, thinking
labels, tool renderers, an editor component, autocomplete, dialogs drawn as components, overlays and games."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import random
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from rich.cells import cell_len
from rich.text import Text
from textual.geometry import Region

from caddie import __version__
from caddie.ai.messages import (
    AssistantMessage,
    BashExecutionMessage,
    CustomMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
)
from caddie.ai.providers.faux import faux_message, faux_text, faux_thinking, faux_tool_call
from caddie.extensions.runner import Extension
from caddie.extensions.ui_components import DEFAULT_THEME
from caddie.modes.interactive.app import CaddieApp
from caddie.modes.interactive.conversation import InfoBlock, ThinkingBlock, ToolBlock
from caddie.modes.interactive.extension_ui import ComponentView, OverlayScreen
from caddie.session.entries import CustomEntry
from tests.tui.harness import (
    LARGE,
    inline_extension,
    make_app,
    ready,
    screen_text,
    settle,
    submit,
    until,
    widget_text,
)

EXAMPLES = Path(__file__).parents[2] / "examples" / "extensions"
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def load(file_name: str) -> ModuleType:
    """An example's module, imported as caddie's loader does (``load("tic_tac_toe.py")``)."""
    spec = importlib.util.spec_from_file_location(f"example_{file_name[:-3]}", EXAMPLES / file_name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as caddie's loader does (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def example(file_name: str) -> Extension:
    return inline_extension(load(file_name).register, file_name[:-3])


def arcade() -> ModuleType:
    """The arcade package (snake and space invaders over one game loop), imported by caddie's own loader; its
    games are ``.snake`` and ``.space_invaders``."""
    from caddie.extensions.loader import path_source

    return path_source(EXAMPLES / "arcade", EXAMPLES).load()


def notices(app: CaddieApp) -> list[str]:
    return [widget_text(b) for b in app.conversation.blocks_of(InfoBlock)]


def git_repo(path: Path, branch: str) -> None:
    subprocess.run(["git", "init", "-q", "-b", branch, str(path)], check=True)


# -- custom-footer ---------------------------------------------------------------------------------------
async def test_custom_footer_shows_the_branch_tokens_model_and_git_branch(tmp_path: Path) -> None:
    git_repo(tmp_path, "feature-x")
    app, _ = make_app(tmp_path, [faux_message("hello there")], extensions=[example("custom_footer.py")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/footer")
        await until(pilot, lambda: "Custom footer enabled" in "\n".join(notices(app)))
        await until(pilot, lambda: "faux-1 (feature-x)" in widget_text(app.footer))
        assert "↑0 ↓0 $0.000" in widget_text(app.footer)  # nothing spent yet
        await submit(pilot, app, "hi")
        await settle(app, pilot)
        assert app.session is not None
        reply = next(m for m in app.session.messages if isinstance(m, AssistantMessage))
        short = load("custom_footer.py").short_count
        expected = f"↑{short(reply.usage.input)} ↓{short(reply.usage.output)}"
        assert reply.usage.input > 0 and short(1078) == "1.1k" and short(999) == "999"
        await until(pilot, lambda: expected in widget_text(app.footer))
        subprocess.run(["git", "-C", str(tmp_path), "checkout", "-q", "-b", "topic"], check=True)
        await until(
            pilot, lambda: "faux-1 (topic)" in widget_text(app.footer)
        )  # redrawn on the branch change
        await submit(pilot, app, "/footer")
        await until(pilot, lambda: "Default footer restored" in "\n".join(notices(app)))
        await until(pilot, lambda: "$" not in widget_text(app.footer))  # caddie's footer shows no cost
        assert "faux/faux-1" in widget_text(app.footer)  # caddie's footer again


# -- custom-header ---------------------------------------------------------------------------------------
async def test_custom_header_replaces_the_first_block_until_builtin_header(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, extensions=[example("custom_header.py")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)

        def first() -> str:
            return widget_text(app.conversation.blocks[0])

        await until(pilot, lambda: f"a coding agent for the terminal v{__version__}" in first())
        assert "█" * 14 in first() and "█▌  █▌" in first()
        await submit(pilot, app, "/builtin-header")
        await until(pilot, lambda: "a coding agent for the terminal" not in first())
        assert "Built-in header restored" in "\n".join(notices(app))
        assert "█" * 14 not in first()


# -- working-indicator, working-message-test -------------------------------------------------------------
async def test_working_indicator_modes(tmp_path: Path) -> None:
    module = load("working_indicator.py")
    app, _ = make_app(tmp_path, extensions=[inline_extension(module.register, "working_indicator")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await until(pilot, lambda: "Indicator: custom spinner" in widget_text(app.footer))
        assert len(app.working.frames) == 10 and "⠋" in app.working.frames[0]
        await submit(pilot, app, "/working-indicator pulse")
        await until(pilot, lambda: "Indicator: custom pulse" in widget_text(app.footer))
        assert [Text.from_ansi(f).plain for f in app.working.frames] == [
            "·",
            "•",
            "●",
            "•",
        ] and app.working.interval == 0.12
        app.working.set_active(True)  # as while the agent works
        await pilot.pause()
        assert widget_text(app.working).strip()[0] in "·•●"
        await submit(pilot, app, "/working-indicator none")
        await until(pilot, lambda: app.working.frames == [])
        assert widget_text(app.working).strip().startswith("Working")  # the message only
        await submit(pilot, app, "/working-indicator bogus")
        await until(pilot, lambda: module.USAGE in "\n".join(notices(app)))
        assert app.working.frames == []  # unchanged
        await submit(pilot, app, "/working-indicator reset")
        await until(pilot, lambda: "caddie's default spinner" in widget_text(app.footer))
        await submit(pilot, app, "/working-indicator")
        await until(pilot, lambda: "Working indicator: caddie's default spinner" in "\n".join(notices(app)))
        default_app, _ = make_app(tmp_path / "plain")
        assert app.working.frames == default_app.working.frames


async def test_working_message_lasts_across_turns(tmp_path: Path) -> None:
    gate = asyncio.Event()

    async def held_reply(*args: Any) -> AssistantMessage:
        await gate.wait()  # the agent stays at work until the test has looked at the working line
        gate.clear()
        return faux_message("ok")

    app, _ = make_app(tmp_path, [held_reply, held_reply], extensions=[example("working_message.py")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        for prompt in ("first", "second"):
            await submit(pilot, app, prompt)
            await until(pilot, lambda: app.working.active)
            await pilot.pause()
            drawn = widget_text(app.working)
            assert "● Working... (custom)" in drawn, drawn
            gate.set()
            await settle(app, pilot)


# -- hidden-thinking-label -------------------------------------------------------------------------------
async def test_hidden_thinking_label_from_the_start_set_and_reset(tmp_path: Path) -> None:
    steps = [faux_message([faux_thinking("a secret plan"), faux_text("done")])]
    app, _ = make_app(tmp_path, steps, extensions=[example("hidden_thinking_label.py")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "think")
        await settle(app, pilot)
        thinking = app.conversation.blocks_of(ThinkingBlock)[0]
        await until(pilot, lambda: "Pondering..." in widget_text(thinking))
        assert "a secret plan" not in widget_text(thinking)  # collapsed: only the label
        await submit(pilot, app, "/thinking-label Musing")
        await until(pilot, lambda: "Musing" in widget_text(thinking))
        assert "Hidden thinking label set to: Musing" in "\n".join(notices(app))
        await submit(pilot, app, "/thinking-label")
        await until(pilot, lambda: "Pondering..." in widget_text(thinking))
        assert "Hidden thinking label reset to: Pondering..." in "\n".join(notices(app))


# -- built-in-tool-renderer, minimal-mode ----------------------------------------------------------------
def tool_steps(tmp_path: Path) -> list[Any]:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    calls = [
        faux_tool_call("read", {"path": "notes.txt"}),
        faux_tool_call("bash", {"command": "echo out-line; exit 3"}),
        faux_tool_call(
            "edit", {"path": "notes.txt", "edits": [{"oldText": "beta", "newText": "BETA\nbeta2"}]}
        ),
        faux_tool_call("write", {"path": "new.txt", "content": "one\ntwo"}),
    ]
    return [faux_message(calls), faux_message("done")]


def tool_texts(app: CaddieApp) -> dict[str, str]:
    """Each tool block's text, its lines stripped (the block's padding) and blank ones left out."""
    return {
        block.tool_name: "\n".join(line.strip() for line in widget_text(block).splitlines() if line.strip())
        for block in app.conversation.blocks_of(ToolBlock)
    }


async def test_built_in_tool_renderer_draws_the_tools_in_one_line_each(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, tool_steps(tmp_path), extensions=[example("built_in_tool_renderer.py")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "go")
        await settle(app, pilot)
        texts = tool_texts(app)
        assert texts["read"].splitlines()[:2] == ["read notes.txt", "4 lines"]  # 3 lines and the last newline
        assert texts["bash"].splitlines()[:2] == ["$ echo out-line; exit 3", "exit 3 (2 lines)"]
        assert texts["edit"].splitlines()[:2] == ["edit notes.txt", "+2 / -1"]
        assert texts["write"].splitlines() == ["write new.txt (2 lines)", "Written"]
        assert (
            texts["read"] == "read notes.txt\n4 lines" and texts["bash"].count("out-line") == 1
        )  # collapsed
        assert (tmp_path / "new.txt").read_text() == "one\ntwo"  # the tools still do their work
        shells = {b.tool_name: b.render_shell for b in app.conversation.blocks_of(ToolBlock)}
        assert shells == {"read": "default", "bash": "default", "edit": "self", "write": "default"}
        await pilot.press("ctrl+o")
        await until(pilot, lambda: "alpha" in tool_texts(app)["read"])
        texts = tool_texts(app)
        assert texts["bash"].count("out-line") == 2 and "+2 BETA" in texts["edit"]


async def test_minimal_mode_shows_calls_only_until_expanded(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, tool_steps(tmp_path), extensions=[example("minimal_mode.py")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "go")
        await settle(app, pilot)
        texts = tool_texts(app)
        assert texts["read"] == "read notes.txt" and texts["bash"] == "$ echo out-line; exit 3"
        assert texts["write"] == "write new.txt (2 lines)" and texts["edit"] == "edit notes.txt"
        assert (tmp_path / "notes.txt").read_text() == "alpha\nBETA\nbeta2\ngamma\n"
        await pilot.press("ctrl+o")
        await until(pilot, lambda: "alpha" in tool_texts(app)["read"])
        assert "out-line" in tool_texts(app)["bash"] and "exited with code 3" in tool_texts(app)["bash"]


# -- questionnaire ---------------------------------------------------------------------------------------
QUESTIONS = [
    {"id": "scope", "label": "Scope", "prompt": "What should change?",
     "options": [{"value": "a", "label": "Only the parser"}, {"value": "b", "label": "Parser and CLI"}]},
    {"id": "when", "label": "When", "prompt": "When is it due?",
     "options": [{"value": "now", "label": "Today"}]},
]  # fmt: skip


def tool_result_text(app: CaddieApp, index: int) -> str:
    assert app.session is not None
    results = [m for m in app.session.messages if isinstance(m, ToolResultMessage)]
    return "".join(c.text for c in results[index].content if isinstance(c, TextContent))


async def test_questionnaire_tabs_options_a_typed_answer_and_cancel(tmp_path: Path) -> None:
    steps = [
        faux_message([faux_tool_call("questionnaire", {"questions": QUESTIONS})]),
        faux_message("thanks"),
        faux_message([faux_tool_call("questionnaire", {"questions": QUESTIONS[:1]})]),
        faux_message("fine"),
    ]
    app, _ = make_app(tmp_path, steps, extensions=[example("questionnaire.py")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "plan it")
        await until(pilot, lambda: bool(app.query("#custom")))
        view = app.query_one("#custom", ComponentView)
        assert "□ Scope" in widget_text(view) and "What should change?" in widget_text(view)
        await pilot.press("down", "enter")  # Scope: the second option; on to the next tab
        await until(pilot, lambda: "When is it due?" in widget_text(view))
        assert "■ Scope" in widget_text(view)
        await pilot.press("down", "enter")  # "Type something."
        await until(pilot, lambda: "Your answer:" in widget_text(view))
        await pilot.press("s", "o", "o", "x", "backspace", "n", "enter")
        await until(pilot, lambda: "Ready to submit" in widget_text(view))
        summary = widget_text(view)
        assert "Scope: Parser and CLI" in summary and "When: (wrote) soon" in summary
        await pilot.press("enter")
        await settle(app, pilot)
        assert tool_result_text(app, 0) == "Scope: user selected: 2. Parser and CLI\nWhen: user wrote: soon"
        assert not app.query("#custom") and app.editor.display
        block = tool_texts(app)["questionnaire"]
        assert (
            block.startswith("questionnaire 2 questions (Scope, When)")
            and "✓ scope: 2. Parser and CLI" in block
        )

        await submit(pilot, app, "again")  # one question: no tabs; Esc cancels
        await until(pilot, lambda: bool(app.query("#custom")))
        assert "Submit" not in widget_text(app.query_one("#custom", ComponentView))
        await pilot.press("escape")
        await settle(app, pilot)
        assert tool_result_text(app, 1) == "User cancelled the questionnaire"


# -- github-issue-autocomplete ---------------------------------------------------------------------------
FAKE_GH = """#!/bin/sh
echo "$@" >> "{log}"
cat <<'JSON'
[{{"number": 12, "title": "Crash on resume", "state": "OPEN"}},
 {{"number": 27, "title": "The interactive UI", "state": "OPEN"}},
 {{"number": 31, "title": "MCP servers", "state": "OPEN"}}]
JSON
"""


async def type_keys(pilot: Any, text: str) -> None:
    for ch in text:
        await pilot.press({" ": "space", "#": "number_sign"}.get(ch, ch))


async def test_github_issue_autocomplete_offers_the_repositorys_issues(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issues come from a fake ``gh`` on PATH (no network): the real code path runs it as a process."""
    bin_dir, log = tmp_path / "bin", tmp_path / "gh.log"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(FAKE_GH.format(log=log))
    (bin_dir / "gh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    repo = tmp_path / "repo"
    git_repo(repo, "main")
    subprocess.run(
        ["git", "-C", str(repo), "remote", "add", "origin", "git@github.com:acme/rocket.git"], check=True
    )
    app, _ = make_app(repo, extensions=[example("github_issue_autocomplete.py")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await type_keys(pilot, "fix #")
        await until(pilot, lambda: app.menu.is_open and len(app.menu.completions) == 3)
        assert "--repo acme/rocket --state open --limit 100 --json number,title,state" in log.read_text()
        await type_keys(pilot, "2")
        await until(pilot, lambda: [c.label for c in app.menu.completions] == ["#27"])
        await pilot.press("tab")
        await until(pilot, lambda: app.editor.text.startswith("fix #27"))
        app.editor.set_text("")
        await type_keys(pilot, "see #mcp")
        await until(pilot, lambda: [c.label for c in app.menu.completions] == ["#31"])
        assert "[open] MCP servers" in (app.menu.completions[0].description or "")
        await pilot.press("escape")
        app.editor.set_text("")
        await type_keys(pilot, "/mo")
        await until(pilot, lambda: app.menu.is_open)  # not on a '#': caddie's own completions
        current = app.menu.current()
        assert current is not None and current.value.startswith("/mo")
    assert len(log.read_text().splitlines()) == 1  # loaded once per session


async def test_github_issue_autocomplete_says_once_why_it_offers_nothing(tmp_path: Path) -> None:
    git_repo(tmp_path, "main")  # no GitHub remote
    app, _ = make_app(tmp_path, extensions=[example("github_issue_autocomplete.py")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await until(pilot, lambda: any("cwd is not a GitHub repository" in n for n in notices(app)))
        await type_keys(pilot, "fix #1")
        await pilot.pause(0.2)
        assert not app.menu.is_open


# -- border-status-editor --------------------------------------------------------------------------------
async def test_border_status_editor_puts_the_status_on_the_editors_border(tmp_path: Path) -> None:
    git_repo(tmp_path, "topic")
    gate = asyncio.Event()

    async def held_reply(*args: Any) -> AssistantMessage:
        await gate.wait()
        return faux_message("ok")

    app, _ = make_app(tmp_path, [held_reply], extensions=[example("border_status_editor.py")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await until(pilot, lambda: "(topic)" in (app.editor.border_subtitle or ""))
        bottom = Text.from_markup(app.editor.border_subtitle or "").plain
        assert bottom.strip().startswith("faux/faux-1 · ") and " · ctx " in bottom
        assert app.editor.border_title is None  # idle: no spinner
        assert widget_text(app.footer).strip() == ""  # the footer draws nothing
        await submit(pilot, app, "work")
        await until(pilot, lambda: app.working.active)
        assert not app.working.has_class("-on")  # the working line is hidden
        await until(pilot, lambda: Text.from_markup(app.editor.border_title or "").plain.strip() in SPINNER)
        first = app.editor.border_title
        await until(pilot, lambda: app.editor.border_title != first)  # it turns
        await pilot.press("h", "i")
        assert app.editor.text == "hi"  # typing as caddie's editor
        gate.set()
        await settle(app, pilot)
        await until(pilot, lambda: app.editor.border_title is None)


# -- overlay-test ----------------------------------------------------------------------------------------
async def test_overlay_test_inline_inputs_and_a_straight_edge(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, extensions=[example("overlay_test.py")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/overlay-test")
        await until(pilot, lambda: isinstance(app.screen, OverlayScreen))
        box = app.screen.query_one("#overlay")
        await pilot.pause()
        rows = screen_text(app).splitlines()[box.region.y : box.region.bottom]
        assert any("Wide: 中文" in row for row in rows) and any("Emoji: 🚀" in row for row in rows)
        right_edges = {cell_len(row[: row.rindex("│")]) for row in rows[1:-1]}
        assert len(right_edges) == 1, rows  # every row's border in the same terminal column
        await type_keys(pilot, "foo")
        await pilot.press("left", "backspace")  # foo → fo|o → f|o
        await pilot.press("down")  # to Run
        await type_keys(pilot, "make")
        await pilot.press("up")
        await until(pilot, lambda: "Search: fo" in widget_text(box))
        await pilot.press("down", "enter")
        await until(pilot, lambda: 'Run: "make"' in "\n".join(notices(app)))
        assert not isinstance(app.screen, OverlayScreen)
        await submit(pilot, app, "/overlay-test")
        await until(pilot, lambda: isinstance(app.screen, OverlayScreen))
        await pilot.press("escape")  # closes with nothing picked
        await until(pilot, lambda: not isinstance(app.screen, OverlayScreen))
        assert len([n for n in notices(app) if "Run:" in n or "Search" in n]) == 1


# -- mac-system-theme ------------------------------------------------------------------------------------
async def test_system_theme_follows_the_desktops_appearance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Off macOS the appearance comes from GNOME's ``gsettings``: a fake one on PATH reads a file."""
    if sys.platform == "darwin":
        pytest.skip("on macOS the example asks osascript, which a test cannot switch")
    bin_dir, scheme = tmp_path / "bin", tmp_path / "scheme"
    bin_dir.mkdir()
    scheme.write_text("'default'")  # light, unlike caddie's default theme
    (bin_dir / "gsettings").write_text(f'#!/bin/sh\ncat "{scheme}"\n')
    (bin_dir / "gsettings").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    module = load("mac_system_theme.py")
    monkeypatch.setattr(module, "POLL_SECONDS", 0.05)
    app, _ = make_app(tmp_path, extensions=[inline_extension(module.register, "mac_system_theme")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await until(pilot, lambda: app.theme == "light")
        scheme.write_text("'prefer-dark'")
        await until(pilot, lambda: app.theme == "dark")
        scheme.write_text("'default'")
        await until(pilot, lambda: app.theme == "light")


async def test_system_theme_leaves_the_theme_alone_when_nothing_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # neither osascript nor gsettings
    app, _ = make_app(tmp_path, extensions=[example("mac_system_theme.py")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        theme = app.theme
        await until(pilot, lambda: any("appearance is unknown here" in n for n in notices(app)))
        assert app.theme == theme


# -- interactive-shell -----------------------------------------------------------------------------------
def bash_runs(app: CaddieApp) -> list[BashExecutionMessage]:
    assert app.session is not None
    return [m for m in app.session.messages if isinstance(m, BashExecutionMessage)]


async def test_interactive_shell_takes_known_programs_and_says_why_without_a_real_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pilot's terminal cannot be suspended: the command is refused with the reason (the real hand-over is
    tested in tmux, tests/tui/test_tmux_smoke.py); other commands run as always."""
    module = load("interactive_shell.py")
    monkeypatch.setenv("INTERACTIVE_COMMANDS", "mytui")
    monkeypatch.setenv("INTERACTIVE_EXCLUDE", "less")
    known = module.interactive_commands()
    assert module.is_interactive("vim notes.txt", known) and module.is_interactive(
        "git log | mytui -R", known
    )
    assert module.is_interactive("git rebase -i HEAD~3", known) and not module.is_interactive(
        "git log", known
    )
    assert not module.is_interactive("less README", known) and not module.is_interactive("vimdiff a b", known)
    app, _ = make_app(tmp_path, extensions=[inline_extension(module.register, "interactive_shell")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "!echo plain")
        await until(pilot, lambda: len(bash_runs(app)) == 1)
        assert bash_runs(app)[0].output.strip() == "plain"
        await submit(pilot, app, "!i touch touched")
        await until(pilot, lambda: len(bash_runs(app)) == 2)
        refused = bash_runs(app)[1]
        assert refused.output.startswith("(not run: This terminal cannot be handed to another program")
        assert refused.exit_code == 1 and not (tmp_path / "touched").exists()
        assert app.editor.display and not app.query("#custom")  # the editor is back


# -- snake -----------------------------------------------------------------------------------------------
def snake_saves(app: CaddieApp) -> list[Any]:
    assert app.session is not None
    entries = app.session.store.entries()
    return [e.data for e in entries if isinstance(e, CustomEntry) and e.custom_type == "snake-save"]


def test_snake_eats_grows_and_crashes() -> None:
    snake = arcade().snake
    game_type = snake.Game
    game = game_type([(5, 5), (4, 5), (3, 5)], food=(6, 5))
    game.step()
    assert (
        game.score == 10
        and game.high_score == 10
        and game.snake[:2] == [(6, 5), (5, 5)]
        and len(game.snake) == 4
    )
    game.steer("left")  # straight back into itself: ignored
    assert game.next_direction == "right"
    game.steer("down")
    game.step()
    game.steer("left")
    game.step()
    game.steer("up")
    game.step()  # into its own body
    assert game.game_over and game.snake[0] == (5, 6)
    drawn = snake.Board(game, None, DEFAULT_THEME, None, None).render(80)
    rows = [Text.from_ansi(line).plain for line in drawn]
    assert rows[3 + 6][1 + 5 * 2 : 1 + 6 * 2] == "██" and "GAME OVER!" in rows[-2]  # the head at (5, 6)


async def test_snake_plays_pauses_into_the_session_resumes_and_quits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = arcade()
    monkeypatch.setattr(module.snake.Board, "tick_seconds", 0.05)
    monkeypatch.setattr(module.snake, "WIDTH", 2000)  # room to run for many seconds before the right wall
    app, _ = make_app(tmp_path, extensions=[inline_extension(module.register, "arcade")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/snake")
        await until(pilot, lambda: bool(app.query("#custom")))
        view = app.query_one("#custom", ComponentView)
        board = view.component
        start = board.game.snake[0]
        await until(pilot, lambda: board.game.snake[0][0] > start[0])  # it moves right by itself
        assert "SNAKE │ Score: " in widget_text(view)
        await pilot.press("escape")  # pause: kept in the session
        await until(pilot, lambda: not app.query("#custom"))
        saved = snake_saves(app)[-1]
        assert saved["snake"][0][0] > start[0] and saved["direction"] == "right"

        await submit(pilot, app, "/snake")
        await until(pilot, lambda: bool(app.query("#custom")))
        view = app.query_one("#custom", ComponentView)
        board = view.component
        assert "PAUSED" in widget_text(view) and board.game.snake == [tuple(p) for p in saved["snake"]]
        await pilot.press("space")  # any key resumes
        await pilot.press("up")
        await until(pilot, lambda: board.game.game_over, timeout=10)
        assert board.game.direction == "up" and board.game.snake[0][1] == 0  # crashed into the top wall
        await until(pilot, lambda: "GAME OVER!" in widget_text(view))
        await pilot.press("q")  # quit: the saved game is forgotten
        await until(pilot, lambda: not app.query("#custom"))
        assert snake_saves(app)[-1] is None and app.editor.display


# -- tic-tac-toe -----------------------------------------------------------------------------------------
async def test_tic_tac_toe_against_the_agent_whose_moves_run_in_sequence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's moves and its play come in one response; O lands where the moves lead only because the tool
    runs its calls in sequence (in parallel, ``play`` — no delay — would land at (0,0))."""
    module = load("tic_tac_toe.py")
    monkeypatch.setattr(module, "MOVE_SECONDS", 0.05)

    def act(action: str) -> ToolCall:
        return faux_tool_call("tic_tac_toe", {"action": action})

    steps = [
        faux_message([act("move_right"), act("move_right"), act("play")]),
        faux_message("Your move."),
        faux_message([act("move_right"), act("play")]),
        faux_message("Your move."),
    ]
    app, faux = make_app(tmp_path, steps, extensions=[inline_extension(module.register, "tic_tac_toe")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/tic-tac-toe")
        await until(pilot, lambda: bool(app.query("#custom")))
        view = app.query_one("#custom", ComponentView)
        board = view.component
        assert "Your turn (X)" in widget_text(view)
        await pilot.press("enter")  # X in the center
        await until(pilot, lambda: board.state.turn == "X" and board.state.board[0][2] == "O", timeout=10)
        assert [row.count("O") for row in board.state.board] == [1, 0, 0]  # only at (0,2), not at (0,0)
        sent = str(faux.requests[0].messages[-1])  # the X move reached the model as its turn's message
        assert "Player X played at (row=1, col=1). It is now Player O's turn." in sent
        await pilot.press("up", "left", "enter")  # X at (0,0)
        await until(pilot, lambda: board.state.turn == "X" and board.state.board[0][1] == "O", timeout=10)
        await pilot.press("down", "down", "right", "right", "enter")  # X at (2,2): a diagonal
        await until(pilot, lambda: board.state.status == "win_X")
        await until(pilot, lambda: "Player X (human) wins" in widget_text(view))
        await settle(app, pilot)
        assert app.session is not None
        over = [
            m for m in app.session.messages if isinstance(m, CustomMessage) and m.custom_type.endswith("over")
        ]
        assert len(over) == 1 and over[0].content == "Game over: Player X (human) wins."
        assert len(faux.requests) == 4  # the winning X started no turn
        await pilot.press("escape")
        await until(pilot, lambda: not app.query("#custom"))
        assert "🏁 Player X (human) wins" in widget_text(app.conversation)


# -- space-invaders --------------------------------------------------------------------------------------
def test_space_invaders_shots_shields_lives_invasion_and_victory() -> None:
    module = arcade().space_invaders
    rng = random.Random(7)
    game = module.Game.new()
    game.fire()
    game.fire()  # one shot in the air at a time
    assert [(b.x, b.y, b.up) for b in game.bullets] == [(30, module.PLAYER_Y - 1, True)]
    for _ in range(12):
        game.step(rng)
    target = next(a for a in game.aliens if (a.x, a.y) == (29, 10))  # the bottom row, just left of the ship
    assert not target.alive and game.score == 10 and game.high_score == 10
    game.player_x = 22  # under the second shield's left edge
    game.fire()
    for _ in range(3):
        game.step(rng)
    assert game.shields[1][2][0] is False and not any(b.up for b in game.bullets)  # the shield took the shot
    game.bullets.append(module.Bullet(game.player_x, module.PLAYER_Y - 1, False))
    game.step(rng)
    assert game.lives == 2 and not game.game_over
    invaded = module.Game.new()
    for alien in invaded.aliens:
        alien.y = module.PLAYER_Y - 2
    invaded.dropping, invaded.move_every = True, 1
    invaded.step(rng)
    assert invaded.game_over
    won = module.Game.new()
    for alien in won.aliens:
        alien.alive = False
    won.step(rng)
    assert won.victory and won.over


async def test_space_invaders_moves_fires_pauses_and_resumes(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, extensions=[inline_extension(arcade().register, "arcade")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/invaders")
        await until(pilot, lambda: bool(app.query("#custom")))
        view = app.query_one("#custom", ComponentView)
        screen = view.component
        await pilot.press("left", "left", "space")
        assert screen.game.player_x == 26 and any(b.up and b.x == 26 for b in screen.game.bullets)
        await until(
            pilot, lambda: "SPACE INVADERS │ Score: " in widget_text(view) and "▲█▲" in widget_text(view)
        )
        await pilot.press("escape")
        await until(pilot, lambda: not app.query("#custom"))
        assert app.session is not None
        saves = [e.data for e in app.session.store.entries() if isinstance(e, CustomEntry)]
        assert saves[-1]["player_x"] == 26
        await submit(pilot, app, "/invaders")
        await until(pilot, lambda: bool(app.query("#custom")))
        view = app.query_one("#custom", ComponentView)
        assert "PAUSED" in widget_text(view) and view.component.game.player_x == 26
        await pilot.press("q")  # paused: quits, the saved game stays
        await until(pilot, lambda: not app.query("#custom"))
        assert len([e for e in app.session.store.entries() if isinstance(e, CustomEntry)]) == 1


# -- overlay-qa-tests ------------------------------------------------------------------------------------
async def overlay_box(app: CaddieApp, pilot: Any) -> Any:
    await until(pilot, lambda: isinstance(app.screen, OverlayScreen))
    await pilot.pause()
    return app.screen.query_one("#overlay")


async def test_overlay_qa_anchors_margins_sizes_stack_toggle_and_animation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    width, height = LARGE
    module = load("overlay_qa_tests.py")
    monkeypatch.setattr(module, "HIDDEN_SECONDS", 0.2)
    app, _ = make_app(tmp_path, extensions=[inline_extension(module.register, "overlay_qa_tests")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/overlay-anchors")
        places: dict[str, Region] = {}
        for anchor in module.ANCHORS:
            box = await overlay_box(app, pilot)
            label = f"anchor: {anchor}"
            await until(pilot, lambda: label in widget_text(box))  # noqa: B023  # awaited in this iteration
            places[anchor] = box.region
            await pilot.press("enter")
            await until(pilot, lambda: not box.is_attached)  # noqa: B023
        await until(pilot, lambda: any("all nine anchors shown" in n for n in notices(app)))
        assert places["top-left"].x <= 2 and places["top-left"].y <= 2
        assert places["bottom-right"].right >= width - 2 and places["bottom-right"].bottom >= height - 2
        assert (
            abs(places["center"].center[0] - width // 2) <= 2
            and abs(places["center"].center[1] - height // 2) <= 2
        )
        assert places["left-center"].x <= 2 and places["left-center"].y == places["center"].y
        assert places["top-center"].x == places["center"].x and places["top-center"].y <= 2

        await submit(pilot, app, "/overlay-margins")
        box = await overlay_box(app, pilot)
        assert (box.region.x, box.region.y) == (3 + 4, 3 + 2)  # margin 3, then the offset
        await pilot.press("escape")
        await submit(pilot, app, "/overlay-percent")
        box = await overlay_box(app, pilot)
        assert box.region.width == width // 2
        await pilot.press("escape")
        await submit(pilot, app, "/overlay-maxheight")
        box = await overlay_box(app, pilot)
        assert box.region.height == 10 and "line 1" in screen_text(app) and "line 40" not in screen_text(app)
        await pilot.press("escape")

        await submit(pilot, app, "/overlay-stack")
        first = await overlay_box(app, pilot)
        await pilot.press("s")
        await until(pilot, lambda: len(app.screen_stack) == 3)  # the app, the first overlay, the second
        second = await overlay_box(app, pilot)
        assert second is not first and "second overlay" in widget_text(second)
        await pilot.press("escape")  # the top one first
        await until(pilot, lambda: app.screen.query_one("#overlay") is first)
        await pilot.press("escape")
        await until(pilot, lambda: any("stack closed" in n for n in notices(app)))

        await submit(pilot, app, "/overlay-toggle")
        box = await overlay_box(app, pilot)
        await pilot.press("t")
        await until(pilot, lambda: not box.display)
        assert "t: hide for a second" not in screen_text(app)
        await until(pilot, lambda: box.display)  # back by itself
        await pilot.press("escape")

        await submit(pilot, app, "/overlay-animation")
        box = await overlay_box(app, pilot)
        await until(pilot, lambda: "frame 10" in widget_text(box))  # it redraws by itself
        await pilot.press("escape")
        await until(pilot, lambda: any("frames drawn" in n for n in notices(app)))
        assert not isinstance(app.screen, OverlayScreen)


# -- entry-renderer --------------------------------------------------------------------------------------
async def test_status_cards_are_drawn_kept_and_never_sent_to_the_model(tmp_path: Path) -> None:
    app, faux = make_app(tmp_path, [faux_message("noted")], extensions=[example("entry_renderer.py")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/status-card deploy is green")
        await until(pilot, lambda: "[status] deploy is green" in widget_text(app.conversation))
        assert str(datetime.now().year) not in widget_text(app.conversation)  # the time only when expanded
        await pilot.press("ctrl+o")
        await until(pilot, lambda: f"{datetime.now():%Y-%m-%d}" in widget_text(app.conversation))
        await submit(pilot, app, "what now?")
        await settle(app, pilot)
        sent = str(faux.requests[0].messages)
        assert "what now?" in sent and "deploy is green" not in sent
        assert app.session is not None
        card = next(e for e in app.session.store.entries() if getattr(e, "custom_type", "") == "status-card")
        assert isinstance(card, CustomEntry) and card.data["message"] == "deploy is green"  # Pi's entry type
        path = app.session.store.session_file
    reopened, _ = make_app(
        tmp_path, session="file", session_file=path, faux=faux, extensions=[example("entry_renderer.py")]
    )
    async with reopened.run_test(size=LARGE) as pilot:
        await ready(reopened, pilot)
        await until(pilot, lambda: "[status] deploy is green" in widget_text(reopened.conversation))


async def test_arcade_screen_disposed_from_outside_stops_its_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pi's component contract: ``dispose()`` when the component is taken away without the game's own keys."""
    module = arcade().snake
    monkeypatch.setattr(module.Board, "tick_seconds", 0.01)
    monkeypatch.setattr(module, "WIDTH", 2000)
    renders: list[int] = []
    ticked = asyncio.Event()

    class Tui:
        def request_render(self) -> None:
            renders.append(1)
            ticked.set()

    board = module.Board(module.Game.new(), Tui(), DEFAULT_THEME, lambda game: None, lambda result: None)
    board.start()
    task = board.ticking[0]
    await asyncio.wait_for(ticked.wait(), 5)  # it runs
    board.dispose()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert task.cancelled() and not board.ticking
    stepped = len(renders)
    await asyncio.sleep(0.05)  # five ticks' time: a running tick would have rendered again
    assert len(renders) == stepped
