"""Start-up's objects are taken out of the garbage collector's full passes (a pass over them mid-stream is a
visible stall), in a real terminal only: headless test apps keep the collector as it was."""

from __future__ import annotations

import gc
import weakref
from concurrent.futures import Future
from pathlib import Path

from caddie.modes.interactive.startup import freeze_startup_objects, thaw_startup_objects
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
        thaw_startup_objects()
    assert gc.get_freeze_count() == 0


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only a full pass frees it


def test_dead_cycles_are_collected_before_freezing_and_the_end_thaws_everything() -> None:
    """What start-up threw away is freed, not kept frozen for the whole run; once the app ends (a program
    ran it through ``caddie.sdk.run_interactive_mode``) the program's objects are collected again, and a
    model SDK that finishes loading afterwards freezes nothing."""
    gc.disable()  # no automatic pass may free the cycle before the freeze decides
    try:
        garbage = _Node()
        gone = weakref.ref(garbage)
        del garbage
        loading: Future[None] = Future()
        freeze_startup_objects(loading)
        assert gone() is None
        assert gc.get_freeze_count() > 0
    finally:
        gc.enable()
        thaw_startup_objects()
    assert gc.get_freeze_count() == 0
    loading.set_result(None)
    assert gc.get_freeze_count() == 0


async def test_a_headless_app_freezes_nothing(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, model="faux/echo")
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        assert app.is_headless
        assert gc.get_freeze_count() == 0
