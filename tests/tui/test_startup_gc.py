"""Start-up's objects are taken out of the garbage collector's full passes (a pass over them mid-stream is a
visible stall), in a real terminal only: headless test apps keep the collector as it was."""

from __future__ import annotations

import gc
from concurrent.futures import Future
from pathlib import Path

from caddie.modes.interactive.startup import freeze_startup_objects
from tests.tui.harness import SMALL, make_app, ready


def test_start_up_objects_are_frozen_and_the_sdk_s_once_it_is_loaded() -> None:
    loading: Future[None] = Future()
    try:
        freeze_startup_objects(loading)
        at_start = gc.get_freeze_count()
        assert at_start > 0
        sdk_objects = [[index] for index in range(1000)]  # what the SDK import builds meanwhile
        assert gc.get_freeze_count() == at_start
        loading.set_result(None)
        assert gc.get_freeze_count() >= at_start + len(sdk_objects)
    finally:
        gc.unfreeze()


async def test_a_headless_app_freezes_nothing(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, model="faux/echo")
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        assert app.is_headless
        assert gc.get_freeze_count() == 0
