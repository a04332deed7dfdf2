"""Rendered history looks exactly like the live run: after -c / a session file, /tree, /resume (Pilot)."""

from __future__ import annotations

import re
from pathlib import Path

from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.modes.interactive.app import CaddieApp
from caddie.modes.interactive.conversation import InfoBlock, ToolBlock
from tests.tui.harness import SMALL, make_app, ready, settle, submit, widget_text


def transcript(app: CaddieApp) -> list[str]:
    """Every block of the conversation but the header, as text (without run times: a session file does
    not record how long a command ran, so only the live run shows them)."""
    return [re.sub(r"  \d+(\.\d)?s\b", "", widget_text(w)) for w in list(app.conversation.children)[1:]]


def steps() -> list[object]:
    return [
        faux_message(
            [
                faux_tool_call("read", {"path": "a.py"}, id="r1"),
                faux_tool_call("bash", {"command": "echo hi"}, id="b1"),
            ]
        ),
        faux_message("all good"),
    ]


async def test_history_after_continue_and_tree_and_resume_matches_the_live_run(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    app, faux = make_app(tmp_path, steps())  # type: ignore[arg-type]
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "run it")
        await settle(app, pilot)
        live = transcript(app)
        live_tools = len(app.conversation.blocks_of(ToolBlock))
        assert app.session is not None
        path = app.session.store.session_file
        await app.render_session()  # what /tree, /resume and /compact do after moving
        await pilot.pause()
        rerendered = transcript(app)
    assert live_tools == 2
    assert rerendered == live

    for how in ("continue", "file"):
        reopened, _ = make_app(tmp_path, session=how, session_file=path if how == "file" else None, faux=faux)
        async with reopened.run_test(size=SMALL) as pilot:
            await ready(reopened, pilot)
            blocks = list(reopened.conversation.blocks_of(ToolBlock))
            shown = [
                t
                for t, w in zip(transcript(reopened), list(reopened.conversation.children)[1:], strict=True)
                if not isinstance(w, InfoBlock)
            ]
        assert [b.call_id for b in blocks] == ["r1", "b1"], f"tool calls duplicated after {how}"
        assert shown == live
