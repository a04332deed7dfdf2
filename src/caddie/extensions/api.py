"""The public extension API: everything an extension may use, and nothing else.

An extension is a Python module (or package) with a function ``register(api: ExtensionAPI)`` (sync or
async). In it the extension subscribes to events with ``api.on(...)``, registers tools and commands, and
keeps whatever it needs; at run time its handlers receive ``(event, ctx)``.

This mirrors Pi 0.84's ``ExtensionAPI`` under Python names. The bundled ``mulligan`` and ``goal``
extensions import only this module (an import-linter contract enforces it), so anything they can do, a
third-party extension can do too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from caddie.agent.events import (
    AgentEndEvent,
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from caddie.ai.abort import AbortSignal
from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    ContentBlock,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserContent,
    UserMessage,
    content_from_json,
    content_to_json,
    message_from_json,
    message_to_json,
    now_ms,
    replace,
)
from caddie.ai.model import Model
from caddie.ai.tokens import (
    CHARS_PER_TOKEN,
    Utf16TokenCounter,
    approx_tokens,
    estimate_message_tokens_utf16,
    estimate_tokens_utf16,
    message_bytes,
    result_bytes,
    utf16_message_chars,
)
from caddie.extensions._exec import ExecResult, run_process
from caddie.jscompat import (
    is_finite_number,
    is_js_number,
    js_number,
    js_round,
    js_truthy,
    json_stringify,
    utf8_len,
    utf16_len,
    utf16_prefix,
    utf16_sort_key,
)
from caddie.session.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionEntry,
    SessionHeader,
    SessionInfoEntry,
    ThinkingLevelChangeEntry,
    entry_to_context_messages,
)
from caddie.tools.base import OnUpdate, ToolDefinition, ToolError, ToolResult, text_result

if TYPE_CHECKING:
    from caddie.extensions.runner import Extension

__all__ = [
    "CHARS_PER_TOKEN",
    "EVENT_NAMES",
    "AbortSignal",
    "AgentEndEvent",
    "AgentMessage",
    "AgentSettledEvent",
    "AgentStartEvent",
    "AssistantMessage",
    "BashExecutionMessage",
    "BeforeAgentStartEvent",
    "BeforeAgentStartResult",
    "BranchSummaryEntry",
    "BranchSummaryMessage",
    "CommandContext",
    "CompactionEntry",
    "CompactionSummaryMessage",
    "ContentBlock",
    "ContextEvent",
    "ContextResult",
    "ContextUsage",
    "CustomEntry",
    "CustomMessage",
    "CustomMessageEntry",
    "EntryVisibility",
    "EntryVisibilityEvent",
    "ExtensionAPI",
    "ExtensionContext",
    "ExtensionUI",
    "ImageContent",
    "InputEvent",
    "InputResult",
    "LabelEntry",
    "MessageEndEvent",
    "MessageEndResult",
    "MessageEntry",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "Model",
    "ModelChangeEntry",
    "ModelSelectEvent",
    "OnUpdate",
    "ReadonlySession",
    "ResourcesDiscoverEvent",
    "ResourcesDiscoverResult",
    "SessionBeforeCompactEvent",
    "SessionBeforeCompactResult",
    "SessionBeforeForkEvent",
    "SessionBeforeForkResult",
    "SessionBeforeSwitchEvent",
    "SessionBeforeSwitchResult",
    "SessionCompactEvent",
    "SessionEntry",
    "SessionHeader",
    "SessionInfoEntry",
    "SessionShutdownEvent",
    "SessionStartEvent",
    "SessionTreeEvent",
    "SummaryUsageEvent",
    "TextContent",
    "ThinkingContent",
    "ThinkingLevelChangeEntry",
    "ToolCall",
    "ToolCallEvent",
    "ToolCallResult",
    "ToolDefinition",
    "ToolError",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "ToolResult",
    "ToolResultEvent",
    "ToolResultMessage",
    "ToolResultPatch",
    "TurnEndEvent",
    "TurnStartEvent",
    "Usage",
    "UserContent",
    "UserMessage",
    "Utf16TokenCounter",
    "approx_tokens",
    "content_from_json",
    "content_to_json",
    "entry_to_context_messages",
    "estimate_message_tokens_utf16",
    "estimate_tokens_utf16",
    "is_finite_number",
    "is_js_number",
    "js_number",
    "js_round",
    "js_truthy",
    "json_stringify",
    "message_bytes",
    "message_from_json",
    "message_to_json",
    "now_ms",
    "replace",
    "result_bytes",
    "text_result",
    "utf8_len",
    "utf16_len",
    "utf16_message_chars",
    "utf16_prefix",
    "utf16_sort_key",
]

DeliverAs: TypeAlias = Literal["steer", "follow_up", "next_turn"]
Mode: TypeAlias = Literal["tui", "rpc", "json", "print"]
NotifyLevel: TypeAlias = Literal["info", "warning", "error"]
WidgetPlacement: TypeAlias = Literal["aboveEditor", "belowEditor"]


# ==================================================================================================
# Events (payloads handlers receive) and results (what handlers may return)


@dataclass(slots=True)
class SessionStartEvent:
    reason: Literal["startup", "reload", "new", "resume", "fork"]
    previous_session_file: str | None = None
    type: Literal["session_start"] = "session_start"


@dataclass(slots=True)
class SessionShutdownEvent:
    reason: Literal["quit", "reload", "new", "resume", "fork"]
    target_session_file: str | None = None
    type: Literal["session_shutdown"] = "session_shutdown"


@dataclass(slots=True)
class InputEvent:
    text: str
    images: list[ImageContent] | None
    source: Literal["interactive", "rpc", "extension", "print"]
    streaming_behavior: Literal["steer", "follow_up"] | None = None
    type: Literal["input"] = "input"


@dataclass(slots=True)
class InputResult:
    """``continue`` (default), ``transform`` (replace the text), or ``handled`` (swallow the input)."""

    action: Literal["continue", "transform", "handled"] = "continue"
    text: str | None = None
    images: list[ImageContent] | None = None


@dataclass(slots=True)
class BeforeAgentStartEvent:
    prompt: str
    images: list[ImageContent] | None
    system_prompt: str
    type: Literal["before_agent_start"] = "before_agent_start"


@dataclass(slots=True)
class BeforeAgentStartResult:
    """Add to this run: a custom message after the user's, and/or a replacement system prompt."""

    message: CustomMessage | None = None
    system_prompt: str | None = None


