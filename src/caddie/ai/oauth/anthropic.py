"""Claude Pro/Max: a browser login with PKCE and a loopback callback on port 53692 (Pi's Anthropic flow).

Authorize at claude.ai with Claude Code's public client id and scopes; exchange the code (JSON) at
platform.claude.com; refresh with the refresh token at the same endpoint. The access token (``sk-ant-oat…``)
is sent as ``Authorization: Bearer`` in Claude Code's request shape (``providers/anthropic_messages``).
The ``state`` is random, never the PKCE verifier.
"""

from __future__ import annotations

import base64
from urllib.parse import urlencode

from caddie.ai.oauth import http
from caddie.ai.oauth.endpoints import callback_port, endpoint
from caddie.ai.oauth.loopback import LoopbackServer, wait_for_code
from caddie.ai.oauth.pkce import generate_pkce, random_state
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

CLIENT_ID = base64.b64decode("OWQxYzI1MGEtZTYxYi00NGQ5LTg4ZWQtNTk0NGQxOTYyZjVl").decode()
AUTHORIZE_URL = "https://claude.ai/oauth/authorize"
TOKEN_URL = "https://platform.claude.com/v1/oauth/token"
CALLBACK_PORT = 53692
CALLBACK_PATH = "/callback"
SCOPES = (
    "org:create_api_key user:profile user:inference user:sessions:claude_code user:mcp_servers "
    "user:file_upload"
)


def _credential(reply: http.Reply, what: str) -> Credential:
    data = reply.json_object()
    access, refresh, seconds = data.get("access_token"), data.get("refresh_token"), data.get("expires_in")
    if not isinstance(access, str) or not isinstance(refresh, str) or not isinstance(seconds, int | float):
        raise LoginFailed(f"Anthropic's {what} reply lacks a token ({http.describe(reply)}).")
    credential: Credential = {
        "type": "oauth",
        "refresh": refresh,
        "access": access,
        "expires": expires_in(seconds),
    }
    register_credential(credential)
    return credential


class AnthropicOAuth:
    name: str = "Anthropic (Claude Pro/Max)"
    login_label: str | None = None
    is_subscription: bool = True

    async def login(self, interaction: LoginInteraction) -> Credential:
        verifier, challenge = generate_pkce()
        state = random_state()
        server = await LoopbackServer(CALLBACK_PATH, state, "Anthropic authentication completed.").start(
            callback_port(CALLBACK_PORT)
        )
        try:
            redirect_uri = f"http://localhost:{server.port}{CALLBACK_PATH}"
            query = urlencode(
                {
                    "code": "true",
                    "client_id": CLIENT_ID,
                    "response_type": "code",
                    "redirect_uri": redirect_uri,
                    "scope": SCOPES,
                    "code_challenge": challenge,
                    "code_challenge_method": "S256",
                    "state": state,
                }
            )
            interaction.notify(
                LoginEvent(
                    "auth_url",
                    "Complete the login in your browser. If the browser is on another machine, paste the final "
                    "redirect URL here.",
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
        reply = await http.post_json(
            TOKEN_URL,
            {
                "grant_type": "authorization_code",
                "client_id": CLIENT_ID,
                "code": result.code,
                "state": result.state or state,
                "redirect_uri": redirect_uri,
                "code_verifier": verifier,
            },
        )
        if not reply.ok:
            raise LoginFailed(f"Anthropic refused the authorization code ({http.describe(reply)}).")
        return _credential(reply, "token")

    async def refresh(self, credential: Credential) -> Credential:
        reply = await http.post_json(
            TOKEN_URL,
            {
                "grant_type": "refresh_token",
                "client_id": CLIENT_ID,
                "refresh_token": credential.get("refresh", ""),
            },
        )
        if reply.status in (400, 401, 403):
            raise RefreshFailed(http.describe(reply))
        if not reply.ok:
            raise LoginFailed(f"Anthropic's token endpoint failed ({http.describe(reply)}); try again.")
        return _credential(reply, "refresh")

    def to_auth(self, credential: Credential) -> RequestAuth:
        return RequestAuth(api_key=str(credential.get("access") or ""))


FLOW = AnthropicOAuth()
