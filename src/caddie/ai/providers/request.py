"""What goes into a request: the body as JSON bytes, sendable text, keys and keyless local servers."""

from __future__ import annotations

import ipaddress
import json
from typing import Any
from urllib.parse import urlsplit

import msgspec

from caddie.untrusted.text import clean_text

NO_KEY_PLACEHOLDER = "caddie-no-key"
"""Sent to keyless local servers (Ollama, LM Studio, vLLM, llama.cpp) because the SDKs insist on a key."""


def is_local_base_url(base_url: str) -> bool:
    """A server on this machine or the local network (Ollama, LM Studio, vLLM, llama.cpp): no key needed."""
    host = (urlsplit(base_url).hostname or "").lower()
    if host in ("localhost", "0.0.0.0", "::1", "host.docker.internal") or host.endswith(".local"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_link_local


def headers_contain(headers: dict[str, str] | None, *names: str) -> bool:
    wanted = {n.lower() for n in names}
    return any(k.lower() in wanted and str(v).strip() for k, v in (headers or {}).items())


def sanitize_text(text: str) -> str:
    """Replace lone surrogates that would make the request body unencodable (U+FFFD, the one rule:
    ``caddie.untrusted.clean_text``)."""
    return clean_text(text)


def compact_json(value: Any) -> str:
    """JSON as JavaScript's ``JSON.stringify`` writes it (no spaces, UTF-8 kept): the text Pi sends and
    stores for tool arguments and reasoning items. msgspec writes the same text 15× faster than ``json``;
    what it refuses (lone surrogates, non-string keys) goes through ``json``."""
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, ValueError, msgspec.EncodeError):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def encode_body(params: dict[str, Any]) -> bytes:
    """The request body as JSON bytes, serialised once by caddie.

    The SDKs' ``create`` methods re-walk every request through their own type transforms before
    serialising it (``_utils._transform``), which costs more than everything else caddie does per turn
    once a session holds a few hundred messages. The providers send these bytes through the SDK's
    lower-level ``post`` instead, which still gives auth, the HTTP client, streaming and error classes.
    """
    try:
        return msgspec.json.encode(params)
    except (TypeError, ValueError, msgspec.EncodeError):  # e.g. a payload hook put in non-string keys
        return json.dumps(params, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
