"""The few HTTP calls of a login or a refresh: JSON or form POSTs and JSON GETs with a deadline.

Every URL passes through ``endpoints.endpoint`` (tests point flows at fake servers). A reply is returned as
``Reply`` (status, decoded JSON or text, headers); transport failures raise ``LoginFailed`` naming the
host, never a traceback. Bodies of failed replies are redacted before they reach an error text, since a
token endpoint may echo what it was sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from caddie.ai import secrets
from caddie.ai.oauth.endpoints import endpoint
from caddie.ai.oauth.types import LoginFailed

DEFAULT_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: Any
    """The decoded JSON, or the text when the reply is not JSON."""
    headers: Mapping[str, str]

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def json_object(self) -> dict[str, Any]:
        """The body when it is a JSON object, else ``{}``."""
        return self.body if isinstance(self.body, dict) else {}

    def text(self) -> str:
        """The body as text, redacted (for error messages)."""
        raw = self.body if isinstance(self.body, str) else json.dumps(self.body)
        return secrets.redact(raw)


async def request(
    method: str,
    url: str,
    *,
    json_body: Any = None,
    form: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Reply:
    """One request; ``LoginFailed`` when the server cannot be reached or does not answer in time."""
    import httpx2

    target = endpoint(url)
    sent: dict[str, str] = {"accept": "application/json"}
    content: bytes | None = None
    if json_body is not None:
        sent["content-type"] = "application/json"
        content = json.dumps(json_body, separators=(",", ":")).encode()
    elif form is not None:
        sent["content-type"] = "application/x-www-form-urlencoded"
        content = urlencode(form).encode()
    sent.update(headers or {})
    host = urlsplit(target).netloc or target
    try:
        async with httpx2.AsyncClient(timeout=timeout_s) as client:
            response = await client.request(method, target, headers=sent, content=content)
    except httpx2.TimeoutException:
        raise LoginFailed(f"{host} did not answer within {timeout_s:g}s; try again.") from None
    except httpx2.HTTPError as exc:
        raise LoginFailed(f"Could not reach {host} ({type(exc).__name__}); check the connection.") from None
    raw = response.text
    try:
        body: Any = json.loads(raw) if raw.strip() else {}
    except ValueError:
        body = raw
    return Reply(response.status_code, body, dict(response.headers))


async def post_json(url: str, body: Any, **kw: Any) -> Reply:
    return await request("POST", url, json_body=body, **kw)


async def post_form(url: str, form: Mapping[str, str], **kw: Any) -> Reply:
    return await request("POST", url, form=form, **kw)


async def get_json(url: str, **kw: Any) -> Reply:
    return await request("GET", url, **kw)


def oauth_error(reply: Reply) -> str | None:
    """The ``error`` code of an OAuth error reply (``authorization_pending``, ``invalid_grant``…)."""
    error = reply.json_object().get("error")
    if isinstance(error, dict):
        code = error.get("code")
        return code if isinstance(code, str) else None
    return error if isinstance(error, str) else None


def describe(reply: Reply) -> str:
    """``HTTP 400: invalid_grant: Refresh token expired`` (redacted)."""
    body = reply.json_object()
    code = oauth_error(reply)
    description = body.get("error_description") or (
        body["error"].get("message") if isinstance(body.get("error"), dict) else body.get("message")
    )
    detail = ": ".join(str(p) for p in (code, description) if p) or reply.text()[:300]
    return secrets.redact(f"HTTP {reply.status}" + (f": {detail}" if detail else ""))
