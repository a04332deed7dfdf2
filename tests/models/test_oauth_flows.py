"""Every subscription login against fake authorization, token and device servers on 127.0.0.1 that speak
each provider's documented protocol: what each flow sends, what it stores, and how it fails."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from caddie.ai import secrets
from caddie.ai.oauth import anthropic, github_copilot, kimi, loopback, openai_codex, openrouter, radius, xai
from caddie.ai.oauth.device import poll_device_flow
from caddie.ai.oauth.types import LoginFailed, RefreshFailed
from tests.models.oauth_helpers import ScriptedUser, codex_token, s256
from tests.support.fake_oauth import Browser, FakeOAuthServer

TOKEN = {
    "access_token": "sk-ant-oat01-access-0001",
    "refresh_token": "sk-ant-ort01-refresh-0001",
    "expires_in": 3600,
}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOAuthServer]:
    with FakeOAuthServer() as fake:
        monkeypatch.setenv(
            "CADDIE_OAUTH_ENDPOINTS",
            fake.endpoints(
                "https://claude.ai",
                "https://platform.claude.com",
                "https://auth.openai.com",
                "https://github.com",
                "https://api.github.com",
                "https://api.individual.githubcopilot.com",
                "https://ghe.example.com",
                "https://api.ghe.example.com",
                "https://copilot-api.ghe.example.com",
                "https://auth.x.ai",
                "https://auth.kimi.com",
                "https://openrouter.ai",
                "https://radius.pi.dev",
            ),
        )
        monkeypatch.setenv("CADDIE_OAUTH_CALLBACK_PORT", "0")
        yield fake


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The device polls' waits, recorded instead of slept."""
    recorded: list[float] = []

    async def sleep(seconds: float) -> None:
        recorded.append(seconds)

    monkeypatch.setattr("caddie.ai.oauth.device.SLEEP", sleep)
    monkeypatch.setattr("caddie.ai.oauth.kimi.RETRY_SLEEP", sleep)
    return recorded


# --------------------------------------------------------------------------------------------------
# Anthropic: browser PKCE + loopback


async def test_anthropic_browser_login_exchanges_the_code_with_pkce_and_a_random_state(
    server: FakeOAuthServer,
) -> None:
    server.route("POST", "/v1/oauth/token", (200, TOKEN))
    user = ScriptedUser(browser=Browser("auth-code-1"))
    before = time.time() * 1000
    credential = await anthropic.FLOW.login(user)
    await asyncio.gather(*user.visits)
    query = user.auth_query()
    assert urlsplit_path(user.auth_url) == "/oauth/authorize"
    assert query["client_id"] == anthropic.CLIENT_ID and query["code"] == "true"
    assert query["scope"] == anthropic.SCOPES and query["code_challenge_method"] == "S256"
    assert query["redirect_uri"].startswith("http://localhost:") and query["redirect_uri"].endswith(
        "/callback"
    )
    (exchange,) = server.calls("/v1/oauth/token")
    sent = exchange.body
    assert sent["grant_type"] == "authorization_code" and sent["code"] == "auth-code-1"
    assert sent["client_id"] == anthropic.CLIENT_ID and sent["redirect_uri"] == query["redirect_uri"]
    assert s256(sent["code_verifier"]) == query["code_challenge"]
    assert sent["state"] == query["state"] != sent["code_verifier"]  # random, never the verifier
    assert len(query["state"]) >= 32
    assert user.browser is not None and user.browser.status == 200
    assert credential["type"] == "oauth" and credential["access"] == TOKEN["access_token"]
    assert credential["refresh"] == TOKEN["refresh_token"]
    assert (
        before + 3600_000 - 5 * 60_000 <= credential["expires"] <= time.time() * 1000 + 3600_000 - 5 * 60_000
    )
    assert secrets.is_registered(str(TOKEN["access_token"])) and secrets.is_registered(
        str(TOKEN["refresh_token"])
    )


def urlsplit_path(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).path


