"""The one API the modes — and programs embedding caddie (``caddie.sdk``) — use to drive a running session.

``Session`` is that API as a Protocol; ``AgentSession`` (session.py) implements it. A mode types its
session as ``Session``, so it cannot reach past the API into the parts behind it (the run controller, the
compaction engine, the prompt queues): what a mode needs and the API lacks is added here, for every mode.
docs/architecture.md#the-session-api lists it with what each call does; the value types below are what
it returns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from caddie.config.source_info import UNDECIDED, SourceInfo, command_source

if TYPE_CHECKING:
    from caddie.ai.messages import AgentMessage, BashExecutionMessage, ImageContent
    from caddie.ai.model import Model, ThinkingLevel
    from caddie.checkpoints.records import Checkpoint
    from caddie.checkpoints.restore import RestoreReport
    from caddie.config.settings import Settings
    from caddie.extensions.api import ContextUsage
    from caddie.extensions.runner import ExtensionRunner
    from caddie.runtime.session_events import SessionEvent
    from caddie.sandbox import Sandbox
    from caddie.session.compaction import CompactionResult
    from caddie.session.store import SessionStore
    from caddie.tools.base import ToolDefinition

PromptSource = Literal["interactive", "rpc", "extension", "print"]
"""Where a prompt came from (the ``input`` event's ``source``)."""
StreamingBehavior = Literal["steer", "follow_up"]
QueueMode = Literal["all", "one-at-a-time"]
AbortTarget = Literal["run", "retry", "bash"]
"""``run``: the current run (its reply ends ``aborted``, running tools get the signal, a compaction stops);
``retry``: the wait before an automatic retry (the run ends with its error); ``bash``: every user shell
command."""
StartReason = Literal["startup", "reload", "new", "resume", "fork"]
ShutdownReason = Literal["quit", "reload", "new", "resume", "fork"]
Subscriber = Callable[["SessionEvent"], Any]
"""Called with every session event, in order; may be async (awaited before the next event)."""


@dataclass(frozen=True, slots=True)
class SessionState:
    """A snapshot of what a session is doing and how it is set (RPC ``get_state``, a status line)."""

    model: Model | None
    thinking_level: ThinkingLevel
    thinking_levels: list[ThinkingLevel]
    """The levels the model supports (``["off"]`` when it does not reason; all of them without a model)."""
    is_streaming: bool
    """A run is active: input now is steering or a follow-up."""
    is_compacting: bool
    steering_mode: QueueMode
    follow_up_mode: QueueMode
    auto_compaction: bool
    auto_retry: bool
    session_file: str | None
    session_id: str
    session_name: str | None
    message_count: int
    pending_message_count: int
    """Steering and follow-up messages typed by the user and not delivered yet."""
    background_work: bool
    """Work an extension started (a timer, a triggered turn) is still pending."""
    shutdown_requested: bool
    """An extension called ``ctx.shutdown()``: send nothing more (see ``Session.wait_for_shutdown_request``)."""
    system_prompt: str
    """What the next request carries (a ``before_agent_start`` override while its run lasts)."""
    tools: list[ToolDefinition]
    """The active tools, in the order the model is offered them."""
    project_trusted: bool
    load_errors: list[str]
    """Extensions that could not be loaded (at start-up or the last ``reload``), one sentence each."""
    exit_code: int | None
    """The exit code an extension set (``api.set_exit_code``; a headless goal's outcome)."""
    sandbox: Sandbox
    """Where the session runs commands (``caddie.sandbox``): ``active``, ``summary()``, ``state()``."""
    context_files: list[str] = field(default_factory=list)
    """The context files (AGENTS.md …) the system prompt holds, in order (the TUI's startup header)."""
    scoped_models: list[Model] = field(default_factory=list)
    """The models Ctrl+P cycles among, in order (``--models``, settings ``enabledModels``,
    ``configure(scoped_models=…)``); empty: every available model."""
    theme_paths: list[str] = field(default_factory=list)
    """Theme files or folders extensions added through ``resources_discover`` (absolute)."""


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """A ``/name`` the user can type: an extension's command, a prompt template or a skill."""

    name: str
    description: str | None
    kind: Literal["extension", "prompt", "skill"]
    path: str
    """The extension that registered it (``bundled:goal``, a file path), or the template's or skill's file."""
    scope: str | None = None
    """Where a template or skill was found (``user``, ``project``, a package); None for extension commands."""
    argument_hint: str | None = None
    source_info: SourceInfo = UNDECIDED
    """Pi's ``sourceInfo`` (by default decided from ``path``)."""

    def __post_init__(self) -> None:
        if self.source_info is UNDECIDED:
            object.__setattr__(self, "source_info", command_source(self.path, self.kind == "extension"))


@dataclass(frozen=True, slots=True)
class TokenTotals:
    input: int
    output: int
    cache_read: int
    cache_write: int

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write


@dataclass(frozen=True, slots=True)
class SessionStats:
    """Counts and spending over every entry of the session file (compacted history and abandoned branches
    included; Pi's ``getSessionStats``), and how full the context is now."""

    session_file: str | None
    session_id: str
    user_messages: int
    assistant_messages: int
    tool_calls: int
    tool_results: int
    total_messages: int
    tokens: TokenTotals
    cost: float
    context_usage: ContextUsage | None
    tokens_estimated: bool = False
    """Some replies' usage is caddie's estimate (their server reported none: ``Usage.estimated``)."""


@dataclass(frozen=True, slots=True)
class ModelCycle:
    """Where ``cycle_model`` landed."""

    model: Model
    thinking_level: ThinkingLevel
    scoped: bool
    """Cycled among the scoped models (``--models``, settings ``enabledModels``) rather than all."""


class SessionCheckpoints(Protocol):
    """A session's file checkpoints (one before each prompt and goal iteration; docs/checkpoints.md)."""

    def all(self) -> list[Checkpoint]:
        """Every checkpoint of the session file, oldest first (every branch)."""
        ...

    async def changes(self, ref: str) -> list[str]:
        """The files the session's runs changed since checkpoint ``ref`` (as the last run left them): what
        restoring it would put back. Empty when nothing changed or it is unknown."""
        ...

    async def restore(
        self, ref: str, *, files: bool = True, conversation: bool = False, force: bool = False
    ) -> RestoreReport | None:
        """Go back to checkpoint ``ref`` (a commit id or prefix, or its entry id): the workspace's files (a
        checkpoint of the current ones taken first; files edited by hand since are left unless ``force``)
        and/or the conversation as before its prompt. Refused while the agent works. The files' report, or
        None when only the conversation moved."""
        ...


class Session(Protocol):
    """A running session: one conversation (its session file), the agent working on it, its extensions."""

    # -- lifecycle and events ---------------------------------------------------------------------------
    async def start(self, reason: StartReason = "startup", previous_session_file: str | None = None) -> None:
        """Bind the extensions and announce the session (``session_start``); subscribe before calling."""
        ...

    async def shutdown(
        self,
        reason: ShutdownReason = "quit",
        target_session_file: str | None = None,
        *,
        settle_timeout: float = 10.0,
    ) -> None:
        """Abort a running turn, let the work settle (every entry written), tell the extensions
        (``session_shutdown``), deliver pending events and cancel what is left; ``quit`` closes the file."""
        ...

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Every session event from now on, in order; returns the function that unsubscribes."""
        ...

    async def flush_events(self) -> None:
        """Deliver now the events raised from synchronous code (before answering the command that caused them)."""
        ...

    async def wait_for_idle(self, *, background: bool = True) -> None:
        """Until no run is active or being prepared and (``background``) no extension-started work is pending."""
        ...

    async def wait_for_shutdown_request(self) -> None:
        """Returns once an extension has called ``ctx.shutdown()`` and the session is idle: the mode then ends
        (``shutdown("quit")`` and exit). Never returns when nobody asks."""
        ...

    # -- input --------------------------------------------------------------------------------------------
    async def prompt(
        self,
        text: str,
        images: list[ImageContent] | None = None,
        *,
        source: PromptSource = "interactive",
        streaming_behavior: StreamingBehavior | None = None,
        preflight: Callable[[bool], None] | None = None,
    ) -> None:
        """One line of user input: an extension command runs at once; otherwise ``input`` handlers, then
        skill/template expansion, then a run (or, while one is active, a queued steer or follow-up as
        ``streaming_behavior`` says — without it that is a ``UsageError``). Returns once the run settled.
        ``preflight(True)`` is called once the input was accepted, ``preflight(False)`` when it was refused."""
        ...

    def steer(self, text: str, images: list[ImageContent] | None = None) -> None:
        """Queue a message delivered after the current turn's tool calls (templates expanded)."""
        ...

    def follow_up(self, text: str, images: list[ImageContent] | None = None) -> None:
        """Queue a message delivered when the agent would otherwise stop."""
        ...

    def clear_queues(self) -> tuple[list[str], list[str]]:
        """Drop the queued steering and follow-up messages; returns their texts (to put back in an editor)."""
        ...

    def abort(self, target: AbortTarget = "run") -> None:
        """Stop the run, the wait before a retry, or the user's shell commands (see ``AbortTarget``)."""
        ...

    # -- model and thinking -------------------------------------------------------------------------------
    async def set_model(self, model: Model) -> None: ...

    async def cycle_model(self, direction: Literal["forward", "backward"] = "forward") -> ModelCycle | None:
        """The next scoped (else available) model; None when there is nothing to cycle to."""
        ...

    def set_thinking_level(self, level: str) -> None:
        """Clamped to what the model supports; an unknown level means ``off``."""
        ...

    def cycle_thinking_level(self) -> ThinkingLevel | None:
        """The next supported level; None when the model does not reason."""
        ...

    def available_models(self) -> list[Model]:
        """Every model with credentials (what ``/model`` and RPC ``get_available_models`` offer)."""
        ...

    # -- work ---------------------------------------------------------------------------------------------
    async def compact(self, custom_instructions: str | None = None) -> CompactionResult:
        """Summarise the older part of the context now (a running turn is aborted first). Raises
        ``Aborted`` when an extension or an abort cancelled it, ``CaddieError`` when it cannot be done."""
        ...

    async def run_bash(
        self,
        command: str,
        *,
        exclude_from_context: bool = False,
        request_id: str | None = None,
        announce: bool = True,
    ) -> BashExecutionMessage:
        """The user's own shell command (``!cmd``; ``!!cmd``: ``exclude_from_context``), recorded in the
        session; its output streams as ``bash_execution_update`` events carrying ``request_id``."""
        ...

    def configure(
        self,
        *,
        steering_mode: QueueMode | None = None,
        follow_up_mode: QueueMode | None = None,
        auto_compaction: bool | None = None,
        auto_retry: bool | None = None,
        scoped_models: Sequence[Model] | None = None,
    ) -> None:
        """Change any of these now; each is saved as the global default, as Pi saves it — except
        ``scoped_models``, what Ctrl+P cycles among from now on, for this session only (``/scoped-models``;
        empty: every available model)."""
        ...

    # -- moving between sessions --------------------------------------------------------------------------
    async def new_session(self, parent_session: str | None = None, *, abort_running: bool = False) -> bool:
        """Start a fresh session file; False when an extension cancelled (``session_before_switch``)."""
        ...

    async def switch_session(self, path: str, *, abort_running: bool = False) -> bool:
        """Open another session file (a path with no file yet starts a new session there)."""
        ...

    async def fork(
        self,
        entry_id: str,
        *,
        position: Literal["before", "at"] | None = None,
        abort_running: bool = False,
    ) -> bool:
        """A new session from the branch up to ``entry_id`` (before a user message unless ``position="at"``:
        a clone)."""
        ...

    async def navigate_tree(
        self, target_id: str, *, summarize: bool = False, custom_instructions: str | None = None
    ) -> bool:
        """Move within this session's tree (optionally summarising the branch being left, with
        ``custom_instructions`` added to the summary prompt as its focus, as Pi's ``/tree`` "Summarize with
        custom prompt"). False when an extension cancelled it; raises ``Aborted`` when the summary was
        cancelled (Esc), before anything moved."""
        ...

    async def reload(self) -> None:
        """Import the extensions again (``/reload``)."""
        ...

    def set_session_name(self, name: str) -> None: ...

    def set_label(self, entry_id: str, label: str | None) -> None: ...

    # -- file checkpoints (docs/checkpoints.md) ------------------------------------------------------------
    @property
    def checkpoints(self) -> SessionCheckpoints:
        """The session's file checkpoints: listing, what changed since one, restoring."""
        ...

    # -- reading ------------------------------------------------------------------------------------------
    @property
    def model(self) -> Model | None: ...

    @property
    def thinking_level(self) -> ThinkingLevel: ...

    @property
    def is_streaming(self) -> bool:
        """A run is active (input now is steering or a follow-up)."""
        ...

    @property
    def messages(self) -> list[AgentMessage]:
        """The transcript the next request is built from (read it; change it through the API)."""
        ...

    @property
    def store(self) -> SessionStore:
        """The session file: its entries, tree, branch, labels and name (read it; change it through the API)."""
        ...

    @property
    def cwd(self) -> str: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def extensions(self) -> ExtensionRunner:
        """The loaded extensions: their commands, tools, shortcuts, renderers; ``emit`` asks them
        (``entry_visibility``); ``context()`` is the ``ctx`` for a handler a mode calls itself."""
        ...

    def state(self) -> SessionState: ...

    def stats(self) -> SessionStats: ...

    def context_usage(self) -> ContextUsage | None:
        """How full the context is (None without a model; tokens unknown right after a compaction)."""
        ...

    def commands(self, *, every_skill: bool = False) -> list[SlashCommand]:
        """Every ``/name``: extension commands, then prompt templates, then skills — when settings
        ``enableSkillCommands`` allows them, or ``every_skill`` (Pi's RPC ``get_commands`` lists them all)."""
        ...

    async def context_for_next_request(self) -> list[AgentMessage]:
        """Exactly what the next request would carry, after every extension's ``context`` handler."""
        ...
