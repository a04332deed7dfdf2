"""Built-in slash commands: where they are dispatched (``run_builtin``), and those not about the session.

To add a built-in command: a ``CommandInfo`` in ``commands.BUILTIN_COMMANDS`` (name, description) and a
``cmd_<name>(self, args)`` method here (or in session_commands.py when it works on the session).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from caddie.ai.messages import AssistantMessage
from caddie.ai.model import THINKING_LEVELS
from caddie.ai.providers.preload import preload
from caddie.config.paths import agent_dir
from caddie.modes.interactive.commands import HOTKEYS
from caddie.modes.interactive.render import short_path
from caddie.modes.interactive.session_commands import SessionCommands
from caddie.modes.interactive.settings_dialog import SettingRow, SettingsScreen

if TYPE_CHECKING:
    from caddie.runtime.session_api import QueueMode


class BuiltinCommands(SessionCommands):
    """``/model /thinking /hotkeys /help /quit /copy /settings``, and the dispatch of every built-in."""

    # ==============================================================================================
    # Built-in commands

    async def run_builtin(self, name: str, args: str) -> None:
        handler = getattr(self, f"cmd_{name}")
        await handler(args)

    async def cmd_model(self, args: str) -> None:
        session, registry = self.session, self.registry
        assert session is not None and registry is not None
        if args:
            model = await asyncio.to_thread(registry.resolve, args)  # a local server may be asked about it
        else:
            await asyncio.to_thread(
                registry.discover_local
            )  # what local servers serve, and their context sizes
            models = self._pickable_models()
            if not models:
                self.show_info(Text(registry.no_model_text()), "warning")
                return
            from caddie.modes.interactive.pickers import ModelPicker

            ref = await self.ask(ModelPicker(models, session.model), None, None)
            if ref is None:
                return
            model = next((m for m in models if m.ref == ref), None) or registry.resolve(str(ref))
        if not registry.has_auth(model):
            self.show_info(f"No key for {model.ref}: {registry.key_hint(model)}.", "warning")
        preload(model.api)
        await session.set_model(model)
        self._refresh_footer()
        self.notify(f"Model: {model.ref}", timeout=2)
        from caddie.modes.interactive.login import warn_about_extra_usage

        warn_about_extra_usage(self, model)

    async def cmd_login(self, args: str) -> None:  # /login and /logout live in login.py
        from caddie.modes.interactive.login import run_login

        await run_login(self, args)
        self._refresh_footer()

    async def cmd_llama(self, args: str) -> None:  # the llama.cpp router's models (llama.py)
        from caddie.modes.interactive.llama import run_llama

        await run_llama(self)

    async def cmd_logout(self, args: str) -> None:
        from caddie.modes.interactive.login import run_logout

        await run_logout(self, args)
        self._refresh_footer()

    async def cmd_thinking(self, args: str) -> None:
        session = self.session
        assert session is not None
        levels = list(self._thinking_levels())
        level = args.strip().lower()
        if not level:
            chosen = await self.ui.select(f"Thinking level (now {session.thinking_level})", levels)
            if chosen is None:
                return
            level = chosen
        if level not in THINKING_LEVELS:
            self.show_error(f"Unknown thinking level '{level}'. Use one of: {', '.join(levels)}.")
            return
        session.set_thinking_level(level)
        self._refresh_footer()
        self.notify(f"Thinking: {session.thinking_level}", timeout=2)

    async def cmd_hotkeys(self, args: str) -> None:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        from caddie.modes.interactive.extension_hooks import hotkey_rows

        for key, what in [*HOTKEYS, *hotkey_rows(self)]:
            table.add_row(key, what)
        self.show_info(table)

    async def cmd_help(self, args: str) -> None:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for command in self.command_infos():
            origin = "" if command.source == "builtin" else f"  ({Path(command.source).name})"
            table.add_row(f"/{command.name}", Text(command.description + origin))
        intro = Text(
            "Type a message and press Enter. While the agent works, Enter steers it and Alt+Enter queues a "
            "follow-up; Esc stops it. !cmd runs a shell command into the context, !!cmd keeps it out. "
            "/hotkeys lists every key.\n"
        )
        self.show_info(_stack(intro, table))

    async def cmd_quit(self, args: str) -> None:
        self.request_quit()

    def last_answer(self) -> str | None:
        """The text of the last assistant message that has any."""
        session = self.session
        if session is None:
            return None
        for message in reversed(session.messages):
            if isinstance(message, AssistantMessage) and message.text().strip():
                return message.text()
        return None

    async def cmd_copy(self, args: str) -> None:
        """/copy and Ctrl+X: the last answer to the clipboard (OSC 52, and a local tool when there is one)."""
        text = self.last_answer()
        if text is None:
            self.show_info("There is no answer to copy yet.")
            return
        self.copy_to_clipboard(text)  # OSC 52: works over SSH, in terminals that allow it
        tool = await copy_with_local_tool(text)
        where = f" (and {tool})" if tool else ""
        self.notify(f"Copied the last answer to the clipboard{where}.", timeout=2)

    async def edit_externally(self) -> None:
        """Ctrl+G: edit the prompt in $VISUAL or $EDITOR; what is saved replaces the editor's text."""
        command = external_editor_command(self.session.settings.external_editor if self.session else None)
        if command is None:
            self.show_error(
                "Set $VISUAL or $EDITOR (e.g. export EDITOR=vim), or settings externalEditor, to edit the "
                "prompt in your editor."
            )
            return
        with tempfile.NamedTemporaryFile("w", suffix=".md", prefix="caddie-prompt-", delete=False) as f:
            f.write(self.editor.text)
            path = f.name
        try:
            if self.is_headless or self._driver is None or not self._driver.can_suspend:
                code = await asyncio.to_thread(run_editor, command, path)
            else:
                with self.suspend():  # the editor gets the terminal; caddie repaints afterwards
                    code = run_editor(command, path)
            if code != 0:
                self.show_error(f"The editor exited with status {code}; the prompt is unchanged.")
                return
            text = Path(path).read_text(encoding="utf-8")
        finally:
            Path(path).unlink(missing_ok=True)
        self.editor.set_text(text[:-1] if text.endswith("\n") else text)
        self.editor.focus()

    async def cmd_settings(self, args: str) -> None:
        session = self.session
        assert session is not None
        await self._load_resources()
        screen = SettingsScreen(self._settings_rows())
        while True:
            key = await self.ask(screen, None, None)
            if key is None:
                return
            row = next(r for r in self._settings_rows() if r.key == key)
            value = await self.ui.select(f"{row.label} (now {row.value})", row.options)
            if value is not None and value != row.value:
                await self._apply_setting(row.key, value)
            screen = SettingsScreen(self._settings_rows(), initial=key)

    def _settings_rows(self) -> list[SettingRow]:
        session = self.session
        assert session is not None
        s = session.settings
        rows = [
            SettingRow("thinking", "Thinking level", session.thinking_level, list(self._thinking_levels())),
            SettingRow("steeringMode", "Steering mode", s.steering_mode, ["one-at-a-time", "all"]),
            SettingRow("followUpMode", "Follow-up mode", s.follow_up_mode, ["one-at-a-time", "all"]),
            SettingRow("compaction.enabled", "Auto-compaction", _on(s.compaction_enabled), ["on", "off"]),
            SettingRow("retry.enabled", "Retry on errors", _on(s.retry_enabled), ["on", "off"]),
            SettingRow(
                "warnings.anthropicExtraUsage",
                "Anthropic extra usage",
                _on(s.get("warnings.anthropicExtraUsage") is not False),
                ["on", "off"],
                "warn when a Claude subscription login is billed per token",
            ),
            SettingRow(
                "theme",
                "Theme",
                self.theme,
                sorted(self.theme_names),
            ),
        ]
        for item in self._resources:  # what `caddie config` lists, switched the same way
            rows.append(
                SettingRow(f"resource:{item.id}", f"{item.kind.capitalize()} {item.name}", _on(item.enabled),
                           ["on", "off"], item.source if item.on_switch else "applies the next time caddie starts")
            )  # fmt: skip
        return rows

    async def _load_resources(self) -> None:
        """The extensions, skills, prompt templates and packages that can be switched in settings."""
        session = self.session
        assert session is not None
        from caddie.errors import ConfigurationError
        from caddie.runtime.resource_config import list_resources

        try:
            items, _ = await asyncio.to_thread(
                list_resources,
                session.cwd,
                trust=session.state().project_trusted,
                extensions=session.extensions.extensions,
            )
        except (OSError, ConfigurationError) as e:
            self.show_error(f"Could not list extensions, skills and packages: {e}")
            items = []
        self._resources = [
            i for i in items if i.kind == "package" or i.scope == "bundled" or i.settings_scope is not None
        ]

    async def _apply_setting(self, key: str, value: str) -> None:
        """Apply a choice from /settings now and write it to the global settings.json."""
        session = self.session
        assert session is not None
        s = session.settings
        if key == "thinking":
            session.set_thinking_level(value)
            self._refresh_footer()
            updates: dict[str, Any] = {"defaultThinkingLevel": value}
        elif key in ("steeringMode", "followUpMode"):
            mode: QueueMode = "all" if value == "all" else "one-at-a-time"
            if key == "steeringMode":
                session.configure(steering_mode=mode)
            else:
                session.configure(follow_up_mode=mode)
            updates = {key: value}
        elif key in ("compaction.enabled", "retry.enabled", "warnings.anthropicExtraUsage"):
            section, _, name = key.partition(".")
            updates = {section: {name: value == "on"}}
        elif key == "theme":
            self.theme = value
            updates = {"theme": value}
        else:
            from caddie.errors import ConfigurationError
            from caddie.runtime.resource_config import set_enabled

            item = next(i for i in self._resources if f"resource:{i.id}" == key)
            try:
                said = await asyncio.to_thread(set_enabled, session.cwd, item, value == "on")
            except (OSError, ConfigurationError) as e:
                self.show_error(str(e))
                return
            await self._load_resources()
            if item.on_switch is not None:  # an extension's item (an MCP server) applies at once
                try:
                    applied = item.on_switch(value == "on")
                    if asyncio.iscoroutine(applied):
                        await applied
                except Exception as e:
                    self.show_error(f"{item.kind} {item.name}: {e}")
                self.notify(said.rpartition(": ")[2].capitalize(), timeout=3)
                return
            self.notify(said.rpartition(": ")[2].capitalize() + " (from the next start)", timeout=3)
            return
        path = s.global_path or agent_dir() / "settings.json"
        try:
            await asyncio.to_thread(s.save_global, updates)
        except (OSError, ValueError) as e:
            self.show_error(f"Could not save {path}: {e}")
            return
        self.notify(f"Saved to {short_path(str(path))}", timeout=2)


