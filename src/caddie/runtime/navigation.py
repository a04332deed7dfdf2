"""Moving between sessions and within one: ``/new``, ``/resume`` (switch), ``/fork`` and ``/clone``, ``/tree``
navigation and ``/reload``.

A switch is Pi's sequence: ``session_before_switch`` / ``session_before_fork`` (an extension may cancel) →
the running turn settles (RPC: it is aborted) → ``session_shutdown`` for the old extension instances → the
store is swapped and the extensions are loaded afresh → ``session_start`` with the reason and the previous
session file.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, Protocol

from caddie.agent.agent import Agent
from caddie.ai.abort import AbortController
from caddie.ai.messages import UserMessage, text_of
from caddie.ai.model import THINKING_LEVELS, Model
from caddie.errors import UsageError
from caddie.extensions.api import (
    ExtensionUI,
    SessionBeforeForkEvent,
    SessionBeforeSwitchEvent,
    SessionBeforeTreeEvent,
    SessionBeforeTreeResult,
    SessionShutdownEvent,
    SessionStartEvent,
    SessionTreeEvent,
    TreePreparation,
    TreeSummary,
)
from caddie.extensions.runner import Extension, ExtensionRunner, call_handler
from caddie.runtime.checkpointing import Checkpointing
from caddie.runtime.compaction_port import Compactor
from caddie.runtime.prompting import Prompter
from caddie.runtime.run_controller import RunController
from caddie.runtime.session_events import NoticeEvent, SessionEvent
from caddie.runtime.system_prompt import PromptFiles
from caddie.runtime.tools_prompt import ToolsAndPrompt
from caddie.session.branch_summary import collect_entries_for_branch_summary, navigation_leaf
from caddie.session.entries import BranchSummaryEntry, MessageEntry
from caddie.session.store import SessionFileError, SessionStore

StartReason = Literal["startup", "reload", "new", "resume", "fork"]
ShutdownReason = Literal["quit", "reload", "new", "resume", "fork"]


class ExtensionBinding(Protocol):
    def bind_all(self) -> None: ...

    def unbind_all(self) -> None: ...


class NavigatorHost(Protocol):
    """What moving between sessions needs of the session."""

    @property
    def checkpoints(self) -> Checkpointing: ...

    store: SessionStore
    extensions: list[Extension]
    load_errors: list[str]
    exit_code: int | None
    generation: int
    reload_extensions: Callable[[], Awaitable[tuple[list[Extension], list[str]]]] | None
    read_prompt_files: Callable[[], PromptFiles] | None
    after_reload: Callable[[], Awaitable[None]] | None
    find_model: Callable[[str, str], Model | None]

    @property
    def agent(self) -> Agent: ...

    @property
    def runner(self) -> ExtensionRunner: ...

    @property
    def run(self) -> RunController: ...

    @property
    def prompter(self) -> Prompter: ...

    @property
    def bridge(self) -> ExtensionBinding: ...

    @property
    def compactor(self) -> Compactor | None: ...

    @property
    def ui(self) -> ExtensionUI: ...

    @property
    def cwd(self) -> str: ...

    @property
    def model(self) -> Model | None: ...

    def use_model(self, model: Model) -> None: ...

    def abort(self) -> None: ...

    @property
    def tools(self) -> ToolsAndPrompt: ...

    async def announce_store_warnings(self) -> None: ...

    async def publish_event(self, event: SessionEvent) -> None: ...

    async def start(
        self, reason: StartReason = "startup", previous_session_file: str | None = None
    ) -> None: ...

    async def shutdown(self, reason: ShutdownReason = "quit") -> None: ...

    def publish_soon(self, event: SessionEvent) -> None: ...


class SessionNavigator:
    def __init__(self, session: NavigatorHost) -> None:
        self._session = session

    def _require_idle(self, doing: str) -> None:
        if self._session.run.busy:
            raise UsageError(f"Wait for the agent to finish (or press Esc) before {doing}.")

    async def replace_store(
        self, store: SessionStore, reason: Literal["new", "resume", "fork"], previous_file: str | None
    ) -> None:
        """Switch to another session (``/new``, ``/resume``, ``/fork``): shutdown → swap → start.

        Nothing of the old session carries over: queued messages, retry state and exit code are reset, and
        the model and thinking level are those the new session recorded (a new one records the current ones).
        """
        session = self._session
        self._require_idle("switching sessions")
        # Rebuilt in a worker thread (a long session takes a while), before anyone else can see the new store.
        restored = await asyncio.to_thread(store.build_context)
        await session.runner.emit("session_shutdown", SessionShutdownEvent(reason, store.session_file))
        session.generation += 1  # contexts of the old session are stale from here (as Pi's)
        if store is not session.store:
            session.store.close()  # the old file's write lock (shared, so reopening the same file keeps it)
        session.store = store
        session.prompter.reset()
        session.run.retry_attempt = 0
        if session.compactor is not None:
            session.compactor.reset()
        session.exit_code = None
        await self._recreate_extensions()
        state = session.agent.state
        state.messages = restored.messages
        if restored.model is not None and (found := session.find_model(*restored.model)) is not None:
            session.use_model(found)
        if len(store) == 0:
            if session.model is not None:
                store.append_model_change(state.model.provider, state.model.id)
            store.append_thinking_level_change(state.thinking_level)
        else:
            state.thinking_level = next(
                (t for t in THINKING_LEVELS if t == restored.thinking_level), state.thinking_level
            )
        await session.announce_store_warnings()
        await session.runner.emit("session_start", SessionStartEvent(reason, previous_file))
        session.tools.rebuild()

    async def _recreate_extensions(self) -> None:
        """A session switch starts the extensions afresh (as Pi re-creates its runtime): the old instances
        are detached and the extensions are loaded again (when they were loaded from files)."""
        session = self._session
        if session.reload_extensions is None:
            return
        session.bridge.unbind_all()
        await self.load_extensions()
        for error in session.load_errors:  # e.g. an extension file that is gone or broken now
            session.publish_soon(NoticeEvent(error, "warning"))
        session.bridge.bind_all()

    async def load_extensions(self) -> None:
        session = self._session
        assert session.reload_extensions is not None
        extensions, errors = await session.reload_extensions()
        session.extensions[:] = extensions
        session.load_errors = errors
        session.runner.extensions = session.extensions
        session.tools.activate_new(True, fresh=True)

    async def _before_switch(self, reason: Literal["new", "resume"], target: str | None) -> bool:
        """``session_before_switch``: True when an extension cancelled."""
        runner = self._session.runner
        if not runner.has_handlers("session_before_switch"):
            return False
        return _cancelled(
            await runner.emit("session_before_switch", SessionBeforeSwitchEvent(reason, target))
        )

    async def _before_fork(self, entry_id: str, position: Literal["before", "at"]) -> bool:
        """``session_before_fork``: True when an extension cancelled."""
        runner = self._session.runner
        if not runner.has_handlers("session_before_fork"):
            return False
        return _cancelled(
            await runner.emit("session_before_fork", SessionBeforeForkEvent(entry_id, position))
        )

    async def _settle_before_switch(self, abort_running: bool, doing: str) -> None:
        session = self._session
        if abort_running and session.run.busy:
            session.abort()
            await session.run.wait_until_run_ends()
        self._require_idle(doing)
        # A file checkpoint still being saved spawns git processes, which hold the session file's lock for
        # an instant each (fork before exec): let it finish before the session files are closed and opened.
        await session.checkpoints.settle()

    def _new_store(self, parent_session: str | None) -> SessionStore:
        session = self._session
        directory = session.store.path.parent if session.store.path else None
        if directory is None:
            return SessionStore.in_memory(session.cwd)
        return SessionStore.create(session.cwd, directory, parent_session=parent_session)

    async def new_session(
        self,
        parent_session: str | None = None,
        *,
        abort_running: bool = False,
        setup: Callable[[SessionStore], Any] | None = None,
    ) -> bool:
        """A fresh session (``/new``); False when a ``session_before_switch`` handler cancelled it.
        ``abort_running`` (RPC, as Pi): a running turn is aborted first instead of refusing. ``setup(store)``
        (an extension's, sync or async) fills the new session in before it is loaded."""
        if not abort_running:
            self._require_idle("starting a new session")
        if await self._before_switch("new", None):
            return False
        await self._settle_before_switch(abort_running, "starting a new session")
        previous = self._session.store.session_file
        store = self._new_store(parent_session)
        if setup is not None:
            await call_handler(setup, store)
        await self.replace_store(store, "new", previous)
        return True

    async def switch_session(self, path: str, *, abort_running: bool = False) -> bool:
        """Open another session file; a path with no file yet starts a new session there (as Pi does).
        False when a ``session_before_switch`` handler cancelled."""
        session = self._session
        if not abort_running:
            self._require_idle("switching sessions")
        target = Path(path).expanduser().resolve()
        if await self._before_switch("resume", str(target)):
            return False
        await self._settle_before_switch(abort_running, "switching sessions")
        previous = session.store.session_file
        if target.exists():
            try:  # read in a worker thread: a large file must not freeze the UI's event loop
                store = await asyncio.to_thread(SessionStore.open, target)
            except SessionFileError as e:  # e.g. another process writes it: one line for the user
                raise UsageError(str(e)) from None
        else:
            store = SessionStore.create(session.cwd, target.parent)
            store.path = target
        await self.replace_store(store, "resume", previous)
        return True

    async def fork(
        self,
        entry_id: str,
        *,
        position: Literal["before", "at"] | None = None,
        abort_running: bool = False,
    ) -> bool:
        """A new session from the path up to ``entry_id``; from a user message: up to just before it
        (``position="at"``, a clone: up to and including the entry). False when a ``session_before_fork``
        handler cancelled."""
        session = self._session
        if not abort_running:
            self._require_idle("forking")
        store = session.store
        entry = store.get_entry(entry_id)
        if entry is None:
            raise UsageError(f"No entry {entry_id} in this session.")
        before_user = (
            isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage) and position != "at"
        )
        if await self._before_fork(entry_id, "before" if before_user else "at"):
            return False
        if (
            (not before_user or entry.parent_id is not None)
            and store.path is not None
            and not store.file_exists
        ):
            raise UsageError(
                "This session has not been saved yet. Wait for the first assistant response before cloning "
                "or forking it."
            )
        await self._settle_before_switch(abort_running, "forking")
        previous = store.session_file
        if before_user and entry.parent_id is None:  # forking before the very first message: an empty session
            forked = self._new_store(previous)
        else:
            # copies the branch and writes the new file: off the event loop (the session is idle meanwhile)
            forked = await asyncio.to_thread(store.fork, entry.parent_id if before_user else entry_id)
        await self.replace_store(forked, "fork", previous)
        return True

    async def navigate_tree(
        self,
        target_id: str,
        summarize: bool = False,
        *,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> bool:
        """Move the leaf: to a user message's parent (its text goes back to the editor), else to the entry.
        ``session_before_tree`` may cancel (False), supply the summary, or change the instructions and the
        ``label`` (put on the summary, or on the target without one)."""
        session = self._session
        self._require_idle("moving in the tree")
        store = session.store
        entry = store.get_entry(target_id)
        if entry is None:
            raise UsageError(f"No entry {target_id} in this session.")
        old_leaf = store.leaf_id
        supplied: TreeSummary | None = None
        if session.runner.has_handlers("session_before_tree"):
            collected = collect_entries_for_branch_summary(store, old_leaf, target_id)
            preparation = TreePreparation(
                target_id,
                old_leaf,
                collected.common_ancestor_id,
                collected.entries,
                summarize,
                custom_instructions,
                replace_instructions,
                label,
            )
            result = await session.runner.emit(
                "session_before_tree", SessionBeforeTreeEvent(preparation, AbortController().signal)
            )
            if _cancelled(result):
                return False
            if isinstance(result, SessionBeforeTreeResult):
                supplied = result.summary if summarize else None
                if result.custom_instructions is not None:
                    custom_instructions = result.custom_instructions
                if result.replace_instructions is not None:
                    replace_instructions = result.replace_instructions
                if result.label is not None:
                    label = result.label
        summary_entry = None
        if supplied is not None:
            summary_id = store.branch_with_summary(
                navigation_leaf(entry), supplied.summary, supplied.details, True, supplied.usage
            )
            found = store.get_entry(summary_id)
            summary_entry = found if isinstance(found, BranchSummaryEntry) else None
        elif session.compactor is not None and summarize:
            # Attached at the new position (a child of it); raises when cancelled, before the leaf moves.
            summary_entry = await session.compactor.summarize_branch(
                old_leaf, target_id, custom_instructions, replace_instructions
            )
        if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage):
            store.move_leaf(entry.parent_id)
            session.ui.set_editor_text(text_of(entry.message.content))
        else:
            store.move_leaf(target_id)
        if summary_entry is not None:
            store.move_leaf(summary_entry.id)
        if label:
            store.append_label(summary_entry.id if summary_entry is not None else target_id, label)
        session.agent.state.messages = store.build_context().messages
        tree = SessionTreeEvent(
            store.leaf_id, old_leaf, summary_entry, (supplied is not None) if summary_entry else None
        )
        await session.runner.emit("session_tree", tree)
        return True

    async def reload(self) -> None:
        """``/reload``: shutdown → extensions imported again, context files and SYSTEM.md / APPEND_SYSTEM.md
        read again → start (which finds skills and prompt templates again and rebuilds the prompt) → the mode's
        ``after_reload`` (the TUI reads keybindings and themes again)."""
        session = self._session
        if session.reload_extensions is None:
            return
        self._require_idle("reloading extensions")
        await session.shutdown("reload")
        await self.load_extensions()
        read = session.read_prompt_files
        if read is not None:
            files = read()
            session.tools.use_files(files)
            for warning in files.parts.warnings:
                await session.publish_event(NoticeEvent(warning, "warning"))
        await session.start("reload")
        if session.after_reload is not None:
            await session.after_reload()


def _cancelled(result: Any) -> bool:
    if isinstance(result, dict):
        return result.get("cancel") is True
    return getattr(result, "cancel", False) is True
