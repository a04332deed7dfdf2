"""PKCE (RFC 7636, S256) and the random ``state`` of browser logins."""

from __future__ import annotations

import base64
import hashlib
import secrets


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def generate_pkce() -> tuple[str, str]:
    """(verifier, challenge): 32 random bytes, base64url; the challenge is their SHA-256, base64url."""
    verifier = _b64url(secrets.token_bytes(32))
    return verifier, _b64url(hashlib.sha256(verifier.encode("ascii")).digest())


def random_state() -> str:
    """A fresh, unguessable ``state`` for one login (never the PKCE verifier)."""
    return secrets.token_hex(16)
