"""``/context`` in the TUI (Textual Pilot): the picture of the window, before and after a shrink, and
mulligan's savings in the footer."""

from __future__ import annotations

from pathlib import Path

from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.jscompat import utf16_len
from caddie.modes.context_stats import message_parts, tool_schema_chars
from caddie.modes.interactive.context_view import ContextBlock
from tests.tui.harness import (
    LARGE,
    make_app,
    ready,
    screen_text,
    settle,
    submit,
    until,
    widget_text,
    write_settings,
)


async def test_context_shows_the_window_and_what_mulligan_saved(tmp_path: Path) -> None:
    write_settings(
        disabledExtensions=["goal"],
        mulligan={"nudges": {"bloatReminder": False, "perTurnDrift": False}},
    )
    (tmp_path / "big.txt").write_text("".join(f"line {i:05d} {'.' * 24}\n" for i in range(700)))
    steps = [
        faux_message([faux_tool_call("bash", {"command": "cat big.txt"}, id="c_cat")]),
        faux_message("It holds numbered lines."),
        faux_message(
            [
                faux_tool_call(
                    "mulligan_shrink",
                    {"target": {"by_tool_call_id": "c_cat"}, "replacement": "big.txt: 700 numbered lines."},
                    id="c_sh",
                )
            ]
        ),
        faux_message("Shrunk."),
        faux_message("You're welcome."),
    ]
    app, faux = make_app(tmp_path, steps)
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "what is in big.txt?")
        await settle(app, pilot)
        await submit(pilot, app, "/context")
        await until(pilot, lambda: len(app.conversation.blocks_of(ContextBlock)) == 1)
        before = app.conversation.blocks_of(ContextBlock)[-1]
        before_text = widget_text(before)

        await submit(pilot, app, "shrink it")
        await settle(app, pilot)
        await until(pilot, lambda: "mulligan " in screen_text(app))  # the footer status
        assert app.session is not None
        entries_before = len(app.session.store.entries())
        await submit(pilot, app, "/context")
        await until(pilot, lambda: len(app.conversation.blocks_of(ContextBlock)) == 2)
        after = app.conversation.blocks_of(ContextBlock)[-1]
        after_text = widget_text(after)
        footer = screen_text(app)
        assert len(app.session.store.entries()) == entries_before  # looking changes nothing

        # the next request is what /context showed, plus the new prompt
        await submit(pilot, app, "thanks")
        await settle(app, pilot)
    sent = faux.requests[-1]
    chars: dict[str, int] = {
        "system": utf16_len(sent.system_prompt or ""),
        "tools": tool_schema_chars(sent.tools or []),
    }
    for message in sent.messages[:-1]:
        for key, n in message_parts(message):
            if n:
                chars[key] = chars.get(key, 0) + n
    assert {c.key: c.chars for c in after.stats.categories} == chars

    for label in ("Context window", "System prompt", "Tool schemas", "Tool results: bash", "Free space"):
        assert label in before_text
    assert "estimated (characters / 4)" in before_text  # the faux model reports no real usage
    bash_before = next(c for c in before.stats.categories if c.key == "tool:bash")
    bash_after = next(c for c in after.stats.categories if c.key == "tool:bash")
    assert bash_before.tokens > 5000 > bash_after.tokens
    assert after.stats.used_tokens < before.stats.used_tokens
    [withheld] = after.stats.withheld
    assert withheld.state == "replaced" and withheld.entry_id in after_text
    assert before.stats.withheld == [] and "hide and shrink nothing" in before_text
    [savings] = after.stats.savings
    assert savings.source == "mulligan" and savings.gross_tokens > 5000 > savings.tokens  # the net is smaller
    assert f"saved so far: {savings.status}" in after_text
    assert savings.status in footer  # the footer shows the figure /context shows
    # the largest items name their entries; the categories and the window add up
    assert before.stats.items[0].category == "tool:bash" and before.stats.items[0].entry_id
    assert sum(c.tokens for c in after.stats.window_categories()) == after.stats.context_window
