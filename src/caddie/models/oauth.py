"""Subscription logins at request time: a valid token for each request, renewed under the lock, and the
request's auth.

``OAuthCredentials.request_auth(provider)`` returns what a request of ``provider`` authenticates with when
auth.json holds a login for it: the flow's ``to_auth`` of the stored credential — after a refresh when the
token has less than five minutes left (Pi's rule). The refresh is double-checked under the cross-process
lock: the file is read again once the lock is held, and a token another process (caddie or Pi) renewed
meanwhile is used as it is, so a refresh token is never spent twice. A refused refresh is one line:
"… run /login <provider> again."

``authenticated_stream`` wraps a stream function so every request (turns, compaction summaries) goes out
with that auth; the error of a failed refresh becomes the request's error message.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import Any

from caddie.ai import secrets
from caddie.ai.model import Context, Model, StreamOptions
from caddie.ai.oauth.types import LoginFailed, OAuthFlow, RefreshFailed, RequestAuth, now_ms
from caddie.ai.stream import error_message_for
from caddie.ai.stream_events import AssistantMessageEvent, ErrorEvent
from caddie.models.auth import AuthStore

MIN_VALIDITY_MS = 5 * 60 * 1000
"""A token with less than this left is renewed before use (Pi's five minutes)."""
REFRESH_TIMEOUT_S = 15.0

StreamFn = Callable[[Model, Context, StreamOptions], AsyncIterator[AssistantMessageEvent]]


class LoginExpired(Exception):
    """A login that can no longer be used (refused refresh, unknown flow); the message is one line saying
    to log in again."""


def expires_soon(credential: dict[str, Any], min_validity_ms: int = MIN_VALIDITY_MS) -> bool:
    expires = credential.get("expires")
    return not isinstance(expires, int | float) or now_ms() + min_validity_ms >= expires


class OAuthCredentials:
    """The logins stored in ``auth`` and the flows that renew them (``flow_for(provider)``)."""

    def __init__(self, auth: AuthStore, flow_for: Callable[[str], OAuthFlow | None]) -> None:
        self.auth = auth
        self.flow_for = flow_for
        self._refreshing: dict[str, asyncio.Lock] = {}

    def has_login(self, provider: str) -> bool:
        return self.auth.oauth(provider) is not None and self.flow_for(provider) is not None

    def _flow(self, provider: str) -> OAuthFlow:
        flow = self.flow_for(provider)
        if flow is None:
            raise LoginExpired(
                f"auth.json holds a login for {provider}, which caddie cannot use (no login of that name); "
                f"run /login {provider} again or remove it with /logout {provider}."
            )
        return flow

    async def credential(
        self, provider: str, min_validity_ms: int = MIN_VALIDITY_MS
    ) -> dict[str, Any] | None:
        """The stored login of ``provider``, renewed first when it expires within ``min_validity_ms``."""
        stored = self.auth.oauth(provider)
        if stored is None:
            return None
        if not expires_soon(stored, min_validity_ms):
            return stored
        flow = self._flow(provider)
        # One refresh per provider in this process; other processes wait on the file lock.
        guard = self._refreshing.setdefault(provider, asyncio.Lock())
        async with guard:
            self.auth.reload()
            stored = self.auth.oauth(provider)
            if stored is None or not expires_soon(stored, min_validity_ms):
                return stored

            async def renew(current: dict[str, Any] | None) -> dict[str, Any] | None:
                if current is None or not expires_soon(current, min_validity_ms):
                    return None  # logged out, or renewed by another process meanwhile
                try:
                    return await asyncio.wait_for(flow.refresh(current), REFRESH_TIMEOUT_S)
                except RefreshFailed as exc:
                    raise LoginExpired(
                        f"The {flow.name} login has expired or was revoked ({secrets.redact(str(exc))}); "
                        f"run /login {provider} again."
                    ) from None
                except TimeoutError:
                    raise LoginFailed(
                        f"Renewing the {flow.name} login timed out after {REFRESH_TIMEOUT_S:g}s; try again."
                    ) from None

            renewed = await self.auth.modify_oauth(provider, renew)
        if (
            renewed is not None
            and min_validity_ms > MIN_VALIDITY_MS
            and expires_soon(renewed, min_validity_ms)
        ):
            raise LoginExpired(
                f"The renewed {flow.name} token expires too soon; run /login {provider} again."
            )
        return renewed

    async def request_auth(self, provider: str, min_validity_ms: int = MIN_VALIDITY_MS) -> RequestAuth | None:
        credential = await self.credential(provider, min_validity_ms)
        if credential is None:
            return None
        auth = self._flow(provider).to_auth(credential)
        secrets.register(auth.api_key)
        secrets.register_headers(auth.headers)
        return auth


def apply_auth(model: Model, options: StreamOptions, auth: RequestAuth) -> tuple[Model, StreamOptions]:
    """``model`` and ``options`` with the request's auth in place."""
    if auth.base_url and auth.base_url != model.base_url:
        model = replace(model, base_url=auth.base_url)
    changes: dict[str, Any] = {}
    if auth.api_key:
        changes["api_key"] = auth.api_key
    if auth.headers:
        changes["headers"] = {**(options.headers or {}), **auth.headers}
    return model, (replace(options, **changes) if changes else options)


def authenticated_stream(
    stream_fn: StreamFn, resolve: Callable[[Model], Awaitable[RequestAuth | None]]
) -> StreamFn:
    """``stream_fn`` whose requests carry ``resolve(model)``'s auth (nothing changes when it is None)."""

    async def stream(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        try:
            auth = await resolve(model)
        except (LoginExpired, LoginFailed, OSError) as exc:
            yield ErrorEvent("error", error_message_for(model, secrets.redact(str(exc))))
            return
        if auth is not None:
            model, options = apply_auth(model, options, auth)
        async for event in stream_fn(model, context, options):
            yield event

    return stream