async def test_a_pasted_redirect_url_wins_when_the_browser_cannot_reach_the_loopback(
    server: FakeOAuthServer,
) -> None:
    server.route("POST", "/v1/oauth/token", (200, TOKEN))

    class Paster(ScriptedUser):
        async def prompt(self, prompt):  # type: ignore[no-untyped-def]
            if prompt.kind == "manual_code":
                state = self.auth_query()["state"]
                return f"http://localhost:53692/callback?code=pasted-code&state={state}"
            return await super().prompt(prompt)

    await anthropic.FLOW.login(Paster())
    assert server.calls("/v1/oauth/token")[0].body["code"] == "pasted-code"


async def test_a_pasted_url_of_another_login_is_refused(server: FakeOAuthServer) -> None:
    server.route("POST", "/v1/oauth/token", (200, TOKEN))
    user = ScriptedUser(paste="http://localhost:53692/callback?code=x&state=someone-elses")
    with pytest.raises(LoginFailed, match="another login"):
        await anthropic.FLOW.login(user)
    assert server.calls("/v1/oauth/token") == []


async def test_the_loopback_binds_127_0_0_1_ignores_a_wrong_state_and_times_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = await loopback.LoopbackServer("/callback", "right-state", "ok").start(0)
    try:
        assert server._server is not None
        assert {s.getsockname()[0] for s in server._server.sockets} == {"127.0.0.1"}
        wrong = Browser("c", state="wrong-state")
        await asyncio.get_running_loop().run_in_executor(None, wrong.visit, f"x?redirect_uri={server.url()}")
        assert wrong.status == 400 and "State mismatch" in wrong.page
        with pytest.raises(LoginFailed, match=r"within 0\.3s"):
            await loopback.wait_for_code(
                ScriptedUser(),
                server,
                message="m",
                placeholder="p",
                expected_state="right-state",
                timeout_s=0.3,
            )
    finally:
        server.close()
    assert server._server is None


async def test_anthropic_refresh_and_an_expired_refresh_token(server: FakeOAuthServer) -> None:
    server.route(
        "POST",
        "/v1/oauth/token",
        [
            (200, {**TOKEN, "access_token": "sk-ant-oat01-new"}),
            (400, {"error": "invalid_grant", "error_description": "Refresh token expired"}),
        ],
    )
    renewed = await anthropic.FLOW.refresh({"type": "oauth", "access": "old", "refresh": "r-1", "expires": 0})
    assert renewed["access"] == "sk-ant-oat01-new"
    assert server.calls("/v1/oauth/token")[0].body == {
        "grant_type": "refresh_token",
        "client_id": anthropic.CLIENT_ID,
        "refresh_token": "r-1",
    }
    with pytest.raises(RefreshFailed, match="invalid_grant"):
        await anthropic.FLOW.refresh(renewed)


# --------------------------------------------------------------------------------------------------
# OpenAI Codex: browser and device code


async def test_codex_browser_login_stores_the_chatgpt_account(server: FakeOAuthServer) -> None:
    access = codex_token("acct-42")
    server.route(
        "POST", "/oauth/token", (200, {"access_token": access, "refresh_token": "rt-1", "expires_in": 864000})
    )
    user = ScriptedUser(select="browser", browser=Browser("codex-code"))
    credential = await openai_codex.FLOW.login(user)
    query = user.auth_query()
    assert query["originator"] == "pi" and query["codex_cli_simplified_flow"] == "true"
    assert query["id_token_add_organizations"] == "true" and query["scope"] == openai_codex.SCOPE
    assert query["redirect_uri"].endswith("/auth/callback")
    (exchange,) = server.calls("/oauth/token")
    assert exchange.headers["content-type"] == "application/x-www-form-urlencoded"
    assert exchange.form["grant_type"] == "authorization_code" and exchange.form["code"] == "codex-code"
    assert s256(exchange.form["code_verifier"]) == query["code_challenge"]
    assert credential["accountId"] == "acct-42" and credential["access"] == access


