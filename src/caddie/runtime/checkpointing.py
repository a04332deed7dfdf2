"""File checkpoints in a running session: one before each prompt (and each goal iteration — any batch of
input that starts model work), the state a run left behind, and restores (files, conversation, or both).

Snapshots run in a worker thread, never on the event loop. A session without a file (``--no-session``,
in-memory) takes none: the session file is where a checkpoint is recorded. A failed snapshot never stops a
prompt: it becomes one warning notice. docs/checkpoints.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from caddie.checkpoints.records import CHECKPOINT_TYPE, Checkpoint, checkpoint_for_span, checkpoints_of, find
from caddie.checkpoints.restore import RestoreReport
from caddie.checkpoints.service import CheckpointSettings, RestoreRefused, WorkspaceCheckpoints
from caddie.config.settings import Settings
from caddie.errors import CaddieError
from caddie.runtime.run_controller import RunController
from caddie.runtime.session_events import NoticeEvent, SessionEvent
from caddie.session.store import SessionStore

log = logging.getLogger("caddie.checkpoints")


class CheckpointHost(Protocol):
    """What checkpointing needs of the session."""

    @property
    def store(self) -> SessionStore: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def run(self) -> RunController: ...

    def publish_soon(self, event: SessionEvent) -> None: ...

    async def navigate_to(self, entry_id: str) -> None: ...


class Checkpointing:
    def __init__(self, session: CheckpointHost) -> None:
        self._session = session
        self._taken_since_reply = False
        """A checkpoint was taken since the last assistant reply: the rest of this input batch shares it."""
        self._taken_this_run = False
        self._run_end: asyncio.Task[None] | None = None
        self._warned: set[str] = set()

    def service(self) -> WorkspaceCheckpoints | None:
        """The checkpoints of the current session, or None when it takes none."""
        store = self._session.store
        if store.path is None:
            return None
        service = WorkspaceCheckpoints(store.cwd, store.session_id, self._settings())
        if service.unavailable() is not None:
            return None  # said where it matters: /rewind, `caddie checkpoints`, a restore's error
        return service

    def _settings(self) -> CheckpointSettings:
        return CheckpointSettings.from_settings(self._session.settings.get("checkpoints"))

    # -- taking (called by the loop hooks) ------------------------------------------------------------
    async def before_input(self) -> None:
        """A user message (or an extension's message that starts model work) is about to enter the
        conversation: save the files first, once per batch of input."""
        if self._taken_since_reply:
            return
        self._taken_since_reply = True
        idle = not self._taken_this_run
        self._taken_this_run = True
        await self.take("prompt", idle=idle)

    def after_reply(self) -> None:
        self._taken_since_reply = False

    def run_ended(self, spawn: Callable[[Awaitable[None]], asyncio.Task[None]]) -> None:
        """Remember the files as the run left them (in the background; the next checkpoint waits for it)."""
        self._taken_this_run = False
        self._taken_since_reply = False
        service = self.service()
        if service is None:
            return
        self._run_end = spawn(self._guarded(asyncio.to_thread(service.mark_run_end)))

    async def take(self, reason: str, *, idle: bool, restores: str | None = None) -> dict[str, Any] | None:
        """Snapshot the workspace and append its ``checkpoint`` entry; the entry's data (None: none taken)."""
        service = self.service()
        if service is None:
            return None
        await self._wait_for_run_end()
        store = self._session.store
        parent = service.last_on_branch(store.branch())
        try:
            data = await asyncio.to_thread(
                service.capture, parent, idle=idle, reason=reason, restores=restores
            )
        except (CaddieError, OSError) as e:  # a disk or git failure never stops the prompt
            self._warn(f"No file checkpoint was taken: {e}", key=str(e))
            return None
        store.append_custom(CHECKPOINT_TYPE, data)
        if data["skipped"]:
            skipped = ", ".join(data["skipped"][:5]) + (" …" if len(data["skipped"]) > 5 else "")
            self._warn(
                "File checkpoints leave out files over the size limit (settings checkpoints.maxFileBytes); "
                f"a restore will not touch them: {skipped}"
            )
        return data

    # -- reading and restoring ----------------------------------------------------------------------------
    def all(self) -> list[Checkpoint]:
        return checkpoints_of(self._session.store.entries())

    async def changes(self, ref: str) -> list[str]:
        service = self.service()
        if service is None:
            return []
        found = find(self.all(), ref)
        if not found:
            return []
        await self._wait_for_run_end()
        return await asyncio.to_thread(service.changed_since, found[-1])

    async def restore(
        self, ref: str, *, files: bool = True, conversation: bool = False, force: bool = False
    ) -> RestoreReport | None:
        """Restore the checkpoint ``ref`` names: its files (a checkpoint of the current files taken first),
        and/or the conversation as it was before its prompt. The report (None when only the conversation
        moved)."""
        session = self._session
        if session.run.busy:
            raise RestoreRefused(
                "The agent is working; wait for it to finish (or press Esc) before restoring."
            )
        if not files and not conversation:
            raise RestoreRefused("Nothing to restore: ask for the files, the conversation, or both.")
        store = session.store
        service = self.service()
        if files and service is None:
            why = WorkspaceCheckpoints(store.cwd, store.session_id, self._settings()).unavailable()
            raise RestoreRefused(
                why or "This session has no file checkpoints: it has no session file (--no-session)."
            )
        target = service.target(store.entries(), ref) if service is not None else _find_entry(self.all(), ref)
        report = None
        if files:
            assert service is not None
            await self._wait_for_run_end()
            before = await self.take("restore", idle=True, restores=target.id)
            if before is None:
                raise RestoreRefused("The current files could not be saved first, so nothing was restored.")
            branch = store.branch()
            report = await asyncio.to_thread(service.restore_files, target, before, branch, force=force)
        if conversation:
            prompt_entry = next(
                (e.id for e in store.children(target.entry_id) if e.type in ("message", "custom_message")),
                target.entry_id,
            )
            await session.navigate_to(prompt_entry)
        return report

    async def restore_span(self, start_id: str) -> RestoreReport | None:
        """``ctx.restore_files``: the files back as they were when the span of the current branch starting
        at ``start_id`` began (an extension's restore, allowed during a run: it is the agent's own step)."""
        service = self.service()
        if service is None:
            return None
        store = self._session.store
        target = checkpoint_for_span(store.branch(), start_id)
        if target is None or not service.repo.has_commit(target.id):
            return None
        await self._wait_for_run_end()
        before = await self.take("restore", idle=False, restores=target.id)
        if before is None:
            return None
        return await asyncio.to_thread(service.restore_files, target, before, store.branch())

    async def settle(self) -> None:
        """Until no checkpoint work started in the background is left (before session files switch)."""
        await self._wait_for_run_end()

    async def _wait_for_run_end(self) -> None:
        task, self._run_end = self._run_end, None
        if task is not None:
            await asyncio.wait([task])

    async def _guarded(self, work: Awaitable[None]) -> None:
        try:
            await work
        except (CaddieError, OSError) as e:
            self._warn(f"The files at the end of the run could not be saved: {e}", key=str(e))

    def _warn(self, message: str, key: str | None = None) -> None:
        """Once per cause (``key``, else the message) for the session's life."""
        if (key or message) in self._warned:
            return
        self._warned.add(key or message)
        log.debug("%s", message)  # the notice is how it is said (stderr in print mode, the UI's line)
        self._session.publish_soon(NoticeEvent(message, "warning"))


def _find_entry(checkpoints: list[Checkpoint], ref: str) -> Checkpoint:
    matches = find(checkpoints, ref)
    if not matches:
        raise RestoreRefused(
            f"No checkpoint '{ref}' in this session; list them with /rewind or `caddie checkpoints`."
        )
    return matches[-1]
