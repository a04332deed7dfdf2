"""The transcript: streaming markdown, thinking, tool calls, custom messages (Pilot, faux provider)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from rich.console import Group
from rich.text import Text

from caddie.ai.messages import AssistantMessage, TextContent
from caddie.ai.providers.faux import (
    FauxProvider,
    PacedStep,
    faux_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
)
from caddie.ai.stream_events import TextDeltaEvent, TextEndEvent, TextStartEvent
from caddie.extensions.api import ExtensionAPI
from caddie.modes.interactive.conversation import (
    FLUSH_INTERVAL,
    FREEZE_AT,
    AssistantView,
    CustomBlock,
    MarkdownText,
    ThinkingBlock,
    ToolBlock,
    UserBlock,
)
from caddie.modes.interactive.markdown import chat_markdown
from tests.tui.harness import SMALL, inline_extension, make_app, plain, ready, settle, submit, widget_text


async def test_reply_streams_as_markdown_with_highlighted_code(tmp_path: Path) -> None:
    reply = "Hello **world**\n\n```python\ndef answer():\n    return 42\n```\n"
    app, _ = make_app(tmp_path, [faux_message(reply)])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "hi")
        await settle(app, pilot)

        markdown = app.conversation.blocks_of(MarkdownText)[0]
        shown = widget_text(markdown)
        view = app.conversation
        code_styles = [
            segment.style
            for strip in markdown.lines(view, view._content_width())
            for segment in strip
            if "return" in segment.text
        ]
    assert markdown.text == reply
    assert "Hello world" in shown and "**" not in shown
    assert "def answer():" in shown
    assert any(style is not None and style.color is not None for style in code_styles)


async def test_streaming_rerenders_only_the_live_message_and_is_throttled(tmp_path: Path) -> None:
    faux = FauxProvider(chunk_chars=8)
    long_reply = "\n\n".join(f"Paragraph {i}: " + "word " * 40 for i in range(35))
    assert len(long_reply) > 2 * FREEZE_AT
    app, _ = make_app(
        tmp_path, [faux_message("first answer"), PacedStep(faux_message(long_reply), 0.5)], faux=faux
    )
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "one")
        await settle(app, pilot)
        first = app.conversation.blocks_of(MarkdownText)[0]
        first_renders = first.renders
        started = time.monotonic()
        await submit(pilot, app, "two")
        await settle(app, pilot)
        elapsed = time.monotonic() - started
        live = app.conversation.blocks_of(MarkdownText)[-1]
        frozen = live.frozen
        deltas = len(long_reply) // 8
        shown = widget_text(live)
        renders, first_after, frozen_count = live.renders, first.renders, len(frozen)
    # Once more at most: when the scrollbar appears, the width changes and every block is drawn anew.
    assert first_after - first_renders <= 1, "an earlier message re-rendered while another streamed"
    # At most one render per flush interval (however slow a loaded machine makes the stream), far fewer
    # than one per delta.
    assert renders <= elapsed / FLUSH_INTERVAL + 5, f"{renders} renders in {elapsed:.1f} s"
    assert renders < deltas / 3, f"{renders} renders for {deltas} deltas"
    assert frozen_count >= 1, "long markdown was not frozen block by block"
    assert "Paragraph 0:" in shown and "Paragraph 34:" in shown


async def test_thinking_is_collapsed_until_ctrl_t(tmp_path: Path) -> None:
    reply = faux_message([faux_thinking("a secret plan\nin two lines"), faux_text("Done.")])
    app, _ = make_app(tmp_path, [reply])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "go")
        await settle(app, pilot)
        block = app.conversation.blocks_of(ThinkingBlock)[0]
        collapsed = widget_text(block)
        await pilot.press("ctrl+t")
        await pilot.pause()
        expanded = widget_text(block)
    assert "Thinking (2 lines)" in collapsed and "secret plan" not in collapsed
    assert "a secret plan" in expanded and "in two lines" in expanded


async def test_tool_calls_are_compact_and_ctrl_o_expands_their_results(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("".join(f"line {i}\n" for i in range(1, 31)))
    calls = faux_message(
        [
            faux_tool_call("read", {"path": "notes.txt", "offset": 5, "limit": 10}, id="r1"),
            faux_tool_call("bash", {"command": "seq 1 30; exit 3"}, id="b1"),
        ]
    )
    app, _ = make_app(tmp_path, [calls, faux_message("ok")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "look")
        await settle(app, pilot)
        blocks = {b.call_id: b for b in app.conversation.blocks_of(ToolBlock)}
        read_collapsed, bash_collapsed = plain(blocks["r1"].build()), plain(blocks["b1"].build())
        await pilot.press("ctrl+o")
        await pilot.pause()
        read_expanded, bash_expanded = plain(blocks["r1"].build()), plain(blocks["b1"].build())
    assert read_collapsed.startswith("● read notes.txt:5-14")
    assert "line 5" in read_collapsed and "line 14" not in read_collapsed and "more lines" in read_collapsed
    assert "line 14" in read_expanded
    assert bash_collapsed.startswith("● $ seq 1 30; exit 3  exit 3")
    assert "30" in bash_collapsed and "\n1\n" not in bash_collapsed, "shell output shows its end"
    assert "\n1\n" in bash_expanded


async def test_edit_tool_result_shows_its_diff(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("a = 1\nb = 2\nc = 3\n")
    edit = faux_tool_call(
        "edit", {"path": "app.py", "edits": [{"oldText": "b = 2", "newText": "b = 20"}]}, id="e1"
    )
    app, _ = make_app(tmp_path, [faux_message([edit]), faux_message("edited")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "edit")
        await settle(app, pilot)
        block = app.conversation.blocks_of(ToolBlock)[0]
        rendered = plain(block.build())
        built = block.build()
        assert isinstance(built, Group) and isinstance(built.renderables[1], Text)
        styles = {span.style for span in built.renderables[1].spans}
    assert rendered.startswith("● edit app.py")
    assert "-2 b = 2" in rendered and "+2 b = 20" in rendered
    assert {"red", "green"} <= styles


async def test_custom_messages_from_extensions_show_their_type(tmp_path: Path) -> None:
    def register(api: ExtensionAPI) -> None:
        async def note(args: str, ctx: Any) -> None:
            api.send_message("build-report", f"All **{args}** checks passed.")

        api.register_command("note", note, "Post a note")

    app, _ = make_app(tmp_path, extensions=[inline_extension(register)])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/note 12")
        await settle(app, pilot)
        block = app.conversation.blocks_of(CustomBlock)[0]
        shown = widget_text(block)
    assert block.custom_type == "build-report"
    assert "[build-report]" in shown and "All 12 checks passed." in shown


async def test_a_resumed_session_shows_its_history(tmp_path: Path) -> None:
    calls = faux_message([faux_tool_call("bash", {"command": "echo hi"}, id="b1")])
    app, faux = make_app(tmp_path, [calls, faux_message("all good")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "run it")
        await settle(app, pilot)
        assert app.session is not None
        path = app.session.store.session_file
    reopened, _ = make_app(tmp_path, session="file", session_file=path, faux=faux)
    async with reopened.run_test(size=SMALL) as pilot:
        await ready(reopened, pilot)
        users = [b.text for b in reopened.conversation.blocks_of(UserBlock)]
        tool = reopened.conversation.blocks_of(ToolBlock)[0]
        texts = [m.text for m in reopened.conversation.blocks_of(MarkdownText)]
    assert users == ["run it"]
    assert tool.status == "done" and "hi" in tool.output
    assert texts == ["all good"]


async def test_a_streaming_text_block_grows_by_its_deltas_not_by_the_partial_ahead_of_them(
    tmp_path: Path,
) -> None:
    # A provider parses a network chunk into several events before they are delivered: at text_start its
    # partial message already holds the first delta.
    long_text = "Answer R0 begins.\n\n" + "\n\n".join(f"para {i:03d}: " + "word " * 12 for i in range(80))
    pieces = [long_text[i : i + 6] for i in range(0, len(long_text), 6)]
    partial = AssistantMessage([TextContent(pieces[0])], "openai-completions", "fake", "fake-model")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        view = AssistantView(str(tmp_path))
        view.view = app.conversation
        view.apply(TextStartEvent(0, partial))
        await pilot.pause()
        for n, piece in enumerate(pieces):
            view.apply(TextDeltaEvent(0, piece, partial))
            partial.content[0] = TextContent(partial.content[0].text + piece)  # type: ignore[union-attr]
            if n % 100 == 0:
                await pilot.pause(0.1)  # the throttled re-render runs, freezing finished blocks
        view.apply(TextEndEvent(0, long_text, partial))
        await pilot.pause(0.2)
        block = app.conversation.blocks_of(MarkdownText)[0]
        shown = widget_text(block)
        frozen = len(block.frozen)
    assert block.text == long_text
    assert frozen >= 1
    assert shown.count("Answer R0 begins.") == 1 and "AnswerAnswer" not in shown
    assert [int(n) for n in re.findall(r"para (\d{3})", shown)] == list(range(80))


async def test_frozen_blocks_are_drawn_again_when_the_final_text_differs_from_the_stream(
    tmp_path: Path,
) -> None:
    streamed = "X" + "\n\n".join(f"streamed {i}: " + "word " * 12 for i in range(80))
    final = "\n\n".join(f"final {i}: " + "word " * 12 for i in range(80))
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        block = MarkdownText()
        app.conversation.add(block)
        await pilot.pause()
        for i in range(0, len(streamed), 50):
            block.append(streamed[i : i + 50])
            block.flush()
        frozen_while_streaming = len(block.frozen)
        block.set_text(final)
        await pilot.pause()
        shown = widget_text(block)
    assert frozen_while_streaming >= 1
    assert "streamed" not in shown and "final 0:" in shown and "final 79:" in shown


def test_single_newlines_in_an_answer_stay_line_breaks() -> None:
    shown = plain(chat_markdown("Line 001: a\nLine 002: b\n\nnext *paragraph*"))
    assert [line.strip() for line in shown.splitlines() if line.strip()] == [
        "Line 001: a",
        "Line 002: b",
        "next paragraph",
    ]
