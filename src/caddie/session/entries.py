"""Session file entries (Pi's JSONL v3 format): the header and the nine entry types, with their codec.

Every entry has ``id`` (8 hex chars), ``parent_id`` (None for a root) and an ISO-8601 ``timestamp``. The
on-disk key order follows Pi's writer so files written by caddie look like files written by Pi.
"""

from __future__ import annotations

import secrets
import uuid
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeAlias

import msgspec

from caddie import untrusted
from caddie.ai.messages import (
    AgentMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    MessageFormatError,
    Usage,
    UserContent,
    content_from_json,
    content_to_json,
    message_from_json,
    message_to_json,
    usage_from_json,
    usage_to_json,
)
from caddie.errors import SessionStoreError

CURRENT_SESSION_VERSION = 3


def iso_now() -> str:
    """The current time as JavaScript's ``Date.toISOString()`` writes it (millisecond precision, ``Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def iso_to_ms(ts: str) -> int:
    """Milliseconds since the epoch for an ISO timestamp (0 when unparseable)."""
    try:
        return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000)
    except (ValueError, AttributeError):
        return 0


def new_entry_id(taken: set[str] | dict[str, Any]) -> str:
    """8 hex characters not yet used in this session (a full UUID in the astronomically unlikely worst case)."""
    for _ in range(100):
        candidate = secrets.token_hex(4)
        if candidate not in taken:
            return candidate
    return str(uuid.uuid4())


def new_session_id() -> str:
    """A UUIDv7 (time-ordered), as Pi uses for session ids."""
    ms = int(datetime.now(UTC).timestamp() * 1000)
    rand = secrets.token_bytes(10)
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= (int.from_bytes(rand[:2], "big") & 0x0FFF) << 64
    value |= 0b10 << 62
    value |= int.from_bytes(rand[2:], "big") & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))


class _EntryStruct(msgspec.Struct, rename="camel", gc=False):
    """Base of the entry structs (camelCase on disk, not GC-tracked: entries hold no cycles)."""


class SessionHeader(_EntryStruct, tag_field="type", tag="session"):
    id: str
    timestamp: str
    cwd: str
    version: int = 1
    """A header without a version is a v1 file; new sessions write ``CURRENT_SESSION_VERSION``."""
    parent_session: str | None = None
    type: ClassVar[str] = "session"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "session",
            "version": self.version,
            "id": self.id,
            "timestamp": self.timestamp,
            "cwd": self.cwd,
        }
        if self.parent_session is not None:
            out["parentSession"] = self.parent_session
        return out


class MessageEntry(_EntryStruct, tag_field="type", tag="message"):
    id: str
    parent_id: str | None
    timestamp: str
    message: AgentMessage
    type: ClassVar[str] = "message"


class ThinkingLevelChangeEntry(_EntryStruct, tag_field="type", tag="thinking_level_change"):
    id: str
    parent_id: str | None
    timestamp: str
    thinking_level: str
    type: ClassVar[str] = "thinking_level_change"


class ModelChangeEntry(_EntryStruct, tag_field="type", tag="model_change"):
    id: str
    parent_id: str | None
    timestamp: str
    provider: str
    model_id: str
    type: ClassVar[str] = "model_change"


class CompactionEntry(_EntryStruct, tag_field="type", tag="compaction"):
    id: str
    parent_id: str | None
    timestamp: str
    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: Any = None
    usage: Usage | None = None
    from_hook: bool | None = None
    type: ClassVar[str] = "compaction"


class BranchSummaryEntry(_EntryStruct, tag_field="type", tag="branch_summary"):
    id: str
    parent_id: str | None
    timestamp: str
    from_id: str
    summary: str
    details: Any = None
    usage: Usage | None = None
    from_hook: bool | None = None
    type: ClassVar[str] = "branch_summary"


class CustomEntry(_EntryStruct, tag_field="type", tag="custom"):
    """Extension state; never part of the model's context."""

    id: str
    parent_id: str | None
    timestamp: str
    custom_type: str
    data: Any = None
    type: ClassVar[str] = "custom"


class CustomMessageEntry(_EntryStruct, tag_field="type", tag="custom_message"):
    """An extension's message; sent to the model as a user message."""

    id: str
    parent_id: str | None
    timestamp: str
    custom_type: str
    content: str | list[UserContent]
    display: bool = True
    details: Any = None
    type: ClassVar[str] = "custom_message"


