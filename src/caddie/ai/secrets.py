"""Every secret value this process knows, the functions that take them out of text, and the one list of
what makes an environment variable's name secret-looking.

Secrets are registered where they come into being — an API key resolved for a request, a models.json
``headers`` value (literal, ``$VAR`` or ``!command``), a ``!command``'s output, the password in a
``baseUrl`` — and ``redact`` replaces each of them (plus anything shaped like a well-known API key) with
``[redacted]``. Error texts pass through ``redact`` before they are shown or stored, so a new source of
secrets only has to register its values to be covered everywhere.

Values shorter than ``MIN_SECRET_LENGTH`` characters are not registered: replacing every ``abc`` in an
error text would destroy the text and protect nothing.

Tool output (``redact``) and everything persisted — session lines (``redact_json``) and exports — go
through these functions too, so a model that runs ``cat ~/.caddie/agent/auth.json`` sees no key and no
session file or export holds one (docs/reliability.md, "What is redacted, and where").
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any
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
_distinctive_pattern: re.Pattern[str] | None = None


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


def _distinctive(value: str) -> bool:
    """Random-looking enough to take out of any text: at least 8 characters with a digit and a letter, or
    20 without whitespace. Placeholders local servers accept (``ollama``, ``lm-studio``,
    ``sk-no-key-required``) are not, and replacing every ``ollama`` in a transcript would garble it."""
    if len(value) < 8 or any(c.isspace() for c in value):
        return False
    return len(value) >= 20 or (any(c.isdigit() for c in value) and any(c.isalpha() for c in value))


def _compiled(distinctive_only: bool = False) -> re.Pattern[str] | None:
    global _pattern, _distinctive_pattern
    with _lock:
        if _pattern is None and _secrets:
            _pattern = _alternatives(_secrets)
            _distinctive_pattern = _alternatives({s for s in _secrets if _distinctive(s)})
        return _distinctive_pattern if distinctive_only else _pattern


def _alternatives(values: set[str]) -> re.Pattern[str] | None:
    """One pattern for ``values``, longest first (a secret containing another is replaced whole), each also
    as it appears inside a JSON string (escaped), so a serialised line is searched as it is."""
    if not values:
        return None
    forms = {form for v in values for form in (v, json.dumps(v, ensure_ascii=False)[1:-1])}
    return re.compile("|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True)))


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


def redact_known(text: str) -> str:
    """``text`` with every registered secret that looks random (``_distinctive``) replaced by
    ``[redacted]``: for tool output and everything persisted. Only known values — no guessing at key-shaped
    text, which could hit a test fixture the model must edit, an image's base64 or a reasoning blob."""
    pattern = _compiled(distinctive_only=True)
    if pattern is None or not text:
        return text
    return pattern.sub(REDACTED, text)


def mentions_known(text: str) -> bool:
    """Whether ``redact_known`` would change ``text`` (raw or JSON-escaped)."""
    pattern = _compiled(distinctive_only=True)
    return pattern is not None and pattern.search(text) is not None


def redact_json(value: Any) -> Any:
    """A copy of decoded JSON with ``redact_known`` applied to every string in it (keys stay)."""
    if isinstance(value, str):
        return redact_known(value)
    if isinstance(value, list):
        return [redact_json(v) for v in value]
    if isinstance(value, dict):
        return {k: redact_json(v) for k, v in value.items()}
    return value


# -- secret-looking environment variables --------------------------------------------------------------

SECRET_NAME_WORDS = ("KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL")
"""A variable whose name contains one of these (any case) is secret-looking: ``OPENAI_API_KEY``,
``PGPASSWORD``, ``GOOGLE_APPLICATION_CREDENTIALS``."""
SECRET_NAME_PARTS = ("PAT", "AUTH", "PASS", "PWD", "CREDS")
"""…or one of these as a whole part of the name between ``_``, ``-`` or ``.``: ``GITHUB_PAT``,
``NPM_AUTH``, ``DB_PASS`` — but not ``PATH``, ``GIT_AUTHOR_NAME`` or ``PWD`` itself (the working folder)."""
NOT_SECRET_NAMES = frozenset({"SSH_AUTH_SOCK", "PWD", "OLDPWD"})
"""Names that match the rules above but hold no secret (the ssh agent's socket path: git over ssh keeps
working in commands)."""
_NAME_PARTS = re.compile(r"[_.\-]+")
_URL_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://[^/@\s:]*:[^/@\s]+@")


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name looks like it holds a secret (the one list: the tools'
    environment filter and stored keys' ``env`` use it)."""
    upper = name.upper()
    if upper in NOT_SECRET_NAMES:
        return False
    if any(word in upper for word in SECRET_NAME_WORDS):
        return True
    return any(part in SECRET_NAME_PARTS for part in _NAME_PARTS.split(upper))


def is_secret_variable(name: str, value: str) -> bool:
    """A secret-looking name, or a value that is a URL with a password (``DATABASE_URL=postgres://u:pw@h``)."""
    return is_secret_name(name) or _URL_PASSWORD.match(value.strip()) is not None


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
    global _pattern, _distinctive_pattern
    with _lock:
        _secrets.clear()
        _pattern = _distinctive_pattern = None
