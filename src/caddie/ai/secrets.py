"""Every secret value this process knows, and the one function that takes them out of any text.

Secrets are registered where they come into being — an API key resolved for a request, a models.json
``headers`` value (literal, ``$VAR`` or ``!command``), a ``!command``'s output, the password in a
``baseUrl`` — and ``redact`` replaces each of them (plus anything shaped like a well-known API key) with
``[redacted]``. Error texts pass through ``redact`` before they are shown or stored, so a new source of
secrets only has to register its values to be covered everywhere.

Values shorter than ``MIN_SECRET_LENGTH`` characters are not registered: replacing every ``abc`` in an
error text would destroy the text and protect nothing.
"""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Iterable, Mapping
from urllib.parse import unquote, urlsplit, urlunsplit

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 6
URL_PASSWORD_MASK = "***"

NON_SECRET_HEADERS = frozenset(
    {
        "accept",
        "accept-encoding",
        "accept-language",
        "anthropic-beta",
        "anthropic-version",
        "content-type",
        "http-referer",
        "referer",
        "user-agent",
        "x-title",
    }
)
"""Header names whose values describe the client, never authenticate it (not registered)."""

_KEY_LIKE = re.compile(r"\b(?:sk-(?:ant-|proj-|or-v1-)?|xai-|gsk_|AIza)[A-Za-z0-9_\-]{12,}")
_AUTH_SCHEME = re.compile(r"^(?:Bearer|Basic|Token|Bot|ApiKey|Key)\s+(\S+)$", re.IGNORECASE)

_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None


def register(value: str | None) -> None:
    """Remember ``value`` as a secret (and, for ``Bearer <token>``-style values, the token alone)."""
    if not value:
        return
    value = value.strip()
    found = [value]
    scheme = _AUTH_SCHEME.match(value)
    if scheme:
        found.append(scheme.group(1))
    _add(found)


def register_all(values: Iterable[str | None]) -> None:
    for value in values:
        register(value)


def register_headers(headers: Mapping[str, str] | None) -> None:
    """Register every header value except those of headers that never carry credentials."""
    for name, value in (headers or {}).items():
        if str(name).lower() not in NON_SECRET_HEADERS:
            register(str(value))


def register_url(url: str | None) -> None:
    """Register the password of a URL with credentials (as written, decoded, and as Basic auth sends it)."""
    if not url or "@" not in url:
        return
    try:
        parts = urlsplit(url)
        password = parts.password
        username = parts.username or ""
    except ValueError:
        return
    if not password:
        return
    found = [password, unquote(password)]
    for user, secret in ((username, password), (unquote(username), unquote(password))):
        found.append(base64.b64encode(f"{user}:{secret}".encode()).decode("ascii"))
    _add(found)


def _add(values: Iterable[str]) -> None:
    global _pattern
    fresh = {v for v in values if len(v) >= MIN_SECRET_LENGTH and v != REDACTED}
    if not fresh:
        return
    with _lock:
        if fresh - _secrets:
            _secrets.update(fresh)
            _pattern = None


def _compiled() -> re.Pattern[str] | None:
    global _pattern
    with _lock:
        if _pattern is None and _secrets:
            # Longest first, so a secret that contains another is replaced whole.
            ordered = sorted(_secrets, key=len, reverse=True)
            _pattern = re.compile("|".join(re.escape(s) for s in ordered))
        return _pattern


def is_registered(value: str) -> bool:
    with _lock:
        return value in _secrets


def redact(text: str, extra: Iterable[str | None] = ()) -> str:
    """``text`` with every registered secret, each of ``extra``, and anything shaped like a well-known API
    key replaced by ``[redacted]``."""
    if not text:
        return text
    for secret in extra:
        if secret and len(secret) >= MIN_SECRET_LENGTH:
            text = text.replace(secret, REDACTED)
    pattern = _compiled()
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    return _KEY_LIKE.sub(REDACTED, text)


def safe_url(url: str) -> str:
    """``url`` fit to print: a password in it becomes ``***`` (``http://user:***@host/v1``)."""
    if "@" not in url:
        return url
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.hostname or ""
        if ":" in host:  # IPv6 literal
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return redact(url)
    netloc = f"{parts.username or ''}:{URL_PASSWORD_MASK}@{host}{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def clear() -> None:
    """Forget every registered secret (tests only)."""
    global _pattern
    with _lock:
        _secrets.clear()
        _pattern = None