class LabelEntry(_EntryStruct, tag_field="type", tag="label"):
    id: str
    parent_id: str | None
    timestamp: str
    target_id: str
    label: str | None
    type: ClassVar[str] = "label"


class SessionInfoEntry(_EntryStruct, tag_field="type", tag="session_info"):
    id: str
    parent_id: str | None
    timestamp: str
    name: str | None
    type: ClassVar[str] = "session_info"


class UnknownEntry(_EntryStruct):
    """An entry type this version does not know; kept verbatim so nothing is lost on rewrite."""

    id: str
    parent_id: str | None
    timestamp: str
    raw: dict[str, Any]

    @property
    def type(self) -> str:
        return str(self.raw.get("type", ""))


SessionEntry: TypeAlias = (
    MessageEntry
    | ThinkingLevelChangeEntry
    | ModelChangeEntry
    | CompactionEntry
    | BranchSummaryEntry
    | CustomEntry
    | CustomMessageEntry
    | LabelEntry
    | SessionInfoEntry
    | UnknownEntry
)


_FastEntry: TypeAlias = (
    SessionHeader
    | MessageEntry
    | ThinkingLevelChangeEntry
    | ModelChangeEntry
    | CompactionEntry
    | BranchSummaryEntry
    | CustomEntry
    | CustomMessageEntry
    | LabelEntry
    | SessionInfoEntry
)
_fast_decoder = msgspec.json.Decoder(_FastEntry)


def decode_line(line: bytes | memoryview) -> SessionHeader | SessionEntry:
    """Decode one JSONL line: strictly typed and fast when it can, leniently otherwise.

    Raises ``ValueError`` (``json.JSONDecodeError``) when the line is not JSON, ``EntryFormatError`` when it
    is JSON but not an entry. The caller bounds the line's nesting (``caddie.untrusted.nesting_exceeds``).
    """
    try:
        decoded: SessionHeader | SessionEntry = _fast_decoder.decode(line)
        return decoded
    except msgspec.DecodeError:
        # Not the typed shape, or what msgspec refuses but JSON.parse reads: a lone surrogate escape
        # ("\ud83d", as Pi writes half an emoji) or bytes that are not UTF-8. Both become U+FFFD.
        obj = untrusted.loads(bytes(line).decode("utf-8", "replace"))
    if isinstance(obj, dict) and obj.get("type") == "session":
        return header_from_json(obj)
    return entry_from_json(obj)


class EntryFormatError(SessionStoreError, ValueError):
    """A JSON object that is not a valid session entry."""


def header_from_json(d: dict[str, Any]) -> SessionHeader:
    return SessionHeader(
        id=str(d.get("id", "")),
        timestamp=str(d.get("timestamp", "")),
        cwd=str(d.get("cwd", "")),
        version=int(d.get("version", 1) or 1),
        parent_session=d.get("parentSession"),
    )


def entry_from_json(d: Any) -> SessionEntry:
    """Decode one entry object. Raises ``EntryFormatError`` when it is not an entry at all."""
    if not isinstance(d, dict):
        raise EntryFormatError(f"entry must be a JSON object, got {type(d).__name__}")
    kind = d.get("type")
    eid = d.get("id")
    if not isinstance(eid, str) or not eid:
        raise EntryFormatError(f"entry of type {kind!r} has no id")
    parent = d.get("parentId")
    parent_id = parent if isinstance(parent, str) else None
    ts = d.get("timestamp")
    timestamp = ts if isinstance(ts, str) else ""
    try:
        if kind == "message":
            return MessageEntry(eid, parent_id, timestamp, message_from_json(d.get("message")))
        if kind == "custom":
            return CustomEntry(eid, parent_id, timestamp, str(d.get("customType", "")), d.get("data"))
        if kind == "custom_message":
            return CustomMessageEntry(
                eid,
                parent_id,
                timestamp,
                str(d.get("customType", "")),
                content_from_json(d.get("content")),
                bool(d.get("display", True)),
                d.get("details"),
            )
        if kind == "label":
            label = d.get("label")
            return LabelEntry(
                eid,
                parent_id,
                timestamp,
                str(d.get("targetId", "")),
                label if isinstance(label, str) else None,
            )
        if kind == "compaction":
            u = d.get("usage")
            return CompactionEntry(
                eid,
                parent_id,
                timestamp,
                str(d.get("summary", "")),
                str(d.get("firstKeptEntryId", "")),
                int(d.get("tokensBefore", 0) or 0),
                d.get("details"),
                usage_from_json(u) if isinstance(u, dict) else None,
                d.get("fromHook"),
            )
        if kind == "branch_summary":
            u = d.get("usage")
            return BranchSummaryEntry(
                eid,
                parent_id,
                timestamp,
                str(d.get("fromId", "root")),
                str(d.get("summary", "")),
                d.get("details"),
                usage_from_json(u) if isinstance(u, dict) else None,
                d.get("fromHook"),
            )
        if kind == "model_change":
            return ModelChangeEntry(
                eid,
                parent_id,
                timestamp,
                str(d.get("provider", "")),
                str(d.get("modelId", "")),
            )
        if kind == "thinking_level_change":
            return ThinkingLevelChangeEntry(eid, parent_id, timestamp, str(d.get("thinkingLevel", "off")))
        if kind == "session_info":
            name = d.get("name")
            return SessionInfoEntry(eid, parent_id, timestamp, name if isinstance(name, str) else None)
    except MessageFormatError as e:
        raise EntryFormatError(f"{kind} entry {eid}: {e}") from e
    return UnknownEntry(eid, parent_id, timestamp, d)


