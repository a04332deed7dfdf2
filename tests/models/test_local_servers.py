"""Local servers say which models they serve and with what context size; the registry lists and uses that.

Each server is imitated on 127.0.0.1 with the shapes it really sends (tests/support/fake_local.py); the
registry's providers point at it through models.json ``baseUrl`` (or ``CADDIE_OLLAMA_URL``), as a user's would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caddie.config.paths import agent_dir
from caddie.models import ModelRegistry
from caddie.models.local_servers import (
    parse_lmstudio_models,
    parse_ollama_show,
    parse_openai_models,
    parse_router_models,
)
from tests.support import fake_llm as fl
from tests.support import fake_local


def point(provider: str, base_url: str, **extra: Any) -> None:
    path = agent_dir() / "models.json"
    data = json.loads(path.read_text()) if path.exists() else {"providers": {}}
    data["providers"][provider] = {"baseUrl": base_url, **extra}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


@pytest.fixture(autouse=True)
def _discovery_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CADDIE_LOCAL_DISCOVERY", "1")  # the suite turns it off (tests/conftest.py)


@pytest.fixture
def server() -> Iterator[fl.FakeLLM]:
    with fl.FakeLLM() as llm:
        yield llm


# --------------------------------------------------------------------------------------------------
# What each server's answer means


def test_ollama_show_gives_num_ctx_else_the_trained_length_capped() -> None:
    assert parse_ollama_show({"parameters": "stop x\nnum_ctx 16384\n", "model_info": {}}) == (16384, False)
    capped = parse_ollama_show({"model_info": {"qwen2.context_length": 131072}, "capabilities": ["vision"]})
    assert capped == (32768, True)
    assert parse_ollama_show({"model_info": {"llama.context_length": 8192}}) == (8192, False)
    assert parse_ollama_show("nonsense") == (None, False)


def test_lmstudio_skips_embeddings_and_prefers_the_loaded_size() -> None:
    models = parse_lmstudio_models(
        {
            "data": [
                {
                    "id": "qwen",
                    "type": "llm",
                    "state": "loaded",
                    "max_context_length": 32768,
                    "loaded_context_length": 8192,
                },
                {"id": "llava", "type": "vlm", "state": "not-loaded", "max_context_length": 4096},
                {
                    "id": "nomic-embed",
                    "type": "embeddings",
                    "state": "not-loaded",
                    "max_context_length": 2048,
                },
            ]
        }
    )
    assert [(m.id, m.context_window, m.images) for m in models] == [
        ("qwen", 8192, False),
        ("llava", 4096, True),
    ]


def test_openai_listings_read_vllm_and_llama_cpp_sizes() -> None:
    models = parse_openai_models(
        {
            "data": [
                {"id": "a", "max_model_len": 4096},
                {"id": "b", "meta": {"n_ctx_train": 2048}},
                {"id": "c"},
                {"x": 1},
            ]
        }
    )
    assert [(m.id, m.context_window) for m in models] == [("a", 4096), ("b", 2048), ("c", None)]


def test_a_router_listing_needs_states_and_reads_ctx_size_arguments() -> None:
    assert parse_router_models({"data": [{"id": "plain"}]}) is None
    [model] = (
        parse_router_models(
            {
                "data": [
                    {
                        "id": "m",
                        "status": {"value": "unloaded", "args": ["-m", "x.gguf", "-c", "4096"]},
                        "source": "preset",
                    }
                ]
            }
        )
        or []
    )
    assert (model.status, model.context_window, model.source) == ("unloaded", 4096, "preset")


# --------------------------------------------------------------------------------------------------
# The registry asks


def test_ollama_models_come_with_the_size_they_run_with(monkeypatch: pytest.MonkeyPatch) -> None:
    routes = fake_local.ollama_server(
        {"gemma3:270m": {"num_ctx": 8192}, "qwen3:8b": {"context_length": 40960, "vision": True}},
        running={"qwen3:8b": 4096},
    )
    with fl.FakeLLM(routes=routes) as llm:
        monkeypatch.setenv("CADDIE_OLLAMA_URL", llm.url)
        registry = ModelRegistry()
        registry.discover_local()
        found = {m.ref: m for m in registry.available() if m.provider == "ollama"}
        assert found["ollama/gemma3:270m"].context_window == 8192
        assert found["ollama/qwen3:8b"].context_window == 4096  # loaded: what Ollama runs it with
        assert found["ollama/qwen3:8b"].input == ["text", "image"]
        assert found["ollama/gemma3:270m"].max_tokens <= 8192


def test_lmstudio_vllm_and_llama_server_sizes_reach_the_models(server: fl.FakeLLM) -> None:
    lmstudio = fl.FakeLLM(
        routes=fake_local.lmstudio_server(
            [
                {
                    "id": "qwen/qwen3-coder-30b",
                    "type": "llm",
                    "state": "loaded",
                    "max_context_length": 262144,
                    "loaded_context_length": 16384,
                }
            ]
        )
    )
    vllm = fl.FakeLLM(routes=fake_local.vllm_server({"Qwen/Qwen3-8B": 40960}))
    llama = fl.FakeLLM(routes=fake_local.llama_server("gemma", n_ctx=4096, vision=True))
    with lmstudio, vllm, llama:
        point("lmstudio", lmstudio.openai_base_url)
        point("vllm", vllm.openai_base_url)
        point("llamacpp", llama.openai_base_url)
        registry = ModelRegistry()
        # Named directly, a model's server is asked on first use.
        assert registry.resolve("vllm/Qwen/Qwen3-8B").context_window == 40960
        assert registry.resolve("llamacpp/gemma").context_window == 4096  # -c, not the trained 131072
        assert registry.resolve("llamacpp/gemma").input == ["text", "image"]
        registry.discover_local()
        refs = {m.ref: m.context_window for m in registry.available()}
        assert refs["lmstudio/qwen/qwen3-coder-30b"] == 16384
        assert refs["vllm/Qwen/Qwen3-8B"] == 40960
        # An id the server does not list still works, with the assumed size.
        assert registry.resolve("vllm/other").context_window == 32768


def test_a_server_that_does_not_answer_changes_nothing() -> None:
    point("vllm", "http://127.0.0.1:9/v1")
    registry = ModelRegistry()
    registry.discover_local()
    assert registry.resolve("vllm/x").context_window == 32768
    assert not [m for m in registry.available() if m.provider == "vllm"]


def test_list_models_shows_what_local_servers_serve(isolated_caddie_dir: Path) -> None:
    with fl.FakeLLM(routes=fake_local.vllm_server({"served-model": 12288})) as vllm:
        point("vllm", vllm.openai_base_url)
        result = subprocess.run(
            [sys.executable, "-m", "caddie", "--list-models", "vllm"],
            capture_output=True, text=True, timeout=60, env={**os.environ},
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    [row] = [line for line in result.stdout.splitlines() if line.startswith("vllm")]
    assert row.split()[:3] == ["vllm", "served-model", "12.3K"]


# --------------------------------------------------------------------------------------------------
# Pi's llama.cpp router provider


def test_the_router_is_not_configured_until_llama_base_url_or_login(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLAMA_BASE_URL", raising=False)
    registry = ModelRegistry()
    model = registry.resolve("llama.cpp/anything")
    assert not registry.has_auth(model)
    assert "/login llama.cpp" in registry.key_hint(model) and "LLAMA_BASE_URL" in registry.key_hint(model)
    assert ("llama.cpp", "llama.cpp") in registry.login_providers()


def test_router_models_as_pi_lists_them(monkeypatch: pytest.MonkeyPatch) -> None:
    router = fake_local.FakeRouter(
        {"loaded-one": "loaded", "sleepy": "sleeping", "cold": "unloaded", "preset": "unloaded"},
        presets=("preset",),
        n_ctx=6144,
    )
    with fl.FakeLLM(routes=router.routes()) as llm:
        monkeypatch.setenv("LLAMA_BASE_URL", llm.url + "/v1/")  # normalised, as Pi does
        monkeypatch.setenv("LLAMA_API_KEY", "sk-router")
        registry = ModelRegistry()
        registry.discover_local()
        listed = {m.id: m for m in registry.available() if m.provider == "llama.cpp"}
        assert set(listed) == {"loaded-one", "sleepy"}
        assert listed["loaded-one"].context_window == 6144
        assert listed["loaded-one"].base_url == llm.url + "/v1"
        assert registry.api_key_for(listed["loaded-one"]) == "sk-router"
        assert llm.requests[0].headers.get("authorization") == "Bearer sk-router"
        router.autoload = True
        registry.discover_local()
        assert {m.id for m in registry.available() if m.provider == "llama.cpp"} == {
            "loaded-one",
            "sleepy",
            "preset",
        }


def test_a_stored_router_login_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLAMA_BASE_URL", "http://127.0.0.1:9")
    registry = ModelRegistry()
    registry.auth.set_credential("llama.cpp", None, {"LLAMA_BASE_URL": "http://10.0.0.5:8080"})
    registry.refresh()
    model = registry.resolve("llama.cpp/m")
    assert model.base_url == "http://10.0.0.5:8080/v1" and registry.has_auth(model)
    stored = json.loads(registry.auth.path.read_text())
    assert stored["llama.cpp"] == {"type": "api_key", "env": {"LLAMA_BASE_URL": "http://10.0.0.5:8080"}}


def test_discovery_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    with fl.FakeLLM(routes=fake_local.vllm_server({"served-model": 12288})) as vllm:
        point("vllm", vllm.openai_base_url)
        monkeypatch.setenv("CADDIE_LOCAL_DISCOVERY", "0")
        registry = ModelRegistry()
        registry.discover_local()
        assert registry.resolve("vllm/served-model").context_window == 32768
        assert not registry.discovered() and vllm.requests == []


def test_model_cycling_and_rpc_lists_include_what_servers_serve(isolated_caddie_dir: Path) -> None:
    from caddie.runtime.factory import _available_models

    with fl.FakeLLM(routes=fake_local.vllm_server({"served-model": 12288})) as vllm:
        point("vllm", vllm.openai_base_url)
        registry = ModelRegistry()
        refs = [m.ref for m in _available_models(registry, registry.has_auth)]
        asked = len(vllm.requests)
        again = [m.ref for m in _available_models(registry, registry.has_auth)]
        asked_again = len(vllm.requests)
    assert "vllm/served-model" in refs and refs == again
    assert asked >= 1 and asked_again == asked  # asked once per process, not on every call
