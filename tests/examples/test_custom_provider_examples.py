"""Pi's custom-provider examples: a provider with its own wire code (``stream_simple`` through the real
``anthropic`` SDK) and login, end to end through ``caddie -p`` against the fake Messages server, and the
login against a fake token endpoint — never the network."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.e2e.conftest import Caddie
from tests.examples.harness import example
from tests.support import fake_llm as fl
from tests.support.fake_oauth import FakeOAuthServer

ANTHROPIC = example("custom_provider_anthropic")
MODEL = "custom-anthropic/claude-sonnet-4-5"


@pytest.fixture
def caddie(tmp_path: Path) -> Iterator[Caddie]:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    (home / "agent").mkdir(parents=True)
    (home / "agent" / "settings.json").write_text(
        json.dumps({"disabledExtensions": ["mulligan", "goal", "mcp"]})
    )
    with fl.FakeLLM() as llm:
        yield Caddie(home, project, llm)


def test_a_key_reaches_the_messages_api_through_the_extensions_own_stream(caddie: Caddie) -> None:
    (caddie.project / "notes.txt").write_text("the answer is 42\n")
    caddie.llm.push(
        fl.tool_call("read", {"path": "notes.txt"}, usage=fl.UsageSpec(1000, 20)),
        fl.text("It says 42.", usage=fl.UsageSpec(1200, 10)),
    )
    result = caddie.run(
        "-p", "-e", ANTHROPIC, "--model", MODEL, "what do the notes say?",
        CUSTOM_ANTHROPIC_API_KEY="sk-ant-api-test", CUSTOM_ANTHROPIC_BASE_URL=caddie.llm.anthropic_base_url,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "It says 42."
    first, second = caddie.llm.llm_requests
    assert first.api == "anthropic" and first.model == "claude-sonnet-4-5"
    sent = first.headers.get("x-api-key") or first.headers.get("authorization", "")  # as the SDK sends keys
    assert sent.endswith("sk-ant-api-test") and "read" in first.tool_names
    assert second.tool_results[0][1].startswith("the answer is 42")
    [session] = caddie.session_files()
    replies = [json.loads(line) for line in session.read_text().splitlines()]
    assistant = [
        e["message"] for e in replies if e.get("type") == "message" and e["message"]["role"] == "assistant"
    ]
    assert assistant[0]["api"] == "custom-anthropic-api" and assistant[0]["content"][-1]["type"] == "toolCall"
    assert assistant[1]["usage"]["input"] == 1200 and assistant[1]["usage"]["cost"]["total"] > 0


def test_a_subscription_login_is_renewed_and_sends_claude_codes_shape(caddie: Caddie) -> None:
    with FakeOAuthServer() as oauth:
        oauth.route(
            "POST",
            "/v1/oauth/token",
            (200, {"access_token": "sk-ant-oat01-renewed", "refresh_token": "r2", "expires_in": 3600}),
        )
        login = {
            "type": "oauth",
            "access": "sk-ant-oat01-old",
            "refresh": "r1",
            "expires": int(time.time() * 1000) - 1,
        }
        (caddie.home / "agent" / "auth.json").write_text(json.dumps({"custom-anthropic": login}))
        caddie.llm.push(fl.text("hello"))
        result = caddie.run(
            "-p", "-e", ANTHROPIC, "--model", MODEL, "hi",
            CUSTOM_ANTHROPIC_BASE_URL=caddie.llm.anthropic_base_url, CUSTOM_ANTHROPIC_OAUTH_URL=oauth.url,
        )  # fmt: skip
        [renewal] = oauth.calls("/v1/oauth/token")
    assert result.returncode == 0, result.stderr
    assert renewal.body["grant_type"] == "refresh_token" and renewal.body["refresh_token"] == "r1"
    [request] = caddie.llm.llm_requests
    assert request.headers["authorization"] == "Bearer sk-ant-oat01-renewed"
    assert "oauth-2025-04-20" in request.headers["anthropic-beta"]
    assert (request.system or "").startswith("You are Claude Code, Anthropic's official CLI for Claude.")
    assert "Read" in request.tool_names and "read" not in request.tool_names
    stored = json.loads((caddie.home / "agent" / "auth.json").read_text())["custom-anthropic"]
    assert stored["access"] == "sk-ant-oat01-renewed" and stored["refresh"] == "r2"


class Callbacks:
    def __init__(self, pasted: str) -> None:
        self.pasted, self.urls = pasted, list[str]()

    def on_auth(self, url: str, instructions: str | None = None) -> None:
        self.urls.append(url)

    async def on_prompt(self, message: str, placeholder: str | None = None) -> str:
        assert message == "Paste the authorization code:"
        return self.pasted


async def test_the_login_exchanges_the_pasted_code_with_pkce(monkeypatch: pytest.MonkeyPatch) -> None:
    from examples.extensions.custom_provider_anthropic import login

    with FakeOAuthServer() as oauth:
        oauth.route(
            "POST",
            "/v1/oauth/token",
            (200, {"access_token": "sk-ant-oat01-a", "refresh_token": "r", "expires_in": 3600}),
        )
        monkeypatch.setenv("CUSTOM_ANTHROPIC_OAUTH_URL", oauth.url)
        callbacks = Callbacks("the-code#the-state")
        credential: dict[str, Any] = await login(callbacks)
        [exchange] = oauth.calls("/v1/oauth/token")
    query = parse_qs(urlsplit(callbacks.urls[0]).query)
    assert callbacks.urls[0].startswith(f"{oauth.url}/oauth/authorize?")
    assert query["code_challenge_method"] == ["S256"] and query["state"] == [exchange.body["code_verifier"]]
    assert exchange.body["code"] == "the-code" and exchange.body["state"] == "the-state"
    assert credential["access"] == "sk-ant-oat01-a" and credential["expires"] > time.time() * 1000


GITLAB = example("custom_provider_gitlab_duo")


@pytest.mark.parametrize(
    ("model_id", "path", "api"),
    [("claude-sonnet-4-6", "/ai/v1/proxy/anthropic/v1/messages", "anthropic"),
     ("gpt-5-codex", "/ai/v1/proxy/openai/v1/responses", "responses")],
)  # fmt: skip
def test_gitlab_duo_trades_the_token_and_goes_through_the_gateways_proxy(
    caddie: Caddie, model_id: str, path: str, api: str
) -> None:
    with FakeOAuthServer() as gitlab:
        gitlab.route(
            "POST",
            "/api/v4/ai/third_party_agents/direct_access",
            (200, {"token": "direct-1", "headers": {"x-gitlab-instance-id": "inst-7"}}),
        )
        caddie.llm.push(fl.text("from duo"), fl.text("again"))
        result = caddie.run(
            "-p", "-e", GITLAB, "--model", f"gitlab-duo/{model_id}", "hi", "and again",
            GITLAB_TOKEN="glpat-abc", GITLAB_URL=gitlab.url, GITLAB_AI_GATEWAY_URL=caddie.llm.url,
        )  # fmt: skip
        [trade] = gitlab.calls("/api/v4/ai/third_party_agents/direct_access")  # once for both prompts
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("again")
    assert trade.headers["authorization"] == "Bearer glpat-abc"
    for request in caddie.llm.llm_requests:
        assert request.path == path and request.api == api and request.model == model_id
        assert request.headers["authorization"] == "Bearer direct-1"
        assert request.headers["x-gitlab-instance-id"] == "inst-7"


def test_gitlab_duo_says_when_duo_is_not_enabled(caddie: Caddie) -> None:
    with FakeOAuthServer() as gitlab:
        gitlab.route("POST", "/api/v4/ai/third_party_agents/direct_access", (403, "forbidden"))
        result = caddie.run(
            "-p", "-e", GITLAB, "--model", "gitlab-duo/claude-sonnet-4-6", "hi",
            GITLAB_TOKEN="glpat-abc", GITLAB_URL=gitlab.url, GITLAB_AI_GATEWAY_URL=caddie.llm.url,
        )  # fmt: skip
    assert result.returncode != 0
    assert "GitLab Duo access denied. Ensure GitLab Duo is enabled for your account." in result.stderr
    assert caddie.llm.llm_requests == []


async def test_gitlab_duo_login_takes_the_pasted_callback_url(monkeypatch: pytest.MonkeyPatch) -> None:
    from examples.extensions.custom_provider_gitlab_duo import login, refresh_token

    with FakeOAuthServer() as gitlab:
        now = int(time.time())
        gitlab.route(
            "POST",
            "/oauth/token",
            [
                (
                    200,
                    {
                        "access_token": "gl-a1",
                        "refresh_token": "gl-r1",
                        "expires_in": 7200,
                        "created_at": now,
                    },
                ),
                (
                    200,
                    {
                        "access_token": "gl-a2",
                        "refresh_token": "gl-r2",
                        "expires_in": 7200,
                        "created_at": now,
                    },
                ),
            ],
        )
        monkeypatch.setenv("GITLAB_URL", gitlab.url)
        callbacks = Callbacks("http://127.0.0.1:8080/callback?code=gl-code&state=s")
        callbacks_prompt = callbacks.on_prompt

        async def on_prompt(message: str, placeholder: str | None = None) -> str:
            assert message == "Paste the callback URL:"
            return await callbacks_prompt("Paste the authorization code:")

        callbacks.on_prompt = on_prompt  # type: ignore[method-assign]
        credential = await login(callbacks)
        renewed = await refresh_token(credential)
        exchange, renewal = gitlab.calls("/oauth/token")
    assert callbacks.urls[0].startswith(f"{gitlab.url}/oauth/authorize?")
    assert exchange.form["code"] == "gl-code" and exchange.form["grant_type"] == "authorization_code"
    assert renewal.form == {
        "client_id": exchange.form["client_id"],
        "grant_type": "refresh_token",
        "refresh_token": "gl-r1",
    }
    assert credential["access"] == "gl-a1" and renewed["access"] == "gl-a2"
    assert credential["expires"] == (now + 7200) * 1000 - 5 * 60 * 1000