@dataclass(slots=True)
class AgentSettledEvent:
    type: Literal["agent_settled"] = "agent_settled"


@dataclass(slots=True)
class MessageEndResult:
    """A replacement message (same role) written into the agent state and the session file."""

    message: AgentMessage | None = None


@dataclass(slots=True)
class ContextEvent:
    """A deep copy of the messages about to be sent; return ``ContextResult`` to change this one request."""

    messages: list[AgentMessage]
    type: Literal["context"] = "context"


@dataclass(slots=True)
class ContextResult:
    messages: list[AgentMessage] | None = None


@dataclass(slots=True)
class EntryVisibility:
    """How the model is sent one session entry, when a ``context`` handler changes it."""

    state: Literal["hidden", "replaced"]
    """``hidden``: left out of the request; ``replaced``: sent in another form (``replacement``)."""
    reason: str
    """One line for a person, e.g. ``"hidden by mulligan_rewind (last_tool_call_group)"``."""
    replacement: AgentMessage | None = None
    """For ``replaced``: the message the model is sent instead."""
    cause_entry_id: str | None = None
    """The entry that caused it (e.g. the extension's marker entry), if there is one."""


@dataclass(slots=True)
class EntryVisibilityEvent:
    """Views (``caddie export``, ``/export``) ask, branch by branch: which of these entries does your
    ``context`` handler hide from the model, or send in another form, on a request made from this branch?

    Answer with ``event.mark(entry_id, EntryVisibility(...))`` from the same logic your ``context`` handler
    runs, never a second copy of it. The handler must not change anything (no entries, no UI, no state that
    a later ``context`` event would read); its return value is ignored.
    """

    branch: list[SessionEntry]
    """The entries from the root to the branch's leaf."""
    messages: list[AgentMessage]
    """The context the host builds for this branch, before any ``context`` handler (do not modify)."""
    entry_ids: list[str]
    """Parallel to ``messages``: the id of the entry each message comes from."""
    answers: dict[str, EntryVisibility] = field(default_factory=dict)
    """Entry id → the answer so far (filled by ``mark``)."""
    type: Literal["entry_visibility"] = "entry_visibility"

    def mark(self, entry_id: str, visibility: EntryVisibility) -> None:
        """Record an answer; an entry hidden by one extension stays hidden whatever a later one says."""
        previous = self.answers.get(entry_id)
        if previous is None or (previous.state != "hidden" and visibility.state == "hidden"):
            self.answers[entry_id] = visibility


