"""Finding a local Ollama: which models it serves, if it answers at all."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from caddie.ai.catalogue import DEFAULT_OLLAMA_URL

__all__ = ["OLLAMA_PROBE_TIMEOUT_S", "OLLAMA_URL_ENV", "ollama_base_url", "probe_ollama"]

OLLAMA_URL_ENV = "CADDIE_OLLAMA_URL"
OLLAMA_PROBE_TIMEOUT_S = 0.3


def probe_ollama(url: str | None = None, timeout_s: float = OLLAMA_PROBE_TIMEOUT_S) -> list[str] | None:
    """Model names of an Ollama server at ``url`` (default ``CADDIE_OLLAMA_URL`` or 127.0.0.1:11434), or None
    when nothing answers within ``timeout_s``. Tries ``/api/tags``, then the OpenAI-style ``/v1/models``."""
    import urllib.error  # only when probing (~20 ms to import)
    import urllib.request

    base = (url or os.environ.get(OLLAMA_URL_ENV) or DEFAULT_OLLAMA_URL).rstrip("/")
    if base.endswith("/v1"):
        base = base[:-3]
    for path, key, name_key in (("/api/tags", "models", "name"), ("/v1/models", "data", "id")):
        try:
            with urllib.request.urlopen(base + path, timeout=timeout_s) as response:
                data = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError:
            continue  # something answers, but not Ollama's native API: try the OpenAI-style listing
        except (OSError, ValueError):
            return None  # nothing listening, or too slow: do not wait twice
        items = data.get(key) if isinstance(data, dict) else None
        if isinstance(items, list):
            return [
                str(i[name_key]) for i in items if isinstance(i, dict) and isinstance(i.get(name_key), str)
            ]
    return None


def ollama_base_url(env: Mapping[str, str]) -> str:
    """The OpenAI-style base URL of the local Ollama (``CADDIE_OLLAMA_URL`` overrides the default)."""
    base = (env.get(OLLAMA_URL_ENV) or DEFAULT_OLLAMA_URL).rstrip("/")
    return base if base.endswith("/v1") else base + "/v1"
