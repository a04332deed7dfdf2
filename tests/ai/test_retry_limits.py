"""Waiting has limits: a server asking for a longer wait than ``retry.provider.maxRetryDelayMs`` fails at
once (Pi's documented behaviour and wording), and a stream that stays busy without content — empty chunks,
pings — ends at the no-progress deadline with a retryable error. Real SDKs, fake server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from caddie.ai import errors
from caddie.ai.model import StreamOptions
from caddie.ai.stream import complete
from tests.ai.helpers import TEST_KEY, anthropic_model, context, openai_model
from tests.support import fake_llm as fl


def _model(api: str, llm: fl.FakeLLM) -> object:
    return openai_model(llm) if api == "openai" else anthropic_model(llm)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("status", [429, 503])
async def test_a_server_wait_longer_than_the_limit_fails_at_once_with_the_wait_in_the_message(
    llm: fl.FakeLLM, api: str, status: int
) -> None:
    llm.push(fl.error(status, "Slow down", retry_after=3600))
    final = await complete(
        _model(api, llm),  # type: ignore[arg-type]
        context(),
        StreamOptions(api_key=TEST_KEY, max_retry_delay_ms=60_000),
    )
    assert final.error_message is not None
    assert final.error_message.startswith("Server requested 3600s retry delay (max: 60s). ")
    assert f"{status} " in final.error_message and "Slow down" in final.error_message
    assert not errors.is_retryable(final)
    assert errors.classify(final).kind == "fatal"


async def test_a_wait_within_the_limit_or_with_no_limit_stays_retryable(llm: fl.FakeLLM) -> None:
    llm.push(fl.error(429, "Slow down", retry_after=30), fl.error(429, "Slow down", retry_after=3600))
    within = await complete(openai_model(llm), context(), StreamOptions(api_key=TEST_KEY))
    unlimited = await complete(
        openai_model(llm), context(), StreamOptions(api_key=TEST_KEY, max_retry_delay_ms=0)
    )
    for final, wait in ((within, 30_000), (unlimited, 3_600_000)):
        assert final.error_message is not None and not final.error_message.startswith("Server requested")
        assert final.retry_after_ms == wait and errors.is_retryable(final)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_stream_of_empty_chunks_ends_at_the_no_progress_deadline(llm: fl.FakeLLM, api: str) -> None:
    llm.push(fl.empty_chunks(after_events=3, interval_s=0.05))
    start = time.monotonic()
    final = await complete(
        _model(api, llm),  # type: ignore[arg-type]
        context(),
        StreamOptions(api_key=TEST_KEY, timeout_s=5.0, progress_timeout_s=0.6),
    )
    elapsed = time.monotonic() - start
    assert final.stop_reason == "error"
    assert final.error_message == (
        f"Request timed out: the server at {_model(api, llm).base_url} sent no content for 0.6s "  # type: ignore[attr-defined]
        "(only empty chunks or keep-alives). Try again; if the model legitimately needs longer, raise "
        "httpIdleTimeoutMs in settings."
    )
    assert errors.classify(final).kind == "retryable"
    assert 0.5 < elapsed < 4.0
    assert llm.llm_requests[0].client_disconnected or elapsed < 4.0


async def test_content_resets_the_no_progress_deadline(llm: fl.FakeLLM) -> None:
    """A slow but steady reply (a delta every 0.2 s for 1.6 s) outlives a 0.6 s no-progress deadline."""
    llm.push(fl.text("a slow but steady reply", chunk_size=3, delay_s=0.2))
    final = await complete(
        openai_model(llm), context(), StreamOptions(api_key=TEST_KEY, timeout_s=5.0, progress_timeout_s=0.6)
    )
    assert final.stop_reason == "stop", final.error_message
    assert final.text() == "a slow but steady reply"


def _caddie(home: Path, project: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(CADDIE_DIR=str(home), NO_COLOR="1", CADDIE_OLLAMA_URL="http://127.0.0.1:9")
    return subprocess.run(
        [sys.executable, "-m", "caddie", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def home(tmp_path: Path, llm: fl.FakeLLM) -> Path:
    home = tmp_path / "home"
    llm.write_models_json(home / "agent", provider="fake", model_id="fake-model")
    (tmp_path / "project").mkdir()
    return home


def test_caddie_p_gives_up_at_once_on_a_one_hour_retry_after(llm: fl.FakeLLM, home: Path) -> None:
    llm.push(fl.error(429, "Rate limit reached", retry_after=3600))
    (home / "agent" / "settings.json").write_text(
        json.dumps({"retry": {"maxRetries": 3, "provider": {"maxRetryDelayMs": 60_000}}})
    )
    result = _caddie(home, home.parent / "project", "-p", "--model", "fake/fake-model", "hi", timeout=45)
    assert result.returncode == 1
    assert "caddie: Server requested 3600s retry delay (max: 60s). 429 Too Many Requests: " in result.stderr
    assert "retrying" not in result.stderr
    assert len(llm.llm_requests) == 1


def test_caddie_p_ends_an_endless_empty_stream_at_the_idle_timeout(llm: fl.FakeLLM, home: Path) -> None:
    llm.push(fl.empty_chunks(after_events=2, interval_s=0.05))
    (home / "agent" / "settings.json").write_text(
        json.dumps({"httpIdleTimeoutMs": 1000, "retry": {"enabled": False}})
    )
    result = _caddie(home, home.parent / "project", "-p", "--model", "fake/fake-model", "hi", timeout=45)
    assert result.returncode == 1
    assert "sent no content for 1s (only empty chunks or keep-alives)" in result.stderr
