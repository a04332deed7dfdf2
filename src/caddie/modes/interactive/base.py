"""The interactive app's foundation: its widgets, the screen host ``TextualUI`` talks to, footer state, quitting.

``CaddieApp`` (app.py) is built in layers, each a subclass of the one before: ``AppBase`` (here) →
``TranscriptApp`` (transcript.py, session events to widgets) → ``SessionCommands`` (session_commands.py) →
``BuiltinCommands`` (builtin_commands.py) → ``CaddieApp`` (start-up, input, keys).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text
from textual.app import App
from textual.screen import ModalScreen
from textual.widget import Widget

from caddie.ai.model import THINKING_LEVELS
from caddie.errors import CaddieError  # its message is shown alone; others get their type's name
from caddie.modes.interactive.commands import (
    CommandInfo,
    merge_commands,
    resource_commands,
)
from caddie.modes.interactive.conversation import (
    AssistantView,
    Conversation,
    InfoBlock,
    ToolBlock,
)
from caddie.modes.interactive.editor import CompletionMenu, PromptEditor
from caddie.modes.interactive.footer import (
    FooterState,
    PendingMessages,
    StatusFooter,
    WidgetArea,
    WorkingLine,
)
from caddie.modes.interactive.render import short_path
from caddie.modes.interactive.ui import TextualUI, wait_with_timeout

if TYPE_CHECKING:  # the runtime, the agent and the tools are imported after the first frame
    from caddie.ai.model import Model
    from caddie.extensions.api import NotifyLevel, ShortcutSpec
    from caddie.models import ModelRegistry
    from caddie.resources.discovery import ResourceItem
    from caddie.runtime.request import SessionRequest
    from caddie.runtime.session import AgentSession
    from caddie.sandbox import Sandbox

SHUTDOWN_TIMEOUT_S = 5.0

_THINKING_CLASSES = tuple(f"-thinking-{level}" for level in THINKING_LEVELS)


@dataclass
class Startup:
    """What the command line asked the interactive mode to do."""

    request: SessionRequest
    resume_picker: bool = False
    initial_prompts: list[str] = field(default_factory=list)


class AppBase(App[int]):
    """Widgets, state and the screen host; see the module docstring."""

    def __init__(self, startup: Startup, ui: TextualUI | None = None) -> None:
        super().__init__()
        self.startup = startup
        self.ui = ui or TextualUI()
        startup.request.ui = self.ui
        self.session: AgentSession | None = None
        self.registry: ModelRegistry | None = None
        self._resources: list[ResourceItem] = []
        """/settings: what can be switched on or off (extensions, skills, prompt templates, packages)."""
        self.ready = asyncio.Event()
        """Set once the session has started and its transcript is on screen."""
        self.exit_message: str | None = None
        """A start-up problem to print after the screen is gone (``run_interactive`` prints it)."""
        self.shutdown_done = False
        self.tools_expanded = False
        self.thinking_expanded = False
        self._streaming: AssistantView | None = None
        self._tools: dict[str, ToolBlock] = {}
        self._usage: tuple[int, int, int, int, float] = (0, 0, 0, 0, 0.0)
        self._usage_estimated = False
        self._last_ctrl_c = 0.0
        self._last_escape = 0.0
        self._quitting = False
        self._compaction_error_shown = False
        self._rendered = False
        self.theme_names: set[str] = set()
        """caddie's themes (built-in and from theme files), as offered in /settings."""
        self._user_bash_started: float | None = None
        self._early_notices: list[InfoBlock] = []
        self.extension_shortcuts: dict[str, ShortcutSpec] = {}
        """Key → the extension shortcut it runs (``extension_hooks.install_shortcuts``)."""
        self.menu = CompletionMenu()
        self.editor = PromptEditor(self.menu, self.command_infos, lambda: self.busy, cwd=self._cwd)
        self.conversation = Conversation(id="conversation")
        self.pending = PendingMessages()
        self.working = WorkingLine()
        self.above = WidgetArea(id="above-editor")
        self.below = WidgetArea(id="below-editor")
        self.footer = StatusFooter(id="footer")

    # ==============================================================================================
    # Layout

    def compose(self) -> Any:
        yield self.conversation
        yield self.pending
        yield self.working
        yield self.above
        yield self.editor
        yield self.menu
        yield self.below
        yield self.footer

    def _cwd(self) -> str:
        return self.session.cwd if self.session is not None else self.startup.request.cwd

    def _after_suspend(self, _app: App[int]) -> None:
        """Back from Ctrl+Z (``fg``): the terminal was someone else's meanwhile, so redraw everything."""
        self.refresh(layout=True)
        self.screen.refresh(repaint=True, layout=True)
        for widget in self.screen.walk_children(Widget):
            widget.refresh()

    # ==============================================================================================
    # Screen host (used by TextualUI)

    def show_notice(self, message: str, level: NotifyLevel) -> None:
        """An extension's ``ui.notify`` (and session notices): a line in the transcript, where it stays.

        As in Pi: errors read ``Error: …``, warnings ``Warning: …``, information is dimmed. Notices sent
        before the transcript is first drawn are kept and drawn after the history.
        """
        prefix = {"error": "Error: ", "warning": "Warning: "}.get(level, "")
        if prefix and message.startswith(prefix):
            prefix = ""
        block = InfoBlock(Text(prefix + message), level if level in ("warning", "error") else "notice")
        if self._rendered:
            self.conversation.add(block)
        else:
            self._early_notices.append(block)

    def refresh_statuses(self) -> None:
        self._refresh_footer()

    def refresh_widgets(self) -> None:
        self.above.show(self.ui.widgets_at("aboveEditor"))
        self.below.show(self.ui.widgets_at("belowEditor"))

    def refresh_title(self) -> None:
        if self.ui.title is None:
            return
        self.title = self.ui.title
        driver = self._driver
        if driver is not None and not self.is_headless:
            clean = "".join(ch for ch in self.ui.title if ch.isprintable())
            driver.write(f"\x1b]0;{clean}\x07")

    def refresh_working(self) -> None:
        self.working.set_message(self.ui.working_message)

    def get_editor_text(self) -> str:
        return self.editor.text

    def set_editor_text(self, text: str) -> None:
        self.editor.set_text(text)

    async def ask(self, screen: ModalScreen[Any], timeout: float | None, default: Any) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def done(result: Any) -> None:
            if not future.done():
                future.set_result(default if result is None else result)

        await self.push_screen(screen, callback=done)
        try:
            return await wait_with_timeout(future, timeout)
        except TimeoutError:
            if self.screen is screen:
                screen.dismiss(None)
            return default

    # ==============================================================================================
    # State

    @property
    def busy(self) -> bool:
        return self.session is not None and self.session.is_streaming

    def command_infos(self) -> list[CommandInfo]:
        extension: list[CommandInfo] = []
        if self.session is not None:
            for spec in self.session.extensions.commands().values():
                extension.append(
                    CommandInfo(spec.name, spec.description or "", spec.source, spec.get_argument_completions)
                )
            extension += resource_commands(
                [
                    (
                        c.name,
                        f"{c.argument_hint} — {c.description}" if c.argument_hint else c.description or "",
                        f"{c.kind} · {c.scope}",
                    )
                    for c in self.session.commands()
                    if c.kind != "extension"
                ]
            )
        merged = merge_commands(extension)
        return [self._with_arguments(c) for c in merged]

    def _with_arguments(self, command: CommandInfo) -> CommandInfo:
        if command.name == "model" and self.registry is not None:
            refs = [m.ref for m in self._pickable_models()]
            return CommandInfo(command.name, command.description, command.source, lambda _prefix: refs)
        if command.name == "thinking":
            levels = list(self._thinking_levels())
            return CommandInfo(command.name, command.description, command.source, lambda _prefix: levels)
        return command

    def _thinking_levels(self) -> Sequence[str]:
        model = self.session.model if self.session is not None else None
        from caddie.ai.providers.thinking import supported_thinking_levels

        return supported_thinking_levels(model) if model is not None else ["off"]

    def _pickable_models(self) -> list[Model]:
        assert self.registry is not None
        models = self.registry.available()
        current = self.session.model if self.session is not None else None
        if current is not None and all(m.ref != current.ref for m in models):
            models.insert(0, current)
        return models

    def _refresh_footer(self) -> None:
        session = self.session
        if session is None:
            self.footer.show(FooterState(short_path(self.startup.request.cwd), None, None, None))
            return
        model = session.model
        usage = session.context_usage()
        inp, out, cr, cw, cost = self._usage
        self.footer.show(
            FooterState(
                cwd=short_path(session.cwd),
                session_name=session.store.session_name(),
                model=model.ref if model else None,
                thinking=session.thinking_level if model is not None and model.reasoning else None,
                input_tokens=inp,
                output_tokens=out,
                cache_read=cr,
                cache_write=cw,
                cost=cost,
                context_percent=usage.percent if usage else None,
                context_window=usage.context_window if usage else 0,
                statuses=self.ui.statuses,
                sandbox=_sandbox_text(session.state().sandbox),
                tokens_estimated=self._usage_estimated,
                context_estimated=usage.estimated if usage else False,
            )
        )
        self.editor.remove_class(*_THINKING_CLASSES)
        if model is not None and model.reasoning:
            self.editor.add_class(f"-thinking-{session.thinking_level}")

    # ==============================================================================================
    # The transcript

    def show_info(self, content: Text | Table | str, level: str = "info") -> None:
        self.conversation.add(InfoBlock(Text(content) if isinstance(content, str) else content, level))

    def show_error(self, message: str) -> None:
        self.show_info(Text(message), "error")

    # ==============================================================================================
    # Background work, quitting

    def spawn(self, work: Awaitable[Any]) -> None:
        """Run UI-started work in the background; a failure becomes an error line, never a crash."""

        async def guarded() -> None:
            try:
                await work
            except Exception as e:
                self.show_error(str(e) if isinstance(e, CaddieError) else f"{type(e).__name__}: {e}")

        self.run_worker(guarded(), group="work", exit_on_error=False)

    def _modal(self) -> ModalScreen[Any] | None:
        return self.screen if isinstance(self.screen, ModalScreen) else None

    def request_quit(self) -> None:
        """Quit after ``session_shutdown`` has run (Ctrl+C twice, Ctrl+D, /quit, Ctrl+Q, SIGTERM)."""
        if not self._quitting:
            self._quitting = True
            self.run_worker(self._quit(), exit_on_error=False)

    async def _quit(self) -> None:
        try:
            await self.shutdown_session()
        finally:
            self.exit(0)

    async def shutdown_session(self) -> None:
        """``session_shutdown`` for extensions, once, while the screen still exists."""
        session = self.session
        if session is None or self.shutdown_done:
            return
        self.shutdown_done = True
        session.abort()
        try:
            await asyncio.wait_for(session.shutdown("quit"), SHUTDOWN_TIMEOUT_S)
        except TimeoutError:
            pass

    def _require_idle(self, what: str) -> bool:
        if self.busy:
            self.show_error(f"Wait for the agent to finish (or press Esc) before {what}.")
            return False
        return True


def _sandbox_text(sandbox: Sandbox) -> str | None:
    """The footer's sandbox part: ``workspace-write, network off``; None while it is off."""
    return sandbox.summary() if sandbox.active else None
