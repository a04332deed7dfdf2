"""Two extensions registering a renderer for the same custom type: the first one loaded wins, as Pi's
``getMessageRenderer`` / ``getEntryRenderer`` decide."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.runtime.harness import inline_extension, start_session


async def test_the_first_extension_to_register_a_renderer_wins_as_in_pi(tmp_path: Path) -> None:
    def first(api: Any) -> None:
        api.register_message_renderer("card", lambda *a: "first")
        api.register_entry_renderer("card", lambda *a: "first")

    def second(api: Any) -> None:
        api.register_message_renderer("card", lambda *a: "second")
        api.register_entry_renderer("card", lambda *a: "second")

    run = await start_session(
        tmp_path, extensions=[inline_extension(first, "one"), inline_extension(second, "two")]
    )
    hosted = run.session.extensions
    message, entry = hosted.message_renderer("card"), hosted.entry_renderer("card")
    assert message is not None and entry is not None
    drawn: list[Any] = [message.renderer, entry.renderer]  # the stand-ins take no arguments
    assert [draw() for draw in drawn] == ["first", "first"]
