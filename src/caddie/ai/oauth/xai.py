"""xAI (SuperGrok / X Premium): an RFC 8628 device login at auth.x.ai; the access token is the API key."""

from __future__ import annotations

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
    expires_in,
    register_credential,
)

CLIENT_ID = "b1a00492-073a-47ea-816f-4c329264a828"
SCOPE = "openid profile email offline_access grok-cli:access api:access"
DEVICE_CODE_URL = "https://auth.x.ai/oauth2/device/code"
TOKEN_URL = "https://auth.x.ai/oauth2/token"
DEFAULT_LIFETIME_S = 3600


def _https(value: object) -> str:
    if not isinstance(value, str) or urlsplit(value).scheme != "https":
        raise LoginFailed("xAI's device code reply names an untrusted verification URL.")
    return value


def _credential(body: dict[str, object], previous_refresh: str | None = None) -> Credential:
    access = body.get("access_token")
    refresh = body.get("refresh_token", previous_refresh) if previous_refresh else body.get("refresh_token")
    seconds = body.get("expires_in", DEFAULT_LIFETIME_S)
    if not isinstance(access, str) or not access or not isinstance(refresh, str) or not refresh:
        raise LoginFailed("xAI's token reply lacks a token.")
    if not isinstance(seconds, int | float) or seconds <= 0:
        raise LoginFailed("xAI's token reply has no valid lifetime.")
    credential: Credential = {
        "type": "oauth",
        "access": access,
        "refresh": refresh,
        "expires": expires_in(seconds),
    }
    register_credential(credential)
    return credential


class XaiOAuth:
    name: str = "xAI (Grok/X subscription)"
    login_label: str | None = "Sign in with SuperGrok or X Premium"
    is_subscription: bool = True

    async def login(self, interaction: LoginInteraction) -> Credential:
        reply = await http.post_form(
            DEVICE_CODE_URL, {"client_id": CLIENT_ID, "scope": SCOPE, "referrer": "pi"}
        )
        if not reply.ok:
            raise LoginFailed(f"xAI's device authorization failed ({http.describe(reply)}).")
        data = reply.json_object()
        device_code, user_code, expires = (
            data.get("device_code"),
            data.get("user_code"),
            data.get("expires_in"),
        )
        if not isinstance(device_code, str) or not isinstance(user_code, str):
            raise LoginFailed("xAI's device code reply is incomplete.")
        if not isinstance(expires, int | float) or expires <= 0:
            raise LoginFailed("xAI's device code reply has no valid expiry.")
        uri = _https(data.get("verification_uri"))
        complete = data.get("verification_uri_complete")
        shown = _https(complete) if isinstance(complete, str) and complete else uri
        interval = data.get("interval")
        interaction.notify(LoginEvent("device_code", url=shown, code=user_code))

        async def poll() -> PollResult[Credential]:
            answer = await http.post_form(
                TOKEN_URL,
                {
                    "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
                    "client_id": CLIENT_ID,
                    "device_code": device_code,
                },
            )
            if answer.ok:
                return PollResult("complete", _credential(answer.json_object()))
            error = http.oauth_error(answer)
            if error == "authorization_pending":
                return PollResult("pending")
            if error == "slow_down":
                given = answer.json_object().get("interval")
                return PollResult(
                    "slow_down", interval_s=float(given) if isinstance(given, int | float) else None
                )
            if error in ("access_denied", "authorization_denied"):
                return PollResult("failed", message="The xAI device login was denied.")
            if error == "expired_token":
                return PollResult("failed", message="The xAI device code expired; run /login again.")
            return PollResult("failed", message=f"xAI's device login failed ({http.describe(answer)}).")

        return await poll_device_flow(
            poll,
            interval_s=float(interval) if isinstance(interval, int | float) and interval > 0 else None,
            expires_in_s=float(expires),
            wait_first=True,
        )

    async def refresh(self, credential: Credential) -> Credential:
        refresh = str(credential.get("refresh") or "")
        reply = await http.post_form(
            TOKEN_URL, {"grant_type": "refresh_token", "client_id": CLIENT_ID, "refresh_token": refresh}
        )
        if reply.status in (400, 401, 403):
            raise RefreshFailed(http.describe(reply))
        if not reply.ok:
            raise LoginFailed(f"xAI's token endpoint failed ({http.describe(reply)}); try again.")
        return _credential(reply.json_object(), refresh)

    def to_auth(self, credential: Credential) -> RequestAuth:
        return RequestAuth(api_key=str(credential.get("access") or ""))


FLOW = XaiOAuth()
