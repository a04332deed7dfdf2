"""The terminal UI with MCP servers (Textual Pilot): server-everything's tools, prompts and resources, a
form answered in dialogs, ``/mcp``, and a server switched off in ``/settings``."""

from __future__ import annotations

import os
from pathlib import Path

from caddie.ai.messages import TextContent, ToolResultMessage, UserMessage
from caddie.ai.providers.faux import FauxProvider, faux_message, faux_tool_call
from caddie.extensions.bundled.mcp.runtime import pool
from caddie.modes.interactive.app import CaddieApp
from caddie.modes.interactive.dialogs import InputScreen, SelectScreen
from caddie.modes.interactive.settings_dialog import SettingsScreen
from tests.mcp.helpers import everything, small
from tests.tui.harness import (
    LARGE,
    make_app,
    ready,
    settle,
    submit,
    type_text,
    until,
    widget_text,
    write_settings,
)


def sent_texts(faux: FauxProvider) -> str:
    out = []
    for m in faux.requests[-1].messages:
        if isinstance(m, UserMessage) and not isinstance(m.content, str):
            out += [b.text for b in m.content if isinstance(b, TextContent)]
    return "\n".join(out)


def last_result(app: CaddieApp) -> str:
    assert app.session is not None
    result = [m for m in app.session.messages if isinstance(m, ToolResultMessage)][-1]
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


async def test_everything_in_the_terminal_ui(tmp_path: Path) -> None:
    node, index = everything()
    write_settings(
        mcpServers={"everything": {"command": node, "args": [index, "stdio"]}, "small": small()},
        disabledExtensions=["mulligan", "goal"],
    )
    app, faux = make_app(tmp_path)
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        assert app.session is not None
        session = app.session
        await until(
            pilot,
            lambda: {"mcp__everything__echo", "mcp__small__ask"} <= set(session.core.tools.active_names()),
            timeout=60,
        )
        # a tool call, shown in the conversation
        faux.set_responses(
            [faux_message([faux_tool_call("mcp__everything__echo", {"message": "hi"})]), faux_message("done")]
        )
        await submit(pilot, app, "echo hi")
        await settle(app, pilot)
        assert last_result(app) == "Echo: hi"
        assert "Echo: hi" in widget_text(app.conversation)

        # a prompt as a slash command, a resource as an @-mention
        faux.set_responses([faux_message("sunny"), faux_message("read")])
        await submit(pilot, app, "/mcp__everything__args-prompt Paris")
        await settle(app, pilot)
        assert "What's weather in Paris?" in sent_texts(faux)
        await submit(pilot, app, "what does @everything:demo://resource/static/document/features.md say?")
        await settle(app, pilot)
        assert "# Everything Server - Features" in sent_texts(faux)

        # a form, answered in the UI's dialogs
        faux.set_responses([faux_message([faux_tool_call("mcp__small__ask", {})]), faux_message("hi Ann")])
        await submit(pilot, app, "who am I")
        for answer in ("Ann", "7"):
            await until(pilot, lambda: isinstance(app.screen, InputScreen), timeout=30)
            await type_text(pilot, answer)
            await pilot.press("enter")
        await settle(app, pilot)
        assert last_result(app) == "hello Ann, 7"

        # /mcp lists the servers in the conversation
        await submit(pilot, app, "/mcp")
        await until(pilot, lambda: isinstance(app.screen, SelectScreen), timeout=15)
        listing = widget_text(app.conversation)
        assert "everything — connected" in listing and "small — connected" in listing
        await pilot.press("escape")

        # /settings switches a server off at once (and saves it)
        await submit(pilot, app, "/settings")
        await until(pilot, lambda: isinstance(app.screen, SettingsScreen), timeout=15)
        assert isinstance(app.screen, SettingsScreen)
        row = [c.id for c in app.screen.choices].index("resource:mcp:small")
        await pilot.press(*["down"] * row, "enter")
        await pilot.pause(0.3)
        await until(pilot, lambda: isinstance(app.screen, SelectScreen), timeout=15)
        await pilot.press("down", "enter")
        await until(pilot, lambda: "small" not in pool(), timeout=15)
        await until(pilot, lambda: isinstance(app.screen, SettingsScreen), timeout=15)
        await pilot.press("escape")
        assert not any(t.startswith("mcp__small__") for t in session.core.tools.active_names())
        await app.shutdown_session()  # what quitting does (modes/interactive/entry.py)
        assert (
            '"disabledMcpServers": [\n    "small"\n  ]'
            in (Path(os.environ["CADDIE_DIR"]) / "agent" / "settings.json").read_text()
        )
    assert pool() == {}
