"""Kimi Code subscription: an RFC 8628 device login at auth.kimi.com; the token is sent as
``Authorization: Bearer`` to api.kimi.com/coding (anthropic-messages). Refreshes retry up to three times on
429 and 5xx. ``KIMI_CODE_OAUTH_HOST`` / ``KIMI_OAUTH_HOST`` name another OAuth host (as in Pi)."""

from __future__ import annotations

import asyncio
import os
from urllib.parse import urlsplit

from caddie.ai.oauth import http
from caddie.ai.oauth.device import PollResult, poll_device_flow
from caddie.ai.oauth.types import (
    Credential,
    LoginEvent,
    LoginFailed,
    LoginInteraction,
    RefreshFailed,
    RequestAuth,
    now_ms,
    register_credential,
)

CLIENT_ID = "17e5f671-d194-4dfb-9706-5516cb48c098"
DEFAULT_OAUTH_HOST = "https://auth.kimi.com"
DEVICE_CODE_TIMEOUT_S = 15 * 60
REFRESH_RETRIES = 3
RETRY_SLEEP = asyncio.sleep
"""How a refresh waits between retries (a test hook)."""


def oauth_host() -> str:
    override = os.environ.get("KIMI_CODE_OAUTH_HOST") or os.environ.get("KIMI_OAUTH_HOST")
    return (override or DEFAULT_OAUTH_HOST).rstrip("/")


def _credential(body: dict[str, object], what: str) -> Credential:
    access, refresh, seconds = body.get("access_token"), body.get("refresh_token"), body.get("expires_in")
    if not isinstance(access, str) or not access or not isinstance(refresh, str) or not refresh:
        raise LoginFailed(f"Kimi Code's {what} reply lacks a token.")
    if not isinstance(seconds, int | float) or seconds <= 0:
        raise LoginFailed(f"Kimi Code's {what} reply has no valid lifetime.")
    credential: Credential = {
        "type": "oauth",
        "access": access,
        "refresh": refresh,
        "expires": now_ms() + int(seconds * 1000),
    }
    register_credential(credential)
    return credential


def _http_url(value: object) -> bool:
    return isinstance(value, str) and urlsplit(value).scheme in ("http", "https")


class KimiCodingOAuth:
    name: str = "Kimi Code (subscription)"
    login_label: str | None = "Sign in with Kimi Code"
    is_subscription: bool = True

    async def login(self, interaction: LoginInteraction) -> Credential:
        host = oauth_host()
        reply = await http.post_form(f"{host}/api/oauth/device_authorization", {"client_id": CLIENT_ID})
        if not reply.ok:
            raise LoginFailed(f"Kimi Code's device authorization failed ({http.describe(reply)}).")
        data = reply.json_object()
        device_code, user_code = data.get("device_code"), data.get("user_code")
        complete = data.get("verification_uri_complete")
        if not (
            isinstance(device_code, str)
            and isinstance(user_code, str)
            and _http_url(complete)
            and _http_url(data.get("verification_uri"))
        ):
            raise LoginFailed("Kimi Code's device authorization reply is incomplete.")
        interval, expires = data.get("interval"), data.get("expires_in")
        interaction.notify(LoginEvent("device_code", url=str(complete), code=user_code))

        async def poll() -> PollResult[Credential]:
            answer = await http.post_form(
                f"{host}/api/oauth/token",
                {
                    "client_id": CLIENT_ID,
                    "device_code": device_code,
                    "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
                },
            )
            if answer.status >= 500:
                return PollResult(
                    "failed", message=f"Kimi Code's token endpoint failed ({http.describe(answer)})."
                )
            body = answer.json_object()
            if answer.ok and isinstance(body.get("access_token"), str):
                return PollResult("complete", _credential(body, "token"))
            error = body.get("error")
            if error == "authorization_pending":
                return PollResult("pending")
            if error == "slow_down":
                given = body.get("interval")
                return PollResult(
                    "slow_down",
                    interval_s=float(given) if isinstance(given, int | float) and given > 0 else None,
                )
            if error == "expired_token":
                return PollResult("failed", message="The Kimi Code device code expired; run /login again.")
            if error == "access_denied":
                return PollResult("failed", message="The Kimi Code login was denied.")
            return PollResult("failed", message=f"Kimi Code's device login failed ({http.describe(answer)}).")

        return await poll_device_flow(
            poll,
            interval_s=float(interval) if isinstance(interval, int | float) and interval > 0 else None,
            expires_in_s=float(expires)
            if isinstance(expires, int | float) and expires > 0
            else DEVICE_CODE_TIMEOUT_S,
            wait_first=True,
        )

    async def refresh(self, credential: Credential) -> Credential:
        host = oauth_host()
        form = {
            "client_id": CLIENT_ID,
            "grant_type": "refresh_token",
            "refresh_token": str(credential.get("refresh") or ""),
        }
        last = "Kimi Code's token refresh failed"
        for attempt in range(REFRESH_RETRIES + 1):
            if attempt:
                await RETRY_SLEEP(2 ** (attempt - 1))
            try:
                reply = await http.post_form(f"{host}/api/oauth/token", form)
            except LoginFailed as exc:
                last = str(exc)
                continue
            if reply.ok:
                return _credential(reply.json_object(), "refresh")
            if reply.status in (401, 403) or http.oauth_error(reply) == "invalid_grant":
                raise RefreshFailed(http.describe(reply))
            if (reply.status == 429 or reply.status >= 500) and attempt < REFRESH_RETRIES:
                last = f"Kimi Code's token refresh failed ({http.describe(reply)})"
                continue
            raise LoginFailed(f"Kimi Code's token refresh failed ({http.describe(reply)}); try again.")
        raise LoginFailed(f"{last}; try again.")

    def to_auth(self, credential: Credential) -> RequestAuth:
        return RequestAuth(headers={"Authorization": f"Bearer {credential.get('access') or ''}"})


FLOW = KimiCodingOAuth()