def _on(flag: bool) -> str:
    return "on" if flag else "off"


def external_editor_command(configured: str | None = None) -> list[str] | None:
    """Settings ``externalEditor`` (``configured``), else ``$VISUAL`` or ``$EDITOR``, split like a shell
    would, if set."""
    for value in (configured or "", os.environ.get("VISUAL", ""), os.environ.get("EDITOR", "")):
        if value.strip():
            return shlex.split(value)
    return None


def run_editor(command: list[str], path: str) -> int:
    try:
        return subprocess.call([*command, path])
    except OSError:
        return 127


CLIPBOARD_TOOLS: tuple[tuple[str, ...], ...] = (
    ("wl-copy",),
    ("xclip", "-selection", "clipboard"),
    ("xsel", "--clipboard", "--input"),
    ("pbcopy",),
)


async def copy_with_local_tool(text: str) -> str | None:
    """Copy with the first clipboard tool on PATH (Wayland, X11, macOS); its name, or None."""
    for command in CLIPBOARD_TOOLS:
        if command[0] == "wl-copy" and not os.environ.get("WAYLAND_DISPLAY"):
            continue
        if command[0] in ("xclip", "xsel") and not os.environ.get("DISPLAY"):
            continue
        exe = shutil.which(command[0])
        if exe is None:
            continue
        try:
            proc = await asyncio.create_subprocess_exec(
                exe, *command[1:], stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
            await asyncio.wait_for(proc.communicate(text.encode("utf-8")), 5)
        except (OSError, TimeoutError):
            continue
        if proc.returncode == 0:
            return command[0]
    return None


def _stack(*parts: Text | Table) -> Table:
    grid = Table.grid()
    for part in parts:
        grid.add_row(part)
    return grid
