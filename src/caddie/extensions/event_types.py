"""The events extension handlers receive and the results they may return (Pi 0.84's extension events,
under Python names). The agent-loop events (``agent_start``, ``turn_end``, ``message_update``...) are the
loop's own, from ``caddie.agent.events``. Extensions import all of them from ``caddie.extensions.api``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from caddie.ai.abort import AbortSignal
from caddie.ai.messages import AgentMessage, CustomMessage, ImageContent, TextContent, Usage
from caddie.ai.model import Model
from caddie.session.entries import BranchSummaryEntry, CompactionEntry, SessionEntry


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
    system_prompt_options: SystemPromptOptions | None = None
    """What the system prompt was built from (Pi's ``systemPromptOptions``)."""
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
    """The messages about to be sent, in a list of this handler's own. The messages are frozen values: to
    change this one request, return ``ContextResult`` with new ones (``replace(message, content=...)``)."""

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


@dataclass(frozen=True, slots=True)
class Savings:
    """What one extension saved the session's bill on a branch: its answer to a ``savings`` event.

    ``tokens`` and ``cost`` are **net**, what the bill shows: everything the extension kept off the requests
    minus everything it added to them (its tool schemas on every request that carried them, its own messages,
    calls and per-request notes, requests made only for it). Negative when it cost more than it saved.
    ``gross_tokens`` is what it kept off before those costs."""

    source: str
    """Who saved it (the extension's name, e.g. ``"mulligan"``)."""
    tokens: int
    """Net input tokens saved over the branch's requests (estimates: characters / 4)."""
    gross_tokens: int
    """Input tokens kept off the requests, before the extension's own costs."""
    cost: float | None = None
    """Net dollars saved, priced from the model catalogue; None when the model has no prices."""
    cached: bool = False
    """True when ``cost`` prices the prompt cache the provider reported (cache reads at the cache-read rate)."""
    requests: int = 0
    """Requests the extension made lighter."""
    requests_total: int = 0
    """Every request on the branch."""
    status: str = ""
    """The figure in a few words (what a footer shows), e.g. ``"mulligan −48k tok · −$0.14"``."""
    details: str = ""
    """One more line for a person: what the net includes, the gross beside it."""
    series: tuple[tuple[str, int, int | None], ...] = ()
    """Every request on the branch, in order: (the entry that answered it, input tokens sent with the
    extension, input tokens without it — None for a request that only exists because of the extension)."""


@dataclass(slots=True)
class SavingsEvent:
    """Views (``/context``, ``caddie session show --stats``, ``caddie export``) ask: what did your extension
    save on this branch? An extension that keeps content off requests answers with ``event.report(Savings(...))``
    computed from the session itself (``ctx.session``), so a figure is the same whoever asks and whenever.

    The handler must not change anything (no entries, no UI, no state a later event would read); its return
    value is ignored. ``find_model`` prices a request by the (provider, model id) its answer records."""

    branch: list[SessionEntry]
    """The entries from the root to the branch's leaf."""
    find_model: Callable[[str, str], Model | None] | None = None
    """``(provider, model id) → Model`` from the model catalogue (None: use ``ctx.model``)."""
    reports: list[Savings] = field(default_factory=list)
    type: Literal["savings"] = "savings"

    def report(self, savings: Savings) -> None:
        self.reports.append(savings)


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
    terminate: bool = False
    """Only with ``block``: end the run after this batch of tool calls, when every result in the batch says
    so (Pi's ``terminate``)."""


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
    from_extension: bool | None = None
    """With a summary: True when a ``session_before_tree`` handler supplied it."""
    type: Literal["session_tree"] = "session_tree"


@dataclass(slots=True)
class SummaryUsageEvent:
    """A model call caddie made outside the agent loop to write a summary — a compaction (``compaction``),
    the prefix of a split turn (``turn_prefix``), a branch summary (``branch_summary``) — and what it cost.
    Sent after every such call, retries and failures included, so everything a session spends on the model
    reaches extensions (the goal budget counts it). A summary an extension supplies itself (through
    ``session_before_compact``) is not reported: that extension made the call. ``extension``: a request an
    extension made through ``ctx.complete`` (an MCP server's sampling request, say)."""

    kind: Literal["compaction", "turn_prefix", "branch_summary", "extension"]
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


@dataclass(slots=True)
class SystemPromptOptions:
    """What caddie builds the system prompt from (Pi's ``BuildSystemPromptOptions``); read-only."""

    cwd: str
    custom_prompt: str | None
    """``--system-prompt`` / ``SYSTEM.md``: replaces the default prompt."""
    append_system_prompt: str | None
    selected_tools: list[str]
    """The active tools' names, in prompt order."""
    tool_snippets: dict[str, str]
    """Tool name → its one-line ``prompt_snippet``."""
    prompt_guidelines: list[str]
    context_files: list[tuple[str, str]]
    """``(path, content)`` of each AGENTS.md / CLAUDE.md loaded."""
    skills: list[str]
    """The names of the skills offered to the model."""


@dataclass(slots=True)
class BeforeProviderRequestEvent:
    """The provider payload (the JSON body as a dict) just before it is sent. Return a dict to replace it
    for later handlers and the request; return None to keep it (changing it in place also works)."""

    payload: dict[str, Any]
    type: Literal["before_provider_request"] = "before_provider_request"


@dataclass(slots=True)
class BeforeProviderHeadersEvent:
    """The request's HTTP headers, assembled: change ``headers`` in place (a value of None removes the
    header); the return value is ignored."""

    headers: dict[str, str | None]
    type: Literal["before_provider_headers"] = "before_provider_headers"


@dataclass(slots=True)
class AfterProviderResponseEvent:
    """The provider answered (before its body is read): status and headers (lower-case names)."""

    status: int
    headers: dict[str, str]
    type: Literal["after_provider_response"] = "after_provider_response"


@dataclass(slots=True)
class ThinkingLevelSelectEvent:
    """The thinking level changed (``/thinking``, a key, ``set_thinking_level``, a model switch that clamps
    it). Notification only."""

    level: str
    previous_level: str
    type: Literal["thinking_level_select"] = "thinking_level_select"


@dataclass(slots=True)
class SessionInfoChangedEvent:
    """The session's name was set (``/name``, RPC, ``set_session_name``); None when cleared."""

    name: str | None
    type: Literal["session_info_changed"] = "session_info_changed"


@dataclass(slots=True)
class SessionCompactFailedEvent:
    """A compaction failed (``error_message``) or was cancelled or aborted (``aborted``)."""

    reason: Literal["manual", "threshold", "overflow"]
    aborted: bool
    will_retry: bool
    from_extension: bool
    error_message: str | None = None
    type: Literal["session_compact_failed"] = "session_compact_failed"


@dataclass(slots=True)
class TreePreparation:
    """What a ``/tree`` navigation is about to do."""

    target_id: str
    old_leaf_id: str | None
    common_ancestor_id: str | None
    entries_to_summarize: list[SessionEntry]
    user_wants_summary: bool
    custom_instructions: str | None = None
    replace_instructions: bool = False
    label: str | None = None


@dataclass(slots=True)
class SessionBeforeTreeEvent:
    preparation: TreePreparation
    signal: AbortSignal
    type: Literal["session_before_tree"] = "session_before_tree"


@dataclass(slots=True)
class TreeSummary:
    """A branch summary an extension writes itself (no summariser call is made)."""

    summary: str
    details: Any = None
    usage: Usage | None = None


@dataclass(slots=True)
class SessionBeforeTreeResult:
    """``cancel`` stays where you are; ``summary`` replaces the summariser's; the rest override the
    navigation's instructions and label."""

    cancel: bool = False
    summary: TreeSummary | None = None
    custom_instructions: str | None = None
    replace_instructions: bool | None = None
    label: str | None = None


@dataclass(slots=True)
class UserBashEvent:
    """The user ran ``!command`` (``!!``: ``exclude_from_context``)."""

    command: str
    exclude_from_context: bool
    cwd: str
    type: Literal["user_bash"] = "user_bash"


@dataclass(slots=True)
class BashResult:
    """The outcome of a shell command an extension ran itself."""

    output: str
    exit_code: int | None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None


BashRunner: TypeAlias = Callable[[str, str, Callable[[str], None], AbortSignal], Awaitable[int | None]]
"""Pi's ``BashOperations.exec``: ``run(command, cwd, on_output, signal)`` runs a command somewhere else (over
SSH, in a container), calls ``on_output(text)`` as output arrives and returns the exit code (None when it
was killed). caddie keeps, truncates and records the output as for a local command; ``signal`` is set when
the user cancels."""


@dataclass(slots=True)
class UserBashResult:
    """``result``: the command was handled, this is its outcome; ``operations``: run it with this runner
    instead of the local shell. The first handler that returns one decides."""

    result: BashResult | None = None
    operations: BashRunner | None = None


@dataclass(slots=True)
class ProjectTrustEvent:
    """Before caddie decides whether to trust the project in ``cwd`` (its ``.caddie/`` extensions and
    settings that run code). Only extensions loaded from the user's own places and ``-e`` receive it; a
    project's own extensions load after the decision."""

    cwd: str
    type: Literal["project_trust"] = "project_trust"


@dataclass(slots=True)
class ProjectTrustResult:
    """``yes`` / ``no`` decides (the first such answer wins); ``undecided`` lets the next handler or the
    usual rules decide. ``remember`` saves a yes/no decision as ``caddie trust`` would."""

    trusted: Literal["yes", "no", "undecided"] = "undecided"
    remember: bool = False


@dataclass(slots=True)
class UiPromptStartEvent:
    """An extension opened a dialog and caddie now waits for the user (nested dialogs count once)."""

    kind: Literal["select", "confirm", "input", "editor", "custom"]
    title: str | None = None
    reason: Literal["ui_prompt"] = "ui_prompt"
    type: Literal["ui_prompt_start"] = "ui_prompt_start"


@dataclass(slots=True)
class UiPromptEndEvent:
    """The wait that ``ui_prompt_start`` announced is over."""

    kind: Literal["select", "confirm", "input", "editor", "custom"]
    title: str | None = None
    reason: Literal["ui_prompt"] = "ui_prompt"
    type: Literal["ui_prompt_end"] = "ui_prompt_end"


EventName: TypeAlias = Literal[
    "project_trust",
    "resources_discover",
    "session_info_changed",
    "session_compact_failed",
    "session_before_tree",
    "before_provider_request",
    "before_provider_headers",
    "after_provider_response",
    "thinking_level_select",
    "user_bash",
    "ui_prompt_start",
    "ui_prompt_end",
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
    "savings",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
    "tool_call",
    "tool_result",
    "model_select",
]
EVENT_NAMES: frozenset[str] = frozenset(EventName.__args__)  # type: ignore[attr-defined]
