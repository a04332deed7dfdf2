"""``caddie.sdk`` credentials and model files of the program's own: an in-memory store, ``auth_path``,
``models_path`` — through the real ``openai`` client against the fake server, the agent folder untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caddie.config.paths import agent_dir
from caddie.sdk import (
    AuthStore,
    InMemoryCredentialStore,
    UsageError,
    create_session,
    open_session,
)
from tests.support import fake_llm as fl


def keyless_models_json(llm: fl.FakeLLM, folder: Path) -> Path:
    """A models.json for the fake server whose provider has no ``apiKey``: the key must come from the store."""
    data = llm.models_json(provider="fake", model_id="fake-model")
    del data["providers"]["fake"]["apiKey"]
    path = folder / "models.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


async def test_an_in_memory_store_and_a_models_path_leave_the_agent_folder_alone(tmp_path: Path) -> None:
    credentials = InMemoryCredentialStore({"fake": {"type": "api_key", "key": "sk-held-in-memory-1234"}})
    with fl.FakeLLM() as llm:
        models = keyless_models_json(llm, tmp_path / "app")
        llm.push(fl.text("first"), fl.text("second"))
        async with open_session(
            tmp_path, model="fake/fake-model", credentials=credentials, models_path=models,
            discover_extensions=False,
        ) as session:  # fmt: skip
            await session.prompt("hello")
            credentials.set_key("fake", "sk-changed-while-running-5678")
            await session.prompt("again")
        keys = [r.headers.get("authorization") for r in llm.llm_requests]
    assert keys == ["Bearer sk-held-in-memory-1234", "Bearer sk-changed-while-running-5678"]
    assert not agent_dir().exists() or sorted(p.name for p in agent_dir().rglob("*")) == []
    assert sorted(p.name for p in (tmp_path / "app").iterdir()) == ["models.json"]


async def test_auth_path_reads_an_auth_json_of_the_programs_own(tmp_path: Path) -> None:
    auth = tmp_path / "app" / "auth.json"
    AuthStore(auth).set_key("fake", "sk-from-the-apps-file-9999")
    with fl.FakeLLM() as llm:
        models = keyless_models_json(llm, tmp_path / "app")
        llm.push(fl.text("ok"))
        async with open_session(
            tmp_path, model="fake/fake-model", auth_path=auth, models_path=models, discover_extensions=False
        ) as session:
            await session.prompt("hello")
        [request] = llm.llm_requests
    assert request.headers.get("authorization") == "Bearer sk-from-the-apps-file-9999"


async def test_a_store_and_an_auth_path_together_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not both"):
        await create_session(tmp_path, credentials=InMemoryCredentialStore(), auth_path=tmp_path / "a.json")


async def test_a_login_renewed_in_memory_stays_in_memory(tmp_path: Path) -> None:
    login = {"type": "oauth", "access": "at-old-0001", "refresh": "rt-0001", "expires": 1}
    store = InMemoryCredentialStore({"anthropic": login})

    async def renew(current: dict[str, object] | None) -> dict[str, object] | None:
        assert current == login
        return {**login, "access": "at-new-0002", "expires": 2}

    renewed = await store.modify_oauth("anthropic", renew)
    assert renewed is not None and renewed["access"] == "at-new-0002"
    assert store.oauth("anthropic") == renewed and store.stored() == {"anthropic": "oauth"}
    assert not store.remove("openai") and store.remove("anthropic") and store.oauth("anthropic") is None
    assert not agent_dir().exists() or list(agent_dir().iterdir()) == []
