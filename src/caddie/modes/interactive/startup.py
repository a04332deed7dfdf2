"""Start-up inside the running app: trust → the ``-r`` picker → build the session → themes → ``session_start``
→ the transcript → the initial prompts.

It happens once the first frame is on screen (so the trust question, the picker and any dialog an extension
opens in ``session_start`` have a screen). The runtime, the agent, the tools and the session store are
imported first, in a worker thread (``AFTER_FIRST_FRAME``); reading settings, ``models.json`` and the
session file and importing extensions happen in a worker thread too, so the screen keeps answering keys.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from rich.text import Text

from caddie.ai.providers.preload import preload
from caddie.modes.interactive.host import Shell
from caddie.modes.interactive.whats_new import show_whats_new

if TYPE_CHECKING:
    from caddie.runtime.session import AgentSession
    from caddie.runtime.session_events import SessionEvent

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
    "caddie.modes.interactive.settings_dialog",
    "rich.markdown",
)
"""Imported in a worker thread once the first frame is on screen, before the session is built: the
runtime, the agent, the tools and what the UI needs from them. Importing the app does not import them
(so the first frame comes quickly), and the event loop never waits for an import later."""

TRUST_QUESTION = (
    "{cwd} has project-local caddie configuration (.caddie/extensions or security-relevant settings). "
    "Trusting it lets caddie load and run that code and those settings. Your answer is remembered for "
    "this directory."
)


class LaunchHost(Shell, Protocol):
    """What start-up needs beyond the ``Shell``: to say it is ready, or to end the app."""

    exit_message: str | None
    ready: asyncio.Event

    @property
    def is_headless(self) -> bool: ...

    def exit(self, result: int | None = None, return_code: int = 0, message: Any = None) -> None: ...

    def run_worker(self, work: Any, *, name: str = "", exit_on_error: bool = True) -> Any: ...


@dataclass
class LaunchSteps:
    """The parts of the app that start-up calls on."""

    pick_session: Callable[[str, str | None], Awaitable[str | Literal[False] | None]]
    """The ``-r`` picker: a session file, None when cancelled, False when there are none."""
    load_themes: Callable[[AgentSession], Awaitable[None]]
    on_event: Callable[[SessionEvent], None]
    install_hooks: Callable[[AgentSession], list[str]]
    """Keys and the extensions' shortcuts; the warnings."""
    prompt: Callable[[str], Awaitable[None]]
    after_reload: Callable[[], Awaitable[None]]
    """The UI's part of every reload (keys, themes, the notice)."""


