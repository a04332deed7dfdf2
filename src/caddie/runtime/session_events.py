"""Session-level events: what modes (TUI, print, JSON, RPC) observe beyond the agent loop's own events.

``AgentSettledEvent`` is the extension API's own (extensions and modes see the same object).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from caddie.agent.events import AgentEvent
from caddie.extensions.api import AgentSettledEvent as AgentSettledEvent
from caddie.session.entries import SessionEntry


@dataclass(slots=True)
class QueueUpdateEvent:
    steering: list[str]
    follow_up: list[str]
    type: Literal["queue_update"] = "queue_update"


@dataclass(slots=True)
class AutoRetryStartEvent:
    attempt: int
    max_attempts: int
    delay_ms: int
    error_message: str
    type: Literal["auto_retry_start"] = "auto_retry_start"


@dataclass(slots=True)
class AutoRetryEndEvent:
    success: bool
    attempt: int
    final_error: str | None = None
    type: Literal["auto_retry_end"] = "auto_retry_end"


@dataclass(slots=True)
class CompactionStartEvent:
    reason: Literal["manual", "threshold", "overflow"]
    type: Literal["compaction_start"] = "compaction_start"


@dataclass(slots=True)
class CompactionEndEvent:
    reason: Literal["manual", "threshold", "overflow"]
    result: Any
    aborted: bool
    will_retry: bool
    error_message: str | None = None
    type: Literal["compaction_end"] = "compaction_end"


@dataclass(slots=True)
class ExtensionErrorEvent:
    extension_path: str
    event: str
    error: str
    type: Literal["extension_error"] = "extension_error"


@dataclass(slots=True)
class EntryAppendedEvent:
    entry: SessionEntry
    type: Literal["entry_appended"] = "entry_appended"


@dataclass(slots=True)
class NoticeEvent:
    """A line for the user from the host or an extension (``ui.notify`` in headless modes)."""

    message: str
    level: Literal["info", "warning", "error"] = "info"
    type: Literal["notice"] = "notice"


@dataclass(slots=True)
class ExtensionEvent:
    """An event an extension publishes for observers (``api.publish``), e.g. ``goal_state``."""

    name: str
    data: Any
    type: Literal["extension_event"] = "extension_event"


@dataclass(slots=True)
class SessionInfoChangedEvent:
    """The session's display name changed (Pi's ``session_info_changed``)."""

    name: str | None
    type: Literal["session_info_changed"] = "session_info_changed"


@dataclass(slots=True)
class ThinkingLevelChangedEvent:
    level: str
    type: Literal["thinking_level_changed"] = "thinking_level_changed"


@dataclass(slots=True)
class BashExecutionUpdateEvent:
    """One output chunk of a user shell command (``!cmd``, RPC ``bash``); ``id`` is the RPC request's."""

    id: str | None
    delta: str
    type: Literal["bash_execution_update"] = "bash_execution_update"


SessionEvent: TypeAlias = (
    AgentEvent
    | AgentSettledEvent
    | QueueUpdateEvent
    | AutoRetryStartEvent
    | AutoRetryEndEvent
    | CompactionStartEvent
    | CompactionEndEvent
    | ExtensionErrorEvent
    | EntryAppendedEvent
    | NoticeEvent
    | ExtensionEvent
    | SessionInfoChangedEvent
    | ThinkingLevelChangedEvent
    | BashExecutionUpdateEvent
)
