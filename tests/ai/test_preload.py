"""The background SDK import: once per API, in a thread named for it, never raising, easy to extend."""

from __future__ import annotations

import importlib
import sys
import threading
from dataclasses import dataclass
from types import ModuleType

import pytest

from caddie.ai.providers import preload
from caddie.ai.providers.preload import SdkSpec


@dataclass
class _Model:
    api: str


def _unique(name: str, request: pytest.FixtureRequest) -> str:
    return f"test-{name}-{request.node.name}"


def test_a_registered_api_loads_once_in_its_own_thread(request: pytest.FixtureRequest) -> None:
    api = _unique("once", request)
    seen: list[str] = []
    preload.register_preload(
        api, SdkSpec(("json",), warmups=(lambda: seen.append(threading.current_thread().name),))
    )

    first = preload.start_provider_preload(_Model(api))
    again = preload.start_provider_preload(_Model(api))
    assert first is not None and again is first
    assert preload.started(api)
    first.result(timeout=30)
    assert seen == [preload.thread_name(api)] == [f"preload-{api}"]
    assert preload.is_preloaded(api)


def test_nothing_starts_without_a_model_or_for_an_api_without_an_sdk() -> None:
    assert preload.start_provider_preload(None) is None
    assert preload.start_provider_preload(_Model("faux")) is None
    assert not preload.started("faux")


async def test_a_missing_sdk_is_left_for_the_request_to_report(request: pytest.FixtureRequest) -> None:
    api = _unique("missing", request)
    preload.register_preload(api, SdkSpec(("caddie_no_such_sdk_module",)))
    future = preload.preload(api)
    assert future is not None
    with pytest.raises(ModuleNotFoundError):
        future.result(timeout=30)
    await preload.wait_preloaded(api)  # does not raise


def test_optional_parts_may_be_missing(request: pytest.FixtureRequest) -> None:
    api = _unique("optional", request)
    preload.register_preload(api, SdkSpec(("json", "opentelemetry.caddie_missing")))
    future = preload.preload(api)
    assert future is not None
    future.result(timeout=30)  # no exception


def test_a_failing_warm_up_does_not_fail_the_preload(request: pytest.FixtureRequest) -> None:
    api = _unique("warmup", request)

    def broken() -> None:
        raise RuntimeError("warm-up failed")

    preload.register_preload(api, SdkSpec(("json",), warmups=(broken,)))
    future = preload.preload(api)
    assert future is not None
    future.result(timeout=30)


async def test_waiting_does_not_block_the_event_loop(request: pytest.FixtureRequest) -> None:
    api = _unique("wait", request)
    release = threading.Event()
    preload.register_preload(api, SdkSpec(("json",), warmups=(lambda: release.wait(30),)))
    import asyncio

    waiter = asyncio.ensure_future(preload.wait_preloaded(api))
    ticks = 0
    while ticks < 5:  # the loop keeps running while the thread is busy
        await asyncio.sleep(0.01)
        ticks += 1
    assert not waiter.done()
    release.set()
    await asyncio.wait_for(waiter, 30)
    assert preload.is_preloaded(api)


def test_a_responsive_preload_shortens_the_switch_interval_only_while_it_runs(
    request: pytest.FixtureRequest,
) -> None:
    api = _unique("responsive", request)
    release = threading.Event()
    preload.register_preload(api, SdkSpec(("json",), warmups=(lambda: release.wait(30),)))
    idle = threading.Event()
    for _ in range(6000):  # an earlier test's preload (a real SDK import) may still hold the interval low
        if preload._running == 0:
            break
        idle.wait(0.01)
    before = sys.getswitchinterval()
    future = preload.preload(api, responsive=True)
    assert future is not None
    assert sys.getswitchinterval() == pytest.approx(min(before, preload.PRELOAD_SWITCH_INTERVAL_S))
    release.set()
    future.result(timeout=30)
    deadline = threading.Event()
    for _ in range(100):  # the thread restores it in its finally, just after the result is set
        if sys.getswitchinterval() == before:
            break
        deadline.wait(0.01)
    assert sys.getswitchinterval() == before


@pytest.mark.parametrize(
    "api", ["openai-completions", "openai-responses", "azure-openai-responses", "anthropic-messages"]
)
def test_the_built_in_specs_build_real_sdk_clients(api: str) -> None:
    spec = preload.spec_for(api)
    assert spec is not None and spec.client is not None
    sdk: ModuleType = importlib.import_module(spec.modules[0])
    client = spec.client(sdk)
    assert type(client).__module__.startswith(spec.modules[0])
    for warmup in spec.warmups:
        warmup()


def test_the_built_in_apis_provider_modules_are_found() -> None:
    assert preload._provider_module("openai-completions") == "caddie.ai.providers.openai_completions"
    assert preload._provider_module("anthropic-messages") == "caddie.ai.providers.anthropic_messages"
    assert preload._provider_module("faux") == "caddie.ai.providers.faux"