@dataclass(slots=True)
class ToolCallEvent:
    """Before a tool runs. ``input`` is the validated arguments and may be edited in place."""

    tool_call_id: str
    tool_name: str
    input: Any
    type: Literal["tool_call"] = "tool_call"


@dataclass(slots=True)
class ToolCallResult:
    block: bool = False
    reason: str | None = None


@dataclass(slots=True)
class ToolResultEvent:
    tool_call_id: str
    tool_name: str
    input: Any
    content: list[TextContent | ImageContent]
    details: Any
    is_error: bool
    usage: Usage | None = None
    type: Literal["tool_result"] = "tool_result"


@dataclass(slots=True)
class ToolResultPatch:
    """Fields left as ``None`` keep their value; later handlers see earlier patches."""

    content: list[TextContent | ImageContent] | None = None
    details: Any = None
    is_error: bool | None = None
    usage: Usage | None = None


@dataclass(slots=True)
class SessionBeforeCompactEvent:
    preparation: Any
    """A ``CompactionPreparation`` (first kept entry, messages to summarise, tokens before, ...)."""
    branch_entries: list[SessionEntry]
    custom_instructions: str | None
    reason: Literal["manual", "threshold", "overflow"]
    will_retry: bool
    signal: AbortSignal
    type: Literal["session_before_compact"] = "session_before_compact"


@dataclass(slots=True)
class CompactionSpec:
    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: Any = None
    usage: Usage | None = None


@dataclass(slots=True)
class SessionBeforeCompactResult:
    cancel: bool = False
    compaction: CompactionSpec | None = None


@dataclass(slots=True)
class SessionCompactEvent:
    compaction_entry: CompactionEntry
    from_extension: bool
    reason: Literal["manual", "threshold", "overflow"]
    will_retry: bool
    type: Literal["session_compact"] = "session_compact"


@dataclass(slots=True)
class SessionBeforeSwitchEvent:
    """Before ``/new`` or a switch to another session file; return ``SessionBeforeSwitchResult(cancel=True)``
    to keep the current session."""

    reason: Literal["new", "resume"]
    target_session_file: str | None = None
    type: Literal["session_before_switch"] = "session_before_switch"


@dataclass(slots=True)
class SessionBeforeSwitchResult:
    cancel: bool = False


@dataclass(slots=True)
class SessionBeforeForkEvent:
    """Before a fork (``position="before"``: from a user message) or a clone (``"at"``: up to the entry);
    return ``SessionBeforeForkResult(cancel=True)`` to stay."""

    entry_id: str
    position: Literal["before", "at"] = "before"
    type: Literal["session_before_fork"] = "session_before_fork"


@dataclass(slots=True)
class SessionBeforeForkResult:
    cancel: bool = False
    skip_conversation_restore: bool = False
    """Pi's ``skipConversationRestore``: reserved (Pi does not act on it either)."""


@dataclass(slots=True)
class SessionTreeEvent:
    new_leaf_id: str | None
    old_leaf_id: str | None
    summary_entry: BranchSummaryEntry | None = None
    type: Literal["session_tree"] = "session_tree"


@dataclass(slots=True)
class SummaryUsageEvent:
    """A model call caddie made outside the agent loop to write a summary — a compaction (``compaction``),
    the prefix of a split turn (``turn_prefix``), a branch summary (``branch_summary``) — and what it cost.
    Sent after every such call, retries and failures included, so everything a session spends on the model
    reaches extensions (the goal budget counts it). A summary an extension supplies itself (through
    ``session_before_compact``) is not reported: that extension made the call."""

    kind: Literal["compaction", "turn_prefix", "branch_summary"]
    usage: Usage
    provider: str
    model: str
    stop_reason: str
    type: Literal["summary_usage"] = "summary_usage"


@dataclass(slots=True)
class ModelSelectEvent:
    model: Model
    previous_model: Model | None
    source: Literal["set", "cycle", "restore"]
    type: Literal["model_select"] = "model_select"


@dataclass(slots=True)
class ResourcesDiscoverEvent:
    """After ``session_start``: an extension may return more skill / prompt template folders or files."""

    cwd: str
    reason: Literal["startup", "reload"]
    type: Literal["resources_discover"] = "resources_discover"


