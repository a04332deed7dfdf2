"""The interactive terminal UI: a Textual app that views one ``AgentSession`` and drives it.

Layout, top to bottom: the conversation, queued messages, the working line, extension widgets above the
editor, the editor, slash-command completions, widgets below the editor, the footer.

Start-up happens inside the running app (so the trust question, the session picker of ``-r`` and any
dialog an extension opens in ``session_start`` have a screen): trust → build the session → attach
compaction → ``session_start`` → render the transcript → initial prompts. Every session event is turned
into a widget change here; nothing in this module holds agent logic.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

from rich.table import Table
from rich.text import Text
from textual.app import App
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widget import Widget

from caddie import __version__
from caddie.agent.events import (
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
)
from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ToolResultMessage,
    UserMessage,
)
from caddie.ai.model import THINKING_LEVELS, Model
from caddie.ai.providers.preload import preload, wait_preloaded
from caddie.ai.registry import ModelNotFound, ModelRegistry, supported_thinking_levels
from caddie.config.paths import agent_dir
from caddie.extensions.api import NotifyLevel
from caddie.modes.interactive.commands import (
    BUILTIN_NAMES,
    HOTKEYS,
    CommandInfo,
    merge_commands,
    parse_command,
    resource_commands,
)
from caddie.modes.interactive.conversation import (
    AssistantView,
    BashBlock,
    Conversation,
    CustomBlock,
    ExpandableBlock,
    InfoBlock,
    RunningLine,
    SummaryBlock,
    ThinkingBlock,
    ToolBlock,
    UserBlock,
    summary_block,
    user_text,
)
from caddie.modes.interactive.dialogs import CancellableScreen
from caddie.modes.interactive.editor import CompletionMenu, History, PromptEditor
from caddie.modes.interactive.footer import (
    FooterState,
    PendingMessages,
    StatusFooter,
    WidgetArea,
    WorkingLine,
)
from caddie.modes.interactive.pickers import (
    ForkPicker,
    ModelPicker,
    SessionPicker,
    TreePicker,
    all_sessions,
)
from caddie.modes.interactive.render import content_text, format_cost, format_count, short_path, usage_totals
from caddie.modes.interactive.settings_dialog import SettingRow, SettingsScreen
from caddie.modes.interactive.themes import DARK, builtin_themes, discover_themes
from caddie.modes.interactive.ui import TextualUI, wait_with_timeout
from caddie.resources.discovery import ResourceItem
from caddie.runtime.factory import SessionRequest, SetupError, load_extension_set, open_session
from caddie.runtime.resource_config import ConfigError, list_resources, set_enabled
from caddie.runtime.session import AgentSession, SessionError
from caddie.runtime.session_events import (
    AgentSettledEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    CompactionEndEvent,
    CompactionStartEvent,
    ExtensionErrorEvent,
    NoticeEvent,
    QueueUpdateEvent,
    SessionEvent,
)
from caddie.runtime.trust import project_has_code, remember_trust, remembered_trust
from caddie.session.entries import MessageEntry
from caddie.session.store import SessionSummary, list_sessions

T = TypeVar("T")

HISTORY_LIMIT = 200
"""Messages rendered when a session opens; older ones stay reachable through /tree."""
DOUBLE_PRESS_S = 1.0
"""Two Ctrl+C within this many seconds quit; two Esc on an empty editor open /tree."""
SHUTDOWN_TIMEOUT_S = 5.0

TRUST_QUESTION = (
    "{cwd} has project-local caddie configuration (.caddie/extensions or security-relevant settings). "
    "Trusting it lets caddie load and run that code and those settings. Your answer is remembered for "
    "this directory."
)

_THINKING_CLASSES = tuple(f"-thinking-{level}" for level in THINKING_LEVELS)


@dataclass
class Startup:
    """What the command line asked the interactive mode to do."""

    request: SessionRequest
    resume_picker: bool = False
    initial_prompts: list[str] = field(default_factory=list)


class CaddieApp(App[int], inherit_bindings=False):
    """See the module docstring."""

    TITLE = "caddie"
    ENABLE_COMMAND_PALETTE = False
    CSS = """
    Screen { layout: vertical; }
    #editor.-thinking-minimal, #editor.-thinking-low { border-top: solid $secondary; border-bottom: solid $secondary; }
    #editor.-thinking-medium { border-top: solid $accent; border-bottom: solid $accent; }
    #editor.-thinking-high, #editor.-thinking-xhigh, #editor.-thinking-max {
        border-top: solid $warning; border-bottom: solid $warning;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c", "ctrl_c", show=False, priority=True),
        Binding("escape", "escape", show=False),
        Binding("ctrl+o", "toggle_tools", show=False),
        Binding("ctrl+t", "toggle_thinking", show=False),
        Binding("ctrl+l", "pick_model", show=False),
        Binding("ctrl+p", "cycle_model('forward')", show=False, priority=True),
        Binding("ctrl+shift+p", "cycle_model('backward')", show=False, priority=True),
        Binding("ctrl+q", "quit", show=False),
    ]

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
        self._last_ctrl_c = 0.0
        self._last_escape = 0.0
        self._quitting = False
        self._compaction_error_shown = False
        self._rendered = False
        self.theme_names: set[str] = set()
        """caddie's themes (built-in and from theme files), as offered in /settings."""
        self._user_bash_started: float | None = None
        self._early_notices: list[InfoBlock] = []
        self.menu = CompletionMenu()
        self.editor = PromptEditor(self.menu, self.command_infos, lambda: self.busy, cwd=self._cwd)
        self.conversation = Conversation(id="conversation")
        self.pending = PendingMessages()
        self.working = WorkingLine()
        self.above = WidgetArea(id="above-editor")
        self.below = WidgetArea(id="below-editor")
        self.footer = StatusFooter(id="footer")

    # ==============================================================================================
    # Layout and start-up

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

    def on_mount(self) -> None:
        for theme in builtin_themes().values():
            self.register_theme(theme)
            self.theme_names.add(theme.name)
        self.theme = DARK
        self.app_resume_signal.subscribe(self, self._after_suspend)
        self.ui.attach(self)
        self.editor.focus()
        self._refresh_footer()
        self.run_worker(self._bootstrap(), name="startup", exit_on_error=False)

    async def _bootstrap(self) -> None:
        try:
            session = await self._open_session()
        except SetupError as e:
            self.exit_message = str(e)
            self.exit(2, return_code=2)
            return
        except Exception as e:  # a bug, not a user mistake: leave the terminal cleanly and say what broke
            self.exit_message = f"start-up failed: {type(e).__name__}: {e}"
            self.exit(1, return_code=1)
            return
        if session is None:
            self.exit(0)
            return
        for prompt in self.startup.initial_prompts:
            await self._prompt(prompt, None)
            await session.wait_for_idle()

    async def _open_session(self) -> AgentSession | None:
        request = self.startup.request
        cwd = str(Path(request.cwd).expanduser().resolve())
        if request.trust is None and await asyncio.to_thread(_must_ask_trust, cwd):
            trusted = await self.ui.confirm("Trust this project?", TRUST_QUESTION.format(cwd=cwd))
            await asyncio.to_thread(remember_trust, cwd, trusted)
            if trusted:
                request.trust = True
                request.preloaded = await off_loop(
                    load_extension_set(
                        cwd,
                        extension_paths=request.extension_paths,
                        no_extensions=request.no_extensions,
                        trust=True,
                        inline=request.inline_extensions,
                    )
                )
        if self.startup.resume_picker:
            path = await self._pick_session(cwd, None)
            if path is False:
                self.ui.notify("No saved sessions for this directory yet; starting a new one.")
            elif path is None:
                return None
            else:
                request.session = "file"
                request.session_file = str(path)
        # Reading settings, models.json and the session file, importing extensions: all in a worker
        # thread, so the screen keeps answering keys while a large session loads.
        build = await off_loop(open_session(request))
        session = build.session
        self.session = session
        self.registry = build.registry
        if session.model is not None:
            preload(session.model.api)  # the SDK is usually imported before the first prompt is typed
        await self._load_themes()
        session.subscribe(self._on_event)
        session.on_shutdown = self.request_quit  # ctx.shutdown(): quit once the agent is idle
        await session.start(build.reason)
        await self.render_session()
        for warning in build.warnings:
            self.show_info(Text(warning), "warning")
        if session.model is None:
            self.show_info(Text(build.registry.no_model_text()), "warning")
        self.ready.set()
        return session

    def _after_suspend(self, _app: App[int]) -> None:
        """Back from Ctrl+Z (``fg``): the terminal was someone else's meanwhile, so redraw everything."""
        self.refresh(layout=True)
        self.screen.refresh(repaint=True, layout=True)
        for widget in self.screen.walk_children(Widget):
            widget.refresh()

    async def _load_themes(self) -> None:
        """Custom themes (files read in a worker thread), then the one settings ``"theme"`` names."""
        session = self.session
        assert session is not None
        places = [agent_dir() / "themes"]
        if session.options.project_trusted:
            places.append(Path(session.cwd) / ".caddie" / "themes")
        for place in session.settings.get("themes", []) or []:
            if isinstance(place, str):
                places.append(Path(session.cwd) / Path(place).expanduser())
        themes, warnings = await asyncio.to_thread(discover_themes, places)
        for theme in themes.values():
            self.register_theme(theme)
            self.theme_names.add(theme.name)
        for warning in warnings:
            self.show_notice(warning, "warning")
        wanted = session.settings.get("theme") or DARK
        if isinstance(wanted, str) and wanted in themes:
            self.theme = wanted
        else:
            self.show_notice(
                f'settings "theme" is {wanted!r}; the themes are: {", ".join(sorted(themes))}. Using dark.',
                "warning",
            )

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
            for spec in self.session.runner.commands().values():
                extension.append(
                    CommandInfo(spec.name, spec.description or "", spec.source, spec.get_argument_completions)
                )
            extension += resource_commands(self.session.resource_commands())
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
        usage = session.get_context_usage()
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

    def _header(self) -> InfoBlock:
        text = Text()
        text.append(f"caddie {__version__}", style="bold")
        session = self.session
        if session is not None:
            names = [e.name for e in session.runner.extensions]
            if names:
                text.append("  extensions: " + ", ".join(names), style="dim")
        text.append(
            "\nenter send · esc stop · ctrl+c twice quit · / commands · !cmd shell · @ files · /hotkeys",
            style="dim",
        )
        return InfoBlock(text)

    async def render_session(self) -> None:
        """Redraw the transcript from the session's current branch (after start, /new, /resume, /tree…)."""
        session = self.session
        assert session is not None
        self._streaming = None
        self._tools = {}
        await self.conversation.reset()
        widgets: list[Widget] = [self._header()]
        messages = session.messages
        if len(messages) > HISTORY_LIMIT:
            skipped = len(messages) - HISTORY_LIMIT
            widgets.append(InfoBlock(Text(f"… {skipped} earlier messages (see /tree)")))
            messages = messages[-HISTORY_LIMIT:]
        for message in messages:
            widget = self._widget_for(message)
            if widget is not None:
                widgets.append(widget)
        widgets.extend(self._early_notices)
        self._early_notices = []
        await self.conversation.mount_all(widgets)
        self._rendered = True
        self.conversation.follow()
        entries = session.store.entries()
        all_messages = [e.message for e in entries if isinstance(e, MessageEntry)]
        self._usage = usage_totals(all_messages)
        self.editor.prompt_history = History(
            [user_text(m) for m in all_messages if isinstance(m, UserMessage)]
        )
        self.pending.show([], [])
        self._refresh_footer()

    def _assistant_view(self, message: AssistantMessage | None = None) -> AssistantView:
        view = AssistantView(
            self.session.cwd if self.session else None, self.tools_expanded, self.thinking_expanded, message
        )
        if message is not None:
            self._tools.update(view.tool_blocks)
        return view

    def _widget_for(self, message: AgentMessage) -> Widget | None:
        if isinstance(message, UserMessage):
            return UserBlock(user_text(message))
        if isinstance(message, AssistantMessage):
            return self._assistant_view(message)
        if isinstance(message, ToolResultMessage):
            text = content_text(message.content)
            existing = self._tools.get(message.tool_call_id)
            if existing is not None:
                existing.finish(text, message.details, message.is_error)
                return None
            orphan = ToolBlock(message.tool_call_id, message.tool_name, {}, None, self.tools_expanded)
            orphan.finish(text, message.details, message.is_error)
            return orphan
        if isinstance(message, CustomMessage):
            return CustomBlock(message) if message.display else None
        if isinstance(message, BashExecutionMessage):
            started = self._user_bash_started
            duration = time.monotonic() - started if started is not None else None
            return BashBlock(message, self.tools_expanded, duration)
        if isinstance(message, CompactionSummaryMessage | BranchSummaryMessage):
            return summary_block(message, self.tools_expanded)
        return None

    def _on_event(self, event: SessionEvent) -> None:
        """Every session event, as it happens (called inside the agent loop: keep it cheap)."""
        if isinstance(event, MessageUpdateEvent):
            if self._streaming is not None:
                created = self._streaming.apply(event.assistant_message_event)
                if created is not None:
                    self._tools[created.call_id] = created
        elif isinstance(event, MessageStartEvent):
            self._message_start(event.message)
        elif isinstance(event, MessageEndEvent):
            self._message_end(event.message)
        elif isinstance(event, ToolExecutionStartEvent):
            if (block := self._tools.get(event.tool_call_id)) is not None:
                block.start(event.args)
        elif isinstance(event, ToolExecutionUpdateEvent):
            if (block := self._tools.get(event.tool_call_id)) is not None:
                block.progress(event.partial_result)
        elif isinstance(event, ToolExecutionEndEvent):
            if (block := self._tools.get(event.tool_call_id)) is not None:
                result = event.result
                block.finish(content_text(list(result.content)), result.details, event.is_error)
        elif isinstance(event, AgentStartEvent):
            self.working.set_active(True)
        elif isinstance(event, AgentSettledEvent):
            self.working.set_active(False)
            self._refresh_footer()
        elif isinstance(event, QueueUpdateEvent):
            self.pending.show(event.steering, event.follow_up)
        elif isinstance(event, AutoRetryStartEvent):
            self.working.set_message(
                f"Retrying ({event.attempt}/{event.max_attempts}) in {event.delay_ms / 1000:.0f}s: "
                f"{event.error_message}"
            )
        elif isinstance(event, AutoRetryEndEvent):
            self.working.set_message(self.ui.working_message)
            if not event.success:
                self.show_error(f"Gave up after {event.attempt} retries: {event.final_error or 'error'}")
        elif isinstance(event, CompactionStartEvent):
            self.working.set_active(True)
            self.working.set_message(f"Compacting the context ({event.reason})…")
        elif isinstance(event, CompactionEndEvent):
            self._compaction_end(event)
        elif isinstance(event, ExtensionErrorEvent):
            self.show_error(f"Extension {event.extension_path} failed in {event.event}: {event.error}")
        elif isinstance(event, NoticeEvent):
            self.show_notice(event.message, event.level)

    def _message_start(self, message: AgentMessage) -> None:
        if isinstance(message, AssistantMessage):
            self._streaming = self._assistant_view()
            self.conversation.add(self._streaming)
        elif not isinstance(message, ToolResultMessage):
            widget = self._widget_for(message)
            if widget is not None:
                self.conversation.add(widget)

    def _compaction_end(self, event: CompactionEndEvent) -> None:
        self.working.set_message(self.ui.working_message)
        self.working.set_active(self.busy)
        if event.error_message:
            self._compaction_error_shown = True
            message = event.error_message
            self.show_error(
                message
                if message.startswith(("Compaction", "Auto-", "Context"))
                else f"Compaction failed: {message}"
            )
        elif event.aborted:
            self.show_info("Compaction aborted.", "warning")
        elif event.result is not None:
            tokens = getattr(event.result, "tokens_before", None)
            summary = getattr(event.result, "summary", "")
            title = f"⟲ Context compacted ({event.reason}" + (
                f", {tokens:,} tokens before)" if isinstance(tokens, int) else ")"
            )
            self.conversation.add(SummaryBlock(title, str(summary), self.tools_expanded))
        self._refresh_footer()

    def _message_end(self, message: AgentMessage) -> None:
        if isinstance(message, AssistantMessage):
            view = self._streaming
            if view is None:
                view = self._assistant_view(message)
                self.conversation.add(view)
            else:
                for block in view.finish(message):
                    self._tools[block.call_id] = block
            self._streaming = None
            self._add_usage(message)
            self._refresh_footer()
        elif isinstance(message, ToolResultMessage):
            pending = self._tools.get(message.tool_call_id)
            if pending is not None and pending.status not in ("done", "error"):
                pending.finish(content_text(message.content), message.details, message.is_error)
            self._add_usage(message)

    def _add_usage(self, message: AssistantMessage | ToolResultMessage) -> None:
        usage = message.usage
        if usage is None:
            return
        inp, out, cr, cw, cost = self._usage
        self._usage = (
            inp + usage.input,
            out + usage.output,
            cr + usage.cache_read,
            cw + usage.cache_write,
            cost + usage.cost.total,
        )

    # ==============================================================================================
    # Input

    def on_prompt_editor_submitted(self, event: PromptEditor.Submitted) -> None:
        text = event.text
        if not text.strip():
            return
        if self.session is None:
            self.notify("Still starting up…", severity="warning")
            return
        self.editor.prompt_history.add(text)
        self.editor.set_text("")
        self.conversation.follow()
        self.handle_input(text, follow_up=event.kind == "alt")

    def handle_input(self, text: str, follow_up: bool = False) -> None:
        """What Enter does with the editor's text: shell command, built-in command, or a message."""
        session = self.session
        assert session is not None
        if text.startswith("!"):
            exclude = text.startswith("!!")
            command = text[2:] if exclude else text[1:]
            if command.strip():
                self.spawn(self._user_bash(command.strip(), exclude))
                return
        parsed = parse_command(text.strip())
        if parsed is not None and parsed[0] in BUILTIN_NAMES:
            self.spawn(self.run_builtin(*parsed))
            return
        behavior: Literal["steer", "follow_up"] | None = None
        if self.busy:
            behavior = "follow_up" if follow_up else "steer"
        self.spawn(self._prompt(text, behavior))

    def spawn(self, work: Awaitable[Any]) -> None:
        """Run UI-started work in the background; a failure becomes an error line, never a crash."""

        async def guarded() -> None:
            try:
                await work
            except (SessionError, ModelNotFound) as e:
                self.show_error(str(e))
            except Exception as e:
                self.show_error(f"{type(e).__name__}: {e}")

        self.run_worker(guarded(), group="work", exit_on_error=False)

    async def _user_bash(self, command: str, exclude: bool) -> None:
        session = self.session
        assert session is not None
        if session.is_streaming:  # its output must not land in the middle of the agent's turn
            self.notify(f"!{command} runs when the agent has finished.", timeout=3)
            await session.wait_for_idle()
        running = RunningLine(f"$ {command}")
        self.conversation.add(running)
        self._user_bash_started = time.monotonic()
        try:
            await session.run_user_bash(command, exclude)
        finally:
            self._user_bash_started = None
            await running.remove()

    async def _prompt(self, text: str, behavior: Literal["steer", "follow_up"] | None) -> None:
        session = self.session
        assert session is not None
        store, messages = session.store, session.messages
        if session.model is not None and behavior is None:
            await wait_preloaded(session.model.api)  # never import an SDK on the event loop
        try:
            await session.prompt(text, streaming_behavior=behavior)
        except SessionError as e:
            self.show_error(str(e))
            if session.model is None and not self.editor.text.strip():
                self.editor.set_text(text)  # nothing was sent: keep the prompt for after /model
        if session.store is not store or session.messages is not messages:
            await self.render_session()  # an extension command switched, forked or navigated the session

    def on_prompt_editor_action(self, event: PromptEditor.Action) -> None:
        if event.name == "pageup":
            self.conversation.scroll_page_up(animate=False)
        elif event.name == "pagedown":
            self.conversation.scroll_page_down(animate=False)
        elif event.name == "ctrl+end":
            self.conversation.follow()
        elif event.name == "ctrl+home":
            self.conversation.scroll_home(animate=False)
        elif event.name == "alt+up":
            self.action_dequeue()
        elif event.name == "shift+tab":
            self.action_cycle_thinking()
        elif event.name == "ctrl+d":
            self.request_quit()
        elif event.name == "suspend":
            self.action_suspend_process()
        elif event.name == "external_editor":
            self.spawn(self.edit_externally())
        elif event.name == "copy":
            self.spawn(self.cmd_copy(""))

    # ==============================================================================================
    # Key actions

    def _modal(self) -> ModalScreen[Any] | None:
        return self.screen if isinstance(self.screen, ModalScreen) else None

    def action_ctrl_c(self) -> None:
        modal = self._modal()
        if modal is not None:
            if isinstance(modal, CancellableScreen):
                modal.action_cancel()
            else:
                modal.dismiss(None)
            return
        now = time.monotonic()
        if now - self._last_ctrl_c < DOUBLE_PRESS_S:
            self._last_ctrl_c = 0.0
            self.request_quit()
            return
        self._last_ctrl_c = now
        self.editor.set_text("")
        self.notify("Press Ctrl+C again to quit.", timeout=DOUBLE_PRESS_S + 0.5)

    def action_escape(self) -> None:
        if self._modal() is not None:
            return
        session = self.session
        compacting = getattr(session.compactor, "is_compacting", False) if session is not None else False
        if session is not None and (session.is_streaming or session.pending_message_count() or compacting):
            steering, follow_up = session.clear_queues()
            session.abort()
            self._restore([*steering, *follow_up])
            return
        now = time.monotonic()
        if not self.editor.text.strip() and now - self._last_escape < DOUBLE_PRESS_S / 2:
            self._last_escape = 0.0
            self.spawn(self.run_builtin("tree", ""))
            return
        self._last_escape = now

    def action_dequeue(self) -> None:
        if self.session is not None:
            steering, follow_up = self.session.clear_queues()
            self._restore([*steering, *follow_up])

    def _restore(self, texts: Sequence[str]) -> None:
        if not texts:
            return
        current = self.editor.text
        restored = "\n\n".join(texts)
        self.editor.set_text(restored + ("\n\n" + current if current.strip() else ""))

    def action_toggle_tools(self) -> None:
        self.tools_expanded = not self.tools_expanded
        for block in self.query(ExpandableBlock):
            if block.group == "tools":
                block.set_expanded(self.tools_expanded)
        for bash in self.query(BashBlock):
            bash.set_expanded(self.tools_expanded)

    def action_toggle_thinking(self) -> None:
        self.thinking_expanded = not self.thinking_expanded
        for block in self.query(ThinkingBlock):
            block.set_expanded(self.thinking_expanded)

    def action_pick_model(self) -> None:
        if self._modal() is None:
            self.spawn(self.run_builtin("model", ""))

    def action_cycle_thinking(self) -> None:
        session = self.session
        if session is None or session.model is None:
            return
        levels = list(self._thinking_levels())
        if len(levels) < 2:
            self.notify(f"{session.model.ref} has no thinking levels.", timeout=2)
            return
        current = session.thinking_level
        following = levels[(levels.index(current) + 1) % len(levels)] if current in levels else levels[0]
        session.set_thinking_level(following)
        self._refresh_footer()
        self.notify(f"Thinking: {session.thinking_level}", timeout=1.5)

    async def action_cycle_model(self, direction: str = "forward") -> None:
        """Ctrl+P / Shift+Ctrl+P: the next / previous model (the ``--models`` scope, else every model)."""
        session = self.session
        if session is None or self._modal() is not None:
            return
        result = await session.cycle_model("backward" if direction == "backward" else "forward")
        if result is None:
            self.notify("No other model to switch to (set --models or enabledModels).", timeout=2)
            return
        model, level, _scoped = result
        self._refresh_footer()
        self.notify(f"Model: {model.ref}" + (f" · thinking {level}" if level != "off" else ""), timeout=1.5)

    async def action_quit(self) -> None:
        self.request_quit()

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

    # ==============================================================================================
    # Built-in commands

    async def run_builtin(self, name: str, args: str) -> None:
        handler = getattr(self, f"cmd_{name}")
        await handler(args)

    def _require_idle(self, what: str) -> bool:
        if self.busy:
            self.show_error(f"Wait for the agent to finish (or press Esc) before {what}.")
            return False
        return True

    async def cmd_model(self, args: str) -> None:
        session, registry = self.session, self.registry
        assert session is not None and registry is not None
        if args:
            model = registry.resolve(args)
        else:
            models = self._pickable_models()
            if not models:
                self.show_info(Text(registry.no_model_text()), "warning")
                return
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

    async def cmd_new(self, args: str) -> None:
        session = self.session
        assert session is not None
        if self._require_idle("starting a new session"):
            if not await self._switching(session.new_session()):
                return
            await self.render_session()
            self.notify("New session.", timeout=2)

    async def cmd_resume(self, args: str) -> None:
        session = self.session
        assert session is not None
        if not self._require_idle("switching sessions"):
            return
        path = await self._pick_session(session.cwd, session.store.session_file)
        if path is False:
            self.show_info("No saved sessions yet.")
            return
        if path is None or path == session.store.session_file:
            return
        if not await self._switching(session.switch_session(str(path))):
            return
        await self.render_session()
        self.notify(f"Resumed {session.store.session_name() or Path(str(path)).name}", timeout=2)

    async def _switching(self, switch: Awaitable[bool]) -> bool:
        """Run a session switch (new, resume, fork); say why when it did not happen."""
        try:
            done = await switch
        except SessionError as e:  # e.g. the chosen file is being written by another caddie
            self.show_error(str(e))
            return False
        if not done:
            self.show_info("An extension kept the current session (session_before_switch / _fork).")
        return done

    async def _pick_session(self, cwd: str, current: str | None) -> str | Literal[False] | None:
        """The session file chosen in the picker; None when cancelled, False when there are none at all."""
        session_dir = self.startup.request.session_dir
        here = await asyncio.to_thread(list_sessions, cwd, session_dir)
        everywhere: list[SessionSummary] | None = None
        if not here:
            everywhere = await asyncio.to_thread(all_sessions, session_dir)
            if not everywhere:
                return False

        async def load_all() -> list[SessionSummary]:
            return (
                everywhere if everywhere is not None else await asyncio.to_thread(all_sessions, session_dir)
            )

        picker = SessionPicker(here, current, load_all)
        if not here:
            picker.call_after_refresh(picker.action_toggle_scope)  # nothing here: show every project's
        chosen = await self.ask(picker, None, None)
        return None if chosen is None else str(chosen)

    async def cmd_tree(self, args: str) -> None:
        session = self.session
        assert session is not None
        if not self._require_idle("moving in the tree"):
            return
        if not len(session.store):
            self.show_info("The session is empty; there is nowhere to go yet.")
            return
        picker = TreePicker(session.store, session.set_label)
        target = await self.ask(picker, None, None)
        if target is None or target in picker.here_ids:
            return
        summarize = False
        if session.compactor is not None and not session.settings.get("branchSummary.skipPrompt", False):
            summarize = await self.ui.confirm(
                "Summarize the branch you are leaving?",
                "A summary keeps what was learnt there in the context of the new position.",
            )
        await session.navigate_tree(str(target), summarize)
        await self.render_session()

    async def cmd_fork(self, args: str) -> None:
        session = self.session
        assert session is not None
        if not self._require_idle("forking"):
            return
        candidates = [
            (e.id, user_text(e.message))
            for e in session.store.branch()
            if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage)
        ]
        if not candidates:
            self.show_info("There is no user message to fork from yet.")
            return
        entry_id = await self.ask(ForkPicker(candidates), None, None)
        if entry_id is None:
            return
        text = dict(candidates)[str(entry_id)]
        if not await self._switching(session.fork(str(entry_id))):
            return
        await self.render_session()
        self.editor.set_text(text)
        self.notify("Forked into a new session.", timeout=2)

    async def cmd_compact(self, args: str) -> None:
        """Like Pi's ``/compact``: stops a running turn first, then summarizes the older messages."""
        session = self.session
        assert session is not None
        if session.compactor is None:
            self.show_error("Compaction is not available in this build.")
            return
        self._compaction_error_shown = False
        try:
            entry = await session.compactor.compact("manual", args or None)
        except Exception as e:  # CompactionError: the message says why (too small, already compacted...)
            if not self._compaction_error_shown:
                self.show_error(str(e) or type(e).__name__)
            return
        if entry is not None:
            await self.render_session()

    async def cmd_session(self, args: str) -> None:
        session = self.session
        assert session is not None
        store = session.store
        entries = store.entries()
        messages = [e.message for e in entries if isinstance(e, MessageEntry)]
        inp, out, cr, cw, cost = usage_totals(messages)
        usage = session.get_context_usage()
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column(overflow="fold")  # long paths wrap onto the next lines instead of being cut
        rows = [
            ("Session file", store.session_file or "(in memory, not saved)"),
            ("Session id", store.session_id),
            ("Name", store.session_name() or "-"),
            (
                "Model",
                f"{session.model.ref} • thinking {session.thinking_level}" if session.model else "none",
            ),
            ("Messages", f"{len(messages)} ({sum(isinstance(m, UserMessage) for m in messages)} from you)"),
            ("Entries", str(len(entries))),
            (
                "Tokens",
                f"↑{format_count(inp)} ↓{format_count(out)} cache read {format_count(cr)}"
                f" write {format_count(cw)}",
            ),
            ("Cost", format_cost(cost)),
        ]
        if usage is not None:
            pct = "unknown until the next reply" if usage.percent is None else f"{usage.percent:.1f}%"
            rows.append(("Context", f"{pct} of {format_count(usage.context_window)}"))
        for key, value in rows:
            table.add_row(key, Text(value, overflow="fold"))
        self.show_info(table)

    async def cmd_name(self, args: str) -> None:
        session = self.session
        assert session is not None
        name = args.strip()
        if not name:
            answer = await self.ui.input("Session name", session.store.session_name() or "")
            if not answer or not answer.strip():
                return
            name = answer.strip()
        session.set_session_name(name)
        self._refresh_footer()
        self.notify(f"Session name: {name}", timeout=2)

    async def cmd_export(self, args: str) -> None:
        session = self.session
        assert session is not None
        from caddie.modes.export_html import export_session

        store = session.store
        default = f"{store.path.stem if store.path else 'caddie-session-' + store.session_id}.html"
        target = Path(session.cwd) / Path(args or default).expanduser()  # relative to the project
        path = await export_session(store, session.runner, target)
        self.show_info(f"Exported the session to {path}")

    async def cmd_reload(self, args: str) -> None:
        session = self.session
        assert session is not None
        if not self._require_idle("reloading"):
            return
        await session.reload()
        for error in session.load_errors:
            self.show_info(error, "warning")
        self.notify(f"Reloaded {len(session.runner.extensions)} extension(s).", timeout=2)
        self._refresh_footer()

    async def cmd_hotkeys(self, args: str) -> None:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for key, what in HOTKEYS:
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
        command = external_editor_command()
        if command is None:
            self.show_error(
                "Set $VISUAL or $EDITOR (e.g. export EDITOR=vim) to edit the prompt in your editor."
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
                "theme",
                "Theme",
                self.theme,
                sorted(self.theme_names),
            ),
        ]
        for item in self._resources:  # what `caddie config` lists, switched the same way
            rows.append(
                SettingRow(f"resource:{item.id}", f"{item.kind.capitalize()} {item.name}", _on(item.enabled),
                           ["on", "off"], "applies the next time caddie starts")
            )  # fmt: skip
        return rows

    async def _load_resources(self) -> None:
        """The extensions, skills, prompt templates and packages that can be switched in settings."""
        session = self.session
        assert session is not None
        try:
            items, _ = await asyncio.to_thread(
                list_resources, session.cwd, trust=session.options.project_trusted
            )
        except (OSError, ConfigError) as e:
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
            queue = session.agent.steering if key == "steeringMode" else session.agent.follow_ups
            queue.mode = "all" if value == "all" else "one-at-a-time"
            updates = {key: value}
        elif key in ("compaction.enabled", "retry.enabled"):
            section, _, name = key.partition(".")
            updates = {section: {name: value == "on"}}
        elif key == "theme":
            self.theme = value
            updates = {"theme": value}
        else:
            item = next(i for i in self._resources if f"resource:{i.id}" == key)
            try:
                said = await asyncio.to_thread(set_enabled, session.cwd, item, value == "on")
            except (OSError, ConfigError) as e:
                self.show_error(str(e))
                return
            await self._load_resources()
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


def external_editor_command() -> list[str] | None:
    """``$VISUAL`` or ``$EDITOR`` split like a shell would, if set."""
    for name in ("VISUAL", "EDITOR"):
        value = os.environ.get(name, "").strip()
        if value:
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


def _must_ask_trust(cwd: str) -> bool:
    return remembered_trust(cwd) is None and project_has_code(cwd)


async def off_loop(work: Coroutine[Any, Any, T]) -> T:
    """Run start-up work that blocks (file reads, imports) on a private event loop in a worker thread."""
    return await asyncio.to_thread(asyncio.run, work)


def _stack(*parts: Text | Table) -> Table:
    grid = Table.grid()
    for part in parts:
        grid.add_row(part)
    return grid
