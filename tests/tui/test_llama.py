"""``/login llama.cpp`` and ``/llama`` against a llama.cpp router (and Hugging Face) imitated on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.screen import Screen
from textual.widgets import Input

from caddie.config.paths import agent_dir
from caddie.modes.interactive.dialogs import ConfirmScreen, InputScreen, ListScreen, SelectScreen
from caddie.modes.interactive.llama import ProgressScreen
from caddie.modes.interactive.login import SecretInputScreen
from tests.support import fake_llm as fl
from tests.support import fake_local
from tests.tui.harness import SMALL, make_app, ready, submit, type_text, until, widget_text

GEMMA = "ggml-org/gemma-3-270m-GGUF"


@pytest.fixture(autouse=True)
def _discovery_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CADDIE_LOCAL_DISCOVERY", "1")  # the suite turns it off (tests/conftest.py)


@pytest.fixture
def router() -> fake_local.FakeRouter:
    return fake_local.FakeRouter({"qwen-small": "loaded", "gemma-tiny": "unloaded"}, n_ctx=8192)


@pytest.fixture
def server(
    router: fake_local.FakeRouter, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[fl.FakeLLM]:
    repos = {
        GEMMA: {
            "downloads": 12_345,
            "files": {"gemma-3-270m-Q8_0.gguf": 300_000_000, "gemma-3-270m-Q4_K_M.gguf": 253_000_000},
        },
        "someone/gemma-gated-GGUF": {"downloads": 10, "gated": "manual", "files": {"g-Q4_K_M.gguf": 1}},
    }
    with fl.FakeLLM(routes={**router.routes(), **fake_local.hugging_face(repos)}) as llm:
        monkeypatch.setenv("HF_ENDPOINT", llm.url)
        token = tmp_path_factory.mktemp("hf") / "token"
        token.write_text("hf-test-token\n")
        monkeypatch.delenv("HF_TOKEN", raising=False)  # HF_TOKEN is also the huggingface provider's key
        monkeypatch.setenv("HF_TOKEN_PATH", str(token))
        yield llm


async def shown(
    pilot: Any, app: Any, kind: type[Screen[Any]], extra: Callable[[Any], bool] = lambda screen: True
) -> Any:
    """Wait until a ``kind`` dialog is on screen and mounted (its widgets composed), and return it."""

    def ready_screen() -> bool:
        screen: Any = app.screen
        return (
            isinstance(screen, kind) and screen.is_mounted and bool(screen.query("#dialog")) and extra(screen)
        )

    await until(pilot, ready_screen)
    return app.screen


def conversation(app: object) -> str:
    return " ".join(widget_text(app.conversation).split())  # type: ignore[attr-defined]  # unwrapped


async def test_login_stores_the_router_url_as_pi_does(tmp_path: Path, server: fl.FakeLLM) -> None:
    app, _ = make_app(tmp_path, model=None)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/login llama.cpp")
        await shown(pilot, app, InputScreen, lambda screen: type(screen) is InputScreen)
        app.screen.query_one(Input).value = server.url + "/v1/"
        await pilot.press("enter")
        await shown(pilot, app, SecretInputScreen)
        await pilot.press("enter")  # no key
        await until(pilot, lambda: "Stored the llama.cpp router" in conversation(app))
        assert "2 models, 1 loaded" in conversation(app)
        await until(pilot, lambda: app.session is not None and app.session.model is not None)
        assert app.session is not None and app.session.model is not None
        assert app.session.model.ref == "llama.cpp/qwen-small"
        assert app.session.model.context_window == 8192
    stored = json.loads((agent_dir() / "auth.json").read_text())
    assert stored == {"llama.cpp": {"type": "api_key", "env": {"LLAMA_BASE_URL": server.url}}}


async def test_login_refuses_a_server_that_is_not_a_router(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path)
    with fl.FakeLLM() as plain:  # answers /models as a plain OpenAI server: no model states
        async with app.run_test(size=SMALL) as pilot:
            await ready(app, pilot)
            await submit(pilot, app, "/login llama.cpp")
            await shown(pilot, app, InputScreen, lambda screen: type(screen) is InputScreen)
            app.screen.query_one(Input).value = plain.url
            await pilot.press("enter")
            await shown(pilot, app, SecretInputScreen)
            await type_text(pilot, "sk-x")
            await pilot.press("enter")
            await until(pilot, lambda: "not running in llama.cpp router mode" in conversation(app))
    assert not (agent_dir() / "auth.json").exists()


async def test_llama_without_a_router_says_how_to_configure_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LLAMA_BASE_URL", raising=False)
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/llama")
        await until(pilot, lambda: "Configure llama.cpp with /login llama.cpp" in conversation(app))


async def test_load_unloading_the_others_then_unload(
    tmp_path: Path, server: fl.FakeLLM, router: fake_local.FakeRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLAMA_BASE_URL", server.url)
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/llama")
        await shown(pilot, app, ListScreen)
        screen = app.screen
        assert isinstance(screen, ListScreen)
        assert [c.id for c in screen.choices][:2] == ["qwen-small", "gemma-tiny"]  # loaded first
        assert "loaded · 8k context" in str(screen.choices[0].prompt)
        screen.pick(1)
        await shown(pilot, app, SelectScreen)
        assert "1 model is loaded" in app.screen.title_text  # type: ignore[attr-defined]
        app.screen.pick(0)  # type: ignore[attr-defined]  # Unload all and load
        await until(pilot, lambda: "Loaded gemma-tiny" in conversation(app))
        assert router.states == {"qwen-small": "unloaded", "gemma-tiny": "loaded"}
        assert [(c[1], c[2]) for c in router.calls] == [("unload", "qwen-small"), ("load", "gemma-tiny")]
        await shown(pilot, app, ListScreen)
        app.screen.pick(0)  # type: ignore[attr-defined]  # gemma-tiny, loaded now
        await shown(pilot, app, ConfirmScreen)
        await pilot.press("y")
        await until(pilot, lambda: "Unloaded gemma-tiny" in conversation(app))
        await shown(pilot, app, ListScreen)
        await pilot.press("escape")
        assert app.registry is not None
        assert not [m for m in app.registry.available() if m.provider == "llama.cpp"]


async def test_a_load_can_be_stopped_and_a_failed_load_is_reported(
    tmp_path: Path, server: fl.FakeLLM, router: fake_local.FakeRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLAMA_BASE_URL", server.url)
    router.load_polls = 10_000
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/llama")
        await shown(pilot, app, ListScreen)
        app.screen.pick(1)  # type: ignore[attr-defined]
        await shown(pilot, app, SelectScreen)
        app.screen.pick(1)  # type: ignore[attr-defined]  # Keep loaded and load
        await shown(pilot, app, ProgressScreen)
        await pilot.press("escape")
        await shown(pilot, app, ConfirmScreen)
        await pilot.press("y")
        await shown(pilot, app, ListScreen)
        assert router.states["gemma-tiny"] == "unloaded" and ("POST", "unload", "gemma-tiny") in router.calls
        assert "Loaded gemma-tiny" not in conversation(app)
        router.load_polls, router.fail = 1, {"gemma-tiny"}
        app.screen.pick(1)  # type: ignore[attr-defined]
        await shown(pilot, app, SelectScreen)
        app.screen.pick(1)  # type: ignore[attr-defined]
        await until(pilot, lambda: "gemma-tiny failed to load" in conversation(app))
        await shown(pilot, app, ListScreen)
        await pilot.press("escape")


async def test_download_searches_hugging_face_and_picks_a_quantization(
    tmp_path: Path, server: fl.FakeLLM, router: fake_local.FakeRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLAMA_BASE_URL", server.url)
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/llama")
        await shown(pilot, app, ListScreen)
        app.screen.pick(2)  # type: ignore[attr-defined]  # Download model…
        await shown(pilot, app, InputScreen, lambda screen: type(screen) is InputScreen)
        app.screen.query_one(Input).value = "gemma"
        await pilot.press("enter")
        await shown(pilot, app, ListScreen, lambda screen: screen.title_text == "Download model")
        results = app.screen
        assert isinstance(results, ListScreen) and [c.id for c in results.choices] == [
            GEMMA,
            "someone/gemma-gated-GGUF",
        ]
        assert "12.3k downloads" in str(results.choices[0].prompt)
        results.pick(0)
        await shown(pilot, app, ListScreen, lambda screen: "quantization" in screen.title_text)
        quants = app.screen
        assert isinstance(quants, ListScreen)
        assert [c.id for c in quants.choices] == ["Q4_K_M", "Q8_0"]
        assert str(quants.choices[0].prompt) == "Q4_K_M · 241.3 MiB · recommended"
        quants.pick(0)
        await until(pilot, lambda: f"Downloaded {GEMMA}:Q4_K_M" in conversation(app))
        assert ("POST", "download", f"{GEMMA}:Q4_K_M") in router.calls
        assert any(r.path.startswith("/models?reload=1") for r in server.requests)
        hf_auth = [
            r.headers.get("authorization") for r in server.requests if r.path.startswith("/api/models")
        ]
        assert hf_auth and all(a == "Bearer hf-test-token" for a in hf_auth)
        await shown(pilot, app, ListScreen)
        await pilot.press("escape")


async def test_an_unreachable_router_offers_retry_and_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLAMA_BASE_URL", "http://127.0.0.1:9")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/llama")
        await shown(pilot, app, SelectScreen)
        assert "llama.cpp unavailable" in app.screen.title_text  # type: ignore[attr-defined]
        app.screen.pick(0)  # type: ignore[attr-defined]  # Retry: still nothing there
        await shown(pilot, app, SelectScreen)
        app.screen.pick(1)  # type: ignore[attr-defined]  # Close
        await until(pilot, lambda: not isinstance(app.screen, SelectScreen))
        await submit(pilot, app, "/llama")  # the UI still answers
        await shown(pilot, app, SelectScreen)
        await pilot.press("escape")
