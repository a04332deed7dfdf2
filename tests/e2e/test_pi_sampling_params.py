"""models.json ``samplingParams`` (Pi 0.84.4): merged as they are into the request body of the OpenAI-style APIs,
after caddie's own fields, so a key caddie also sets is the user's — sent through the real ``openai`` SDK."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Caddie
from tests.support import fake_llm as fl


@pytest.mark.parametrize(
    ("api", "limit_field"), [("openai-completions", "max_tokens"), ("openai-responses", "max_output_tokens")]
)
def test_sampling_params_reach_the_request_and_win_over_caddies_fields(
    caddie: Caddie, api: str, limit_field: str
) -> None:
    sampling = {"min_p": 0.05, "top_k": 20, limit_field: 777}
    caddie.llm.write_models_json(caddie.home / "agent", api=api, samplingParams=sampling, reasoning=False)
    caddie.llm.push(fl.text("hello"))
    result = caddie.run("-p", "--model", "fake/fake-model", "hi")
    assert result.returncode == 0, result.stderr
    assert "samplingParams" not in result.stderr
    body = caddie.llm.llm_requests[-1].body
    assert body["min_p"] == 0.05 and body["top_k"] == 20
    assert body[limit_field] == 777  # caddie's own value is overridden, as in Pi


def test_a_model_without_sampling_params_sends_none_of_them(caddie: Caddie) -> None:
    caddie.llm.push(fl.text("hello"))
    result = caddie.run("-p", "--model", "fake/fake-model", "hi")
    assert result.returncode == 0, result.stderr
    body = caddie.llm.llm_requests[-1].body
    assert "min_p" not in body and "top_k" not in body
