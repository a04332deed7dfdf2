"""``google-vertex``: Gemini on Vertex AI against the fake server — application-default credentials
(a service-account key whose token endpoint is the fake), a Vertex API key, and what to do without either."""

from __future__ import annotations

from pathlib import Path

import pytest

from caddie.ai.model import Model
from caddie.ai.providers import google_vertex as vertex
from tests.ai.helpers import context, run
from tests.ai.test_anthropic_cloud import write_adc
from tests.support import fake_llm as fl
from tests.support.fake_llm import FakeLLM

pytestmark = pytest.mark.extra("vertex")  # tests/support/extras.py: skipped without it, run by .ci/run


def gemini_on_vertex(base: str) -> Model:
    return Model("gemini-2.5-flash", "Gemini 2.5 Flash", "google-vertex", "google-vertex", base)


async def test_vertex_uses_application_default_credentials(
    llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vertex, "_ADC", vertex._AdcToken())
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(write_adc(tmp_path, llm)))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "proj-1")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    llm.push(fl.text("Hello from Gemini on Vertex."), fl.text("Again."))
    result = await run(vertex.PROVIDER, gemini_on_vertex(llm.url), context(), api_key=None)
    assert result.message.text() == "Hello from Gemini on Vertex." and result.message.api == "google-vertex"
    request = llm.last_request
    assert request.path == (
        "/v1/projects/proj-1/locations/us-central1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert request.headers["authorization"] == f"Bearer {llm.access_token}"
    assert "contents" in request.body
    await run(vertex.PROVIDER, gemini_on_vertex(llm.url), context(), api_key=None)
    assert llm.token_requests == 1


async def test_a_vertex_api_key_goes_to_the_global_endpoint(llm: FakeLLM) -> None:
    llm.push(fl.text("keyed"))
    result = await run(vertex.PROVIDER, gemini_on_vertex(llm.url), context(), api_key="vertex-key-0123456789")
    assert result.message.text() == "keyed"
    assert llm.last_request.path.startswith(
        "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent"
    )
    assert llm.last_request.headers["x-goog-api-key"] == "vertex-key-0123456789"


async def test_without_credentials_or_project_the_error_says_what_to_set(
    llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vertex, "_ADC", vertex._AdcToken())
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    monkeypatch.delenv("GCLOUD_PROJECT", raising=False)
    no_project = await run(vertex.PROVIDER, gemini_on_vertex(llm.url), context(), api_key=None)
    assert "Set GOOGLE_CLOUD_PROJECT" in (no_project.message.error_message or "")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "global")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    missing = await run(vertex.PROVIDER, gemini_on_vertex(llm.url), context(), api_key=None)
    assert "gcloud auth application-default login" in (missing.message.error_message or "")
    assert llm.llm_requests == []
    assert vertex.stream_url(
        gemini_on_vertex("https://{location}-aiplatform.googleapis.com"), None
    ).startswith("https://aiplatform.googleapis.com/v1/projects/p/locations/global/")
