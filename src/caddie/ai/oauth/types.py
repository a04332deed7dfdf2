"""What every subscription login shares: the credential's shape, request auth, and the login conversation.

A credential is the dict Pi stores in auth.json — ``{"type": "oauth", "access", "refresh", "expires"}`` (ms
since the epoch, already minus the flow's clock skew) plus a flow's extras (``accountId``,
``enterpriseUrl``, ``availableModelIds``…) — kept as a plain dict so every field Pi writes survives a
caddie refresh and the other way round.

A login talks to the user only through ``LoginInteraction``: ``notify`` shows something (the URL to open,
a device code, progress) and ``prompt`` asks (a choice, a line of text, a secret, or the *manual code* — a
pasted redirect URL or code, raced against the loopback callback and withdrawn when the callback wins).
The TUI's ``/login`` implements it with dialogs; tests with a script.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from caddie.ai import secrets
from caddie.errors import ConfigurationError, ProviderError

__all__ = [
    "LoginEvent",
    "LoginFailed",
    "LoginInteraction",
    "LoginPrompt",
    "OAuthFlow",
    "RefreshFailed",
    "RequestAuth",
    "expires_in",
    "now_ms",
    "register_credential",
]

Credential = dict[str, Any]
"""An auth.json ``oauth`` entry (see the module docstring)."""


class LoginFailed(ConfigurationError):
    """A login that cannot finish; the message is one sentence for the user."""


class RefreshFailed(ProviderError):
    """The provider refused to renew a login (the refresh token expired or was revoked): the message says
    what went wrong; the caller adds what to do (log in again)."""


@dataclass(frozen=True, slots=True)
class RequestAuth:
    """What a request authenticates with: a key (sent the API's usual way), extra headers
    (``Authorization: Bearer …``), and a base URL when the credential decides it (Copilot's proxy)."""

    api_key: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    base_url: str | None = None


@dataclass(frozen=True, slots=True)
class LoginPrompt:
    """A question. ``kind``: ``select`` (answer: an option id), ``text``, ``secret`` (never echoed) or
    ``manual_code`` (a pasted redirect URL or code; ``withdrawn`` is set when the loopback callback won the
    race, and the prompt should then close without an answer)."""

    kind: Literal["select", "text", "secret", "manual_code"]
    message: str
    placeholder: str = ""
    options: tuple[tuple[str, str], ...] = ()
    """``select``: (id, label) pairs, the first is the default."""
    withdrawn: Any = None
    """``manual_code``: an ``asyncio.Event`` set when the answer is no longer needed."""


@dataclass(frozen=True, slots=True)
class LoginEvent:
    """Something to show. ``kind``: ``auth_url`` (``url`` to open in a browser, with ``text`` as the
    instructions), ``device_code`` (``code`` to type at ``url``), ``progress`` or ``info`` (``text``)."""

    kind: Literal["auth_url", "device_code", "progress", "info"]
    text: str = ""
    url: str = ""
    code: str = ""


class LoginInteraction(Protocol):
    """How a login flow talks to the user (see the module docstring). ``prompt`` raises
    ``asyncio.CancelledError`` (or returns ``None``) when the user cancels."""

    def notify(self, event: LoginEvent) -> None: ...

    async def prompt(self, prompt: LoginPrompt) -> str | None: ...


class OAuthFlow(Protocol):
    """One provider's subscription login (Pi's ``OAuthAuth``)."""

    name: str
    """``Anthropic (Claude Pro/Max)``."""
    login_label: str | None
    """What ``/login`` offers (``Sign in with Kimi Code``); None: ``name``."""
    is_subscription: bool

    async def login(self, interaction: LoginInteraction) -> Credential: ...

    async def refresh(self, credential: Credential) -> Credential:
        """A renewed credential; ``RefreshFailed`` when the provider refuses, other errors for transport."""
        ...

    def to_auth(self, credential: Credential) -> RequestAuth: ...


LoginFn = Callable[[LoginInteraction], Awaitable[Credential]]


def now_ms() -> int:
    return int(time.time() * 1000)


def expires_in(seconds: float, skew_ms: int = 5 * 60 * 1000) -> int:
    """An ``expires`` value: now plus ``seconds``, minus the skew (Pi refreshes this much early)."""
    return now_ms() + int(seconds * 1000) - skew_ms


def register_credential(credential: Credential) -> None:
    """Make the credential's tokens known secrets, so no error text, log, export or session shows them."""
    for name in ("access", "refresh", "key"):
        value = credential.get(name)
        if isinstance(value, str):
            secrets.register(value)
