"""``/login`` and ``/logout``: sign in to a subscription or store a provider's API key in
``~/.caddie/agent/auth.json`` (Pi's file and format), or forget it.

``/login [provider]`` offers every subscription login Pi has (Claude Pro/Max, ChatGPT Plus/Pro, GitHub
Copilot, SuperGrok/X Premium, Kimi Code, OpenRouter, Radius, and extensions' logins) and every provider a
key can be stored for (type to filter). A browser login shows its URL (and opens the browser) while a
field takes the pasted redirect URL or code, for a browser on another machine; a device login shows the
code to type and where. An API key is asked for in a masked field, with the variables the provider's base
URL needs (Cloudflare's account and gateway ids) when they are not set. The credential is stored
(``0600``), registered as a secret, and used from then on. With no model chosen yet, the provider's default
model is selected. ``/logout [provider]`` removes a stored key or login. Neither command prints, logs or
records a key or token: it never enters the editor, the prompt history or the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import os
import threading
import weakref
import webbrowser
from typing import Any, Protocol

from rich.text import Text
from textual.screen import ModalScreen

from caddie.ai.catalogue import LLAMA_ROUTER
from caddie.ai.model import Model
from caddie.ai.oauth.types import LoginEvent, LoginFailed, LoginPrompt
from caddie.models import ModelRegistry
from caddie.models.extra_usage import extra_usage_warning
from caddie.models.registry import LoginOption
from caddie.modes.interactive.dialogs import InputScreen, SecretInputScreen, SelectScreen
from caddie.runtime.session import AgentSession

__all__ = ["SecretInputScreen", "run_login", "run_logout", "warn_about_extra_usage"]


class LoginHost(Protocol):
    """What the commands need from the app."""

    session: AgentSession | None
    registry: ModelRegistry | None

    async def ask(self, screen: ModalScreen[Any], timeout: float | None, default: Any) -> Any: ...

    def show_info(self, content: Any, level: str = "info") -> None: ...

    def show_error(self, message: str) -> None: ...


_EXTRA_USAGE_SHOWN: weakref.WeakSet[AgentSession] = weakref.WeakSet()
"""Sessions that showed the extra-usage warning (once per session, as Pi)."""


def warn_about_extra_usage(host: LoginHost, model: Model | None = None) -> None:
    """Pi's warning, once per session, that a Claude Pro/Max login here is billed per token as extra usage
    (``model``: the one just chosen, else the session's)."""
    session, registry = host.session, host.registry
    if session is None or registry is None or session in _EXTRA_USAGE_SHOWN:
        return
    stored = registry.auth.get("anthropic")
    keys = [
        stored.key if stored is not None else None,
        registry.env.get("ANTHROPIC_OAUTH_TOKEN"),
        registry.env.get("ANTHROPIC_API_KEY"),
    ]
    text = extra_usage_warning(
        model or session.model,
        registry.auth.oauth("anthropic") is not None,
        keys,
        enabled=session.settings.get("warnings.anthropicExtraUsage") is not False,
    )
    if text is not None:
        _EXTRA_USAGE_SHOWN.add(session)
        host.show_info(Text(text), "warning")


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


def _option_label(option: LoginOption) -> str:
    kind = "subscription" if option.kind == "oauth" else "API key"
    return f"{option.label}  ({option.provider} · {kind})"


async def _choose(host: LoginHost, args: str, options: list[LoginOption]) -> LoginOption | None:
    """The login the user means: the one named (asking which when a provider has two), or a pick."""
    if args.strip():
        provider = _provider_from_args(host, args, [o.provider for o in options])
        if provider is None:
            return None
        options = [o for o in options if o.provider == provider]
        if len(options) == 1:
            return options[0]
    labels = {_option_label(o): o for o in options}
    answer = await host.ask(
        SelectScreen("Log in to which provider? (type to filter)", list(labels)), None, None
    )
    return labels.get(answer) if isinstance(answer, str) else None


def open_browser(url: str) -> None:
    """Open ``url`` in the user's browser, in the background; nothing happens where there is none."""

    def run() -> None:
        with contextlib.suppress(Exception):
            webbrowser.open(url)

    threading.Thread(target=run, name="login-browser", daemon=True).start()


class DialogLogin:
    """A login flow's conversation (``LoginInteraction``) over the app's dialogs and notices."""

    def __init__(self, host: LoginHost) -> None:
        self.host = host

    def notify(self, event: LoginEvent) -> None:
        if event.kind == "auth_url":
            self.host.show_info(Text(f"Open this URL in a browser to log in:\n{event.url}\n{event.text}"))
            open_browser(event.url)
        elif event.kind == "device_code":
            self.host.show_info(Text(f"Open {event.url} and enter the code {event.code}"))
        else:
            self.host.show_info(Text(event.text))

    async def prompt(self, prompt: LoginPrompt) -> str | None:
        if prompt.kind == "select":
            labels = {label: option_id for option_id, label in prompt.options}
            answer = await self.host.ask(SelectScreen(prompt.message, list(labels)), None, None)
            chosen: str | None = labels.get(answer) if isinstance(answer, str) else None
            return chosen
        if prompt.kind == "secret":
            return await self._text(SecretInputScreen(prompt.message, prompt.placeholder or None))
        screen = InputScreen(prompt.message, prompt.placeholder or None)
        if prompt.kind != "manual_code" or prompt.withdrawn is None:
            return await self._text(screen)
        answer = asyncio.ensure_future(self._text(screen))
        withdrawn = asyncio.ensure_future(prompt.withdrawn.wait())
        try:
            await asyncio.wait({answer, withdrawn}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            withdrawn.cancel()
        if not answer.done():
            with contextlib.suppress(Exception):
                screen.dismiss(None)  # the browser won the race: the field is no longer needed
        result: str | None = await answer
        return result

    async def _text(self, screen: ModalScreen[Any]) -> str | None:
        value = await self.host.ask(screen, None, None)
        return value if isinstance(value, str) else None


async def run_login(host: LoginHost, args: str) -> None:
    registry = host.registry
    if registry is None:
        return
    option = await _choose(host, args, registry.login_options())
    if option is None:
        return
    if option.provider == LLAMA_ROUTER:  # a router URL and an optional key, as Pi asks (llama.py)
        from caddie.modes.interactive.llama import run_llama_login

        await run_llama_login(host)
    elif option.kind == "oauth":
        await _oauth_login(host, registry, option)
    else:
        await _key_login(host, registry, option.provider)


async def _oauth_login(host: LoginHost, registry: ModelRegistry, option: LoginOption) -> None:
    flow = registry.oauth_flow(option.provider)
    if flow is None:
        return
    try:
        credential = await flow.login(DialogLogin(host))
    except asyncio.CancelledError:
        host.show_info("Login cancelled; nothing stored.")
        raise
    except LoginFailed as e:
        host.show_error(str(e))
        return
    except Exception as e:  # an extension's login, or a server answering something unexpected
        host.show_error(f"The {flow.name} login failed: {e}")
        return
    try:
        registry.auth.put(option.provider, {**credential, "type": "oauth"})
    except OSError as e:
        host.show_error(f"Cannot store the login in {registry.auth.path}: {e.strerror or e}.")
        return
    registry.refresh()
    await _refresh_catalogue(host, registry, option.provider)
    host.show_info(Text(f"Logged in: {flow.name}. Stored in {registry.auth.path}; it is used from now on."))
    await _select_default(host, registry, option.provider)
    warn_about_extra_usage(host)


async def _refresh_catalogue(host: LoginHost, registry: ModelRegistry, provider: str) -> None:
    """A login whose provider lists its models dynamically (Radius, extensions) loads them now."""
    try:
        problems = await registry.refresh_models(provider)
    except Exception as e:  # the login is stored; the list can be loaded later
        problems = [str(e)]
    for problem in problems:
        host.show_info(problem, "warning")


async def _select_default(host: LoginHost, registry: ModelRegistry, provider: str) -> None:
    session = host.session
    if session is not None and session.model is None:
        model = registry.provider_default(provider)
        if model is not None and registry.has_auth(model):
            await session.set_model(model)
            host.show_info(Text(f"Model: {model.ref}"))


async def _key_login(host: LoginHost, registry: ModelRegistry, provider: str) -> None:
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
    await _select_default(host, registry, provider)
    warn_about_extra_usage(host)


async def run_logout(host: LoginHost, args: str) -> None:
    registry = host.registry
    if registry is None:
        return
    stored = list(registry.auth.stored())
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
