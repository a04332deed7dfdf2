"""Built-in commands about the model: ``/model``, ``/thinking``, ``/login``, ``/logout``, ``/llama``; and Ctrl+P's cycling.

``/login`` and ``/logout`` live in login.py; ``/scoped-models``'s screen in scoped_models.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.text import Text

from caddie.ai.model import DEFAULT_THINKING_LEVEL, THINKING_LEVELS
from caddie.ai.providers.preload import preload
from caddie.config.paths import agent_dir
from caddie.modes.interactive.host import Shell

if TYPE_CHECKING:
    from caddie.ai.model import Model


def thinking_levels(shell: Shell) -> Sequence[str]:
    """The thinking levels of the current model (``off`` alone without a model)."""
    model = shell.session.model if shell.session is not None else None
    from caddie.ai.providers.thinking import supported_thinking_levels

    return supported_thinking_levels(model) if model is not None else ["off"]


def pickable_models(shell: Shell) -> list[Model]:
    """The models with a key (and the current one, first when it has none)."""
    assert shell.registry is not None
    models = shell.registry.available()
    current = shell.session.model if shell.session is not None else None
    if current is not None and all(m.ref != current.ref for m in models):
        models.insert(0, current)
    return models


class ModelCommands:
    """``/model /thinking /login /logout``, Shift+Tab's thinking levels and Ctrl+P's model cycling."""

    def __init__(self, shell: Shell) -> None:
        self.shell = shell

    async def cmd_model(self, args: str) -> None:
        shell = self.shell
        session, registry = shell.session, shell.registry
        assert session is not None and registry is not None
        as_default = False  # Ctrl+S in the picker: also the startup default
        if args:
            model = await asyncio.to_thread(registry.resolve, args)  # a local server may be asked about it
        else:
            await asyncio.to_thread(registry.discover_local)  # what local servers serve, their context sizes
            models = pickable_models(shell)
            if not models:
                shell.show_info(Text(registry.no_model_text()), "warning")
                return
            from caddie.modes.interactive.pickers import ModelPicker

            settings = session.settings
            default = (
                f"{settings.default_provider}/{settings.default_model}"
                if settings.default_provider and settings.default_model
                else None
            )
            picker = ModelPicker(models, session.model, default)
            ref = await shell.ask(picker, None, None)
            if ref is None:
                return
            model = next((m for m in models if m.ref == ref), None) or registry.resolve(str(ref))
            as_default = picker.as_default
        if not registry.has_auth(model):
            shell.show_info(f"No key for {model.ref}: {registry.key_hint(model)}.", "warning")
        preload(model.api)
        await session.set_model(model)
        shell.refresh_footer()
        if as_default and not await self._save_default_model(model):
            return
        shell.show_status(f"Default model: {model.ref}" if as_default else f"Model: {model.ref}")
        from caddie.modes.interactive.login import warn_about_extra_usage

        warn_about_extra_usage(shell, model)

    async def _save_default_model(self, model: Model) -> bool:
        """Ctrl+S in the /model picker: ``defaultProvider``/``defaultModel`` in the global settings.json; with
        a model scope (``--models``, ``enabledModels``) the model joins it, as in Pi, so Ctrl+P reaches it."""
        shell = self.shell
        session = shell.session
        assert session is not None
        updates: dict[str, Any] = {"defaultProvider": model.provider, "defaultModel": model.id}
        scoped = session.state().scoped_models
        if scoped and all(m.ref != model.ref for m in scoped):
            session.configure(scoped_models=[*scoped, model])
            enabled = session.settings.get("enabledModels")
            if (
                isinstance(enabled, list)
                and enabled
                and model.ref.lower() not in (str(p).lower() for p in enabled)
            ):
                updates["enabledModels"] = [*enabled, model.ref]
        return await self._save(updates)

    async def _save(self, updates: dict[str, Any]) -> bool:
        settings = self.shell.session.settings  # type: ignore[union-attr]
        path = settings.global_path or agent_dir() / "settings.json"
        try:
            await asyncio.to_thread(settings.save_global, updates)
        except (OSError, ValueError) as e:
            self.shell.show_error(f"Could not save {path}: {e}")
            return False
        return True

    async def cmd_login(self, args: str) -> None:
        from caddie.modes.interactive.login import run_login

        await run_login(self.shell, args)
        self.shell.refresh_footer()

    async def cmd_scoped_models(self, args: str) -> None:
        """Which models Ctrl+P cycles among (scoped_models.py); Ctrl+S there saves ``enabledModels``."""
        from caddie.modes.interactive.scoped_models import Enabled, ScopedModelsScreen

        shell = self.shell
        session, registry = shell.session, shell.registry
        assert session is not None and registry is not None
        await asyncio.to_thread(registry.discover_local)
        models = pickable_models(shell)
        if not models:
            shell.show_info(Text(registry.no_model_text()), "warning")
            return
        by_ref = {m.ref: m for m in models}
        scoped = [m.ref for m in session.state().scoped_models]

        def change(enabled: Enabled) -> None:
            session.configure(scoped_models=[by_ref[r] for r in enabled or [] if r in by_ref])

        def save(enabled: Enabled) -> str | None:
            path = session.settings.global_path
            try:
                session.settings.save_global({"enabledModels": enabled})
            except (OSError, ValueError) as e:
                return f"Could not save {path}: {e}"
            return None

        await shell.ask(ScopedModelsScreen(models, scoped or None, change, save), None, None)

    async def cmd_llama(self, args: str) -> None:  # the llama.cpp router's models (llama.py)
        from caddie.modes.interactive.llama import run_llama

        await run_llama(self.shell)

    async def cmd_logout(self, args: str) -> None:
        from caddie.modes.interactive.login import run_logout

        await run_logout(self.shell, args)
        self.shell.refresh_footer()

    async def cmd_thinking(self, args: str) -> None:
        shell = self.shell
        session = shell.session
        assert session is not None
        levels = list(thinking_levels(shell))
        level = args.strip().lower()
        as_default = False
        if not level:
            from caddie.modes.interactive.pickers import ThinkingPicker

            default = session.settings.default_thinking_level or DEFAULT_THINKING_LEVEL
            picker = ThinkingPicker(levels, session.thinking_level, default)
            chosen = await shell.ask(picker, None, None)
            if not isinstance(chosen, str):
                return
            level, as_default = chosen, picker.as_default
        if level not in THINKING_LEVELS:
            shell.show_error(f"Unknown thinking level '{level}'. Use one of: {', '.join(levels)}.")
            return
        session.set_thinking_level(level)
        shell.refresh_footer()
        if as_default:  # Ctrl+S: the level asked for is saved (the model may clamp what it uses now)
            if await self._save({"defaultThinkingLevel": level}):
                shell.show_status(f"Default thinking level: {level}")
            return
        shell.show_status(f"Thinking level: {session.thinking_level}")

    def cycle_thinking(self) -> None:
        """Shift+Tab: the next thinking level of the model."""
        shell = self.shell
        session = shell.session
        if session is None or session.model is None:
            return
        levels = list(thinking_levels(shell))
        if len(levels) < 2:
            shell.show_status("Current model does not support thinking")
            return
        current = session.thinking_level
        following = levels[(levels.index(current) + 1) % len(levels)] if current in levels else levels[0]
        session.set_thinking_level(following)
        shell.refresh_footer()
        shell.show_status(f"Thinking level: {session.thinking_level}")

    async def cycle_model(self, direction: str) -> None:
        """Ctrl+P / Shift+Ctrl+P: the next / previous model (the ``--models`` scope, else every model)."""
        shell = self.shell
        session = shell.session
        if session is None:
            return
        result = await session.cycle_model("backward" if direction == "backward" else "forward")
        if result is None:
            shell.show_status("No other model to switch to (set --models or enabledModels).")
            return
        model, level = result.model, result.thinking_level
        shell.refresh_footer()
        shell.show_status(f"Switched to {model.ref}" + (f" (thinking {level})" if level != "off" else ""))
        from caddie.modes.interactive.login import warn_about_extra_usage

        warn_about_extra_usage(shell, model)
