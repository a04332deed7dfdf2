"""Built-in commands that are not about the session or the model: ``/hotkeys /help /changelog /quit /copy
/settings``, and Ctrl+G's external editor."""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rich.table import Table
from rich.text import Text

from caddie.ai.messages import AssistantMessage, message_to_json
from caddie.config.paths import agent_dir
from caddie.modes.interactive.commands import hotkey_rows
from caddie.modes.interactive.host import Shell
from caddie.modes.interactive.model_commands import thinking_levels
from caddie.modes.interactive.render import short_path
from caddie.modes.interactive.theme_book import ThemeBook
from caddie.modes.interactive.transcript_view import TranscriptView, plain_lines
from caddie.modes.interactive.whats_new import whats_new

if TYPE_CHECKING:
    from caddie.modes.interactive.settings_dialog import SettingRow
    from caddie.resources.discovery import ResourceItem
    from caddie.runtime.session_api import QueueMode


class AppCommandsHost(Shell, Protocol):
    """What these commands need beyond the ``Shell``."""

    themes: ThemeBook

    def extension_hotkeys(self) -> list[tuple[str, str]]: ...

    def copy_to_clipboard(self, text: str) -> None: ...

    async def suspended_run(self, command: list[str], path: str) -> int:
        """Run a full-screen program (the external editor) with the terminal, caddie repainting after."""
        ...


