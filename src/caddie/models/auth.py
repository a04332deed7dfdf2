"""Stored credentials: ``~/.caddie/agent/auth.json`` in Pi's format, shared with Pi both ways.

    {"openai": {"type": "api_key", "key": "sk-..."},
     "cloudflare-ai-gateway": {"type": "api_key", "key": "...", "env": {"CLOUDFLARE_ACCOUNT_ID": "..."}},
     "anthropic": {"type": "oauth", "access": "sk-ant-oat...", "refresh": "...", "expires": 1767225600000}}

A stored key wins over the environment (as in Pi). ``key`` may be ``!command`` or ``$VAR`` like models.json
values; ``env`` holds provider-scoped variables used before the process environment (Cloudflare's account
and gateway ids). ``oauth`` entries are subscription logins (``caddie.models.oauth`` refreshes them); every
field Pi writes is kept as it is.

Every write is a read-modify-write of the whole file under Pi's own cross-process lock (``file_lock``: the
``auth.json.lock`` directory), so caddie and Pi never lose each other's changes. The file is created ``0600``
in a ``0700`` folder and replaced atomically. Every stored key and token is registered with
``caddie.ai.secrets`` as soon as the file is read, so no error text, log, export or session shows it.

``InMemoryCredentialStore`` (Pi's) holds the same entries in memory only: a program embedding caddie
(``caddie.sdk``) gives it the keys it has, and nothing is read from or written to a file.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from caddie.ai import secrets
from caddie.ai.oauth.types import register_credential
from caddie.config.file_lock import FileLock
from caddie.config.paths import agent_dir

__all__ = ["AuthStore", "Credential", "InMemoryCredentialStore", "default_auth_path"]

FILE_MODE = 0o600
DIR_MODE = 0o700


def default_auth_path() -> Path:
    return agent_dir() / "auth.json"


class StoreLock(Protocol):
    """What serialises writes: ``with lock:`` for a quick change, ``async with lock.held():`` around a
    login's renewal."""

    def __enter__(self) -> object: ...

    def __exit__(self, *exc: object) -> None: ...

    def held(self) -> AbstractAsyncContextManager[object]: ...


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
        self._oauth: dict[str, dict[str, Any]] = {}
        self.reload()

    def reload(self) -> None:
        self.warnings = []
        self._credentials = {}
        self._oauth = {}
        data = self._read()
        if data is None:
            return
        for provider, entry in data.items():
            if not isinstance(entry, dict) or entry.get("type") not in ("api_key", "oauth"):
                self.warnings.append(
                    f'{self.path}: "{provider}" is not a credential ({{"type": "api_key", "key": "..."}}); ignoring it.'
                )
                continue
            if entry["type"] == "oauth":
                if _valid_oauth(entry):
                    register_credential(entry)
                    self._oauth[provider] = dict(entry)
                else:
                    self.warnings.append(
                        f'{self.path}: the login of "{provider}" needs string "access" and "refresh" and a numeric '
                        f'"expires"; ignoring it (run /login {provider} again).'
                    )
                continue
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

    def oauth(self, provider: str) -> dict[str, Any] | None:
        """``provider``'s subscription login as stored (a copy), or None."""
        entry = self._oauth.get(provider)
        return dict(entry) if entry is not None else None

    def oauth_providers(self) -> list[str]:
        """Providers with a stored subscription login."""
        return list(self._oauth)

    def stored(self) -> dict[str, str]:
        """Every stored credential's provider and type (``api_key`` or ``oauth``), without its secret."""
        return {
            **{n: "api_key" for n, c in self._credentials.items() if c.key},
            **dict.fromkeys(self._oauth, "oauth"),
        }

    def lock(self) -> StoreLock:
        """The cross-process lock every write of this file takes (Pi's ``auth.json.lock``)."""
        if not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, mode=DIR_MODE)
        return FileLock(self.path)

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
        self.put(provider, entry)

    def put(self, provider: str, entry: Mapping[str, Any]) -> None:
        """Store ``entry`` (an ``api_key`` or ``oauth`` credential) for ``provider``, under the lock."""
        if entry.get("type") == "oauth":
            register_credential(dict(entry))
        with self.lock():
            data = self._read_for_write()
            data[provider] = dict(entry)
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
        with self.lock():
            data = self._read_for_write()
            if provider not in data:
                return False
            del data[provider]
            self._write(data)
        self.reload()
        return True

    async def modify_oauth(
        self,
        provider: str,
        change: Callable[[dict[str, Any] | None], Awaitable[dict[str, Any] | None]],
    ) -> dict[str, Any] | None:
        """Read-modify-write ``provider``'s login under the cross-process lock: ``change`` sees the login as
        the file holds it *now* (another process may have refreshed it) and returns a new one to store, or
        None to keep it. Returns the login stored afterwards (None: not an ``oauth`` entry)."""
        async with self.lock().held():
            data = self._read_for_write()
            current = data.get(provider)
            current_oauth = (
                dict(current) if isinstance(current, dict) and current.get("type") == "oauth" else None
            )
            updated = await change(current_oauth)
            if updated is not None:
                register_credential(updated)
                data[provider] = dict(updated)
                self._write(data)
        self.reload()
        return self.oauth(provider)

    def _read_for_write(self) -> dict[str, Any]:
        """The file's current content for a change; an unreadable file is never overwritten."""
        warnings = list(self.warnings)
        data = self._read()
        self.warnings = warnings
        if data is None and self.path.exists():
            raise OSError(f"{self.path} is not a valid credentials file; fix or delete it first")
        return data or {}

    def _write(self, data: dict[str, Any]) -> None:
        folder = self.path.parent
        if not folder.exists():
            folder.mkdir(parents=True, mode=DIR_MODE)
        fd, tmp = tempfile.mkstemp(prefix=".auth.", suffix=".tmp", dir=folder)  # created 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=2, ensure_ascii=False)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, FILE_MODE)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _valid_oauth(entry: Mapping[str, Any]) -> bool:
    expires = entry.get("expires")
    return (
        isinstance(entry.get("access"), str)
        and isinstance(entry.get("refresh"), str)
        and isinstance(expires, int | float)
        and not isinstance(expires, bool)
        and math.isfinite(expires)
    )


