"""Redirects: credentials never follow a redirect to another origin (two fake servers, real SDKs)."""

from __future__ import annotations

import pytest

from caddie.ai.model import StreamOptions
from caddie.ai.stream import complete
from tests.ai.helpers import TEST_KEY, anthropic_model, context, openai_model
from tests.support import fake_llm as fl

TOKEN = "custom-header-token-8c1d2e"


def _model(api: str, llm: fl.FakeLLM) -> object:
    make = openai_model if api == "openai" else anthropic_model
    return make(llm, headers={"X-Custom-Token": TOKEN})


def _path(api: str) -> str:
    return "/v1/chat/completions" if api == "openai" else "/v1/messages"


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("status", [307, 308, 302])
async def test_a_redirect_to_another_origin_is_refused_and_the_other_server_sees_nothing(
    api: str, status: int
) -> None:
    with fl.FakeLLM() as first, fl.FakeLLM() as other:
        other.push(fl.text("you should not be here"))
        first.push(fl.error(status, "moved", headers={"Location": other.url + _path(api)}))
        model = _model(api, first)
        final = await complete(model, context(), StreamOptions(api_key=TEST_KEY))  # type: ignore[arg-type]

        assert other.requests == [], "the request (with its credentials) reached the other origin"
        assert final.stop_reason == "error"
        assert final.error_message == (
            f"The server at {first.url}{'/v1' if api == 'openai' else ''} redirected the request to another "
            f"origin ({other.url}{_path(api)}); caddie does not send credentials across origins. "
            "Set baseUrl to the address the server redirects to."
        )
        assert TOKEN in first.llm_requests[0].headers.values()


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_redirect_within_the_same_origin_is_still_followed(api: str) -> None:
    with fl.FakeLLM() as llm:
        llm.push(
            fl.error(307, "moved", headers={"Location": llm.url + "/moved" + _path(api)}),
            fl.text("made it"),
        )
        final = await complete(_model(api, llm), context(), StreamOptions(api_key=TEST_KEY))  # type: ignore[arg-type]
        assert final.stop_reason == "stop", final.error_message
        assert [r.path for r in llm.llm_requests] == [_path(api), "/moved" + _path(api)]
        assert llm.llm_requests[1].headers["x-custom-token"] == TOKEN
