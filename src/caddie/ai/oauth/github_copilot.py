"""GitHub Copilot: a GitHub device login (github.com or an Enterprise domain), then short-lived Copilot tokens.

The GitHub token from the device flow is stored as ``refresh``; "refreshing" mints a Copilot token from it
(``api.<domain>/copilot_internal/v2/token``) and re-reads which models the account may use. The Copilot
token names its API host (``proxy-ep=proxy.…`` → ``https://api.…``), which becomes the request's base URL.
At login, models whose policy is still ``unconfigured`` are enabled (best effort); the usable ids are
stored as ``availableModelIds``, which filters the model list (Pi's fields and behaviour).
"""

from __future__ import annotations

import asyncio
import base64
import re
from typing import Any
from urllib.parse import urlsplit

from caddie.ai.oauth import http
from caddie.ai.oauth.device import PollResult, poll_device_flow
from caddie.ai.oauth.types import (
    Credential,
    LoginEvent,
    LoginFailed,
    LoginInteraction,
    LoginPrompt,
    RefreshFailed,
    RequestAuth,
    register_credential,
)

CLIENT_ID = base64.b64decode("SXYxLmI1MDdhMDhjODdlY2ZlOTg=").decode()
COPILOT_HEADERS = {
    "User-Agent": "GitHubCopilotChat/0.35.0",
    "Editor-Version": "vscode/1.107.0",
    "Editor-Plugin-Version": "copilot-chat/0.35.0",
    "Copilot-Integration-Id": "vscode-chat",
}
COPILOT_API_VERSION = "2026-06-01"
INDIVIDUAL_BASE_URL = "https://api.individual.githubcopilot.com"
_PROXY = re.compile(r"proxy-ep=([^;]+)")


def normalize_domain(text: str) -> str | None:
    """The host of a GitHub Enterprise URL or domain (``company.ghe.com``); None when it is not one."""
    value = text.strip()
    if not value:
        return None
    host = urlsplit(value if "://" in value else f"https://{value}").hostname
    return host or None


def base_url(token: str | None, enterprise_domain: str | None = None) -> str:
    """Where Copilot requests go: the token's ``proxy-ep`` (``proxy.x`` → ``api.x``), else the enterprise
    or individual default."""
    match = _PROXY.search(token or "")
    if match:
        return "https://" + re.sub(r"^proxy\.", "api.", match.group(1))
    if enterprise_domain:
        return f"https://copilot-api.{enterprise_domain}"
    return INDIVIDUAL_BASE_URL


def _domain(credential: Credential) -> str | None:
    value = credential.get("enterpriseUrl")
    return normalize_domain(value) if isinstance(value, str) and value else None


def _catalogue_ids() -> set[str]:
    from caddie.ai import catalogue

    return {m.id for m in catalogue.builtin_models() if m.provider == "github-copilot"}


def parse_model_catalog(raw: Any, allow_policy_fallback: bool) -> tuple[list[str], list[str]]:
    """(the models to offer, the models whose policy login should enable) from Copilot's ``/models``."""
    data = raw.get("data") if isinstance(raw, dict) else None
    if not isinstance(data, list):
        raise LoginFailed("Copilot's model list is not in the expected shape.")
    models: list[tuple[str, bool, Any]] = []
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        supports = (item.get("capabilities") or {}).get("supports") or {}
        if isinstance(supports, dict) and supports.get("tool_calls") is False:
            continue
        policy = item.get("policy")
        state = policy.get("state") if isinstance(policy, dict) else None
        models.append((item["id"], item.get("model_picker_enabled") is True, state))
    picker = [m for m, enabled, state in models if enabled and state != "disabled"]
    fallback = allow_policy_fallback and not picker
    available = picker if picker or not allow_policy_fallback else [m for m, _, s in models if s == "enabled"]
    known = _catalogue_ids()
    policy_ids = [
        m for m, enabled, s in models if s == "unconfigured" and m in known and (enabled or fallback)
    ]
    return available, policy_ids


async def _copilot_token(github_token: str, domain: str | None) -> Credential:
    reply = await http.get_json(
        f"https://api.{domain or 'github.com'}/copilot_internal/v2/token",
        headers={"Authorization": f"Bearer {github_token}", **COPILOT_HEADERS},
    )
    if reply.status in (401, 403):
        raise RefreshFailed(http.describe(reply))
    if not reply.ok:
        raise LoginFailed(f"GitHub did not issue a Copilot token ({http.describe(reply)}).")
    data = reply.json_object()
    token, expires_at = data.get("token"), data.get("expires_at")
    if not isinstance(token, str) or not isinstance(expires_at, int | float):
        raise LoginFailed("GitHub's Copilot token reply is incomplete.")
    credential: Credential = {
        "type": "oauth",
        "refresh": github_token,
        "access": token,
        "expires": int(expires_at * 1000) - 5 * 60 * 1000,
    }
    if domain:
        credential["enterpriseUrl"] = domain
    register_credential(credential)
    return credential