def _register(credential: Credential) -> None:
    if credential.key and not credential.key.startswith("!") and "$" not in credential.key:
        secrets.register(credential.key)
    for name, value in credential.env.items():
        if secrets.is_secret_name(name):
            secrets.register(value)


class InMemoryCredentialStore(AuthStore):
    """Credentials kept in memory only (Pi's ``InMemoryCredentialStore``): no file is read or written.

    ``credentials`` are entries in auth.json's shape, e.g. ``{"openai": {"type": "api_key", "key": "sk-..."}}``
    (a login: ``{"type": "oauth", "access": ..., "refresh": ..., "expires": ...}``); ``set_key``, ``put`` and
    ``remove`` change them, and a login renewed during the session is kept here too.
    """

    def __init__(self, credentials: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self._entries: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (credentials or {}).items()}
        self._memory_lock = _MemoryLock()
        super().__init__(Path("(in memory)"))

    def _read(self) -> dict[str, Any] | None:
        return {k: dict(v) for k, v in self._entries.items()}

    def _write(self, data: dict[str, Any]) -> None:
        self._entries = {k: dict(v) for k, v in data.items()}

    def lock(self) -> StoreLock:
        return self._memory_lock


class _MemoryLock:
    """One process, one store: changes in a single step need no lock; a login's renewal (which awaits
    the provider) is serialised so two requests never renew the same login at once."""

    def __init__(self) -> None:
        self._renewal: asyncio.Lock | None = None

    def __enter__(self) -> object:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[object]:
        if self._renewal is None:
            self._renewal = asyncio.Lock()
        async with self._renewal:
            yield self
