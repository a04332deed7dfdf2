"""The context filter's algorithms, pure: pairing units, span resolution, pinned hides, shrinks, the pipeline.

Every removal acts on whole *units* (an assistant message that issued tool calls together with all of its
results), so a tool call is never separated from its result. Nothing here mutates its inputs; a no-op returns
the very list it was given.

Markers created by the tools pin *entry ids* (``hideEntryIds``, ``pinnedEntryId``), resolved every fire
through the branch's retained tail (entries after the last compaction map one-to-one onto the last messages).
The relative resolvers (last tool-call group, last turn, checkpoint) run when a marker is created, and on
old markers without pins.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from caddie.extensions.api import (
    AgentMessage,
    AssistantMessage,
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessage,
    CustomMessageEntry,
    LabelEntry,
    MessageEntry,
    SessionEntry,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    content_to_json,
    json_stringify,
    replace,
)
from caddie.extensions.bundled.mulligan.markers import CHECKPOINT_LABEL_PREFIX, RewindMarker, ShrinkMarker

UnitKind: TypeAlias = Literal["plain", "toolGroup"]
SHRUNK_OPEN = "<context-shrunk>"
SHRUNK_CLOSE = "</context-shrunk>"


@dataclass(frozen=True, slots=True)
class Unit:
    """A pairing-safe group of message indices (ascending): one plain message, or a tool group."""

    indices: tuple[int, ...]
    kind: UnitKind


def partition_into_units(messages: Sequence[AgentMessage]) -> list[Unit]:
    """Group messages into units, ordered by their first index.

    A tool group is an assistant message with at least one identified tool call plus every result whose
    ``tool_call_id`` names one of its calls (a result may come before its call). An orphan result, a user
    message, a text-only assistant message or a custom message is a plain unit.
    """
    call_owner: dict[str, int] = {}
    for i, msg in enumerate(messages):
        if isinstance(msg, AssistantMessage):
            for block in msg.content:
                if isinstance(block, ToolCall) and block.id:
                    call_owner[block.id] = i  # a duplicate id (malformed) belongs to the last assistant
    if not call_owner:
        return [Unit((i,), "plain") for i in range(len(messages))]
    results: dict[int, list[int]] = {}
    for i, msg in enumerate(messages):
        if isinstance(msg, ToolResultMessage) and msg.tool_call_id:
            owner = call_owner.get(msg.tool_call_id)
            if owner is not None:
                results.setdefault(owner, []).append(i)
    units: list[Unit] = []
    grouped: set[int] = set()
    for owner in dict.fromkeys(call_owner.values()):
        indices = tuple(sorted([owner, *results.get(owner, ())]))
        grouped.update(indices)
        units.append(Unit(indices, "toolGroup"))
    units.extend(Unit((i,), "plain") for i in range(len(messages)) if i not in grouped)
    units.sort(key=lambda u: u.indices[0])
    return units


def issued_call(messages: Sequence[AgentMessage], indices: Sequence[int], call_id: str) -> bool:
    """Did an assistant message among ``indices`` issue the tool call ``call_id``?"""
    for i in indices:
        msg = messages[i]
        if isinstance(msg, AssistantMessage) and any(
            isinstance(b, ToolCall) and b.id == call_id for b in msg.content
        ):
            return True
    return False


def is_mulligan_message(msg: AgentMessage) -> bool:
    """Notes and nudges (``mulligan:*`` custom messages) survive every rewind."""
    return isinstance(msg, CustomMessage) and msg.custom_type.startswith("mulligan:")


def _own_unit_indices(
    messages: Sequence[AgentMessage], units: Sequence[Unit], exclude_id: str | None
) -> set[int]:
    if not exclude_id:
        return set()
    own: set[int] = set()
    for unit in units:
        if unit.kind == "toolGroup" and issued_call(messages, unit.indices, exclude_id):
            own.update(unit.indices)
    return own


def resolve_last_tool_call_group(
    units: Sequence[Unit], messages: Sequence[AgentMessage], exclude_id: str | None = None
) -> tuple[int, ...] | None:
    """The most recent tool group, skipping any group whose assistant issued ``exclude_id``.

    With parallel tool calls the rewind's own call shares its assistant message with siblings; that whole
    message is skipped and the previous group is returned.
    """
    for unit in reversed(units):
        if unit.kind != "toolGroup":
            continue
        if exclude_id and issued_call(messages, unit.indices, exclude_id):
            continue
        return unit.indices
    return None


def resolve_last_turn(messages: Sequence[AgentMessage], exclude_id: str | None = None) -> list[int]:
    """Everything after the latest user message, except the rewind's own unit and ``mulligan:*`` messages.

    The latest user message itself is always kept; no user message at all gives ``[]``.
    """
    last_user = -1
    for i, msg in enumerate(messages):
        if isinstance(msg, UserMessage):
            last_user = i
    if last_user < 0:
        return []
    own = _own_unit_indices(messages, partition_into_units(messages), exclude_id) if exclude_id else set()
    return [
        j
        for j in range(last_user + 1, len(messages))
        if j not in own and not is_mulligan_message(messages[j])
    ]


def entry_message_count(entry: SessionEntry) -> int:
    """How many context messages an entry contributes (a compaction's count is not aligned: -1)."""
    if isinstance(entry, (MessageEntry, CustomMessageEntry)):
        return 1
    if isinstance(entry, BranchSummaryEntry):
        return 1 if entry.summary else 0
    if isinstance(entry, CompactionEntry):
        return -1
    return 0


def resolve_checkpoint(
    messages: Sequence[AgentMessage],
    branch: Sequence[SessionEntry],
    name: str,
    exclude_id: str | None = None,
) -> list[int] | None:
    """Everything after the checkpointed message, except the rewind's own unit and ``mulligan:*`` messages.

    The checkpoint is the leaf-most label ``mulligan:checkpoint:<name>`` on the branch. The walk from the root
    to its target maps entries onto messages; a compaction on that stretch makes the mapping indeterminate
    and the checkpoint is refused (None), as is a target that produces no message. User messages after the
    checkpoint are removed (the user consented by setting it). A checkpoint on a tool-calling assistant keeps
    that message's results.
    """
    if not name:
        return None
    needle = CHECKPOINT_LABEL_PREFIX + name
    target_id: str | None = None
    for entry in reversed(branch):
        if isinstance(entry, LabelEntry) and entry.label == needle and entry.target_id:
            target_id = entry.target_id
            break
    if target_id is None:
        return None
    cursor = 0
    target_index = -1
    for entry in branch:
        count = entry_message_count(entry)
        if count == 0:
            continue
        if count < 0 or cursor + count > len(messages):
            return None
        if entry.id == target_id:
            target_index = cursor + count - 1
            break
        cursor += count
    if target_index < 0:
        return None
    units = partition_into_units(messages)
    for unit in units:
        if target_index in unit.indices:
            target_index = unit.indices[-1]
            break
    own = _own_unit_indices(messages, units, exclude_id)
    return [
        j
        for j in range(target_index + 1, len(messages))
        if j not in own and not is_mulligan_message(messages[j])
    ]


@dataclass(frozen=True, slots=True)
class BranchTail:
    """The branch entries the context still shows that produce a message, root → leaf: those a compaction
    kept before itself, then those after it (or the whole branch when there is no compaction).

    They are the last ``length`` messages of a compaction-aware context, one each, so an entry id resolves
    to a message index in O(1). ``positions`` may hold later entries too (an index that grew since); only
    positions below ``length`` belong to this tail.
    """

    length: int
    positions: Mapping[str, int]

    def message_index(self, entry_id: str, message_count: int) -> int | None:
        start = message_count - self.length
        if start < 0:  # the branch implies more messages than there are: alignment lost
            return None
        k = self.positions.get(entry_id)
        return None if k is None or k >= self.length else start + k

    def message_indices(self, entry_ids: Collection[str], message_count: int) -> list[int]:
        start = message_count - self.length
        if start < 0:
            return []
        get = self.positions.get
        found = {k for k in map(get, entry_ids) if k is not None and k < self.length}
        return sorted(start + k for k in found)


def _yields_message(entry: SessionEntry) -> bool:
    kind = entry.__class__
    return kind is MessageEntry or kind is CustomMessageEntry or entry_message_count(entry) > 0


def _last_compaction(branch: Sequence[SessionEntry], start: int = 0) -> int:
    for i in range(len(branch) - 1, start - 1, -1):
        if isinstance(branch[i], CompactionEntry):
            return i
    return -1


def _kept_before(branch: Sequence[SessionEntry], compaction_at: int) -> Sequence[SessionEntry]:
    """The entries a compaction kept before itself (from its ``first_kept_entry_id``), as the host's context has them.

    pi-mulligan indexes only the entries after the last compaction, so content hidden in the kept part before
    the compaction entry came back into view after a compaction (a leak, E24). The host's context is [summary,
    kept entries, later entries]; indexing the kept entries too keeps such content hidden.
    """
    compaction = branch[compaction_at]
    first_kept = getattr(compaction, "first_kept_entry_id", "")
    for i in range(compaction_at):
        if branch[i].id == first_kept:
            return branch[i:compaction_at]
    return ()


def branch_tail(branch: Sequence[SessionEntry] | None) -> BranchTail:
    """Index the branch's retained tail (one pass; entry ids are unique within a session)."""
    return BranchIndexer().tail(branch or [])


class BranchIndexer:
    """``branch_tail`` across fires: only the entries added since the last call are indexed.

    Sound because the session is an append-only tree: when the new branch holds the previously indexed leaf
    at the same depth, everything up to it is the same path.
    """

    def __init__(self) -> None:
        self._depth = 0
        self._leaf_id: str | None = None
        self._positions: dict[str, int] = {}
        self._length = 0

    def tail(self, branch: Sequence[SessionEntry]) -> BranchTail:
        depth = self._depth
        extends = (
            0 < depth <= len(branch)
            and branch[depth - 1].id == self._leaf_id
            and _last_compaction(branch, depth) < 0
        )
        kept: Sequence[SessionEntry] = ()
        if not extends:
            self._positions = {}
            self._length = 0
            compaction_at = _last_compaction(branch)
            depth = compaction_at + 1
            if compaction_at >= 0:
                kept = _kept_before(branch, compaction_at)
        positions = self._positions
        length = self._length
        for entry in itertools.chain(kept, branch[depth:] if depth else branch):
            if _yields_message(entry):
                positions[entry.id] = length
                length += 1
        self._length = length
        self._depth = len(branch)
        self._leaf_id = branch[-1].id if branch else None
        return BranchTail(length, positions)


def resolve_pinned_shrink(
    messages: Sequence[AgentMessage], branch: Sequence[SessionEntry], pinned_entry_id: str
) -> int | None:
    """The message index of the pinned entry, or None when it is gone (never a fallback to the selector)."""
    if not pinned_entry_id:
        return None
    return branch_tail(branch).message_index(pinned_entry_id, len(messages))


def stringify_content(msg: AgentMessage) -> str:
    """A message's content as ``by_content_includes`` searches it: the string, or the JSON of its blocks."""
    content = getattr(msg, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        try:
            return json_stringify(content_to_json(content))
        except (TypeError, ValueError):
            return ""
    return ""


def resolve_shrink_target(messages: Sequence[AgentMessage], target: object) -> int | None:
    """Resolve a shrink selector against ``messages``; the first non-empty discriminator decides.

    ``by_tool_call_id``: the first result of that call. ``by_tool_name``: the last result of that tool (the
    first with ``occurrence: "first"``). ``by_content_includes``: the first message of any role whose content
    contains the (non-empty) text.
    """
    if not isinstance(target, Mapping):
        return None
    call_id = target.get("by_tool_call_id")
    if isinstance(call_id, str) and call_id:
        for i, msg in enumerate(messages):
            if isinstance(msg, ToolResultMessage) and msg.tool_call_id == call_id:
                return i
        return None
    tool_name = target.get("by_tool_name")
    if isinstance(tool_name, str) and tool_name:
        first = target.get("occurrence") == "first"
        found: int | None = None
        for i, msg in enumerate(messages):
            if isinstance(msg, ToolResultMessage) and msg.tool_name == tool_name:
                if first:
                    return i
                found = i
        return found
    needle = target.get("by_content_includes")
    if isinstance(needle, str) and needle:
        for i, msg in enumerate(messages):
            if needle in stringify_content(msg):
                return i
    return None


def stamp_shrink(replacement: str) -> str:
    """The render-time envelope that tells the model a message was shrunk (the marker keeps the raw text)."""
    return f"{SHRUNK_OPEN}\n{replacement}\n{SHRUNK_CLOSE}"


def shrunk_message(msg: AgentMessage, replacement: str) -> AgentMessage:
    """A copy of ``msg`` whose content is the stamped replacement; every other field kept.

    Messages without content (bash executions, summaries) are returned unchanged.
    """
    if not isinstance(msg, (UserMessage, AssistantMessage, ToolResultMessage, CustomMessage)):
        return msg
    content: list[Any] = [TextContent(stamp_shrink(replacement))]
    return replace(msg, content=content)


def protected_ok(
    messages: Sequence[AgentMessage], remove: Collection[int], protected_roles: Sequence[str] | None
) -> bool:
    """A rewind may not remove the first user message (the original task) or anything before it.

    Enforced unless ``protected_roles`` is a non-empty list without ``first:user`` (an empty list still
    protects: when in doubt, keep the task).
    """
    if not remove:
        return True
    if protected_roles and "first:user" not in protected_roles:
        return True
    first_user = _first_user_index(messages)
    return first_user < 0 or min(remove) > first_user


def _first_user_index(messages: Sequence[AgentMessage]) -> int:
    for i, msg in enumerate(messages):
        if isinstance(msg, UserMessage):
            return i
    return -1


def turn_has_advanced(messages: Sequence[AgentMessage], exclude_id: str | None) -> bool:
    """Is there non-mulligan work after the rewind's own tool group? (False when the group is not found.)"""
    if not exclude_id:
        return False
    end = -1
    for unit in partition_into_units(messages):
        if unit.kind == "toolGroup" and issued_call(messages, unit.indices, exclude_id):
            end = max(end, unit.indices[-1])
    if end < 0:
        return False
    return any(not is_mulligan_message(messages[j]) for j in range(end + 1, len(messages)))


def _without(items: list[Any], drop: Sequence[int]) -> list[Any]:
    """``items`` minus the (ascending, in-range) indices in ``drop``, copied slice by slice."""
    out: list[Any] = []
    start = 0
    for i in drop:
        out += items[start:i]
        start = i + 1
    out += items[start:]
    return out


def stable_sort_by_seq(markers: Sequence[Any]) -> list[Any]:
    """Oldest first by ``seq``; ties keep their order."""
    return sorted(markers, key=lambda m: m.seq)


RewindMode: TypeAlias = Literal["pinned", "legacy-run", "legacy-noop-advanced", "unknown-noop"]


@dataclass(frozen=True, slots=True)
class RewindDiag:
    """What one rewind did in one fire (for the replay-signature log)."""

    seq: float
    granularity: str | None
    mode: RewindMode
    remove: tuple[int, ...]
    resolved_len: int


def filter_pipeline(
    messages: list[AgentMessage],
    rewinds: Sequence[RewindMarker],
    shrinks: Sequence[ShrinkMarker],
    protected_roles: Sequence[str] | None,
    branch: Sequence[SessionEntry] | None = None,
    diag: list[RewindDiag] | None = None,
    tail: BranchTail | None = None,
    trace: FilterTrace | None = None,
) -> list[AgentMessage]:
    """Apply the markers to ``messages`` and return the view the model sees (``messages`` itself if unchanged).

    1. Pinned rewinds resolve against the original list and their removals are unioned (each checked by
       ``protected_ok`` on its own).
    2. Old unpinned rewinds resolve, in seq order, against the progressively reduced list; once the turn has
       advanced past the rewind's own tool group they no longer apply (they would re-target new work).
    3. Shrinks apply in seq order: pinned ones by identity (skipped if their target was removed), others by
       their live selector. A later shrink of the same message wins.

    ``tail`` may be passed when the caller already indexed ``branch`` (it must be ``branch_tail(branch)``).
    ``trace``, when given, records which marker removed or substituted each message (by its index in
    ``messages``): what views such as the HTML export show.
    """
    if not rewinds and not shrinks:
        return messages
    n = len(messages)
    if tail is None and (any(r.pinned for r in rewinds) or any(s.pinned_entry_id for s in shrinks)):
        tail = branch_tail(branch)
    ordered = stable_sort_by_seq(rewinds)

    current = messages
    removed: list[int] = []  # original indices removed so far, ascending
    legacy_kept: list[int] | None = None  # original index of each message once a legacy rewind applied

    pinned_union: set[int] = set()
    for rw in ordered:
        if not rw.pinned:
            continue
        assert tail is not None
        remove = tail.message_indices(rw.hide_entry_ids, n)
        if diag is not None:
            diag.append(RewindDiag(rw.seq, rw.granularity, "pinned", tuple(remove), n))
        if protected_ok(messages, remove, protected_roles):
            pinned_union.update(remove)
            if trace is not None:
                for i in remove:
                    trace.hidden.setdefault(i, rw)
    if pinned_union:
        removed = sorted(pinned_union)
        current = _without(messages, removed)

    for rw in ordered:
        if rw.pinned:
            continue
        exclude = rw.exclude_tool_call_id
        mode: RewindMode = "legacy-run"
        remove_list: Sequence[int]
        if turn_has_advanced(current, exclude):
            remove_list, mode = [], "legacy-noop-advanced"
        elif rw.granularity == "last_tool_call_group":
            remove_list = resolve_last_tool_call_group(partition_into_units(current), current, exclude) or ()
        elif rw.granularity == "last_turn":
            remove_list = resolve_last_turn(current, exclude)
        elif rw.granularity == "checkpoint":
            remove_list = resolve_checkpoint(current, branch or (), rw.checkpoint or "", exclude) or []
        else:
            remove_list, mode = [], "unknown-noop"
        if diag is not None:
            diag.append(RewindDiag(rw.seq, rw.granularity, mode, tuple(remove_list), len(current)))
        if not remove_list or not protected_ok(current, remove_list, protected_roles):
            continue
        if legacy_kept is None:
            gone = set(removed)
            legacy_kept = [i for i in range(n) if i not in gone]
        drop = sorted({j for j in remove_list if 0 <= j < len(current)})
        removed = sorted({*removed, *(legacy_kept[j] for j in drop)})
        if trace is not None:
            for j in drop:
                trace.hidden.setdefault(legacy_kept[j], rw)
        legacy_kept = _without(legacy_kept, drop)
        current = _without(current, drop)

    if not shrinks:
        return current
    out: list[AgentMessage] | None = None  # copy-on-write of `current`
    results: _ResultIndex | None = None  # tool results by call id / tool name (shrinks keep both)
    for sh in stable_sort_by_seq(shrinks):
        view = current if out is None else out
        if sh.pinned_entry_id:
            assert tail is not None
            orig = tail.message_index(sh.pinned_entry_id, n)
            if orig is None:
                continue
            before = bisect.bisect_left(removed, orig)  # removed messages ahead of it
            if before < len(removed) and removed[before] == orig:
                continue  # its message was hidden by a rewind
            index: int | None = orig - before
        else:
            if results is None:
                results = _ResultIndex(current)
            index = results.resolve(view, sh.target)
        if index is None or not 0 <= index < len(view):
            continue
        replaced = shrunk_message(view[index], sh.replacement)
        if replaced is view[index]:
            continue
        if out is None:
            out = list(current)
        out[index] = replaced
        if trace is not None:
            trace.shrunk[trace.original_index(index, removed)] = (sh, replaced)
    return current if out is None else out


@dataclass(slots=True)
class FilterTrace:
    """What one run of ``filter_pipeline`` did, by index in the messages it was given."""

    hidden: dict[int, RewindMarker] = field(default_factory=dict)
    """Message index → the (first) rewind that removed it."""
    shrunk: dict[int, tuple[ShrinkMarker, AgentMessage]] = field(default_factory=dict)
    """Message index → the shrink that substituted it and the message sent instead (the last shrink wins)."""

    @staticmethod
    def original_index(index: int, removed: Sequence[int]) -> int:
        """The index in the original list of the message at ``index`` once ``removed`` (ascending) are gone."""
        for r in removed:  # removed is ascending: each one at or before the target shifts it right by one
            if r <= index:
                index += 1
            else:
                break
        return index


class _ResultIndex:
    """``resolve_shrink_target`` for many shrinks over one list: tool results indexed once, on first use.

    Valid while the list only has contents substituted (a shrunk result keeps its call id and tool name).
    """

    def __init__(self, messages: Sequence[AgentMessage]) -> None:
        self._messages = messages
        self._by_call: dict[str, int] | None = None
        self._by_tool: dict[str, list[int]] | None = None

    def resolve(self, messages: Sequence[AgentMessage], target: object) -> int | None:
        if not isinstance(target, Mapping):
            return None
        call_id = target.get("by_tool_call_id")
        if isinstance(call_id, str) and call_id:
            if self._by_call is None:
                ids = [m.tool_call_id if isinstance(m, ToolResultMessage) else "" for m in self._messages]
                # reversed, so that the first result of a call id wins
                self._by_call = dict(zip(reversed(ids), range(len(ids) - 1, -1, -1), strict=True))
            return self._by_call.get(call_id)
        tool_name = target.get("by_tool_name")
        if isinstance(tool_name, str) and tool_name:
            if self._by_tool is None:
                self._by_tool = {}
                for i, m in enumerate(self._messages):
                    if isinstance(m, ToolResultMessage):
                        self._by_tool.setdefault(m.tool_name, []).append(i)
            found = self._by_tool.get(tool_name)
            if not found:
                return None
            return found[0] if target.get("occurrence") == "first" else found[-1]
        return resolve_shrink_target(messages, target)
