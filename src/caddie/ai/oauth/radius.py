"""Radius, Pi's ``pi-messages`` gateway (default https://radius.pi.dev): a browser login (PKCE, loopback on
127.0.0.1:1456, endpoint discovered at ``/v1/oauth``) or a device code (``/v1/oauth/device``); tokens from
``/v1/oauth/token``. The gateway's catalogue (``/v1/config``) lists the models it serves (``load_catalogue``).
A models.json provider with ``"oauth": "radius"`` declares another gateway (its ``baseUrl``).
"""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlencode

from caddie.ai.oauth import http
from caddie.ai.oauth.device import PollResult, poll_device_flow
from caddie.ai.oauth.endpoints import callback_port, endpoint
from caddie.ai.oauth.loopback import LoopbackServer, wait_for_code
from caddie.ai.oauth.pkce import generate_pkce
from caddie.ai.oauth.types import (
    Credential,
    LoginEvent,
    LoginFailed,
    LoginInteraction,
    LoginPrompt,
    RefreshFailed,
    RequestAuth,
    expires_in,
    register_credential,
)

DEFAULT_GATEWAY = "https://radius.pi.dev"
CALLBACK_PORT = 1456
CALLBACK_PATH = "/oauth/callback"
CLIENT_ID = "pi-gateway"
SCOPE = "gateway offline_access"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
SKEW_MS = 60_000
_MODEL_FIELDS = ("id", "name", "reasoning", "input", "cost", "contextWindow", "maxTokens")


def normalize_gateway(value: str) -> str:
    text = value if value.lower().startswith(("http://", "https://")) else f"https://{value}"
    return text.rstrip("/")


class OAuthReplyError(LoginFailed):
    def __init__(self, reply: http.Reply, what: str) -> None:
        super().__init__(f"{what} ({http.describe(reply)}).")
        self.code = http.oauth_error(reply)
        self.status = reply.status


