"""The ``checkpoint`` entries of a session: reading them, the entry data written, and which files the user
edited by hand since a checkpoint (what a restore reports as a conflict instead of overwriting).

An entry is ``{"type": "custom", "customType": "checkpoint", "data": {...}}`` — a custom entry, so Pi opens
the file unchanged and never sends it to a model. The data:

- ``commit``: the snapshot in the workspace's shadow repository (the checkpoint's id);
- ``reason``: ``"prompt"`` (before a prompt or a goal iteration) or ``"restore"`` (before a restore);
- ``files``: ``{"status", "path"}`` for each file changed since the previous checkpoint on the branch;
- ``edited``: files changed while no run was going (by hand, or the user's ``!`` commands) since the last run;
- ``skipped``: files left out for their size; ``restores``: for a restore, the checkpoint it went back to.

Pure functions over entries; the session store and the shadow repository are the callers'.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from caddie.ai.messages import UserMessage, text_of
from caddie.session.entries import CustomEntry, CustomMessageEntry, MessageEntry, SessionEntry

CHECKPOINT_TYPE = "checkpoint"


@dataclass(frozen=True)
class Checkpoint:
    id: str
    """The snapshot's commit id."""
    entry_id: str
    timestamp: str
    reason: str
    files: list[dict[str, str]] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    restores: str | None = None
    prompt: str = ""
    """The text of the prompt that followed the checkpoint on its branch ("" when none followed)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "entryId": self.entry_id,
            "timestamp": self.timestamp,
            "reason": self.reason,
            "files": self.files,
            "edited": self.edited,
            "skipped": self.skipped,
            "prompt": self.prompt,
        }
        if self.restores is not None:
            out["restores"] = self.restores
        return out


def entry_data(
    commit: str,
    reason: str,
    files: Sequence[tuple[str, str]],
    edited: Iterable[str],
    skipped: Iterable[str],
    restores: str | None = None,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "commit": commit,
        "reason": reason,
        "files": [{"status": s, "path": p} for s, p in files],
        "edited": sorted(edited),
        "skipped": list(skipped),
    }
    if restores is not None:
        data["restores"] = restores
    return data


def is_checkpoint(entry: SessionEntry) -> bool:
    return (
        isinstance(entry, CustomEntry)
        and entry.custom_type == CHECKPOINT_TYPE
        and isinstance(entry.data, dict)
        and isinstance(entry.data.get("commit"), str)
    )


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _files(value: object) -> list[dict[str, str]]:
    if not isinstance(value, list):
        return []
    return [
        {"status": str(v.get("status", "")), "path": str(v["path"])}
        for v in value
        if isinstance(v, dict) and isinstance(v.get("path"), str)
    ]


def checkpoints_of(entries: Sequence[SessionEntry]) -> list[Checkpoint]:
    """The checkpoints among ``entries``, in their order (file order is oldest first)."""
    prompts: dict[str, str] = {}
    for entry in entries:
        if entry.parent_id is None or entry.parent_id in prompts:
            continue
        if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage):
            prompts[entry.parent_id] = text_of(entry.message.content)
        elif isinstance(entry, CustomMessageEntry):
            content = entry.content
            prompts[entry.parent_id] = content if isinstance(content, str) else text_of(content)
    out = []
    for entry in entries:
        if not is_checkpoint(entry):
            continue
        assert isinstance(entry, CustomEntry)
        data = entry.data
        restores = data.get("restores")
        out.append(
            Checkpoint(
                data["commit"],
                entry.id,
                entry.timestamp,
                str(data.get("reason", "prompt")),
                _files(data.get("files")),
                _strings(data.get("edited")),
                _strings(data.get("skipped")),
                restores if isinstance(restores, str) else None,
                prompts.get(entry.id, ""),
            )
        )
    return out


def find(checkpoints: Sequence[Checkpoint], ref: str) -> list[Checkpoint]:
    """The checkpoints ``ref`` names: an entry id, or a commit id or a prefix of one (4+ characters). Several
    entries may share one commit (nothing changed between them)."""
    ref = ref.strip().lower()
    if not ref:
        return []
    by_entry = [c for c in checkpoints if c.entry_id == ref]
    if by_entry:
        return by_entry
    if len(ref) < 4:
        return []
    return [c for c in checkpoints if c.id.startswith(ref)]  # the caller tells "ambiguous" by distinct ids


def hand_edited_since(
    branch: Sequence[Checkpoint], target: Checkpoint, now_edited: Iterable[str]
) -> set[str]:
    """Files the user changed by hand after ``target``: the ``edited`` of every checkpoint of the current
    branch newer than it, plus ``now_edited`` (since the last run)."""
    newer = [c for c in branch if c.timestamp > target.timestamp and c.entry_id != target.entry_id]
    out = set(now_edited)
    for c in newer:
        out.update(c.edited)
    return out


def checkpoint_at(entries: Sequence[SessionEntry], entry_id: str) -> Checkpoint | None:
    """The checkpoint that goes with ``entry_id`` when moving there: the entry itself, or the one taken just
    before it (a prompt's parent). None for any other entry (its files were never saved as such)."""
    by_id = {e.id: e for e in entries}
    entry = by_id.get(entry_id)
    if entry is None:
        return None
    for candidate in (entry, by_id.get(entry.parent_id or "")):
        if candidate is not None and is_checkpoint(candidate):
            return checkpoints_of([candidate])[0]
    return None


def checkpoint_for_span(branch: Sequence[SessionEntry], start_id: str) -> Checkpoint | None:
    """The checkpoint that holds the files as they were when the span of ``branch`` starting at ``start_id``
    began: the last one before it with no assistant reply in between (the span opens a prompt's work), else
    the first one after its start with none in between (only idle time passed: a marker set, then a prompt).
    None when neither exists."""
    ids = [e.id for e in branch]
    if start_id not in ids:
        return None
    at = ids.index(start_id)

    def replies(entries: Sequence[SessionEntry]) -> bool:
        return any(isinstance(e, MessageEntry) and e.message.role == "assistant" for e in entries)

    for i in range(at - 1, -1, -1):
        if is_checkpoint(branch[i]):
            if not replies(branch[i + 1 : at]):
                return checkpoints_of([branch[i]])[0]
            break
    for i in range(at, len(branch)):
        if is_checkpoint(branch[i]):
            return None if replies(branch[at:i]) else checkpoints_of([branch[i]])[0]
    return None
