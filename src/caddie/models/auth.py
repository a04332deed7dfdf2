"""Stored keys: ``~/.caddie/agent/auth.json`` in Pi's format.

    {"openai": {"type": "api_key", "key": "sk-..."},
     "cloudflare-ai-gateway": {"type": "api_key", "key": "...", "env": {"CLOUDFLARE_ACCOUNT_ID": "..."}}}

A stored key wins over the environment (as in Pi). ``key`` may be ``!command`` or ``$VAR`` like models.json
values; ``env`` holds provider-scoped variables used before the process environment (Cloudflare's account
and gateway ids). Entries of other types (Pi's ``oauth``) are kept untouched but not used.

The file is created ``0600`` in a ``0700`` folder and replaced atomically. Every stored key is registered with
``caddie.ai.secrets`` as soon as the file is read, so no error text, log, export or session shows it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caddie.ai import secrets
from caddie.config.paths import agent_dir

__all__ = ["AuthStore", "Credential", "default_auth_path"]

FILE_MODE = 0o600
DIR_MODE = 0o700


def default_auth_path() -> Path:
    return agent_dir() / "auth.json"


@dataclass(frozen=True, slots=True)
class Credential:
    """An ``api_key`` entry."""

    key: str | None
    env: dict[str, str] = field(default_factory=dict)


class AuthStore:
    """Reads and writes auth.json. Reading never raises: a broken file is one line in ``warnings`` (and no
    stored key is used); writing raises ``OSError`` with the reason."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_auth_path()
        self.warnings: list[str] = []
        self._credentials: dict[str, Credential] = {}
        self.reload()

    def reload(self) -> None:
        self.warnings = []
        self._credentials = {}
        data = self._read()
        if data is None:
            return
        for provider, entry in data.items():
            if not isinstance(entry, dict) or entry.get("type") not in ("api_key", "oauth"):
                self.warnings.append(
                    f'{self.path}: "{provider}" is not a credential ({{"type": "api_key", "key": "..."}}); ignoring it.'
                )
                continue
            if entry["type"] != "api_key":
                continue  # Pi's OAuth logins: kept in the file, not used by caddie
            key, env = entry.get("key"), entry.get("env")
            if (key is not None and not isinstance(key, str)) or (
                env is not None
                and (not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()))
            ):
                self.warnings.append(
                    f'{self.path}: "{provider}" needs a string "key" and an "env" of strings; ignoring it.'
                )
                continue
            credential = Credential(key or None, dict(env or {}))
            _register(credential)
            self._credentials[provider] = credential

    def _read(self) -> dict[str, Any] | None:
        try:
            text = self.path.read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            return None
        except OSError as e:
            self.warnings.append(
                f"{self.path}: cannot be read ({e.strerror or e}); stored keys are not used."
            )
            return None
        if not text.strip():
            return {}
        try:
            data = json.loads(text)
        except ValueError as e:
            self.warnings.append(
                f"{self.path}: not valid JSON ({e}); stored keys are not used. Fix it, or delete it and /login again."
            )
            return None
        if not isinstance(data, dict):
            self.warnings.append(f"{self.path}: expected an object of credentials; stored keys are not used.")
            return None
        return data

    # -- reading ------------------------------------------------------------------------------------
    def get(self, provider: str) -> Credential | None:
        return self._credentials.get(provider)

    def providers(self) -> list[str]:
        """Providers with a stored credential: a key, or only settings (a llama.cpp router's URL)."""
        return [name for name, c in self._credentials.items() if c.key or c.env]

    # -- writing ------------------------------------------------------------------------------------
    def set_key(self, provider: str, key: str, env: Mapping[str, str] | None = None) -> None:
        """Store ``key`` for ``provider`` (replacing an earlier one; other providers' entries stay)."""
        key = key.strip()
        if not key:
            raise ValueError("the key is empty")
        secrets.register(key)
        entry: dict[str, Any] = {"type": "api_key", "key": key}
        if env:
            entry["env"] = dict(env)
        data = self._read() or {}
        data[provider] = entry
        self._write(data)
        self.reload()

    def set_credential(self, provider: str, key: str | None, env: Mapping[str, str]) -> None:
        """Store ``env`` (and ``key`` when given) for ``provider``: a credential whose key is optional, as
        Pi stores a llama.cpp router login (``{"type": "api_key", "env": {"LLAMA_BASE_URL": ...}}``)."""
        key = (key or "").strip() or None
        entry: dict[str, Any] = {"type": "api_key"}
        if key:
            secrets.register(key)
            entry["key"] = key
        entry["env"] = dict(env)
        data = self._read() or {}
        data[provider] = entry
        self._write(data)
        self.reload()

    def remove(self, provider: str) -> bool:
        """Forget ``provider``'s stored credential; False when there was none."""
        data = self._read() or {}
        if provider not in data:
            return False
        del data[provider]
        self._write(data)
        self.reload()
        return True

    def _write(self, data: dict[str, Any]) -> None:
        folder = self.path.parent
        if not folder.exists():
            folder.mkdir(parents=True, mode=DIR_MODE)
        fd, tmp = tempfile.mkstemp(prefix=".auth.", suffix=".tmp", dir=folder)  # created 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=2)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, FILE_MODE)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _register(credential: Credential) -> None:
    if credential.key and not credential.key.startswith("!") and "$" not in credential.key:
        secrets.register(credential.key)
    for name, value in credential.env.items():
        if secrets.is_secret_name(name):
            secrets.register(value)
