"""The interactive terminal UI: a Textual app that views one ``AgentSession`` and drives it.

Layout, top to bottom: the conversation, queued messages, the working line, extension widgets above the
editor, the editor, suggestions, widgets below the editor, the footer.

``CaddieApp`` is the composition root: it owns the widgets and the parts, each with one job and each
handed the app as a small Protocol (host.py), never as this class —

- ``Launcher`` (startup.py): trust → the ``-r`` picker → the session → themes → ``session_start``;
- ``Transcript`` (transcript.py): session events to widgets;
- ``PromptInput`` (prompt_input.py): what Enter does (``!cmd``, a built-in command, a message);
- ``KeyActions`` (key_actions.py): the application keys, by Pi's binding ids (keymap.py, ``keybindings.json``);
- the command handlers ``SessionCommands``, ``ModelCommands``, ``AppCommands``, ``ScopedModels``, dispatched by
  name (``/name args`` → ``cmd_name``);
- ``TextualUI`` (ui.py): what extensions' ``ctx.ui`` calls do, drawn through the methods below.

Imports: the modules of this package import Textual, Rich and caddie's light modules (``ai.messages``,
``config``) only. The runtime, the agent, the tools, the session store and ``rich.markdown`` are imported
in a worker thread once the first frame is painted (``startup.AFTER_FIRST_FRAME``); elsewhere they appear
under ``TYPE_CHECKING`` or as imports inside the functions that run after that
(tests/tui/test_lazy_imports.py).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from rich.console import RenderableType
from rich.text import Text
from textual import events
from textual.app import App
from textual.screen import ModalScreen

from caddie.ai.model import THINKING_LEVELS
from caddie.config.paths import agent_dir
from caddie.errors import CaddieError  # its message is shown alone; others get their type's name
from caddie.modes.interactive.app_commands import AppCommands, run_editor
from caddie.modes.interactive.commands import CommandInfo, available_commands
from caddie.modes.interactive.conversation import (
    BashBlock,
    Conversation,
    ExpandableBlock,
    InfoBlock,
    StatusLine,
    ThinkingBlock,
)
from caddie.modes.interactive.editor import CompletionMenu, PromptEditor
from caddie.modes.interactive.extension_hooks import ExtensionHooks
from caddie.modes.interactive.footer import (
    FooterState,
    PendingMessages,
    StatusFooter,
    WidgetArea,
    WorkingLine,
    git_branch,
)
from caddie.modes.interactive.host import Startup, ViewOptions
from caddie.modes.interactive.images import DEFAULT_WIDTH_CELLS, image_kind
from caddie.modes.interactive.key_actions import KeyActions, expand_blocks
from caddie.modes.interactive.keymap import Keybindings, load_keybindings
from caddie.modes.interactive.model_commands import ModelCommands, pickable_models, thinking_levels
from caddie.modes.interactive.prompt_input import PromptInput
from caddie.modes.interactive.render import short_path
from caddie.modes.interactive.screen_bridge import ScreenBridge
from caddie.modes.interactive.session_commands import SessionCommands
from caddie.modes.interactive.startup import AFTER_FIRST_FRAME, Launcher, LaunchSteps, import_modules
from caddie.modes.interactive.terminal import TerminalControl
from caddie.modes.interactive.theme_book import ThemeBook
from caddie.modes.interactive.themes import DARK
from caddie.modes.interactive.transcript import (
    Transcript,
    TranscriptWidgets,
    header_block,
    loaded_resources,
    typed_text,
)
from caddie.modes.interactive.transcript_search import SearchBar
from caddie.modes.interactive.transcript_view import Block
from caddie.modes.interactive.ui import TextualUI, wait_with_timeout

if TYPE_CHECKING:
    from caddie.ai.abort import AbortSignal
    from caddie.ai.messages import ImageContent
    from caddie.extensions.api import NotifyLevel
    from caddie.models import ModelRegistry
    from caddie.modes.interactive.dialogs import CancellableScreen
    from caddie.runtime.session import AgentSession
    from caddie.runtime.session_events import SessionEvent
    from caddie.sandbox import Sandbox

__all__ = ["AFTER_FIRST_FRAME", "CaddieApp", "Startup", "import_modules"]

SHUTDOWN_TIMEOUT_S = 5.0
_THINKING_CLASSES = tuple(f"-thinking-{level}" for level in THINKING_LEVELS)


class CaddieApp(App[int]):
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

    def __init__(self, startup: Startup, ui: TextualUI | None = None) -> None:
        super().__init__()
        self.startup = startup
        self.ui = ui or TextualUI()
        startup.request.ui = self.ui
        self.session: AgentSession | None = None
        self.registry: ModelRegistry | None = None
        self.ready = asyncio.Event()
        """Set once the session has started and its transcript is on screen."""
        self.exit_message: str | None = None
        """A start-up problem to print after the screen is gone (``run_interactive`` prints it)."""
        self.shutdown_done = False
        self._quitting = False
        self.view = ViewOptions()
        self.keys = Keybindings()
        self.themes = ThemeBook(self)
        self.hooks = ExtensionHooks(lambda: self.session, self.show_error)
        self.menu = CompletionMenu()
        self.editor = PromptEditor(
            self.menu, self.command_infos, lambda: self.busy, cwd=self._cwd,
            keys=lambda: self.keys, shortcuts=lambda: self.hooks.shortcuts,
            autocomplete=lambda: self.ui.autocomplete,
        )  # fmt: skip
        self.conversation = Conversation(id="conversation")
        self.pending = PendingMessages()
        self.working = WorkingLine()
        self.above = WidgetArea(id="above-editor")
        self.below = WidgetArea(id="below-editor")
        self.footer = StatusFooter(id="footer")
        self.search = SearchBar(self.conversation, lambda: self.keys, self.editor.focus)
        self.transcript = Transcript(
            TranscriptWidgets(self.conversation, self.working, self.pending), self, self.header
        )
        self.models = ModelCommands(self)
        self.app_commands = AppCommands(self)
        self.session_commands = SessionCommands(
            self, lambda: self.install_extension_hooks(self.session) if self.session else [],
            lambda session: self.load_themes(session, again=True), lambda: self.transcript.compaction_errors,
            self.themes.export_colours,
        )  # fmt: skip
        self.input = PromptInput(self, self._take_images)
        self.actions = KeyActions(
            self, self.models.cycle_thinking, self.models.cycle_model, self.app_commands.edit_externally,
            self._paste_image,
        )  # fmt: skip
        self._handlers: tuple[object, ...] = (self.session_commands, self.models, self.app_commands)

    # ==============================================================================================
    # Layout and start-up

    def compose(self) -> Any:
        yield self.conversation
        yield self.pending
        yield self.working
        yield self.search
        yield self.above
        yield self.editor
        yield self.menu
        yield self.below
        yield self.footer

    def on_mount(self) -> None:
        self.theme = DARK
        self.terminal = TerminalControl(self)
        self.ui.attach(ScreenBridge(self, self.terminal.write))
        self.editor.focus()
        if self.startup.typed_ahead:
            self.editor.set_text(self.startup.typed_ahead)
        self.refresh_footer()
        steps = LaunchSteps(
            self.session_commands.pick_session, self.load_themes, self.on_session_event,
            self.install_extension_hooks, self.input.prompt, self.session_commands.after_reload,
        )  # fmt: skip
        launcher = Launcher(self, steps)
        self.call_after_refresh(lambda: self.run_worker(launcher.run(), name="startup", exit_on_error=False))
        if not self.is_headless:
            self.set_interval(1.0, self._quit_if_terminal_gone)

    def _quit_if_terminal_gone(self) -> None:
        """A terminal closed without a SIGHUP reaching caddie (its window gone, the connection dropped) leaves
        stdin hung up; quit as on SIGHUP, saving the session, instead of running on with no screen."""
        try:
            gone = not os.isatty(0)
        except OSError:
            gone = True
        if gone:
            self.request_quit()

    def header(self) -> Block:
        if self.view.header is not None:
            from caddie.modes.interactive.extension_ui import ComponentBlock, TerminalView, redraw_components

            return ComponentBlock(
                self.view.header(TerminalView(self, lambda: redraw_components(self)), self.ui.theme)
            )
        session = self.session
        if session is None:
            return header_block(self.keys)
        themes = {n: str(p) for n, p in self.themes.paths.items() if p is not None}
        quiet = session.settings.get("quietStartup") is True
        return header_block(self.keys, loaded_resources(session, themes), quiet)

    async def load_themes(self, session: AgentSession, *, again: bool = False) -> None:
        """Themes and Pi's ``terminal.*`` settings, before the transcript is first drawn (``again``: /reload)."""
        self.terminal_settings(session)
        await self.themes.load(session, lambda warning: self.show_notice(warning, "warning"), again=again)

    def terminal_settings(self, session: AgentSession) -> None:
        """``terminal.showTerminalProgress``, ``showImages``, ``imageWidthCells`` (again after /reload)."""
        terminal = session.settings.get("terminal") or {}
        terminal = terminal if isinstance(terminal, dict) else {}
        self.terminal.progress_enabled = terminal.get("showTerminalProgress") is True
        self.view.image_kind = image_kind(show=terminal.get("showImages") is not False)
        width = terminal.get("imageWidthCells")
        self.view.image_width = width if isinstance(width, int) and width > 0 else DEFAULT_WIDTH_CELLS

    async def on_event(self, event: events.Event) -> None:
        """Extensions' key hooks (``ui.on_terminal_input``) see every key first; True consumes it."""
        if isinstance(event, events.Key) and not event.is_forwarded and self.ui.key_hooks:
            from caddie.extensions.ui_components import KeyInput

            key = KeyInput(event.key, event.character)
            for hook in list(self.ui.key_hooks):
                try:
                    consumed = hook(key)
                    if asyncio.iscoroutine(consumed):
                        consumed = await consumed
                except Exception as e:  # a failing hook is reported and skipped, the key goes on
                    self.show_error(f"An extension's key hook failed: {type(e).__name__}: {e}")
                    continue
                if consumed is True or (isinstance(consumed, dict) and consumed.get("consume")):
                    return
        await super().on_event(event)

    def on_session_event(self, event: SessionEvent) -> None:
        self.transcript.on_event(event)
        self.terminal.progress(self.working.active)  # OSC 9;4 while the agent works, when enabled

    def install_extension_hooks(self, session: AgentSession) -> list[str]:
        """Keys (keybindings.json), terminal settings and the extensions' shortcuts, at start and after
        /reload; the warnings."""
        self.terminal_settings(session)
        self.keys = load_keybindings(agent_dir() / "keybindings.json")
        self.run_worker(
            self.themes.add_extension_themes(session, lambda warning: self.show_notice(warning, "warning")),
            name="extension-themes",
            exit_on_error=False,
        )
        return [*self.keys.warnings, *self.hooks.install(self.keys)]

    # ==============================================================================================
    # Input

    def on_prompt_editor_submitted(self, event: PromptEditor.Submitted) -> None:
        self.input.submit(event.text, follow_up=event.kind == "alt")

    def handle_input(self, text: str, follow_up: bool = False) -> None:
        """What Enter does with ``text`` (the demo types through this)."""
        self.input.handle(text, follow_up)

    def on_prompt_editor_action(self, event: PromptEditor.Action) -> None:
        binding_id = event.binding_id
        if binding_id == "tui.altScreen.search":
            self.search.open()
        elif binding_id.startswith("tui.altScreen."):
            self.transcript.act(binding_id)
        else:
            self.actions.run(binding_id)

    def on_prompt_editor_shortcut(self, event: PromptEditor.Shortcut) -> None:
        self.spawn(self.hooks.run(event.key))

    def on_prompt_editor_copy(self, event: PromptEditor.Copy) -> None:
        self.copy_to_clipboard(event.text)
        self.show_status("Copied the selection to the clipboard")

    def run_command(self, name: str, args: str = "") -> None:
        """Run the built-in command ``/name args`` in the background."""
        method = f"cmd_{name.replace('-', '_')}"
        for handler in self._handlers:
            command = getattr(handler, method, None)
            if command is not None:
                self.spawn(command(args))
                return
        self.show_error(f"/{name} is not a built-in command.")

    def note_user_bash(self, started: float | None) -> None:
        self.transcript.user_bash_started = started

    def _take_images(self, text: str) -> tuple[str, list[ImageContent]]:
        return text, []

    async def _paste_image(self) -> None:
        """Ctrl+V: an image on the clipboard goes into a file whose path is inserted; else its text."""
        from caddie.modes.interactive.clipboard import read_image, read_text, save_image

        image = await read_image()
        if image is not None:
            path = await asyncio.to_thread(save_image, *image)
            self.editor.paste(str(path))
            return
        text = await read_text()
        if text:
            self.editor.paste(text)
        else:
            self.show_status(
                "Nothing to paste: the clipboard is empty or no clipboard tool (wl-paste, xclip, pbpaste)"
            )

    def suspend_process(self) -> None:
        self.action_suspend_process()

    async def suspended_run(self, command: list[str], path: str) -> int:
        return await self.terminal.run_suspended(lambda: run_editor(command, path))

    def set_expanded(self, group: str, expanded: bool) -> None:
        expand_blocks(
            [*self.conversation.blocks_of(ExpandableBlock), *self.conversation.blocks_of(BashBlock)],
            group,
            expanded,
        )

    def modal(self) -> CancellableScreen | None:
        from caddie.modes.interactive.dialogs import CancellableScreen  # dialogs come after the first frame

        screen = self.screen
        return screen if isinstance(screen, CancellableScreen) else None

    # ==============================================================================================
    # Screen host (used by TextualUI and the parts)

    def show_notice(self, message: str, level: NotifyLevel) -> None:
        """An extension's ``ui.notify`` (and session notices): a line in the transcript, where it stays.

        As in Pi: errors read ``Error: …``, warnings ``Warning: …``, information is dimmed. Notices sent
        before the transcript is first drawn are kept and drawn after the history.
        """
        prefix = {"error": "Error: ", "warning": "Warning: "}.get(level, "")
        if prefix and message.startswith(prefix):
            prefix = ""
        self.transcript.add(
            InfoBlock(Text(prefix + message), level if level in ("warning", "error") else "notice")
        )

    def show_info(self, content: RenderableType | str, level: str = "info") -> None:
        self.transcript.add(InfoBlock(Text(content) if isinstance(content, str) else content, level))

    def show_error(self, message: str) -> None:
        self.show_info(Text(message), "error")

    def show_status(self, message: str) -> None:
        last = self.conversation.blocks[-1] if self.conversation.blocks else None
        if isinstance(last, StatusLine):
            last.set_message(message)
        else:
            self.transcript.add(StatusLine(message))

    def extension_hotkeys(self) -> list[tuple[str, str]]:
        return self.hooks.hotkeys()

    async def ask(
        self, screen: ModalScreen[Any], timeout: float | None, default: Any, signal: AbortSignal | None = None
    ) -> Any:
        """Show a dialog; its answer, or ``default`` when cancelled, after ``timeout`` seconds (counted
        down in its title) or once ``signal`` fires."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def done(result: Any) -> None:
            if not future.done():
                future.set_result(default if result is None else result)

        def dismissed() -> None:  # the extension's signal
            if screen.is_current:
                screen.dismiss(None)
            done(None)

        await self.push_screen(screen, callback=done)
        from caddie.modes.interactive.dialogs import CancellableScreen

        if timeout is not None and isinstance(screen, CancellableScreen):
            screen.start_countdown(timeout)
        stop = signal.add_listener(dismissed) if signal is not None else None
        try:
            return await wait_with_timeout(future, timeout)
        except TimeoutError:
            if self.screen is screen:
                screen.dismiss(None)
            return default
        finally:
            if stop is not None:
                stop()

    def apply_view(self) -> None:
        """The hidden-thinking label and the header an extension set, on what is drawn already."""
        for block in self.conversation.blocks_of(ThinkingBlock):
            block.label = self.view.hidden_thinking_label
            block.changed()
        if self.conversation.blocks and self.session is not None:
            first = self.conversation.blocks[0]
            self.conversation.remove_block(first)
            self.conversation.insert(0, [self.header()])

    # ==============================================================================================
    # State

    @property
    def busy(self) -> bool:
        return self.session is not None and self.session.is_streaming

    def _cwd(self) -> str:
        return self.session.cwd if self.session is not None else self.startup.request.cwd

    def command_infos(self) -> list[CommandInfo]:
        session = self.session
        resources = [
            (c.name, f"{c.argument_hint} — {c.description}" if c.argument_hint else c.description or "",
             f"{c.kind} · {c.scope}")
            for c in (session.commands() if session is not None else [])
            if c.kind != "extension"
        ]  # fmt: skip
        return available_commands(
            session.extensions.commands().values() if session is not None else (),
            resources,
            [m.ref for m in pickable_models(self)] if self.registry is not None else None,
            list(thinking_levels(self)),
        )

    def refresh_footer(self) -> None:
        session = self.session
        if session is None:
            self.footer.show(FooterState(short_path(self.startup.request.cwd), None, None, None))
            return
        model = session.model
        usage = session.context_usage()
        inp, out, cr, cw, cost = self.transcript.usage
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
                cache_hit=self.transcript.cache_hit,
                auto_compact=session.settings.compaction_enabled,
                branch=git_branch(session.cwd),
                sandbox=sandbox_text(session.state().sandbox),
                tokens_estimated=self.transcript.usage_estimated,
                context_estimated=usage.estimated if usage else False,
            )
        )
        self.editor.remove_class(*_THINKING_CLASSES)
        if model is not None and model.reasoning:
            self.editor.add_class(f"-thinking-{session.thinking_level}")

    async def render_session(self) -> None:
        """Redraw the transcript from the session's current branch (after start, /new, /resume, /tree…)."""
        session = self.session
        assert session is not None
        await self.transcript.render(session)
        from caddie.ai.messages import UserMessage
        from caddie.modes.interactive.editing import History
        from caddie.session.entries import MessageEntry

        users = [e.message for e in session.store.entries() if isinstance(e, MessageEntry)]
        self.editor.prompt_history = History([typed_text(m) for m in users if isinstance(m, UserMessage)])
        self.refresh_footer()

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

    def require_idle(self, what: str) -> bool:
        if self.busy:
            self.show_error(f"Wait for the agent to finish (or press Esc) before {what}.")
            return False
        return True

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


def sandbox_text(sandbox: Sandbox) -> str | None:
    """The footer's sandbox part: ``workspace-write, network off``; None while it is off."""
    return sandbox.summary() if sandbox.active else None
