"""ChatGPT Plus/Pro (OpenAI Codex): a browser login (PKCE, loopback on port 1455) or a device code.

Both end in an authorization code exchanged (form-encoded) at auth.openai.com for an access token, a
refresh token and the ChatGPT account id, which comes from the access token's JWT claim
``https://api.openai.com/auth`` → ``chatgpt_account_id`` and is stored as ``accountId`` (Pi's field).
Requests go to ChatGPT's Codex backend (``providers/openai_codex_responses``).
"""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import urlencode

from caddie.ai.oauth import http
from caddie.ai.oauth.device import PollResult, poll_device_flow
from caddie.ai.oauth.endpoints import callback_port, endpoint
from caddie.ai.oauth.loopback import LoopbackServer, wait_for_code
from caddie.ai.oauth.pkce import generate_pkce, random_state
from caddie.ai.oauth.types import (
    Credential,
    LoginEvent,
    LoginFailed,
    LoginInteraction,
    LoginPrompt,
    RefreshFailed,
    RequestAuth,
    now_ms,
    register_credential,
)

CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"
AUTH_BASE_URL = "https://auth.openai.com"
AUTHORIZE_URL = f"{AUTH_BASE_URL}/oauth/authorize"
TOKEN_URL = f"{AUTH_BASE_URL}/oauth/token"
CALLBACK_PORT = 1455
CALLBACK_PATH = "/auth/callback"
DEVICE_USER_CODE_URL = f"{AUTH_BASE_URL}/api/accounts/deviceauth/usercode"
DEVICE_TOKEN_URL = f"{AUTH_BASE_URL}/api/accounts/deviceauth/token"
DEVICE_VERIFICATION_URI = f"{AUTH_BASE_URL}/codex/device"
DEVICE_REDIRECT_URI = f"{AUTH_BASE_URL}/deviceauth/callback"
DEVICE_CODE_TIMEOUT_S = 15 * 60
SCOPE = "openid profile email offline_access"
JWT_CLAIM = "https://api.openai.com/auth"


