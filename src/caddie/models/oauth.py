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
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from caddie.ai import secrets
from caddie.ai.model import Context, Model, StreamOptions
from caddie.ai.oauth.types import (
    LoginEvent,
    LoginFailed,
    LoginInteraction,
    LoginPrompt,
    OAuthFlow,
    RefreshFailed,
    RequestAuth,
    now_ms,
    register_credential,
)
from caddie.ai.stream import error_message_for
from caddie.ai.stream_events import AssistantMessageEvent, ErrorEvent
from caddie.errors import ConfigurationError
from caddie.models.auth import AuthStore

MIN_VALIDITY_MS = 5 * 60 * 1000
"""A token with less than this left is renewed before use (Pi's five minutes)."""
REFRESH_TIMEOUT_S = 15.0

StreamFn = Callable[[Model, Context, StreamOptions], AsyncIterator[AssistantMessageEvent]]


class LoginExpired(ConfigurationError):
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


class CallbackLogin:
    """The login callbacks an extension's ``oauth.login`` gets (Pi's ``OAuthLoginCallbacks``, Python names):
    ``on_auth(url, instructions=None)``, ``on_device_code(user_code, verification_uri, ...)``,
    ``on_progress(message)``, ``await on_prompt(message, placeholder=None)``, ``await on_select(message,
    options)`` (options: ``[{"id", "label"}]``; returns the id, or None)."""

    def __init__(self, interaction: LoginInteraction) -> None:
        self._interaction = interaction

    def on_auth(self, url: str, instructions: str | None = None) -> None:
        self._interaction.notify(LoginEvent("auth_url", instructions or "", url=url))

    def on_device_code(self, user_code: str, verification_uri: str, *_args: Any, **_kwargs: Any) -> None:
        self._interaction.notify(LoginEvent("device_code", url=verification_uri, code=user_code))

    def on_progress(self, message: str) -> None:
        self._interaction.notify(LoginEvent("progress", message))

    async def on_prompt(self, message: str, placeholder: str | None = None) -> str:
        answer = await self._interaction.prompt(LoginPrompt("text", message, placeholder or ""))
        if answer is None:
            raise LoginFailed("Login cancelled; nothing stored.")
        return answer

    async def on_select(self, message: str, options: list[dict[str, str]]) -> str | None:
        pairs = tuple((str(o["id"]), str(o.get("label") or o["id"])) for o in options)
        return await self._interaction.prompt(LoginPrompt("select", message, options=pairs))


class ExtensionOAuthFlow:
    """An extension's ``oauth`` (Pi's shape: ``name``, ``login``, ``refreshToken``, ``getApiKey``;
    ``loginLabel``) as a login flow."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.name: str = str(spec.get("name") or "OAuth")
        label = spec.get("loginLabel")
        self.login_label: str | None = label if isinstance(label, str) else None
        self.is_subscription: bool = bool(spec.get("isSubscription", False))
        self._login = spec["login"]
        self._refresh = spec.get("refreshToken")
        self._api_key = spec.get("getApiKey")

    async def login(self, interaction: LoginInteraction) -> dict[str, Any]:
        result = await _maybe_await(self._login(CallbackLogin(interaction)))
        return self._credential(result)

    async def refresh(self, credential: dict[str, Any]) -> dict[str, Any]:
        if self._refresh is None:
            return credential
        try:
            result = await _maybe_await(self._refresh(dict(credential)))
        except (LoginFailed, LoginExpired):
            raise
        except Exception as exc:
            raise RefreshFailed(str(exc) or type(exc).__name__) from None
        return self._credential(result)

    def to_auth(self, credential: dict[str, Any]) -> RequestAuth:
        key = self._api_key(dict(credential)) if self._api_key is not None else credential.get("access")
        return RequestAuth(api_key=str(key or ""))

    def _credential(self, result: Any) -> dict[str, Any]:
        if not isinstance(result, Mapping) or not all(k in result for k in ("access", "refresh", "expires")):
            raise LoginFailed(
                f'The {self.name} login returned no credential with "access", "refresh" and "expires".'
            )
        credential = {**result, "type": "oauth"}
        register_credential(credential)
        return credential


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class ExtensionStream:
    """An extension's ``streamSimple(model, context, options)`` as an API provider: whatever it yields (or
    returns as an async iterable of events) is the request's events."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self._fn = fn

    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        produced = self._fn(model, context, options)
        if inspect.isawaitable(produced):
            produced = await produced
        async for event in produced:
            yield event