async def test_codex_device_login_polls_with_the_interval_and_slows_down(
    server: FakeOAuthServer, waits: list[float]
) -> None:
    server.route(
        "POST",
        "/api/accounts/deviceauth/usercode",
        (200, {"device_auth_id": "dev-1", "user_code": "ABCD-EFGH", "interval": "3"}),
    )
    server.route(
        "POST",
        "/api/accounts/deviceauth/token",
        [
            (403, {"error": {"code": "deviceauth_authorization_pending"}}),
            (400, {"error": {"code": "slow_down"}}),
            (200, {"authorization_code": "dev-code", "code_verifier": "dev-verifier"}),
        ],
    )
    server.route(
        "POST",
        "/oauth/token",
        (200, {"access_token": codex_token(), "refresh_token": "rt", "expires_in": 60}),
    )
    user = ScriptedUser(select="device_code")
    await openai_codex.FLOW.login(user)
    assert user.device.code == "ABCD-EFGH" and user.device.url.endswith("/codex/device")
    assert waits == [3.0, 8.0]  # the interval, then five seconds more after slow_down
    exchange = server.calls("/oauth/token")[0].form
    assert exchange["code"] == "dev-code" and exchange["code_verifier"] == "dev-verifier"
    assert exchange["redirect_uri"] == "https://auth.openai.com/deviceauth/callback"


# --------------------------------------------------------------------------------------------------
# GitHub Copilot: device flow, Copilot token, model policy


def copilot_token(host: str = "proxy.individual.githubcopilot.com") -> str:
    return f"tid=t;exp=9999999999;proxy-ep={host};sku=x"


async def test_copilot_device_login_mints_a_copilot_token_and_enables_models(
    server: FakeOAuthServer, waits: list[float]
) -> None:
    server.route(
        "POST",
        "/login/device/code",
        (
            200,
            {
                "device_code": "dc",
                "user_code": "WXYZ-1234",
                "verification_uri": "https://github.com/login/device",
                "interval": 5,
                "expires_in": 900,
            },
        ),
    )
    server.route(
        "POST",
        "/login/oauth/access_token",
        [
            (200, {"error": "authorization_pending"}),
            (200, {"error": "slow_down", "interval": 12}),
            (200, {"access_token": "gho_github_token"}),
        ],
    )
    server.route(
        "GET", "/copilot_internal/v2/token", (200, {"token": copilot_token(), "expires_at": 2_000_000_000})
    )
    server.route(
        "GET",
        "/models",
        (
            200,
            {
                "data": [
                    {"id": "gpt-5.5", "model_picker_enabled": True, "policy": {"state": "enabled"}},
                    {
                        "id": "claude-sonnet-5",
                        "model_picker_enabled": True,
                        "policy": {"state": "unconfigured"},
                    },
                    {"id": "embeddings", "capabilities": {"supports": {"tool_calls": False}}},
                ]
            },
        ),
    )
    server.route("POST", "/models/claude-sonnet-5/policy", (200, {}))
    user = ScriptedUser(text="")
    credential = await github_copilot.FLOW.login(user)
    assert waits == [5.0, 5.0, 12.0]  # waits before the first poll; slow_down's own interval
    poll = server.calls("/login/oauth/access_token")[0].form
    assert (
        poll["grant_type"] == "urn:ietf:params:oauth:grant-type:device_code" and poll["device_code"] == "dc"
    )
    token_request = server.calls("/copilot_internal/v2/token")[0]
    assert token_request.headers["authorization"] == "Bearer gho_github_token"
    assert token_request.headers["editor-version"] == "vscode/1.107.0"
    assert server.calls("/models/claude-sonnet-5/policy")[0].body == {"state": "enabled"}
    assert credential["refresh"] == "gho_github_token" and credential["access"] == copilot_token()
    assert credential["expires"] == 2_000_000_000_000 - 5 * 60_000
    assert credential["availableModelIds"] == ["gpt-5.5", "claude-sonnet-5"]
    auth = github_copilot.FLOW.to_auth(credential)
    assert auth.base_url == "https://api.individual.githubcopilot.com" and auth.api_key == copilot_token()


