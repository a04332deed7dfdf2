"""The public extension API: everything an extension may use, and nothing else.

An extension is a Python module (or package) with a function ``register(api: ExtensionAPI)`` (sync or
async). In it the extension subscribes to events with ``api.on(...)``, registers tools and commands, and
keeps whatever it needs; at run time its handlers receive ``(event, ctx)``.

This mirrors Pi 0.84's ``ExtensionAPI`` under Python names. The bundled extensions
(``caddie.extensions.bundled.*``) import only this module (an import-linter contract enforces it), so anything
they can do, a third-party extension can do too.

This module is the surface; the definitions it re-exports live in ``event_types`` (events and results),
``handler_context`` (``ExtensionContext``, ``CommandContext``, the UI and session views) and ``extension``
(what one extension registers, the host protocols). Import them from here. docs/extensions.md is the guide.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

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
from caddie.ai.abort import AbortController, AbortSignal
from caddie.ai.constrained_sampling import GrammarSampling, JsonSchemaSampling
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
    convert_to_llm,
    message_from_json,
    message_to_json,
    now_ms,
    replace,
    text_of,
)
from caddie.ai.model import Context, Model, StreamOptions
from caddie.ai.providers.cost import calculate_cost
from caddie.ai.providers.preload import import_in_background
from caddie.ai.secrets import is_secret_variable, redact
from caddie.ai.secrets import register as register_secret
from caddie.ai.secrets import register_headers as register_secret_headers
from caddie.ai.stream import stream as stream_simple
from caddie.ai.stream_events import (
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
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
from caddie.checkpoints.restore import RestoreReport
from caddie.config.source_info import SourceInfo, SourceOrigin, SourceScope
from caddie.errors import (
    Aborted,
    CaddieError,
    ConfigurationError,
    ExtensionError,
    ProviderError,
    SessionStoreError,
    UsageError,
)
from caddie.extensions._exec import ExecResult, run_process
from caddie.extensions.event_types import (  # Pi's events added in 0.84 parity (#26)
    EVENT_NAMES,
    AfterProviderResponseEvent,
    AgentSettledEvent,
    BashResult,
    BashRunner,
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    BeforeProviderHeadersEvent,
    BeforeProviderRequestEvent,
    CompactionSpec,
    ContextEvent,
    ContextResult,
    EntryVisibility,
    EntryVisibilityEvent,
    EventName,
    InputEvent,
    InputResult,
    MessageEndResult,
    ModelSelectEvent,
    ProjectTrustEvent,
    ProjectTrustResult,
    ResourcesDiscoverEvent,
    ResourcesDiscoverResult,
    Savings,
    SavingsEvent,
    SessionBeforeCompactEvent,
    SessionBeforeCompactResult,
    SessionBeforeForkEvent,
    SessionBeforeForkResult,
    SessionBeforeSwitchEvent,
    SessionBeforeSwitchResult,
    SessionBeforeTreeEvent,
    SessionBeforeTreeResult,
    SessionCompactEvent,
    SessionCompactFailedEvent,
    SessionInfoChangedEvent,
    SessionShutdownEvent,
    SessionStartEvent,
    SessionTreeEvent,
    SummaryUsageEvent,
    SystemPromptOptions,
    ThinkingLevelSelectEvent,
    ToolCallEvent,
    ToolCallResult,
    ToolResultEvent,
    ToolResultPatch,
    TreePreparation,
    TreeSummary,
    UiPromptEndEvent,
    UiPromptStartEvent,
    UserBashEvent,
    UserBashResult,
)
from caddie.extensions.extension import (
    PROVIDER_CONFIG_KEYS,
    CommandHandler,
    CommandSpec,
    ConfigItem,
    ConfigLister,
    DeliverAs,
    EntryRenderer,
    EntryRendererSpec,
    EntryRenderOptions,
    Extension,
    ExtensionHost,
    FlagSpec,
    Handler,
    MarkdownTransformContext,
    MarkdownTransformer,
    MessageRenderer,
    MessageRendererSpec,
    MessageRenderOptions,
    ProviderConfig,
    ProviderModelConfig,
    ShortcutHandler,
    ShortcutSpec,
    SlashCommandInfo,
)
from caddie.extensions.handler_context import (
    AuthStatus,
    CommandContext,
    ConfigScope,
    ContextUsage,
    ExtensionContext,
    ExtensionUI,
    Mode,
    ModelLookup,
    NotifyLevel,
    ProviderSummary,
    ReadonlySession,
    ReplacedSessionContext,
    ResolvedAuth,
    WidgetPlacement,
)
from caddie.extensions.ui_components import (
    FEATURES,
    AutocompleteFactory,
    AutocompleteProvider,
    Component,
    ComponentFactory,
    CustomEditor,
    KeybindingsView,
    KeyInput,
    OverlayHandle,
    OverlayMargin,
    OverlayOptions,
    Suggestion,
    Suggestions,
    TerminalInputHandler,
    TerminalNotSuspendable,
    ThemeInfo,
    ThemeResult,
    ThemeView,
    TuiHandle,
    UnavailableUI,
    matches_key,
)
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
from caddie.sandbox import PreparedCommand, Sandbox
from caddie.session.compaction import serialize_conversation
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
from caddie.session.tree import TreeNode
from caddie.tools.base import OnUpdate, ToolDefinition, ToolError, ToolRenderContext, ToolResult, text_result
from caddie.tools.bash import create_local_bash_operations, limit_output
from caddie.tools.factories import create_bash_tool, create_edit_tool, create_read_tool, create_write_tool
from caddie.tools.mutation_queue import with_file_mutation_queue
from caddie.tools.operations import (
    BashOperations,
    EditOperations,
    FileOperations,
    ReadOperations,
    ShellExec,
    ShellTimedOut,
    WriteOperations,
)
from caddie.tools.truncate import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    TruncationResult,
    format_size,
    truncate_head,
    truncate_line,
    truncate_tail,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "EVENT_NAMES",
    "FEATURES",
    "AbortController",
    "AbortSignal",
    "Aborted",
    "AfterProviderResponseEvent",
    "AgentEndEvent",
    "AgentMessage",
    "AgentSettledEvent",
    "AgentStartEvent",
    "AssistantMessage",
    "AssistantMessageEvent",
    "AuthStatus",
    "AutocompleteFactory",
    "AutocompleteProvider",
    "BashExecutionMessage",
    "BashOperations",
    "BashResult",
    "BashRunner",
    "BeforeAgentStartEvent",
    "BeforeAgentStartResult",
    "BeforeProviderHeadersEvent",
    "BeforeProviderRequestEvent",
    "BranchSummaryEntry",
    "BranchSummaryMessage",
    "CaddieError",
    "CommandContext",
    "CommandHandler",
    "CommandSpec",
    "CompactionEntry",
    "CompactionSpec",
    "CompactionSummaryMessage",
    "Component",
    "ComponentFactory",
    "ConfigItem",
    "ConfigLister",
    "ConfigScope",
    "ConfigurationError",
    "ContentBlock",
    "Context",
    "ContextEvent",
    "ContextResult",
    "ContextUsage",
    "CustomEditor",
    "CustomEntry",
    "CustomMessage",
    "CustomMessageEntry",
    "DeliverAs",
    "DoneEvent",
    "EditOperations",
    "EntryRenderOptions",
    "EntryRenderer",
    "EntryRendererSpec",
    "EntryVisibility",
    "EntryVisibilityEvent",
    "ErrorEvent",
    "EventBus",
    "EventName",
    "ExecResult",
    "ExtensionAPI",
    "ExtensionContext",
    "ExtensionError",
    "ExtensionHost",
    "ExtensionRuntimeNotReady",
    "ExtensionUI",
    "FileOperations",
    "FlagSpec",
    "GrammarSampling",
    "Handler",
    "ImageContent",
    "InputEvent",
    "InputResult",
    "JsonSchemaSampling",
    "KeyInput",
    "KeybindingsView",
    "LabelEntry",
    "MarkdownTransformContext",
    "MarkdownTransformer",
    "MessageEndEvent",
    "MessageEndResult",
    "MessageEntry",
    "MessageRenderOptions",
    "MessageRenderer",
    "MessageRendererSpec",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "Mode",
    "Model",
    "ModelChangeEntry",
    "ModelLookup",
    "ModelSelectEvent",
    "NotifyLevel",
    "OnUpdate",
    "OverlayHandle",
    "OverlayMargin",
    "OverlayOptions",
    "PreparedCommand",
    "ProjectTrustEvent",
    "ProjectTrustResult",
    "ProviderConfig",
    "ProviderError",
    "ProviderModelConfig",
    "ProviderSummary",
    "ReadOperations",
    "ReadonlySession",
    "ReplacedSessionContext",
    "ResolvedAuth",
    "ResourcesDiscoverEvent",
    "ResourcesDiscoverResult",
    "RestoreReport",
    "Sandbox",
    "Savings",
    "SavingsEvent",
    "SessionBeforeCompactEvent",
    "SessionBeforeCompactResult",
    "SessionBeforeForkEvent",
    "SessionBeforeForkResult",
    "SessionBeforeSwitchEvent",
    "SessionBeforeSwitchResult",
    "SessionBeforeTreeEvent",
    "SessionBeforeTreeResult",
    "SessionCompactEvent",
    "SessionCompactFailedEvent",
    "SessionEntry",
    "SessionHeader",
    "SessionInfoChangedEvent",
    "SessionInfoEntry",
    "SessionShutdownEvent",
    "SessionStartEvent",
    "SessionStoreError",
    "SessionTreeEvent",
    "ShellExec",
    "ShellTimedOut",
    "ShortcutHandler",
    "ShortcutSpec",
    "SlashCommandInfo",
    "SourceInfo",
    "SourceOrigin",
    "SourceScope",
    "StaleExtensionContext",
    "StartEvent",
    "StreamOptions",
    "Suggestion",
    "Suggestions",
    "SummaryUsageEvent",
    "SystemPromptOptions",
    "TerminalInputHandler",
    "TerminalNotSuspendable",
    "TextContent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThemeInfo",
    "ThemeResult",
    "ThemeView",
    "ThinkingContent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingLevelChangeEntry",
    "ThinkingLevelSelectEvent",
    "ThinkingStartEvent",
    "ToolCall",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallEvent",
    "ToolCallResult",
    "ToolCallStartEvent",
    "ToolDefinition",
    "ToolError",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "ToolRenderContext",
    "ToolResult",
    "ToolResultEvent",
    "ToolResultMessage",
    "ToolResultPatch",
    "TreeNode",
    "TreePreparation",
    "TreeSummary",
    "TruncationResult",
    "TuiHandle",
    "TurnEndEvent",
    "TurnStartEvent",
    "UiPromptEndEvent",
    "UiPromptStartEvent",
    "UnavailableUI",
    "Usage",
    "UsageError",
    "UserBashEvent",
    "UserBashResult",
    "UserContent",
    "UserMessage",
    "Utf16TokenCounter",
    "WidgetPlacement",
    "WriteOperations",
    "approx_tokens",
    "calculate_cost",
    "content_from_json",
    "content_to_json",
    "convert_to_llm",
    "create_bash_tool",
    "create_edit_tool",
    "create_local_bash_operations",
    "create_read_tool",
    "create_write_tool",
    "entry_to_context_messages",
    "estimate_message_tokens_utf16",
    "estimate_tokens_utf16",
    "format_size",
    "import_in_background",
    "is_finite_number",
    "is_js_number",
    "is_secret_variable",
    "js_number",
    "js_round",
    "js_truthy",
    "json_stringify",
    "limit_output",
    "matches_key",
    "message_bytes",
    "message_from_json",
    "message_to_json",
    "now_ms",
    "redact",
    "register_secret",
    "register_secret_headers",
    "replace",
    "result_bytes",
    "serialize_conversation",
    "stream_simple",
    "text_of",
    "text_result",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
    "utf8_len",
    "utf16_len",
    "utf16_message_chars",
    "utf16_prefix",
    "utf16_sort_key",
    "with_file_mutation_queue",
]


class ExtensionRuntimeNotReady(ExtensionError, RuntimeError):
    def __init__(self) -> None:
        super().__init__(
            "Extension runtime not initialized: call action methods from handlers, not from register()"
        )


STALE_CONTEXT = (
    "This extension ctx is stale after session replacement or reload. Do not use a captured api or command "
    "ctx after ctx.new_session(), ctx.fork(), ctx.switch_session(), or ctx.reload(). For new_session, fork, "
    "and switch_session, move post-replacement work into with_session and use the ctx passed to "
    "with_session. For reload, do not use the old ctx after await ctx.reload()."
)
"""Pi's message for a stale ctx or api, with caddie's names for the methods it mentions."""


class StaleExtensionContext(ExtensionError, RuntimeError):
    """A ``ctx`` or ``api`` used after its session was replaced (new, fork, switch) or reloaded, or ended."""

    def __init__(self) -> None:
        super().__init__(STALE_CONTEXT)


# ==================================================================================================
# The API object an extension's register() receives


class ExtensionAPI:
    """Registration methods work inside ``register()``; action methods work once the session runs."""

    def __init__(self, extension: Extension, events: EventBus) -> None:
        self._extension = extension
        self._host: ExtensionHost | None = None
        self._stale = False
        self.events = events
        """An in-process bus between extensions: ``events.emit(channel, data)``, ``events.on(channel, fn)``."""

    # -- registration -------------------------------------------------------------------------------
    def on(self, event: EventName, handler: Handler) -> None:
        if event not in EVENT_NAMES:
            raise ValueError(f"unknown event {event!r}; known events: {', '.join(sorted(EVENT_NAMES))}")
        self._extension.handlers.setdefault(event, []).append(handler)

    def register_tool(self, tool: ToolDefinition) -> None:
        tool.source = self._extension.path
        tool.source_info = self._extension.source_info
        self._extension.tools[tool.name] = tool
        if self._host is not None:
            self._host.refresh_tools()

    def unregister_tool(self, name: str) -> None:
        """Remove a tool this extension registered; from the next model request the model no longer sees it."""
        if self._extension.tools.pop(name, None) is not None and self._host is not None:
            self._host.refresh_tools()

    def expect_tools(self, pattern: str) -> None:
        """Announce tools this extension registers later, after start-up (``mcp__*``: an MCP server's tools
        once it is connected), so ``--tools``, settings ``tools`` and ``--exclude-tools`` may name them
        (globs allowed) before they exist. When ``--tools`` is given, such a tool becomes active only if the
        list names it; ``--exclude-tools`` keeps it off."""
        self._extension.expected_tools.append(pattern)

    def register_command(
        self,
        name: str,
        handler: CommandHandler,
        description: str | None = None,
        get_argument_completions: Callable[[str], Sequence[str]] | None = None,
    ) -> None:
        name = name.removeprefix("/")
        self._extension.commands[name] = CommandSpec(
            name,
            description,
            handler,
            get_argument_completions,
            self._extension.path,
            self._extension.source_info,
        )

    def unregister_command(self, name: str) -> None:
        """Remove a command this extension registered (``/name`` is unknown from then on)."""
        self._extension.commands.pop(name.removeprefix("/"), None)

    def register_config_items(self, lister: ConfigLister) -> None:
        """Let the user switch things this extension configures on and off in ``caddie config`` and
        ``/settings``: ``lister(ConfigScope)`` returns ``ConfigItem``s (e.g. one per MCP server). It runs
        without a session too (``caddie config``), so it must only read ``scope``; the host stores a switch
        in the item's ``switch_key`` settings list."""
        self._extension.config_listers.append(lister)

    def register_flag(
        self,
        name: str,
        description: str,
        kind: Literal["string", "boolean"] = "string",
        default: str | bool | None = None,
        check: Callable[[str], object] | None = None,
    ) -> None:
        """Add a command-line option (``caddie --name value``); read it with ``get_flag``. ``check(value)``
        raises ``UsageError`` (or ``ValueError``) with a sentence for the user when a value cannot be used:
        caddie then exits 2 with ``--name: <sentence>`` before anything runs."""
        name = name.removeprefix("--")
        self._extension.flags[name] = FlagSpec(name, description, kind, default, self._extension.path, check)

    def register_shortcut(
        self, shortcut: str, handler: ShortcutHandler, description: str | None = None
    ) -> None:
        """Run ``handler(ctx)`` when the user presses ``shortcut`` in the interactive UI (``ctrl+x``,
        ``ctrl+shift+p``, ``f5``...). Keys caddie reserves (ctrl+c, escape, enter...) are skipped with a
        warning; a key caddie uses for something else is taken over, with a warning (as in Pi)."""
        key = shortcut.strip().lower()
        if not key:
            raise ValueError("register_shortcut needs a key, e.g. 'ctrl+x'")
        self._extension.shortcuts[key] = ShortcutSpec(key, handler, description, self._extension.path)

    def register_message_renderer(self, custom_type: str, renderer: MessageRenderer) -> None:
        """Draw this extension's custom messages (``send_message(custom_type, ...)``) in the interactive UI:
        ``renderer(message, MessageRenderOptions)`` returns a ``str``, a Rich renderable, or None for the
        default look. Display only: the message the model sees does not change."""
        self._extension.message_renderers[custom_type] = MessageRendererSpec(
            custom_type, renderer, self._extension.path
        )

    def register_entry_renderer(self, custom_type: str, renderer: EntryRenderer) -> None:
        """Draw this extension's ``custom`` entries (``append_entry(custom_type, data)``) in the interactive
        transcript (Pi's ``registerEntryRenderer``): ``renderer(entry, EntryRenderOptions, theme)`` returns a
        component (``render(width) -> list[str]``), a ``str`` (ANSI colours kept), a Rich renderable, or None
        to draw nothing. The entry is drawn where it was appended — at once, and again whenever the session
        is drawn (resume, /tree) — and redrawn when Ctrl+O or the theme changes. The entries never reach the
        model; modes without a terminal never call the renderer. Of two extensions the first to register a
        type wins, as in Pi."""
        self._extension.entry_renderers[custom_type] = EntryRendererSpec(
            custom_type, renderer, self._extension.path
        )

    def register_markdown_transformer(self, transformer: MarkdownTransformer) -> None:
        """Change the markdown of answers, thinking and your messages before the interactive UI draws it
        (Pi's ``registerMarkdownTransformer``): ``transformer(markdown, MarkdownTransformContext)`` returns the
        markdown to draw. One per extension (registering again replaces it, as Pi); they run in extension
        load order, each on the previous one's result; one that raises is skipped (reported once). Display
        only: the session and the model see the original. It runs on every redraw, so keep it quick; modes
        without a terminal never call it (``ctx.ui.supports("markdown_transformers")``)."""
        self._extension.markdown_transformers[:] = [transformer]

    def register_provider(self, name: str, config: ProviderConfig) -> None:
        """Add a model provider, or change one caddie knows (``ProviderConfig``: the shape of a models.json
        provider). Inside ``register()`` it applies once the session's model registry exists (before the
        model is chosen, so ``--model name/id`` works); later, at once. Raises ``ValueError`` for a config
        caddie cannot use."""
        if not name or "/" in name:
            raise ValueError(f"register_provider: {name!r} is not a provider name (no '/', not empty)")
        unknown = sorted(set(config) - PROVIDER_CONFIG_KEYS)
        if unknown:
            raise ValueError(
                f"register_provider({name!r}): unknown key(s) {', '.join(unknown)}; "
                f"caddie understands {', '.join(sorted(PROVIDER_CONFIG_KEYS))}"
            )
        previous = self._extension.providers.get(name)
        self._extension.providers[name] = config
        sink = self._extension.provider_sink
        if sink is None:
            return
        problems = sink.register_provider(name, config, self._extension.path)
        if problems:
            if previous is None:
                self._extension.providers.pop(name)
                sink.unregister_provider(name)
            else:
                self._extension.providers[name] = previous
                sink.register_provider(name, previous, self._extension.path)
            raise ValueError(" ".join(problems))

    def unregister_provider(self, name: str) -> None:
        """Remove a provider this extension registered (built-in models it changed come back)."""
        if self._extension.providers.pop(name, None) is not None and self._extension.provider_sink:
            self._extension.provider_sink.unregister_provider(name)

    # -- actions ------------------------------------------------------------------------------------
    @property
    def host(self) -> ExtensionHost:
        if self._host is None:
            raise StaleExtensionContext() if self._stale else ExtensionRuntimeNotReady()
        return self._host

    def bind(self, host: ExtensionHost | None, *, stale: bool = False) -> None:
        """Connect to (or, with None, detach from) a running session. Called by the host only; ``stale``:
        detached because the session was replaced, reloaded or ended (using the api then says so)."""
        self._host = host
        self._stale = host is None and stale

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
        self,
        content: str | list[UserContent],
        deliver_as: DeliverAs | None = None,
        expand_prompt_templates: bool = False,
    ) -> None:
        """Send a user message as if typed; starts a run when idle (``deliver_as`` is required when busy).
        ``expand_prompt_templates`` (Pi's option): treat it fully as typed — an extension command runs,
        ``/skill:…`` and ``/template`` expand."""
        self.host.send_user_message(content, deliver_as, expand_prompt_templates)

    def set_label(self, entry_id: str, label: str | None) -> None:
        self.host.set_label(entry_id, label)

    def set_session_name(self, name: str) -> None:
        self.host.set_session_name(name)

    def get_session_name(self) -> str | None:
        return self.host.get_session_name()

    def get_active_tools(self) -> list[str]:
        return self.host.get_active_tools()

    def get_all_tools(self) -> list[ToolDefinition]:
        """Every configured tool; ``.source_info`` says where each came from (Pi's ``sourceInfo``)."""
        return self.host.get_all_tools()

    def set_active_tools(self, names: Sequence[str]) -> None:
        """Unknown names are ignored; the change applies from the next model request."""
        self.host.set_active_tools(names)

    def get_commands(self) -> list[SlashCommandInfo]:
        """Every ``/name`` of the session: extension commands, prompt templates and skills, each with its
        ``source`` (``extension``, ``prompt``, ``skill``), ``path`` and ``source_info`` (Pi's ``getCommands``)."""
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
        """Run a program (not through a shell) and collect its output; never raises for a failing command.
        It runs in the session's sandbox when one is active (``ctx.sandbox``)."""
        sandbox = self._host.sandbox if self._host is not None else None  # None: not in a session yet
        return await run_process(
            command, list(args), timeout=timeout, cwd=cwd, signal=signal, sandbox=sandbox
        )


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