def entry_to_json(e: SessionEntry) -> dict[str, Any]:
    """Encode an entry with Pi's field names and key order; unset optional fields are omitted."""
    if isinstance(e, UnknownEntry):
        return {**e.raw, "id": e.id, "parentId": e.parent_id}
    out: dict[str, Any]
    if isinstance(e, MessageEntry):
        out = {"type": "message", "id": e.id, "parentId": e.parent_id, "timestamp": e.timestamp}
        out["message"] = message_to_json(e.message)
    elif isinstance(e, CustomEntry):
        out = {"type": "custom", "customType": e.custom_type}
        if e.data is not None:
            out["data"] = e.data
        out.update(id=e.id, parentId=e.parent_id, timestamp=e.timestamp)
    elif isinstance(e, CustomMessageEntry):
        out = {"type": "custom_message", "customType": e.custom_type, "content": content_to_json(e.content)}
        out["display"] = e.display
        if e.details is not None:
            out["details"] = e.details
        out.update(id=e.id, parentId=e.parent_id, timestamp=e.timestamp)
    else:
        out = {"type": e.type, "id": e.id, "parentId": e.parent_id, "timestamp": e.timestamp}
        if isinstance(e, LabelEntry):
            out["targetId"] = e.target_id
            if e.label is not None:
                out["label"] = e.label
        elif isinstance(e, CompactionEntry):
            out.update(
                summary=e.summary, firstKeptEntryId=e.first_kept_entry_id, tokensBefore=e.tokens_before
            )
            if e.details is not None:
                out["details"] = e.details
            if e.usage is not None:
                out["usage"] = usage_to_json(e.usage)
            if e.from_hook is not None:
                out["fromHook"] = e.from_hook
        elif isinstance(e, BranchSummaryEntry):
            out.update(fromId=e.from_id, summary=e.summary)
            if e.details is not None:
                out["details"] = e.details
            if e.usage is not None:
                out["usage"] = usage_to_json(e.usage)
            if e.from_hook is not None:
                out["fromHook"] = e.from_hook
        elif isinstance(e, ModelChangeEntry):
            out.update(provider=e.provider, modelId=e.model_id)
        elif isinstance(e, ThinkingLevelChangeEntry):
            out["thinkingLevel"] = e.thinking_level
        elif isinstance(e, SessionInfoEntry) and e.name is not None:
            out["name"] = e.name
    return out


def entry_to_context_messages(e: SessionEntry) -> list[AgentMessage]:
    """What one entry contributes to the model context (Pi's ``sessionEntryToContextMessages``)."""
    if isinstance(e, MessageEntry):
        return [e.message]
    if isinstance(e, CustomMessageEntry):
        return [CustomMessage(e.custom_type, e.content, e.display, e.details, iso_to_ms(e.timestamp))]
    if isinstance(e, BranchSummaryEntry):
        return [BranchSummaryMessage(e.summary, e.from_id, iso_to_ms(e.timestamp))] if e.summary else []
    if isinstance(e, CompactionEntry):
        return [CompactionSummaryMessage(e.summary, e.tokens_before, iso_to_ms(e.timestamp))]
    return []