async def test_copilot_enterprise_domain_and_refresh(server: FakeOAuthServer, waits: list[float]) -> None:
    server.route(
        "GET", "/copilot_internal/v2/token", (200, {"token": "tid=1;exp=1", "expires_at": 1_900_000_000})
    )
    server.route("GET", "/models", (200, {"data": [{"id": "gpt-5.5", "model_picker_enabled": True}]}))
    renewed = await github_copilot.FLOW.refresh(
        {
            "type": "oauth",
            "access": "old",
            "refresh": "gho_x",
            "expires": 0,
            "enterpriseUrl": "ghe.example.com",
        }
    )
    assert renewed["enterpriseUrl"] == "ghe.example.com" and renewed["availableModelIds"] == ["gpt-5.5"]
    assert github_copilot.FLOW.to_auth(renewed).base_url == "https://copilot-api.ghe.example.com"
    assert github_copilot.normalize_domain("https://company.ghe.com/x") == "company.ghe.com"


# --------------------------------------------------------------------------------------------------
# xAI, Kimi Code: device flows


async def test_xai_device_login_and_refresh_keeping_an_unrotated_refresh_token(
    server: FakeOAuthServer, waits: list[float]
) -> None:
    server.route(
        "POST",
        "/oauth2/device/code",
        (
            200,
            {
                "device_code": "xd",
                "user_code": "XAI-1",
                "verification_uri": "https://accounts.x.ai/device",
                "verification_uri_complete": "https://accounts.x.ai/device?c=XAI-1",
                "expires_in": 600,
                "interval": 2,
            },
        ),
    )
    server.route(
        "POST",
        "/oauth2/token",
        [
            (400, {"error": "authorization_pending"}),
            (200, {"access_token": "xai-access-1", "refresh_token": "xai-refresh-1", "expires_in": 1800}),
        ],
    )
    user = ScriptedUser()
    credential = await xai.FLOW.login(user)
    assert user.device.url == "https://accounts.x.ai/device?c=XAI-1" and waits == [2.0, 2.0]
    device_request = server.calls("/oauth2/device/code")[0].form
    assert device_request == {"client_id": xai.CLIENT_ID, "scope": xai.SCOPE, "referrer": "pi"}
    assert credential["access"] == "xai-access-1"
    server.route("POST", "/oauth2/token", (200, {"access_token": "xai-access-2", "expires_in": 1800}))
    renewed = await xai.FLOW.refresh(credential)
    assert renewed["access"] == "xai-access-2" and renewed["refresh"] == "xai-refresh-1"


async def test_xai_denied_login_is_one_line(server: FakeOAuthServer, waits: list[float]) -> None:
    server.route(
        "POST",
        "/oauth2/device/code",
        (
            200,
            {
                "device_code": "xd",
                "user_code": "XAI-1",
                "verification_uri": "https://accounts.x.ai/device",
                "expires_in": 600,
            },
        ),
    )
    server.route("POST", "/oauth2/token", (400, {"error": "access_denied"}))
    with pytest.raises(LoginFailed, match=r"^The xAI device login was denied\.$"):
        await xai.FLOW.login(ScriptedUser())


async def test_kimi_device_login_bearer_auth_and_refresh_retries(
    server: FakeOAuthServer, waits: list[float]
) -> None:
    server.route(
        "POST",
        "/api/oauth/device_authorization",
        (
            200,
            {
                "device_code": "kd",
                "user_code": "KIMI-9",
                "verification_uri": "https://kimi.com/device",
                "verification_uri_complete": "https://kimi.com/device?code=KIMI-9",
                "interval": 4,
                "expires_in": 900,
            },
        ),
    )
    server.route(
        "POST",
        "/api/oauth/token",
        [
            (400, {"error": "slow_down"}),
            (200, {"access_token": "kimi-a", "refresh_token": "kimi-r", "expires_in": 3600}),
        ],
    )
    credential = await kimi.FLOW.login(ScriptedUser())
    assert waits == [4.0, 9.0]
    assert kimi.FLOW.to_auth(credential).headers == {"Authorization": "Bearer kimi-a"}
    waits.clear()
    server.route(
        "POST",
        "/api/oauth/token",
        [
            (503, {}),
            (429, {}),
            (200, {"access_token": "kimi-a2", "refresh_token": "kimi-r2", "expires_in": 3600}),
        ],
    )
    assert (await kimi.FLOW.refresh(credential))["access"] == "kimi-a2"
    assert waits == [1, 2]
    server.route("POST", "/api/oauth/token", (401, {"error": "invalid_grant"}))
    with pytest.raises(RefreshFailed):
        await kimi.FLOW.refresh(credential)