def jwt_claims(token: str) -> dict[str, Any]:
    """The payload of a JWT, unverified ({} when ``token`` is not one)."""
    parts = token.split(".")
    if len(parts) != 3:
        return {}
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        data = json.loads(base64.urlsafe_b64decode(payload))
    except (ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def account_id(token: str) -> str | None:
    claim = jwt_claims(token).get(JWT_CLAIM)
    value = claim.get("chatgpt_account_id") if isinstance(claim, dict) else None
    return value if isinstance(value, str) and value else None


def _credential(reply: http.Reply, what: str) -> Credential:
    data = reply.json_object()
    access, refresh, seconds = data.get("access_token"), data.get("refresh_token"), data.get("expires_in")
    if not isinstance(access, str) or not isinstance(refresh, str) or not isinstance(seconds, int | float):
        raise LoginFailed(f"OpenAI's {what} reply lacks a token ({http.describe(reply)}).")
    account = account_id(access)
    if account is None:
        raise LoginFailed(
            "OpenAI's access token names no ChatGPT account; log in with a ChatGPT Plus/Pro account."
        )
    credential: Credential = {
        "type": "oauth",
        "access": access,
        "refresh": refresh,
        "expires": now_ms() + int(seconds * 1000),
        "accountId": account,
    }
    register_credential(credential)
    return credential


async def _exchange(code: str, verifier: str, redirect_uri: str) -> Credential:
    reply = await http.post_form(
        TOKEN_URL,
        {
            "grant_type": "authorization_code",
            "client_id": CLIENT_ID,
            "code": code,
            "code_verifier": verifier,
            "redirect_uri": redirect_uri,
        },
    )
    if not reply.ok:
        raise LoginFailed(f"OpenAI refused the authorization code ({http.describe(reply)}).")
    return _credential(reply, "token")


class OpenAICodexOAuth:
    name: str = "OpenAI (ChatGPT Plus/Pro)"
    login_label: str | None = None
    is_subscription: bool = True

    async def login(self, interaction: LoginInteraction) -> Credential:
        method = await interaction.prompt(
            LoginPrompt(
                "select",
                "Select OpenAI Codex login method:",
                options=(
                    ("browser", "Browser login (default)"),
                    ("device_code", "Device code login (headless)"),
                ),
            )
        )
        if method == "device_code":
            return await self._device(interaction)
        if method != "browser":
            raise LoginFailed("Login cancelled; nothing stored.")
        return await self._browser(interaction)

    async def _browser(self, interaction: LoginInteraction) -> Credential:
        verifier, challenge = generate_pkce()
        state = random_state()
        server = await LoopbackServer(CALLBACK_PATH, state, "OpenAI authentication completed.").start(
            callback_port(CALLBACK_PORT)
        )
        redirect_uri = f"http://localhost:{server.port}{CALLBACK_PATH}"
        try:
            query = urlencode(
                {
                    "response_type": "code",
                    "client_id": CLIENT_ID,
                    "redirect_uri": redirect_uri,
                    "scope": SCOPE,
                    "code_challenge": challenge,
                    "code_challenge_method": "S256",
                    "state": state,
                    "id_token_add_organizations": "true",
                    "codex_cli_simplified_flow": "true",
                    "originator": "pi",
                }
            )
            interaction.notify(
                LoginEvent(
                    "auth_url",
                    "A browser window should open. Complete the login to finish.",
                    url=f"{endpoint(AUTHORIZE_URL)}?{query}",
                )
            )
            result = await wait_for_code(
                interaction,
                server,
                message="Complete the login in your browser, or paste the authorization code / redirect URL here:",
                placeholder=redirect_uri,
                expected_state=state,
            )
        finally:
            server.close()
        interaction.notify(LoginEvent("progress", "Exchanging the authorization code for tokens…"))
        return await _exchange(result.code, verifier, redirect_uri)

    async def _device(self, interaction: LoginInteraction) -> Credential:
        reply = await http.post_json(DEVICE_USER_CODE_URL, {"client_id": CLIENT_ID})
        if reply.status == 404:
            raise LoginFailed(
                "OpenAI Codex device code login is not enabled for this server; use the browser login."
            )
        if not reply.ok:
            raise LoginFailed(f"OpenAI's device code request failed ({http.describe(reply)}).")
        data = reply.json_object()
        raw_interval = data.get("interval")
        try:
            interval = float(raw_interval) if raw_interval is not None else None
        except (TypeError, ValueError):
            interval = None
        device_auth_id, user_code = data.get("device_auth_id"), data.get("user_code")
        if (
            not isinstance(device_auth_id, str)
            or not isinstance(user_code, str)
            or interval is None
            or interval < 0
        ):
            raise LoginFailed("OpenAI's device code reply is incomplete; try the browser login.")
        interaction.notify(LoginEvent("device_code", url=endpoint(DEVICE_VERIFICATION_URI), code=user_code))

        async def poll() -> PollResult[tuple[str, str]]:
            answer = await http.post_json(
                DEVICE_TOKEN_URL, {"device_auth_id": device_auth_id, "user_code": user_code}
            )
            body = answer.json_object()
            if answer.ok:
                code, verifier = body.get("authorization_code"), body.get("code_verifier")
                if isinstance(code, str) and isinstance(verifier, str):
                    return PollResult("complete", (code, verifier))
                return PollResult(
                    "failed", message="OpenAI's device token reply is incomplete; run /login again."
                )
            if answer.status in (403, 404):
                return PollResult("pending")
            error = http.oauth_error(answer)
            if error == "deviceauth_authorization_pending":
                return PollResult("pending")
            if error == "slow_down":
                return PollResult("slow_down")
            return PollResult("failed", message=f"OpenAI's device login failed ({http.describe(answer)}).")

        code, verifier = await poll_device_flow(poll, interval_s=interval, expires_in_s=DEVICE_CODE_TIMEOUT_S)
        return await _exchange(code, verifier, DEVICE_REDIRECT_URI)

    async def refresh(self, credential: Credential) -> Credential:
        reply = await http.post_form(
            TOKEN_URL,
            {
                "grant_type": "refresh_token",
                "refresh_token": str(credential.get("refresh", "")),
                "client_id": CLIENT_ID,
            },
        )
        if reply.status in (400, 401, 403):
            raise RefreshFailed(http.describe(reply))
        if not reply.ok:
            raise LoginFailed(f"OpenAI's token endpoint failed ({http.describe(reply)}); try again.")
        return _credential(reply, "refresh")

    def to_auth(self, credential: Credential) -> RequestAuth:
        return RequestAuth(api_key=str(credential.get("access") or ""))


FLOW = OpenAICodexOAuth()
