"""``api.register_entry_renderer`` in the terminal UI (Textual Pilot): ``custom`` entries drawn where they were
appended, live and when the session is drawn again, with Pi's ``expanded`` option and the theme; never sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from caddie.ai.providers.faux import faux_message
from caddie.extensions.api import (
    CustomEntry,
    EntryRenderOptions,
    ExtensionAPI,
    ExtensionContext,
    MessageUpdateEvent,
    ThemeView,
)
from caddie.modes.interactive.app import CaddieApp
from caddie.modes.interactive.conversation import MarkdownText, UserBlock
from caddie.modes.interactive.extension_hooks import EntryBlock
from caddie.session.entries import CustomEntry as StoredCustomEntry
from tests.tui.harness import SMALL, inline_extension, make_app, ready, settle, submit, until, widget_text


class Card:
    """A Pi-style component: lines for a width."""

    def __init__(self, text: str) -> None:
        self.text = text

    def render(self, width: int) -> list[str]:
        return [f"{self.text} @{width}"]


def cards(calls: list[tuple[Any, ...]]) -> Any:
    def register(api: ExtensionAPI) -> None:
        def render(entry: CustomEntry, options: EntryRenderOptions, theme: ThemeView) -> object:
            calls.append((entry.data, options.expanded, theme.name))
            title = entry.data["title"]
            if title == "broken":
                raise RuntimeError("boom")
            if title == "hidden":
                return None
            if title == "component":
                return Card("drawn by a component")
            more = f" — {entry.data['detail']}" if options.expanded else ""
            return theme.fg("accent", f"card: {title}") + more

        async def card(args: str, ctx: Any) -> None:
            api.append_entry("card", {"title": args, "detail": "the details"})

        api.register_entry_renderer("card", render)
        api.register_command("card", card, "add a card")

    return inline_extension(register, "cards")


def entry_blocks(app: CaddieApp) -> list[EntryBlock]:
    return app.conversation.blocks_of(EntryBlock)


async def test_an_appended_entry_is_drawn_at_once_expands_with_ctrl_o_and_never_reaches_the_model(
    tmp_path: Path,
) -> None:
    calls: list[tuple[Any, ...]] = []
    app, faux = make_app(tmp_path, [faux_message("fine")], extensions=[cards(calls)])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/card deploy")
        await until(pilot, lambda: "card: deploy" in widget_text(app.conversation))
        assert "the details" not in widget_text(app.conversation)
        assert calls[-1] == ({"title": "deploy", "detail": "the details"}, False, app.theme)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: "card: deploy — the details" in widget_text(app.conversation))
        assert calls[-1][1] is True
        await submit(pilot, app, "/card component")
        await until(pilot, lambda: "drawn by a component @" in widget_text(app.conversation))
        width = int(widget_text(entry_blocks(app)[-1]).split("@")[1])
        assert width == app.conversation.blocks[-1].measured_width  # drawn at the transcript's width
        await submit(pilot, app, "what now?")
        await settle(app, pilot)
        assert app.session is not None
        stored = [
            e
            for e in app.session.store.entries()
            if isinstance(e, StoredCustomEntry) and e.custom_type == "card"
        ]
    assert [e.data["title"] for e in stored] == ["deploy", "component"]
    sent = str(faux.requests[0].messages)
    assert "what now?" in sent and "deploy" not in sent and "component" not in sent


async def test_a_failing_renderer_says_so_and_one_that_draws_nothing_leaves_no_block(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, extensions=[cards([])])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/card hidden")
        await submit(pilot, app, "/card broken")
        await until(pilot, lambda: "[card] renderer failed: boom" in widget_text(app.conversation))
        assert len(entry_blocks(app)) == 1  # the hidden card has no block
        await submit(pilot, app, "/card shown")
        await until(pilot, lambda: "card: shown" in widget_text(app.conversation))


async def test_entries_come_back_in_their_place_when_the_session_is_resumed_and_redraw_with_the_theme(
    tmp_path: Path,
) -> None:
    calls: list[tuple[Any, ...]] = []
    app, faux = make_app(
        tmp_path, [faux_message("one done"), faux_message("two done")], extensions=[cards(calls)]
    )
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "one")
        await settle(app, pilot)
        await submit(pilot, app, "/card between")
        await until(pilot, lambda: bool(entry_blocks(app)))
        await submit(pilot, app, "two")
        await settle(app, pilot)
        assert app.session is not None
        path = app.session.store.session_file
    reopened, _ = make_app(tmp_path, session="file", session_file=path, faux=faux, extensions=[cards(calls)])
    async with reopened.run_test(size=SMALL) as pilot:
        await ready(reopened, pilot)
        await until(pilot, lambda: bool(entry_blocks(reopened)))
        order = [
            widget_text(b).strip()
            for b in reopened.conversation.blocks
            if isinstance(b, UserBlock | EntryBlock | MarkdownText)
        ]
        assert order == ["one", "one done", "card: between", "two", "two done"]
        before = len(calls)
        reopened.theme = "light" if reopened.theme != "light" else "dark"
        await until(pilot, lambda: len(calls) > before)
        assert calls[-1][2] == reopened.theme  # drawn again with the new theme


async def test_an_entry_appended_while_an_answer_streams_goes_before_it(tmp_path: Path) -> None:
    appended: list[str] = []

    def register(api: ExtensionAPI) -> None:
        def on_update(event: MessageUpdateEvent, ctx: ExtensionContext) -> None:
            if event.assistant_message_event.type == "text_delta" and not appended:
                appended.append(api.append_entry("note", {"text": "noted while streaming"}))

        api.on("message_update", on_update)
        api.register_entry_renderer("note", lambda entry, options, theme: entry.data["text"])

    app, _ = make_app(tmp_path, [faux_message("the answer " * 40)], extensions=[inline_extension(register)])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "go")
        await settle(app, pilot)
        await until(pilot, lambda: bool(entry_blocks(app)))
        kinds = [
            type(b).__name__
            for b in app.conversation.blocks
            if isinstance(b, UserBlock | EntryBlock | MarkdownText)
        ]
    assert kinds == ["UserBlock", "EntryBlock", "MarkdownText"]


async def test_an_entry_appended_at_start_is_drawn_once(tmp_path: Path) -> None:
    def register(api: ExtensionAPI) -> None:
        def on_start(event: object, ctx: ExtensionContext) -> None:
            api.append_entry("note", {"text": "hello from the start"})

        api.on("session_start", on_start)
        api.register_entry_renderer("note", lambda entry, options, theme: entry.data["text"])

    app, _ = make_app(tmp_path, extensions=[inline_extension(register)])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await until(pilot, lambda: bool(entry_blocks(app)))
        await submit(pilot, app, "/new")  # a new session: its start appends another, drawn once too
        await until(pilot, lambda: "New session" in widget_text(app.conversation))
        await pilot.pause()
        drawn = [widget_text(b) for b in entry_blocks(app)]
    assert [t.strip() for t in drawn] == ["hello from the start"]