async def _models(token: str, domain: str | None, retries: int) -> tuple[list[str], list[str]]:
    url = base_url(token, domain)
    headers = {
        "Authorization": f"Bearer {token}",
        **COPILOT_HEADERS,
        "X-GitHub-Api-Version": COPILOT_API_VERSION,
    }
    for attempt in range(retries + 1):
        reply = await http.get_json(f"{url}/models", headers=headers, timeout_s=5)
        if reply.status == 429 and attempt < retries:
            await asyncio.sleep(0.5 * 2**attempt)
            continue
        if not reply.ok:
            raise LoginFailed(f"Copilot's model list failed ({http.describe(reply)}).")
        return parse_model_catalog(reply.body, url == INDIVIDUAL_BASE_URL)
    raise LoginFailed("Copilot's model list is rate limited; try again in a minute.")


async def _enable(token: str, model_ids: list[str], domain: str | None) -> list[str]:
    """Enable each model's policy (best effort); stops at a rate limit."""
    url = base_url(token, domain)
    headers = {
        "Authorization": f"Bearer {token}",
        **COPILOT_HEADERS,
        "openai-intent": "chat-policy",
        "x-interaction-type": "chat-policy",
    }
    enabled: list[str] = []
    for model_id in model_ids:
        try:
            reply = await http.post_json(
                f"{url}/models/{model_id}/policy", {"state": "enabled"}, headers=headers, timeout_s=5
            )
        except LoginFailed:
            continue
        if reply.status == 429:
            break
        if reply.ok:
            enabled.append(model_id)
    return enabled


class GitHubCopilotOAuth:
    name: str = "GitHub Copilot"
    login_label: str | None = None
    is_subscription: bool = True

    async def login(self, interaction: LoginInteraction) -> Credential:
        answer = await interaction.prompt(
            LoginPrompt("text", "GitHub Enterprise URL/domain (blank for github.com)", "company.ghe.com")
        )
        if answer is None:
            raise LoginFailed("Login cancelled; nothing stored.")
        domain = normalize_domain(answer)
        if answer.strip() and domain is None:
            raise LoginFailed("That is not a GitHub Enterprise URL or domain.")
        host = domain or "github.com"
        form_headers = {"User-Agent": COPILOT_HEADERS["User-Agent"]}
        reply = await http.post_form(
            f"https://{host}/login/device/code",
            {"client_id": CLIENT_ID, "scope": "read:user"},
            headers=form_headers,
        )
        if not reply.ok:
            raise LoginFailed(f"GitHub's device code request failed ({http.describe(reply)}).")
        data = reply.json_object()
        device_code, user_code, uri = (
            data.get("device_code"),
            data.get("user_code"),
            data.get("verification_uri"),
        )
        interval, expires = data.get("interval"), data.get("expires_in")
        if not (isinstance(device_code, str) and isinstance(user_code, str) and isinstance(uri, str)):
            raise LoginFailed("GitHub's device code reply is incomplete.")
        if urlsplit(uri).scheme not in ("http", "https"):
            raise LoginFailed("GitHub's device code reply names an untrusted verification URL.")
        interaction.notify(LoginEvent("device_code", url=uri, code=user_code))

        async def poll() -> PollResult[str]:
            answer = await http.post_form(
                f"https://{host}/login/oauth/access_token",
                {
                    "client_id": CLIENT_ID,
                    "device_code": device_code,
                    "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
                },
                headers=form_headers,
            )
            body = answer.json_object()
            if isinstance(body.get("access_token"), str):
                return PollResult("complete", body["access_token"])
            error = body.get("error")
            if error == "authorization_pending":
                return PollResult("pending")
            if error == "slow_down":
                given = body.get("interval")
                return PollResult(
                    "slow_down", interval_s=float(given) if isinstance(given, int | float) else None
                )
            if isinstance(error, str):
                detail = body.get("error_description")
                return PollResult(
                    "failed",
                    message=f"GitHub's device login failed: {error}"
                    + (f": {detail}" if detail else "")
                    + ".",
                )
            return PollResult(
                "failed", message=f"GitHub's device token reply is not understood ({http.describe(answer)})."
            )

        github_token = await poll_device_flow(
            poll,
            interval_s=float(interval) if isinstance(interval, int | float) else None,
            expires_in_s=float(expires) if isinstance(expires, int | float) else None,
            wait_first=True,
        )
        credential = await _copilot_token(github_token, domain)
        available, policy_ids = await _models(str(credential["access"]), domain, retries=2)
        enabled: list[str] = []
        if policy_ids:
            interaction.notify(LoginEvent("progress", "Enabling models…"))
            enabled = await _enable(str(credential["access"]), policy_ids, domain)
        credential["availableModelIds"] = list(dict.fromkeys([*available, *enabled]))
        return credential

    async def refresh(self, credential: Credential) -> Credential:
        domain = _domain(credential)
        renewed = await _copilot_token(str(credential.get("refresh") or ""), domain)
        available, _ = await _models(str(renewed["access"]), domain, retries=0)
        renewed["availableModelIds"] = available
        return renewed

    def to_auth(self, credential: Credential) -> RequestAuth:
        token = str(credential.get("access") or "")
        return RequestAuth(api_key=token, base_url=base_url(token, _domain(credential)))


FLOW = GitHubCopilotOAuth()
