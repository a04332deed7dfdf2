"""Where the login flows send their requests, and the loopback port they listen on — overridable for tests.

``CADDIE_OAUTH_ENDPOINTS`` (a JSON object) maps URL prefixes to replacements:
``{"https://platform.claude.com": "http://127.0.0.1:8123"}`` sends Anthropic's token requests to a fake
server. ``CADDIE_OAUTH_CALLBACK_PORT`` replaces the fixed loopback ports (``0``: any free port). Both are
for tests; they come only from the environment, never from project files, and no setting changes them.
"""

from __future__ import annotations

import json
import os

ENDPOINTS_ENV = "CADDIE_OAUTH_ENDPOINTS"
CALLBACK_PORT_ENV = "CADDIE_OAUTH_CALLBACK_PORT"


def endpoint(url: str) -> str:
    """``url``, with the longest matching prefix of ``CADDIE_OAUTH_ENDPOINTS`` replaced."""
    raw = os.environ.get(ENDPOINTS_ENV)
    if not raw:
        return url
    try:
        table = json.loads(raw)
    except ValueError:
        return url
    if not isinstance(table, dict):
        return url
    best = max((p for p in table if isinstance(p, str) and url.startswith(p)), key=len, default=None)
    if best is None or not isinstance(table[best], str):
        return url
    return str(table[best]) + url[len(best) :]


def callback_port(default: int) -> int:
    """The loopback port a browser login listens on: the flow's own, unless a test says otherwise."""
    raw = os.environ.get(CALLBACK_PORT_ENV)
    if raw is None or not raw.strip().isdigit():
        return default
    return int(raw)