# --------------------------------------------------------------------------------------------------
# OpenRouter: PKCE that mints a key; Radius: browser and device


async def test_openrouter_login_mints_a_permanent_key_through_the_callback(server: FakeOAuthServer) -> None:
    server.route("POST", "/api/v1/auth/keys", (200, {"key": "sk-or-v1-minted-key-0123456789"}))
    user = ScriptedUser(browser=Browser("or-code"))
    credential = await openrouter.FLOW.login(user)
    await asyncio.gather(*user.visits)
    query = user.auth_query()
    assert (
        query["callback_url"].startswith("http://127.0.0.1:") and "/oauth/callback/" in query["callback_url"]
    )
    sent = server.calls("/api/v1/auth/keys")[0].body
    assert sent["code"] == "or-code" and s256(sent["code_verifier"]) == query["code_challenge"]
    assert sent["code_challenge_method"] == "S256"
    assert credential == {
        "type": "oauth",
        "access": "sk-or-v1-minted-key-0123456789",
        "refresh": "",
        "expires": 9_007_199_254_740_991,
    }
    assert user.browser is not None and "Signed in to OpenRouter" in user.browser.page
    assert await openrouter.FLOW.refresh(credential) == credential


async def test_radius_browser_login_discovers_the_authorize_endpoint(server: FakeOAuthServer) -> None:
    server.route("GET", "/v1/oauth", (200, {"authorizationEndpoint": "https://radius.pi.dev/authorize"}))
    server.route(
        "POST",
        "/v1/oauth/token",
        (
            200,
            {
                "access_token": "rad-a",
                "refresh_token": "rad-r",
                "expires_in": 600,
                "scope": "gateway offline_access",
            },
        ),
    )
    user = ScriptedUser(select="browser", browser=Browser("rad-code"))
    credential = await radius.FLOW.login(user)
    query = user.auth_query()
    assert (
        query["client_id"] == "pi-gateway"
        and query["handoff"] == "url"
        and query["scope"] == "gateway offline_access"
    )
    form = server.calls("/v1/oauth/token")[0].form
    assert form["grant_type"] == "authorization_code" and form["code"] == "rad-code"
    assert credential["scope"] == "gateway offline_access"


async def test_radius_device_login_and_catalogue(server: FakeOAuthServer, waits: list[float]) -> None:
    server.route(
        "POST",
        "/v1/oauth/device",
        (
            200,
            {
                "device_code": "rd",
                "user_code": "RAD-1",
                "verification_uri": "https://radius.pi.dev/device",
                "expires_in": 600,
            },
        ),
    )
    server.route(
        "POST",
        "/v1/oauth/token",
        [
            (400, {"error": "authorization_pending"}),
            (200, {"access_token": "rad-a", "refresh_token": "rad-r", "expires_in": 600}),
        ],
    )
    model = {
        "id": "m1",
        "name": "M1",
        "reasoning": True,
        "input": ["text"],
        "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 1000,
        "maxTokens": 100,
    }
    server.route(
        "GET",
        "/v1/config",
        (200, {"baseUrl": "https://radius.pi.dev/v1", "models": [model, {"id": "broken"}]}),
    )
    credential = await radius.FLOW.login(ScriptedUser(select="device-code"))
    assert waits == [5.0]  # no interval given: RFC 8628's five seconds
    base, models = await radius.FLOW.load_catalogue(credential["access"])
    assert base == "https://radius.pi.dev/v1" and models == [model]
    assert server.calls("/v1/config")[0].headers["authorization"] == "Bearer rad-a"


async def test_an_expired_device_code_says_to_log_in_again() -> None:
    async def pending():  # type: ignore[no-untyped-def]
        from caddie.ai.oauth.device import PollResult

        return PollResult("pending")

    clock = iter([0.0, 0.0, 2.0, 4.0, 6.0, 8.0, 10.0])

    async def no_sleep(_s: float) -> None:
        return None

    with pytest.raises(LoginFailed, match="run /login again"):
        await poll_device_flow(
            pending, interval_s=2, expires_in_s=5, sleep=no_sleep, clock=lambda: next(clock)
        )