class Launcher:
    """Runs start-up for the app (see the module docstring)."""

    def __init__(self, host: LaunchHost, steps: LaunchSteps) -> None:
        self.host = host
        self.steps = steps

    async def run(self) -> None:
        """Start-up, then the initial prompts; ends the app with a one-line reason when it cannot start."""
        from caddie.runtime.request import SetupError

        host = self.host
        try:
            await asyncio.to_thread(import_modules, AFTER_FIRST_FRAME)
            session = await self.open_session()
        except SetupError as e:
            host.exit_message = str(e)
            host.exit(2, return_code=2)
            return
        except Exception as e:  # a bug, not a user mistake: leave the terminal cleanly and say what broke
            host.exit_message = f"start-up failed: {type(e).__name__}: {e}"
            host.exit(1, return_code=1)
            return
        if session is None:
            host.exit(0)
            return
        for prompt in host.startup.initial_prompts:
            await self.steps.prompt(prompt)
            await session.wait_for_idle()

    async def open_session(self) -> AgentSession | None:
        from caddie.runtime.factory import load_extension_set, open_session
        from caddie.runtime.project_trust import decide_project_trust
        from caddie.runtime.trust import remember_trust

        host = self.host
        request = host.startup.request
        cwd = str(Path(request.cwd).expanduser().resolve())
        if request.trust is None and await asyncio.to_thread(_must_ask_trust, cwd):
            # Pi's project_trust: the extensions loaded without the project's trust decide first (their
            # dialogs on this screen); only when none does, the built-in question.
            untrusted = await off_loop(
                load_extension_set(
                    cwd,
                    extension_paths=request.extension_paths,
                    no_extensions=request.no_extensions,
                    trust=False,
                    inline=request.inline_extensions,
                )
            )
            trusted, problems = await decide_project_trust(untrusted.extensions, cwd, "tui", host.ui)
            for problem in problems:
                host.ui.notify(problem, "error")
            if trusted is None:
                trusted = await host.ui.confirm("Trust this project?", TRUST_QUESTION.format(cwd=cwd))
                await asyncio.to_thread(remember_trust, cwd, trusted)
            request.preloaded = untrusted
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
        if host.startup.resume_picker:
            path = await self.steps.pick_session(cwd, None)
            if path is False:
                host.show_status("No saved sessions for this directory yet; starting a new one.")
            elif path is None:
                return None
            else:
                request.session = "file"
                request.session_file = str(path)
        build = await off_loop(open_session(request))
        session = build.session
        host.session = session
        host.registry = build.registry
        # the SDK is usually imported before the first prompt is typed
        loading = None if session.model is None else preload(session.model.api)
        await self.steps.load_themes(session)
        session.subscribe(self.steps.on_event)
        session.configure(after_reload=self.steps.after_reload)
        host.run_worker(
            _quit_when_asked(session, host.request_quit), name="shutdown-request", exit_on_error=False
        )
        await session.start("startup")  # as Pi, also for -c / --session
        await host.render_session()
        for warning in [*build.warnings, *self.steps.install_hooks(session)]:
            host.show_info(Text(warning), "warning")
        if session.model is None:
            host.show_info(Text(build.registry.no_model_text()), "warning")
        from caddie.modes.interactive.login import warn_about_extra_usage  # after the first frame

        warn_about_extra_usage(host)
        show_whats_new(host)
        host.ready.set()
        if not host.is_headless:  # tests run many apps in one process: nothing of theirs is kept for good
            freeze_startup_objects(loading)
        return session


async def _quit_when_asked(session: AgentSession, quit_app: Callable[[], None]) -> None:
    """``ctx.shutdown()``: quit once the agent is idle."""
    await session.wait_for_shutdown_request()
    quit_app()


def freeze_startup_objects(loading: Future[None] | None) -> None:
    """Take what start-up built (modules, the app, the loaded session; the model's SDK once ``loading`` is
    done) out of the garbage collector's full passes (``gc.freeze``). Those objects live as long as the
    process; a full pass would walk all of them again, ~50 ms on the event loop in the middle of a streamed
    answer (a visible stall), while what changes as the UI runs (rendered lines, messages) stays collected.
    Garbage is collected first (this runs once start-up is idle), so no dead cycle is kept for good; the app's
    end calls ``thaw_startup_objects``, so a program that ran the UI (``caddie.sdk.run_interactive_mode``)
    keeps a collector that sees all of its objects."""
    _freeze.host_had_frozen = gc.get_freeze_count() > 0
    _freeze.active = True
    _collect_and_freeze()
    if loading is not None:
        loading.add_done_callback(lambda _: _collect_and_freeze())


@dataclass
class _FreezeState:
    active: bool = False
    host_had_frozen: bool = False
    """The program had frozen objects of its own before: ``gc.unfreeze`` would thaw those too, so leave it."""


_freeze = _FreezeState()


def _collect_and_freeze() -> None:
    if _freeze.active:  # a model SDK that finishes loading after the app ended is not frozen
        gc.collect()
        gc.freeze()


def thaw_startup_objects() -> None:
    """Undo ``freeze_startup_objects`` when the app ends (nothing when it did not freeze)."""
    if _freeze.active and not _freeze.host_had_frozen:
        gc.unfreeze()
    _freeze.active = False


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
