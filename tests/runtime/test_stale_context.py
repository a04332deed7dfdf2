"""A ``ctx`` (or ``api``) kept past a session replacement or a reload is stale, as in Pi: using it raises
``StaleExtensionContext`` with Pi's message instead of acting on the session that replaced it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from caddie.extensions.api import (
    STALE_CONTEXT,
    CommandContext,
    ExtensionAPI,
    ExtensionContext,
    ReplacedSessionContext,
    StaleExtensionContext,
)
from tests.runtime.harness import inline_extension, start_session


def stale_error(action: Any) -> str | None:
    try:
        action()
    except StaleExtensionContext as e:
        return str(e)
    return None


async def test_a_command_ctx_is_stale_after_new_session_and_with_session_gets_a_live_one(
    tmp_path: Path,
) -> None:
    seen: dict[str, Any] = {}

    def register(api: ExtensionAPI) -> None:
        async def handoff(args: str, ctx: CommandContext) -> None:
            before = ctx.session.session_id

            def with_session(new: ReplacedSessionContext) -> None:
                seen["new"] = new.session.session_id

            assert await ctx.new_session(with_session=with_session)
            seen["before"] = before
            seen["error"] = stale_error(lambda: ctx.session)
            seen["abort"] = stale_error(ctx.abort)

        api.register_command("handoff", handoff)

    run = await start_session(tmp_path, extensions=[inline_extension(register)], session="new")
    await run.session.prompt("/handoff")
    assert seen["error"] == STALE_CONTEXT and seen["abort"] == STALE_CONTEXT
    assert seen["new"] == run.session.store.session_id != seen["before"]
    assert STALE_CONTEXT.startswith("This extension ctx is stale after session replacement or reload.")
    await run.session.shutdown("quit")


@pytest.mark.parametrize("how", ["new", "fork", "switch", "reload"])
async def test_a_handler_ctx_kept_for_later_is_stale(tmp_path: Path, how: str) -> None:
    kept: list[ExtensionContext] = []

    def register(api: ExtensionAPI) -> None:
        api.on("session_start", lambda _e, ctx: kept.append(ctx))

    run = await start_session(tmp_path, extensions=[inline_extension(register)], session="new")
    await run.session.prompt("hello")
    first = kept[-1]
    assert first.session.session_id == run.session.store.session_id  # live until replaced
    path = run.session.store.session_file
    if how == "new":
        await run.session.new_session()
    elif how == "fork":
        entry = run.session.store.branch()[-1].id
        await run.session.fork(entry)
    elif how == "switch":
        await run.session.new_session()
        assert path is not None
        await run.session.switch_session(path)
    else:
        await run.session.reload()
    live = kept[-1]
    assert live.session.session_id == run.session.store.session_id  # the new session's own ctx works
    assert stale_error(lambda: first.session) == STALE_CONTEXT
    assert stale_error(lambda: first.model) == STALE_CONTEXT
    await run.session.shutdown("quit")


async def test_a_kept_api_of_a_replaced_extension_says_it_is_stale(tmp_path: Path) -> None:
    extension = tmp_path / "keeper.py"
    extension.write_text(
        "import tests.runtime.test_stale_context as box\ndef register(api):\n    box.KEPT_APIS.append(api)\n"
    )
    run = await start_session(tmp_path, extension_paths=[str(extension)], session="new")
    old = KEPT_APIS[-1]
    old.set_session_name("works")
    await run.session.new_session()
    assert KEPT_APIS[-1] is not old  # the extension was loaded again for the new session
    assert stale_error(lambda: old.set_session_name("late")) == STALE_CONTEXT
    KEPT_APIS[-1].set_session_name("new one")
    assert run.session.store.session_name() == "new one"
    await run.session.shutdown("quit")


KEPT_APIS: list[ExtensionAPI] = []
