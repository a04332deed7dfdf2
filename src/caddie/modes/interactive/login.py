"""``/login`` and ``/logout``: store a provider's API key in ``~/.caddie/agent/auth.json``, or forget it.

``/login [provider]`` picks a provider (type to filter), asks for the key in a masked field, and for the
variables the provider's base URL needs (Cloudflare's account and gateway ids) when they are not set; the
key is stored (``0600``), registered as a secret, and used from then on — a stored key wins over the
environment. With no model chosen yet, the provider's default model is selected. ``/logout [provider]``
removes a stored key. Neither command prints, logs or records the key: it never enters the editor, the
prompt history or the session.
"""

from __future__ import annotations

import difflib
import os
from typing import Any, Protocol

from rich.text import Text
from textual.screen import ModalScreen

from caddie.ai.catalogue import LLAMA_ROUTER
from caddie.models import ModelRegistry
from caddie.modes.interactive.dialogs import InputScreen, SecretInputScreen, SelectScreen
from caddie.runtime.session import AgentSession

__all__ = ["SecretInputScreen", "run_login", "run_logout"]


class LoginHost(Protocol):
    """What the commands need from the app."""

    session: AgentSession | None
    registry: ModelRegistry | None

    async def ask(self, screen: ModalScreen[Any], timeout: float | None, default: Any) -> Any: ...

    def show_info(self, content: Any, level: str = "info") -> None: ...

    def show_error(self, message: str) -> None: ...


async def _pick(host: LoginHost, title: str, options: list[tuple[str, str]]) -> str | None:
    """The id of the option the user picks (labels shown as ``Title  (id)``)."""
    labels = {f"{label}  ({name})" if label != name else name: name for name, label in options}
    answer = await host.ask(SelectScreen(title, list(labels)), None, None)
    return labels.get(answer) if isinstance(answer, str) else None


def _provider_from_args(host: LoginHost, args: str, known: list[str]) -> str | None:
    name = args.strip()
    if name in known:
        return name
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f" Did you mean {close[0]}?" if close else " /login without an argument lists them."
    host.show_error(f"Unknown provider '{name}'.{hint}")
    return None


async def run_login(host: LoginHost, args: str) -> None:
    registry = host.registry
    if registry is None:
        return
    options = registry.login_providers()
    known = [name for name, _ in options]
    if args.strip():
        provider = _provider_from_args(host, args, known)
    else:
        provider = await _pick(host, "Log in to which provider? (type to filter)", options)
    if provider is None:
        return
    if provider == LLAMA_ROUTER:  # a router URL and an optional key, as Pi asks (llama.py)
        from caddie.modes.interactive.llama import run_llama_login

        await run_llama_login(host)
        return
    info = registry.provider_info(provider)
    title = info.title if info is not None else provider
    label = (info.login_label if info is not None else None) or f"{title} API key"
    key = await host.ask(
        SecretInputScreen(f"Enter {label} (stored in {registry.auth.path})", "paste the key, then Enter"),
        None,
        None,
    )
    if not isinstance(key, str) or not key.strip():
        host.show_info("Login cancelled; nothing stored.")
        return
    env: dict[str, str] = {}
    for name in info.base_url_env if info is not None else ():
        if os.environ.get(name):
            continue
        value = await host.ask(InputScreen(f"Enter {name} for {title}", name), None, None)
        if not isinstance(value, str) or not value.strip():
            host.show_info("Login cancelled; nothing stored.")
            return
        env[name] = value.strip()
    try:
        registry.auth.set_key(provider, key, env or None)
    except OSError as e:
        host.show_error(f"Cannot store the key in {registry.auth.path}: {e.strerror or e}.")
        return
    registry.refresh()
    host.show_info(Text(f"Stored the {title} key in {registry.auth.path}; it is used from now on."))
    session = host.session
    if session is not None and session.model is None:
        model = registry.provider_default(provider)
        if model is not None and registry.has_auth(model):
            await session.set_model(model)
            host.show_info(Text(f"Model: {model.ref}"))


async def run_logout(host: LoginHost, args: str) -> None:
    registry = host.registry
    if registry is None:
        return
    stored = registry.auth.providers()
    if not stored:
        host.show_info(f"No stored keys ({registry.auth.path} has none).")
        return
    if args.strip():
        provider: str | None = args.strip()
        if provider not in stored:
            host.show_error(f"No stored key for '{provider}'. Stored: {', '.join(stored)}.")
            return
    else:
        options = []
        for name in stored:
            info = registry.provider_info(name)
            options.append((name, info.title if info is not None else name))
        provider = await _pick(host, "Remove the stored key of which provider?", options)
    if provider is None:
        return
    try:
        registry.auth.remove(provider)
    except OSError as e:
        host.show_error(f"Cannot change {registry.auth.path}: {e.strerror or e}.")
        return
    registry.refresh()
    text = f"Removed the stored key for {provider}."
    info = registry.provider_info(provider)
    still = [k for k in (info.env_keys if info is not None else ()) if os.environ.get(k)]
    if still:
        text += f" {still[0]} in the environment still gives it a key."
    host.show_info(Text(text))