@dataclass(slots=True)
class ResourcesDiscoverResult:
    skill_paths: list[str] | None = None
    prompt_paths: list[str] | None = None
    theme_paths: list[str] | None = None


EventName: TypeAlias = Literal[
    "resources_discover",
    "session_start",
    "session_shutdown",
    "session_before_switch",
    "session_before_fork",
    "session_before_compact",
    "session_compact",
    "session_tree",
    "summary_usage",
    "input",
    "before_agent_start",
    "agent_start",
    "agent_end",
    "agent_settled",
    "turn_start",
    "turn_end",
    "message_start",
    "message_update",
    "message_end",
    "context",
    "entry_visibility",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
    "tool_call",
    "tool_result",
    "model_select",
]
EVENT_NAMES: frozenset[str] = frozenset(EventName.__args__)  # type: ignore[attr-defined]

Handler: TypeAlias = Callable[[Any, "ExtensionContext"], Any]
"""``handler(event, ctx)``; may be ``async``; its return value matters only for the events that take one."""


# ==================================================================================================
# What handlers can see and do (implemented by the host)


@dataclass(slots=True)
class ContextUsage:
    tokens: int | None
    """Estimated tokens the next request will carry; None right after a compaction, until a response."""
    context_window: int
    percent: float | None


class ExtensionUI(Protocol):
    """The user interface as an extension sees it. Headless modes supply a no-op one."""

    def notify(self, message: str, level: NotifyLevel = "info") -> None: ...

    def set_status(self, key: str, text: str | None) -> None: ...

    def set_widget(
        self, key: str, lines: Sequence[str] | None, placement: WidgetPlacement = "aboveEditor"
    ) -> None: ...

    def set_title(self, title: str) -> None: ...

    def set_editor_text(self, text: str) -> None: ...

    def get_editor_text(self) -> str: ...

    def set_working_message(self, message: str | None) -> None: ...

    async def confirm(self, title: str, message: str, timeout: float | None = None) -> bool: ...

    async def select(
        self, title: str, options: Sequence[str], timeout: float | None = None
    ) -> str | None: ...

    async def input(
        self, title: str, placeholder: str | None = None, timeout: float | None = None
    ) -> str | None: ...

    async def editor(self, title: str, prefill: str | None = None) -> str | None: ...


class ReadonlySession(Protocol):
    """A read-only view of the session tree (Pi's ``ReadonlySessionManager``)."""

    @property
    def session_id(self) -> str: ...

    @property
    def session_file(self) -> str | None: ...

    @property
    def cwd(self) -> str: ...

    @property
    def leaf_id(self) -> str | None: ...

    @property
    def header(self) -> SessionHeader: ...

    def entries(self) -> list[SessionEntry]:
        """Every entry of the session, in file order (all branches)."""
        ...

    def branch(self, from_id: str | None = None) -> list[SessionEntry]:
        """Entries from the root to ``from_id`` (default: the leaf)."""
        ...

    def get_entry(self, entry_id: str) -> SessionEntry | None: ...

    def leaf_entry(self) -> SessionEntry | None: ...

    def get_label(self, entry_id: str) -> str | None:
        """The entry's current label (the latest label entry for it wins)."""
        ...

    def context_entries(self) -> list[SessionEntry]:
        """The compaction-aware entries the model context is built from."""
        ...

    def session_name(self) -> str | None: ...


