"""``ctx.shutdown()`` in the TUI: the app quits once the agent is idle, after ``session_shutdown``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from caddie.ai.providers.faux import faux_message
from caddie.extensions.api import ExtensionAPI
from tests.tui.harness import SMALL, inline_extension, make_app, ready, submit, until


def shutdown_extension(seen: list[str]) -> Any:
    def register(api: ExtensionAPI) -> None:
        def bye(args: str, ctx: Any) -> None:
            seen.append("bye")
            ctx.shutdown()

        def on_agent_end(event: Any, ctx: Any) -> None:
            if seen == ["armed"]:
                seen.append("requested during the run")
                ctx.shutdown()

        api.register_command("bye", bye, "quit gracefully")
        api.on("agent_end", on_agent_end)
        api.on("session_shutdown", lambda event, ctx: seen.append(f"session_shutdown {event.reason}"))

    return register


async def test_a_command_calling_shutdown_quits_the_app_after_session_shutdown(tmp_path: Path) -> None:
    seen: list[str] = []
    app, _ = make_app(tmp_path, extensions=[inline_extension(shutdown_extension(seen))])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/bye")
        await until(pilot, lambda: app.return_code is not None)
    assert seen == ["bye", "session_shutdown quit"]
    assert app.return_code == 0


async def test_shutdown_during_a_run_waits_for_the_run_to_settle(tmp_path: Path) -> None:
    seen: list[str] = ["armed"]
    app, faux = make_app(
        tmp_path, [faux_message("the answer")], extensions=[inline_extension(shutdown_extension(seen))]
    )
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "question")
        await until(pilot, lambda: app.return_code is not None)
        assert app.session is not None
        store = app.session.store
    assert seen == ["armed", "requested during the run", "session_shutdown quit"]
    roles = [m.role for m in store.build_context().messages]
    assert roles == ["user", "assistant"]  # the reply was written before the app quit
    assert len(faux.requests) == 1
