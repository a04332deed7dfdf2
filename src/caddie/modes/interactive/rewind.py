"""``/rewind`` (Claude Code's name): pick an earlier prompt and go back — the conversation, the files, or
both — and the files offer ``/tree`` and ``/fork`` make when the point they move to has a checkpoint.

Everything goes through the session API (``checkpoints``, ``restore_checkpoint``); a restore that left
files edited by hand alone asks before overwriting them. docs/checkpoints.md.
"""

from __future__ import annotations

from typing import Any, Protocol

from textual.screen import ModalScreen

from caddie.checkpoints.records import Checkpoint, checkpoint_at
from caddie.checkpoints.restore import RestoreReport
from caddie.errors import CaddieError
from caddie.modes.interactive.dialogs import Choice, ListScreen, SelectScreen
from caddie.runtime.session import AgentSession

BOTH = "Conversation and files"
FILES = "Files only"
CONVERSATION = "Conversation only (as /tree)"
CANCEL = "Cancel"


class RewindHost(Protocol):
    """What the commands need from the app."""

    session: AgentSession | None

    async def ask(self, screen: ModalScreen[Any], timeout: float | None, default: Any) -> Any: ...

    def show_info(self, content: Any, level: str = "info") -> None: ...

    def show_error(self, message: str) -> None: ...

    async def render_session(self) -> None: ...


def _label(c: Checkpoint) -> str:
    files = f"{len(c.files)} file(s) changed before it" if c.files else "no file changes before it"
    return f"{' '.join(c.prompt.split()) or '(no prompt)'}  · {files}"


async def run_rewind(host: RewindHost) -> None:
    session = host.session
    assert session is not None
    branch_ids = {e.id for e in session.store.branch()}
    points = [c for c in session.checkpoints.all() if c.reason == "prompt" and c.entry_id in branch_ids]
    if not points:
        host.show_info(
            "There is no checkpoint to rewind to yet: one is taken before each prompt, in a project folder, "
            "when the session is saved (see docs/checkpoints.md)."
        )
        return
    choices = [Choice(c.entry_id, _label(c)[:120]) for c in reversed(points)]
    picker = ListScreen(
        "Rewind to before which prompt?", choices, filter_placeholder="type to filter prompts"
    )
    picked = await host.ask(picker, None, None)
    if picked is None:
        return
    target = next(c for c in points if c.entry_id == picked)
    choice = await host.ask(SelectScreen("Rewind what?", [BOTH, FILES, CONVERSATION, CANCEL]), None, None)
    if choice not in (BOTH, FILES, CONVERSATION):
        return
    await restore(host, target, files=choice != CONVERSATION, conversation=choice != FILES)


async def offer_files(host: RewindHost, entry_id: str) -> Checkpoint | None:
    """Before ``/tree`` or ``/fork`` moves to ``entry_id``: the checkpoint to restore too, if the user wants
    the files back as they were there (asked only when that point has one)."""
    session = host.session
    assert session is not None
    found = checkpoint_at(session.store.entries(), entry_id)
    if found is None:
        return None
    changed = await session.checkpoints.changes(found.id)
    if not changed:
        return None  # nothing to put back: no question
    names = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    answer = await host.ask(
        SelectScreen(
            f"Restore the files as they were at that point too? ({names} changed since)", [CONVERSATION, BOTH]
        ),
        None,
        None,
    )
    return found if answer == BOTH else None


async def restore(host: RewindHost, target: Checkpoint, *, files: bool, conversation: bool) -> None:
    session = host.session
    assert session is not None
    try:
        report = await session.checkpoints.restore(target.id, files=files, conversation=conversation)
        if report is not None and report.conflicts and await _overwrite(host, report):
            forced = await session.checkpoints.restore(target.id, force=True)
            if forced is not None:
                report.written += forced.written
                report.conflicts = forced.conflicts
    except CaddieError as e:
        host.show_error(str(e))
        return
    if conversation:
        await host.render_session()
    if report is not None:
        host.show_info(report.summary())


async def _overwrite(host: RewindHost, report: RestoreReport) -> bool:
    names = ", ".join(report.conflicts[:5]) + (" …" if len(report.conflicts) > 5 else "")
    answer = await host.ask(
        SelectScreen(
            f"{len(report.conflicts)} file(s) were edited by hand since that checkpoint ({names}). Overwrite them?",
            ["Keep my edits", "Overwrite them"],
        ),
        None,
        None,
    )
    return bool(answer == "Overwrite them")