class ExtensionContext(Protocol):
    """Passed to every handler and to tool ``execute``."""

    @property
    def cwd(self) -> str: ...

    @property
    def session(self) -> ReadonlySession: ...

    @property
    def mode(self) -> Mode: ...

    @property
    def has_ui(self) -> bool: ...

    @property
    def ui(self) -> ExtensionUI: ...

    @property
    def model(self) -> Model | None: ...

    @property
    def signal(self) -> AbortSignal | None:
        """The current run's abort signal, or None when idle."""
        ...

    def is_idle(self) -> bool: ...

    def abort(self) -> None: ...

    def has_pending_messages(self) -> bool:
        """True when user messages are queued (steering or follow-up). Extension messages do not count."""
        ...

    def get_context_usage(self) -> ContextUsage | None: ...

    def compact(
        self,
        custom_instructions: str | None = None,
        on_complete: Callable[[CompactionEntry], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        """Start a compaction (fire-and-forget); aborts a running turn first."""
        ...

    def get_system_prompt(self) -> str: ...

    def settings(self) -> dict[str, Any]:
        """A copy of the merged settings (global ← project), e.g. ``ctx.settings().get("mulligan")``."""
        ...

    def shutdown(self) -> None: ...

    def stop_after_turn(self) -> None:
        """End the current run once this turn's tools finish: no further model request is made — no next
        turn, no compaction summary still to write, no retry. Messages extensions queued for the run
        (``send_message`` follow-ups and steering) are dropped with it; the user's own queued messages stay.
        Outside a run it does nothing."""
        ...


class CommandContext(ExtensionContext, Protocol):
    """What command handlers get: the extension context plus session-changing operations."""

    async def wait_for_idle(self) -> None: ...

    async def new_session(self, parent_session: str | None = None) -> bool:
        """Start a new session; returns False if an extension cancelled it."""
        ...

    async def fork(self, entry_id: str) -> bool: ...

    async def navigate_tree(self, target_id: str, summarize: bool = False) -> bool: ...

    async def switch_session(self, path: str) -> bool: ...

    async def reload(self) -> None: ...


CommandHandler: TypeAlias = Callable[[str, CommandContext], Any]


@dataclass(slots=True)
class FlagSpec:
    """A command-line option an extension adds (``--name value`` or ``--name`` for booleans)."""

    name: str
    description: str
    kind: Literal["string", "boolean"] = "string"
    default: str | bool | None = None
    source: str = ""


@dataclass(slots=True)
class CommandSpec:
    name: str
    description: str | None
    handler: CommandHandler
    get_argument_completions: Callable[[str], Sequence[str]] | None = None
    source: str = ""


class ExtensionHost(Protocol):
    """What the running session does for ``ExtensionAPI`` action methods (implemented by the runtime)."""

    def append_entry(self, custom_type: str, data: Any) -> str: ...

    def send_message(
        self, message: CustomMessage, deliver_as: DeliverAs | None, trigger_turn: bool
    ) -> None: ...

    def send_user_message(self, content: str | list[UserContent], deliver_as: DeliverAs | None) -> None: ...

    def set_label(self, entry_id: str, label: str | None) -> None: ...

    def set_session_name(self, name: str) -> None: ...

    def get_session_name(self) -> str | None: ...

    def get_active_tools(self) -> list[str]: ...

    def get_all_tools(self) -> list[ToolDefinition]: ...

    def set_active_tools(self, names: Sequence[str]) -> None: ...

    def get_commands(self) -> list[CommandSpec]: ...

    def refresh_tools(self) -> None: ...

    async def set_model(self, model: Model) -> bool: ...

    def get_thinking_level(self) -> str: ...

    def set_thinking_level(self, level: str) -> None: ...

    def publish(self, name: str, data: Any) -> None: ...

    def get_flag(self, name: str) -> str | bool | None: ...

    def set_exit_code(self, code: int) -> None: ...


class ExtensionRuntimeNotReady(RuntimeError):
    def __init__(self) -> None:
        super().__init__(
            "Extension runtime not initialized: call action methods from handlers, not from register()"
        )


# ==================================================================================================
# The API object an extension's register() receives


class ExtensionAPI:
    """Registration methods work inside ``register()``; action methods work once the session runs."""

    def __init__(self, extension: Extension, events: EventBus) -> None:
        self._extension = extension
        self._host: ExtensionHost | None = None
        self.events = events
        """An in-process bus between extensions: ``events.emit(channel, data)``, ``events.on(channel, fn)``."""

    # -- registration -------------------------------------------------------------------------------
    def on(self, event: EventName, handler: Handler) -> None:
        if event not in EVENT_NAMES:
            raise ValueError(f"unknown event {event!r}; known events: {', '.join(sorted(EVENT_NAMES))}")
        self._extension.handlers.setdefault(event, []).append(handler)

    def register_tool(self, tool: ToolDefinition) -> None:
        tool.source = self._extension.path
        self._extension.tools[tool.name] = tool
        if self._host is not None:
            self._host.refresh_tools()

    def register_command(
        self,
        name: str,
        handler: CommandHandler,
        description: str | None = None,
        get_argument_completions: Callable[[str], Sequence[str]] | None = None,
    ) -> None:
        name = name.removeprefix("/")
        self._extension.commands[name] = CommandSpec(
            name, description, handler, get_argument_completions, self._extension.path
        )

    def register_flag(
        self,
        name: str,
        description: str,
        kind: Literal["string", "boolean"] = "string",
        default: str | bool | None = None,
    ) -> None:
        """Add a command-line option (``caddie --name value``); read it with ``get_flag``."""
        name = name.removeprefix("--")
        self._extension.flags[name] = FlagSpec(name, description, kind, default, self._extension.path)

    # -- actions ------------------------------------------------------------------------------------
    @property
    def host(self) -> ExtensionHost:
        if self._host is None:
            raise ExtensionRuntimeNotReady()
        return self._host

    def bind(self, host: ExtensionHost | None) -> None:
        """Connect to (or, with None, detach from) a running session. Called by the host only."""
        self._host = host

    def append_entry(self, custom_type: str, data: Any = None) -> str:
        """Persist a ``custom`` entry (extension state, never sent to the model). Returns its entry id."""
        return self.host.append_entry(custom_type, data)

    def send_message(
        self,
        custom_type: str,
        content: str | list[UserContent],
        display: bool = True,
        details: Any = None,
        deliver_as: DeliverAs | None = None,
        trigger_turn: bool = False,
    ) -> None:
        """Inject a custom message (sent to the model as a user message).

        While a run is active it is queued as steering (default) or a follow-up; ``next_turn`` holds it for
        the next user prompt; when idle it is appended at once, or starts a run if ``trigger_turn``.
        """
        msg = CustomMessage(custom_type, content, display, details)
        self.host.send_message(msg, deliver_as, trigger_turn)

    def send_user_message(
        self, content: str | list[UserContent], deliver_as: DeliverAs | None = None
    ) -> None:
        """Send a user message as if typed; starts a run when idle (``deliver_as`` is required when busy)."""
        self.host.send_user_message(content, deliver_as)

    def set_label(self, entry_id: str, label: str | None) -> None:
        self.host.set_label(entry_id, label)

    def set_session_name(self, name: str) -> None:
        self.host.set_session_name(name)

    def get_session_name(self) -> str | None:
        return self.host.get_session_name()

    def get_active_tools(self) -> list[str]:
        return self.host.get_active_tools()

    def get_all_tools(self) -> list[ToolDefinition]:
        return self.host.get_all_tools()

    def set_active_tools(self, names: Sequence[str]) -> None:
        """Unknown names are ignored; the change applies from the next model request."""
        self.host.set_active_tools(names)

    def get_commands(self) -> list[CommandSpec]:
        return self.host.get_commands()

    async def set_model(self, model: Model) -> bool:
        return await self.host.set_model(model)

    def get_thinking_level(self) -> str:
        return self.host.get_thinking_level()

    def set_thinking_level(self, level: str) -> None:
        self.host.set_thinking_level(level)

    def get_flag(self, name: str) -> str | bool | None:
        """The value given on the command line for a flag this extension registered (else its default)."""
        value = self.host.get_flag(name.removeprefix("--"))
        if value is None and name.removeprefix("--") in self._extension.flags:
            return self._extension.flags[name.removeprefix("--")].default
        return value

    def set_exit_code(self, code: int) -> None:
        """In print and json modes, the process exits with this code (e.g. a headless goal's outcome)."""
        self.host.set_exit_code(code)

    def publish(self, name: str, data: Any = None) -> None:
        """Announce something to observers: ``--mode json`` prints it, RPC clients receive it."""
        self.host.publish(name, data)

    async def exec(
        self,
        command: str,
        args: Sequence[str] = (),
        timeout: float | None = None,
        cwd: str | None = None,
        signal: AbortSignal | None = None,
    ) -> ExecResult:
        """Run a program (not through a shell) and collect its output; never raises for a failing command."""
        return await run_process(command, list(args), timeout=timeout, cwd=cwd, signal=signal)


class EventBus:
    """A tiny pub/sub shared by all extensions of a session."""

    def __init__(self) -> None:
        self._subscribers: dict[str, list[Callable[[Any], Any]]] = {}

    def on(self, channel: str, fn: Callable[[Any], Any]) -> Callable[[], None]:
        self._subscribers.setdefault(channel, []).append(fn)

        def off() -> None:
            subs = self._subscribers.get(channel, [])
            if fn in subs:
                subs.remove(fn)

        return off

    def emit(self, channel: str, data: Any = None) -> None:
        for fn in list(self._subscribers.get(channel, [])):
            try:
                fn(data)
            except Exception:  # one subscriber's failure must not stop the others
                pass
