"""When a rewind hides the model's own turn or goes back to a user's checkpoint: the files that span changed,
put back from caddie's file checkpoint (``ctx.restore_files``), as the ``rewind.restoreFiles`` setting says —
``never``, ``ask`` (the default with a terminal UI) or ``always`` (``never`` is the default headless).

``files_note`` (pure) is what the rewind note then tells the model: which files came back, which did not and
why, and that what commands did beyond the workspace's files (a database, a network call) is not undone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from caddie.extensions.api import ExtensionContext, RestoreReport
from caddie.extensions.bundled.mulligan.ledger import FileLedger

SPAN_GRANULARITIES = ("last_turn", "checkpoint")
"""The rewinds whose span starts where a file checkpoint is taken (a prompt, or a user's checkpoint)."""


@dataclass
class FilesOutcome:
    restored: list[str] = field(default_factory=list)
    not_restored: list[tuple[str, str]] = field(default_factory=list)
    why_none: str | None = None
    """Set when nothing was restored: the sentence saying why."""

    @property
    def any_restored(self) -> bool:
        return bool(self.restored)


def restore_mode(setting: str | None, ctx: ExtensionContext) -> str:
    if setting in ("never", "ask", "always"):
        return setting
    return "ask" if ctx.has_ui and ctx.mode == "tui" else "never"


async def restore_span_files(
    setting: str | None,
    ctx: ExtensionContext,
    granularity: str,
    hide_entry_ids: Sequence[str],
    ledger: FileLedger,
) -> FilesOutcome | None:
    """Restore the files the hidden span changed, if the setting allows; None when not attempted."""
    if granularity not in SPAN_GRANULARITIES or not hide_entry_ids or not ledger.has_side_effects:
        return None
    mode = restore_mode(setting, ctx)
    if mode == "never":
        return None
    if mode == "ask":
        changed = ", ".join(ledger.modified_files[:5]) or "files, through commands"
        agreed = await ctx.ui.confirm(
            "Restore files?",
            f"The rewound span changed {changed}. Put the workspace's files back as they were before it?",
        )
        if not agreed:
            return FilesOutcome(why_none="the user chose to keep them")
    report = await ctx.restore_files(hide_entry_ids[0])
    if report is None:
        return FilesOutcome(why_none="no file checkpoint marks the start of the hidden span")
    return outcome_of(report)


def outcome_of(report: RestoreReport) -> FilesOutcome:
    kept = [(p, "edited by hand since; left as it is") for p in report.conflicts]
    return FilesOutcome(sorted({*report.written, *report.removed}), [*kept, *report.not_restored])


def files_note(outcome: FilesOutcome) -> str:
    """The note's section on files (appended after the ledger blocks)."""
    if not outcome.any_restored and outcome.why_none is not None:
        return f"**Files:** not restored ({outcome.why_none}); the changes listed above persist on disk."
    parts = []
    if outcome.restored:
        parts.append("<files-restored>\n" + "\n".join(outcome.restored) + "\n</files-restored>")
    if outcome.not_restored:
        body = "\n".join(f"{path} — {why}" for path, why in outcome.not_restored)
        parts.append(f"<files-not-restored>\n{body}\n</files-not-restored>")
    parts.append(
        "**Files:** the workspace's files are back as they were before the hidden span. What its commands did "
        "beyond those files (a database, a network call, files outside the workspace or ignored by git) is "
        "not undone."
    )
    return "\n\n".join(parts)
