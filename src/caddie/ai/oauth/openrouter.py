"""OpenRouter: a PKCE login that mints a permanent API key (never refreshed).

The loopback server listens on any free port of 127.0.0.1 at a random path (``/oauth/callback/<uuid>``,
the login's secret, since OpenRouter's protocol has no ``state``) and exchanges the code itself, so the
browser page says whether the key was issued. The key is stored as the credential's ``access``.
"""

from __future__ import annotations

import uuid
from urllib.parse import urlencode

from caddie.ai.oauth import http
from caddie.ai.oauth.endpoints import endpoint
from caddie.ai.oauth.loopback import LoopbackServer, wait_for_code
from caddie.ai.oauth.pkce import generate_pkce
from caddie.ai.oauth.types import (
    Credential,
    LoginEvent,
    LoginFailed,
    LoginInteraction,
    RequestAuth,
    register_credential,
)

AUTHORIZE_URL = "https://openrouter.ai/auth"
TOKEN_URL = "https://openrouter.ai/api/v1/auth/keys"
NEVER_EXPIRES = 9_007_199_254_740_991
"""JavaScript's ``Number.MAX_SAFE_INTEGER``, which Pi stores as the key's ``expires``."""


async def _exchange(code: str, verifier: str) -> Credential:
    reply = await http.post_json(
        TOKEN_URL, {"code": code, "code_verifier": verifier, "code_challenge_method": "S256"}
    )
    if not reply.ok:
        raise LoginFailed(f"OpenRouter's key exchange failed ({http.describe(reply)}).")
    key = reply.json_object().get("key")
    if not isinstance(key, str) or not key:
        raise LoginFailed('OpenRouter\'s reply carries no "key".')
    credential: Credential = {"type": "oauth", "access": key, "refresh": "", "expires": NEVER_EXPIRES}
    register_credential(credential)
    return credential


class OpenRouterOAuth:
    name: str = "OpenRouter OAuth"
    login_label: str | None = "Sign in with OpenRouter"
    is_subscription: bool = False

    async def login(self, interaction: LoginInteraction) -> Credential:
        verifier, challenge = generate_pkce()
        minted: list[Credential] = []

        async def exchange(code: str) -> None:
            minted.append(await _exchange(code, verifier))

        server = await LoopbackServer(
            f"/oauth/callback/{uuid.uuid4()}", None, "Signed in to OpenRouter.", on_code=exchange
        ).start(0)
        try:
            callback = server.url()
            query = urlencode(
                {"callback_url": callback, "code_challenge": challenge, "code_challenge_method": "S256"}
            )
            interaction.notify(LoginEvent("progress", f"Listening for the OpenRouter callback on {callback}"))
            interaction.notify(
                LoginEvent(
                    "auth_url",
                    "Complete the sign-in in your browser. If the browser is on another machine, paste the final "
                    "redirect URL here.",
                    url=f"{endpoint(AUTHORIZE_URL)}?{query}",
                )
            )
            result = await wait_for_code(
                interaction,
                server,
                message="Complete the sign-in in your browser, or paste the authorization code / redirect URL here:",
                placeholder=callback,
                expected_state=None,
            )
        finally:
            server.close()
        if minted:
            return minted[0]
        interaction.notify(LoginEvent("progress", "Exchanging the authorization code for an API key…"))
        return await _exchange(result.code, verifier)

    async def refresh(self, credential: Credential) -> Credential:
        return credential

    def to_auth(self, credential: Credential) -> RequestAuth:
        return RequestAuth(api_key=str(credential.get("access") or ""))


FLOW = OpenRouterOAuth()
