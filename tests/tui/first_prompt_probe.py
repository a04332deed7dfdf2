"""Run caddie's interactive app headless in a fresh interpreter, send the first prompt of the process
through a real provider SDK, and report every event-loop callback that took too long.

Used by ``test_first_prompt.py`` (a fresh interpreter matters: the SDK must not be imported yet) and by
``bench/bench_tui.py``. Prints one JSON object: ``slow`` (the asyncio slow-callback warnings, except the
probe's own steps), ``answer``, ``echo_ms`` (how long each key typed while the prompt was being sent took
to show in the editor, as Pilot sees it) and ``preload_wait_ms`` (how long after the UI was ready the
provider SDK was still loading in the background).

    python -m tests.tui.first_prompt_probe PROJECT_DIR MODEL THRESHOLD_S
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from pathlib import Path

from caddie.ai.providers.preload import is_preloaded
from caddie.modes.interactive.app import CaddieApp, Startup
from caddie.modes.interactive.conversation import MarkdownText
from caddie.runtime.factory import SessionRequest


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.slow: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "took" in message and "seconds" in message and "first_prompt_probe" not in message:
            self.slow.append(message[:160] + " … " + message[-60:])


async def probe(project: str, model: str, threshold: float) -> dict[str, object]:
    request = SessionRequest(cwd=project, mode="tui", model=model, session="new", require_model=False)
    app = CaddieApp(Startup(request))
    collect = _Collect()
    logging.getLogger("asyncio").addHandler(collect)
    echo_ms: list[float] = []
    answer = ""
    async with app.run_test(size=(100, 30)) as pilot:
        await asyncio.wait_for(app.ready.wait(), 60)
        await pilot.pause()
        assert app.session is not None and app.session.model is not None
        # The SDK loads in the background from start-up on, usually long before a person has typed the
        # first prompt; the probe types as fast as that allows, then sends it and keeps typing.
        started = time.perf_counter()
        while not is_preloaded(app.session.model.api):
            await pilot.pause(0.02)
        preload_wait_ms = (time.perf_counter() - started) * 1000
        loop = asyncio.get_running_loop()
        loop.slow_callback_duration = threshold
        loop.set_debug(True)
        app.editor.set_text("hello there")
        await pilot.press("enter")
        for ch in "typing on":  # keys typed while the first prompt is on its way
            started = time.perf_counter()
            before = app.editor.text
            await pilot.press("space" if ch == " " else ch)
            while app.editor.text == before:
                await asyncio.sleep(0.001)
            echo_ms.append((time.perf_counter() - started) * 1000)
        deadline = loop.time() + 60
        while not any(m.text for m in app.conversation.blocks_of(MarkdownText)):
            if loop.time() > deadline:
                break
            await pilot.pause(0.02)
        assert app.session is not None
        await asyncio.wait_for(app.session.wait_for_idle(), 60)
        await pilot.pause(0.2)
        loop.set_debug(False)
        answer = next((m.text for m in app.conversation.blocks_of(MarkdownText) if m.text), "")
    return {"slow": collect.slow, "answer": answer, "echo_ms": echo_ms, "preload_wait_ms": preload_wait_ms}


def main() -> None:
    project, model, threshold = sys.argv[1], sys.argv[2], float(sys.argv[3])
    Path(project).mkdir(parents=True, exist_ok=True)
    print(json.dumps(asyncio.run(probe(project, model, threshold))))


if __name__ == "__main__":
    main()
