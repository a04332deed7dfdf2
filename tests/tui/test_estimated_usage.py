"""The footer, ``/session`` and ``/context`` mark estimated usage with "≈", and only estimated usage.

The app talks to the fake server through the real SDK (not the faux stream), so replies pass through
``caddie.ai.stream`` where a reply without usage gets its estimate.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from caddie.ai.providers.faux import faux_message
from caddie.modes.interactive.app import CaddieApp, Startup
from caddie.runtime.factory import SessionRequest
from tests.support import fake_llm as fl
from tests.tui.harness import LARGE, make_app, ready, screen_text, settle, submit, until, write_settings


@pytest.mark.parametrize("no_usage", [True, False], ids=["no-usage", "reported"])
async def test_estimates_are_marked_on_screen(
    tmp_path: Path, isolated_caddie_dir: Path, no_usage: bool
) -> None:
    write_settings()
    usage = {"no_usage": True} if no_usage else {"usage": fl.UsageSpec(3_000, 12)}
    with fl.FakeLLM() as llm:
        llm.write_models_json(isolated_caddie_dir / "agent", contextWindow=32_768)
        llm.push(fl.text("Hello from the local model.", **usage))
        request = SessionRequest(
            cwd=str(tmp_path), mode="tui", model="fake/fake-model", session="new", no_context_files=True
        )
        app = CaddieApp(Startup(request, False, []))
        async with app.run_test(size=LARGE) as pilot:
            await ready(app, pilot)
            await submit(pilot, app, "hello")
            await settle(app, pilot)
            await until(pilot, lambda: "Hello from the local model." in screen_text(app))
            await until(pilot, lambda: "↑" in "".join(screen_text(app).splitlines()[-3:]))  # the footer drawn
            footer = screen_text(app).splitlines()[-3:]
            footer_text = "\n".join(footer)
            assert ("↑≈" in footer_text) is no_usage, footer_text
            assert ("≈" in footer_text.split("$")[-1]) is no_usage, footer_text  # the context percentage
            await submit(pilot, app, "/session")
            await until(pilot, lambda: "Session id" in screen_text(app))
            session_text = screen_text(app)
            assert ("the server reported no usage" in session_text) is no_usage
            await submit(pilot, app, "/context")
            await until(pilot, lambda: "Context window" in screen_text(app))
            context_text = screen_text(app)
            assert ("server reports no usage" in context_text) is no_usage


async def test_an_answer_cut_at_the_output_limit_or_empty_is_pointed_out(tmp_path: Path) -> None:
    app, _ = make_app(
        tmp_path,
        [faux_message("Once upon a time", stop_reason="length"), faux_message(""), faux_message("Done.")],
    )
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "tell a story")
        await settle(app, pilot)
        await until(pilot, lambda: "stopped at the model's output limit" in screen_text(app))
        await submit(pilot, app, "anything?")
        await settle(app, pilot)
        await until(pilot, lambda: "The model returned an empty answer." in screen_text(app))
        await submit(pilot, app, "fine?")
        await settle(app, pilot)
        await until(pilot, lambda: "Done." in screen_text(app))
        assert screen_text(app).count("The model returned an empty answer.") == 1