class AppCommands:
    """``/hotkeys /help /quit /copy /settings`` and the external editor."""

    def __init__(self, shell: AppCommandsHost) -> None:
        self.shell = shell
        self.resources: list[ResourceItem] = []
        """/settings: what can be switched on or off (extensions, skills, prompt templates, packages)."""

    async def cmd_hotkeys(self, args: str) -> None:
        shell = self.shell
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for key, what in [*hotkey_rows(shell.keys), *shell.extension_hotkeys()]:
            table.add_row(key, what)
        shell.show_info(table)

    async def cmd_help(self, args: str) -> None:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for command in self.shell.command_infos():
            origin = "" if command.source == "builtin" else f"  ({Path(command.source).name})"
            table.add_row(f"/{command.name}", Text(command.description + origin))
        intro = Text(
            "Type a message and press Enter. While the agent works, Enter steers it and Alt+Enter queues a "
            "follow-up; Esc stops it. !cmd runs a shell command into the context, !!cmd keeps it out. "
            "/hotkeys lists every key.\n"
        )
        self.shell.show_info(_stack(intro, table))

    async def cmd_changelog(self, args: str) -> None:
        """Pi's /changelog: every entry of caddie's CHANGELOG.md, oldest first (config/changelog.py)."""
        from caddie.config.changelog import full_changelog, read_changelog

        text = full_changelog(await asyncio.to_thread(read_changelog))
        self.shell.show_info(whats_new(text))

    async def cmd_debug(self, args: str) -> None:
        """Pi's hidden /debug: the transcript as drawn (each line with its width) and the agent's messages
        as JSON lines, written to ``caddie-debug.log`` in the agent folder, to attach to a bug report."""
        shell = self.shell
        size = shell.conversation.size
        drawn = debug_lines(shell.conversation)
        messages = [message_to_json(m) for m in shell.session.messages] if shell.session is not None else []
        path = agent_dir() / "caddie-debug.log"
        report = debug_report(drawn, messages, size.width, size.height)
        await asyncio.to_thread(_write_text, path, report)
        shell.show_info(f"✓ Debug log written\n{path}")

    async def cmd_quit(self, args: str) -> None:
        self.shell.request_quit()

    def last_answer(self) -> str | None:
        """The text of the last assistant message that has any."""
        session = self.shell.session
        if session is None:
            return None
        for message in reversed(session.messages):
            if isinstance(message, AssistantMessage) and message.text().strip():
                return message.text()
        return None

    async def cmd_copy(self, args: str) -> None:
        """/copy and Ctrl+X: the last answer to the clipboard (OSC 52, and a local tool when there is one)."""
        shell = self.shell
        text = self.last_answer()
        if text is None:
            shell.show_info("There is no answer to copy yet.")
            return
        shell.copy_to_clipboard(text)  # OSC 52: works over SSH, in terminals that allow it
        tool = await copy_with_local_tool(text)
        where = f" (and {tool})" if tool else ""
        shell.show_status(f"Copied the last answer to the clipboard{where}")

    async def edit_externally(self) -> None:
        """Ctrl+G: edit the prompt in $VISUAL or $EDITOR; what is saved replaces the editor's text."""
        shell = self.shell
        command = external_editor_command(shell.session.settings.external_editor if shell.session else None)
        if command is None:
            shell.show_error(
                "Set $VISUAL or $EDITOR (e.g. export EDITOR=vim), or settings externalEditor, to edit the "
                "prompt in your editor."
            )
            return
        with tempfile.NamedTemporaryFile("w", suffix=".md", prefix="caddie-prompt-", delete=False) as f:
            f.write(shell.editor.expanded_text)
            path = f.name
        try:
            code = await shell.suspended_run(command, path)
            if code != 0:
                shell.show_error(f"The editor exited with status {code}; the prompt is unchanged.")
                return
            text = Path(path).read_text(encoding="utf-8")
        finally:
            Path(path).unlink(missing_ok=True)
        shell.editor.set_text(text[:-1] if text.endswith("\n") else text)
        shell.editor.focus()

    async def cmd_settings(self, args: str) -> None:
        shell = self.shell
        session = shell.session
        assert session is not None
        await self.load_resources()
        from caddie.modes.interactive.settings_dialog import SettingsScreen  # after the first frame

        screen = SettingsScreen(self.settings_rows())
        while True:
            key = await shell.ask(screen, None, None)
            if key is None:
                return
            row = next(r for r in self.settings_rows() if r.key == key)
            value = await shell.ui.select(f"{row.label} (now {row.value})", row.options)
            if value is not None and value != row.value:
                await self.apply_setting(row.key, value)
            screen = SettingsScreen(self.settings_rows(), initial=key)

    def settings_rows(self) -> list[SettingRow]:
        from caddie.modes.interactive.settings_dialog import SettingRow

        shell = self.shell
        session = shell.session
        assert session is not None
        s = session.settings
        rows = [
            SettingRow("thinking", "Thinking level", session.thinking_level, list(thinking_levels(shell))),
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
                shell.themes.current,
                shell.themes.names(),
            ),
        ]
        for item in self.resources:  # what `caddie config` lists, switched the same way
            rows.append(
                SettingRow(f"resource:{item.id}", f"{item.kind.capitalize()} {item.name}", _on(item.enabled),
                           ["on", "off"], item.source if item.on_switch else "applies the next time caddie starts")
            )  # fmt: skip
        return rows

    async def load_resources(self) -> None:
        """The extensions, skills, prompt templates and packages that can be switched in settings."""
        shell = self.shell
        session = shell.session
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
            shell.show_error(f"Could not list extensions, skills and packages: {e}")
            items = []
        self.resources = [
            i for i in items if i.kind == "package" or i.scope == "bundled" or i.settings_scope is not None
        ]

    async def apply_setting(self, key: str, value: str) -> None:
        """Apply a choice from /settings now and write it to the global settings.json."""
        shell = self.shell
        session = shell.session
        assert session is not None
        s = session.settings
        if key == "thinking":
            session.set_thinking_level(value)
            shell.refresh_footer()
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
            shell.themes.use(value)
            updates = {"theme": value}
        else:
            from caddie.errors import ConfigurationError
            from caddie.runtime.resource_config import set_enabled

            item = next(i for i in self.resources if f"resource:{i.id}" == key)
            try:
                said = await asyncio.to_thread(set_enabled, session.cwd, item, value == "on")
            except (OSError, ConfigurationError) as e:
                shell.show_error(str(e))
                return
            await self.load_resources()
            if item.on_switch is not None:  # an extension's item (an MCP server) applies at once
                try:
                    applied = item.on_switch(value == "on")
                    if asyncio.iscoroutine(applied):
                        await applied
                except Exception as e:  # an extension's switch failed: said, the setting is saved
                    shell.show_error(f"{item.kind} {item.name}: {e}")
                shell.show_status(said.rpartition(": ")[2].capitalize())
                return
            shell.show_status(said.rpartition(": ")[2].capitalize() + " (from the next start)")
            return
        path = s.global_path or agent_dir() / "settings.json"
        try:
            await asyncio.to_thread(s.save_global, updates)
        except (OSError, ValueError) as e:
            shell.show_error(f"Could not save {path}: {e}")
            return
        shell.show_status(f"Saved to {short_path(str(path))}")


def debug_lines(view: TranscriptView) -> list[str]:
    """Every line of the transcript as drawn at its width (ANSI styles dropped)."""
    return plain_lines(view.blocks, view, max(1, view.scrollable_content_region.width or 80))


def debug_report(lines: list[str], messages: list[dict[str, Any]], width: int, height: int) -> str:
    """What /debug writes: when, the terminal's size, the drawn lines with their widths, the messages."""
    import json
    from datetime import UTC, datetime

    from rich.cells import cell_len

    return "\n".join(
        [
            f"Debug output at {datetime.now(UTC).isoformat(timespec='milliseconds').replace('+00:00', 'Z')}",
            f"Terminal: {width}x{height}",
            f"Total lines: {len(lines)}",
            "",
            "=== All rendered lines with visible widths ===",
            *(
                f"[{i}] (w={cell_len(line)}) {json.dumps(line, ensure_ascii=False)}"
                for i, line in enumerate(lines)
            ),
            "",
            "=== Agent messages (JSONL) ===",
            *(json.dumps(m, ensure_ascii=False) for m in messages),
            "",
        ]
    )


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


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
