"""The interactive terminal UI: a Textual app that views one ``AgentSession`` and drives it.

Layout, top to bottom: the conversation, queued messages, the working line, extension widgets above the
editor, the editor, slash-command completions, widgets below the editor, the footer.

Start-up happens inside the running app (so the trust question, the session picker of ``-r`` and any
dialog an extension opens in ``session_start`` have a screen): trust → build the session → attach
compaction → ``session_start`` → render the transcript → initial prompts. Every session event is turned
into a widget change (transcript.py); nothing in this package holds agent logic.

The app is built in layers, each a subclass of the one before: ``AppBase`` (base.py: widgets, screen
host, footer, quitting) → ``TranscriptApp`` (transcript.py: session events to widgets) →
``SessionCommands`` (session_commands.py) → ``BuiltinCommands`` (builtin_commands.py: dispatch of the
built-in slash commands, ``cmd_<name>``) → ``CaddieApp`` (here: start-up, input, key bindings).

Imports: the modules of this package import Textual, Rich and caddie's light modules (``ai.messages``,
``config``) only. The runtime, the agent, the tools, the session store and ``rich.markdown`` are imported
in a worker thread once the first frame is painted (``AFTER_FIRST_FRAME``); elsewhere they appear under
``TYPE_CHECKING`` or as imports inside the functions that run after that (tests/tui/test_lazy_imports.py).
"""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from rich.text import Text
from textual.binding import Binding, BindingType

from caddie.ai.providers.preload import preload, wait_preloaded
from caddie.config.paths import agent_dir
from caddie.config.settings import RUN_ONLY
from caddie.errors import UsageError
from caddie.modes.interactive.base import Startup
from caddie.modes.interactive.builtin_commands import BuiltinCommands
from caddie.modes.interactive.commands import (
    BUILTIN_NAMES,
    parse_command,
)
from caddie.modes.interactive.conversation import (
    BashBlock,
    ExpandableBlock,
    RunningLine,
    ThinkingBlock,
)
from caddie.modes.interactive.dialogs import CancellableScreen
from caddie.modes.interactive.editor import PromptEditor
from caddie.modes.interactive.themes import DARK, builtin_themes, discover_themes, package_theme_places

if TYPE_CHECKING:
    from textual.theme import Theme

    from caddie.runtime.session import AgentSession

__all__ = ["CaddieApp", "Startup"]

T = TypeVar("T")

AFTER_FIRST_FRAME = (
    "caddie.modes.interactive.login",
    "caddie.runtime.factory",
    "caddie.runtime.session",
    "caddie.runtime.auto_compaction",
    "caddie.runtime.trust",
    "caddie.runtime.session_events",
    "caddie.agent.events",
    "caddie.models.registry",
    "caddie.session.entries",
    "caddie.session.store",
    "caddie.modes.interactive.pickers",
    "rich.markdown",
)
"""Imported in a worker thread once the first frame is on screen, before the session is built: the
runtime, the agent, the tools and what the UI needs from them. Importing this module does not import
them (so the first frame comes quickly), and the event loop never waits for an import later."""
DOUBLE_PRESS_S = 1.0
"""Two Ctrl+C within this many seconds quit; two Esc on an empty editor open /tree."""

TRUST_QUESTION = (
    "{cwd} has project-local caddie configuration (.caddie/extensions or security-relevant settings). "
    "Trusting it lets caddie load and run that code and those settings. Your answer is remembered for "
    "this directory."
)


class CaddieApp(BuiltinCommands, inherit_bindings=False):
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

    def on_mount(self) -> None:
        for theme in builtin_themes().values():
            self.register_theme(theme)
            self.theme_names.add(theme.name)
        self.theme = DARK
        self.app_resume_signal.subscribe(self, self._after_suspend)
        self.ui.attach(self)
        self.editor.focus()
        self._refresh_footer()
        self.call_after_refresh(self._start)

    def _start(self) -> None:
        """Once the first frame is painted: build the session in the background."""
        self.run_worker(self._bootstrap(), name="startup", exit_on_error=False)

    async def _bootstrap(self) -> None:
        from caddie.runtime.request import SetupError

        try:
            await asyncio.to_thread(import_modules, AFTER_FIRST_FRAME)
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
        from caddie.modes.interactive.extension_hooks import install_shortcuts
        from caddie.runtime.factory import load_extension_set, open_session
        from caddie.runtime.trust import remember_trust

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
        self._quit_when_asked = asyncio.ensure_future(self._quit_on_shutdown_request(session))
        await session.start("startup")  # as Pi, also for -c / --session
        await self.render_session()
        for warning in [*build.warnings, *install_shortcuts(self, session.extensions)]:
            self.show_info(Text(warning), "warning")
        if session.model is None:
            self.show_info(Text(build.registry.no_model_text()), "warning")
        from caddie.modes.interactive.login import warn_about_extra_usage  # after the first frame

        warn_about_extra_usage(self)
        self.ready.set()
        return session

    async def _quit_on_shutdown_request(self, session: AgentSession) -> None:
        """``ctx.shutdown()``: quit once the agent is idle."""
        await session.wait_for_shutdown_request()
        self.request_quit()

    async def _load_themes(self) -> None:
        """Custom themes (files read in a worker thread), then the one settings ``"theme"`` (or
        ``--use-theme``) names. ``--no-themes`` skips discovery; ``--theme PATH`` adds places (RUN_ONLY)."""
        session = self.session
        assert session is not None
        run = session.settings.get(RUN_ONLY) or {}
        discover = not run.get("noThemes")
        places = [agent_dir() / "themes"] if discover else []
        trusted = session.state().project_trusted
        if trusted and discover:
            places.append(Path(session.cwd) / ".caddie" / "themes")
        for place in (session.settings.get("themes", []) or []) if discover else []:
            if isinstance(place, str):
                places.append(Path(session.cwd) / Path(place).expanduser())
        places += [Path(place) for place in run.get("themes", [])]

        def find_themes() -> tuple[dict[str, Theme], list[str]]:
            packages = package_theme_places(session.cwd, project_trusted=trusted) if discover else []
            return discover_themes(places, packages)

        themes, warnings = await asyncio.to_thread(find_themes)
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
            await session.run_bash(command, exclude_from_context=exclude)
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
        except UsageError as e:
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
        state = session.state() if session is not None else None
        if (
            session is not None
            and state is not None
            and (state.is_streaming or state.pending_message_count or state.is_compacting)
        ):
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

    async def action_extension_shortcut(self, key: str) -> None:
        from caddie.modes.interactive.extension_hooks import run_shortcut

        await run_shortcut(self, key)

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
        model, level = result.model, result.thinking_level
        self._refresh_footer()
        from caddie.modes.interactive.login import warn_about_extra_usage  # after the first frame

        warn_about_extra_usage(self, model)
        self.notify(f"Model: {model.ref}" + (f" · thinking {level}" if level != "off" else ""), timeout=1.5)

    async def action_quit(self) -> None:
        self.request_quit()


def import_modules(names: Sequence[str]) -> None:
    """Import modules (blocking: call it in a worker thread)."""
    for name in names:
        importlib.import_module(name)


def _must_ask_trust(cwd: str) -> bool:
    from caddie.runtime.trust import default_trust, project_has_code, remembered_trust

    return remembered_trust(cwd) is None and default_trust() == "ask" and project_has_code(cwd)


async def off_loop(work: Coroutine[Any, Any, T]) -> T:
    """Run start-up work that blocks (file reads, imports) on a private event loop in a worker thread."""
    return await asyncio.to_thread(asyncio.run, work)