class RadiusOAuth:
    is_subscription: bool = False
    login_label: str | None = None

    def __init__(self, name: str = "Radius", gateway: str = DEFAULT_GATEWAY) -> None:
        self.name = name
        self.gateway = normalize_gateway(gateway)

    async def _token(self, form: dict[str, str]) -> Credential:
        reply = await http.post_form(f"{self.gateway}/v1/oauth/token", form)
        if not reply.ok:
            raise OAuthReplyError(reply, f"{self.name}'s token request failed")
        data = reply.json_object()
        access, refresh, seconds = data.get("access_token"), data.get("refresh_token"), data.get("expires_in")
        if (
            not isinstance(access, str)
            or not isinstance(refresh, str)
            or not isinstance(seconds, int | float)
        ):
            raise LoginFailed(f"{self.name}'s token reply lacks a token.")
        credential: Credential = {
            "type": "oauth",
            "access": access,
            "refresh": refresh,
            "expires": expires_in(seconds, SKEW_MS),
        }
        if isinstance(data.get("scope"), str):
            credential["scope"] = data["scope"]
        register_credential(credential)
        return credential

    async def login(self, interaction: LoginInteraction) -> Credential:
        method = await interaction.prompt(
            LoginPrompt(
                "select",
                f"Sign in to {self.name}:",
                options=(
                    ("browser", "Sign in with browser (recommended)"),
                    ("device-code", "Sign in with device code (when signing in from another device)"),
                ),
            )
        )
        if method == "device-code":
            return await self._device(interaction)
        if method != "browser":
            raise LoginFailed("Login cancelled; nothing stored.")
        return await self._browser(interaction)

    async def _browser(self, interaction: LoginInteraction) -> Credential:
        discovery = await http.get_json(f"{self.gateway}/v1/oauth")
        authorize = discovery.json_object().get("authorizationEndpoint")
        if not discovery.ok or not isinstance(authorize, str):
            raise LoginFailed(
                f"{self.name} at {self.gateway} has no OAuth configuration ({http.describe(discovery)})."
            )
        verifier, challenge = generate_pkce()
        state = str(uuid.uuid4())
        server = await LoopbackServer(CALLBACK_PATH, state, f"Signed in to {self.name}.").start(
            callback_port(CALLBACK_PORT)
        )
        redirect_uri = f"http://127.0.0.1:{server.port}{CALLBACK_PATH}"
        try:
            query = urlencode(
                {
                    "response_type": "code",
                    "client_id": CLIENT_ID,
                    "redirect_uri": redirect_uri,
                    "scope": SCOPE,
                    "code_challenge": challenge,
                    "code_challenge_method": "S256",
                    "handoff": "url",
                    "state": state,
                }
            )
            interaction.notify(LoginEvent("progress", f"Listening for the OAuth callback on {redirect_uri}"))
            interaction.notify(
                LoginEvent("auth_url", "Continue in your browser.", url=f"{endpoint(authorize)}?{query}")
            )
            result = await wait_for_code(
                interaction,
                server,
                message="Continue in your browser, or paste the redirect URL here:",
                placeholder=redirect_uri,
                expected_state=state,
            )
        finally:
            server.close()
        return await self._token(
            {
                "grant_type": "authorization_code",
                "client_id": CLIENT_ID,
                "redirect_uri": redirect_uri,
                "code": result.code,
                "code_verifier": verifier,
            }
        )

    async def _device(self, interaction: LoginInteraction) -> Credential:
        reply = await http.post_form(
            f"{self.gateway}/v1/oauth/device", {"client_id": CLIENT_ID, "scope": SCOPE}
        )
        if not reply.ok:
            raise LoginFailed(f"{self.name}'s device authorization failed ({http.describe(reply)}).")
        data = reply.json_object()
        device_code, user_code, uri, expires = (
            data.get("device_code"),
            data.get("user_code"),
            data.get("verification_uri"),
            data.get("expires_in"),
        )
        if not (
            isinstance(device_code, str) and isinstance(user_code, str) and isinstance(uri, str) and expires
        ):
            raise LoginFailed(f"{self.name}'s device authorization reply is incomplete.")
        interval = data.get("interval")
        interaction.notify(LoginEvent("device_code", url=uri, code=user_code))

        async def poll() -> PollResult[Credential]:
            try:
                return PollResult(
                    "complete",
                    await self._token(
                        {"grant_type": DEVICE_GRANT, "client_id": CLIENT_ID, "device_code": device_code}
                    ),
                )
            except OAuthReplyError as exc:
                if exc.code == "authorization_pending":
                    return PollResult("pending")
                if exc.code == "slow_down":
                    return PollResult("slow_down")
                if exc.code == "expired_token":
                    return PollResult("failed", message="The device code expired; run /login again.")
                if exc.code == "access_denied":
                    return PollResult("failed", message="The device login was denied.")
                raise

        return await poll_device_flow(
            poll,
            interval_s=float(interval) if isinstance(interval, int | float) else None,
            expires_in_s=float(expires) if isinstance(expires, int | float) else None,
        )

    async def refresh(self, credential: Credential) -> Credential:
        try:
            return await self._token(
                {
                    "grant_type": "refresh_token",
                    "client_id": CLIENT_ID,
                    "refresh_token": str(credential.get("refresh") or ""),
                }
            )
        except OAuthReplyError as exc:
            if exc.status in (400, 401, 403):
                raise RefreshFailed(str(exc)) from None
            raise

    def to_auth(self, credential: Credential) -> RequestAuth:
        return RequestAuth(api_key=str(credential.get("access") or ""))

    async def load_catalogue(self, token: str | None) -> tuple[str, list[dict[str, Any]]]:
        """(base URL, models in Pi's shape) from the gateway's ``/v1/config``."""
        headers = {"authorization": f"Bearer {token}"} if token else {}
        reply = await http.get_json(f"{self.gateway}/v1/config", headers=headers)
        data = reply.json_object()
        base, models = data.get("baseUrl"), data.get("models")
        if not reply.ok or not isinstance(base, str) or not isinstance(models, list):
            raise LoginFailed(
                f"Could not load {self.name}'s catalogue from {self.gateway} ({http.describe(reply)})."
            )
        kept = [
            dict(m)
            for m in models
            if isinstance(m, dict) and all(k in m for k in _MODEL_FIELDS) and isinstance(m.get("id"), str)
        ]
        return base, kept


FLOW = RadiusOAuth()
