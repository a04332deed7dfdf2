"""What one loaded extension registered, and the host protocols its ``ExtensionAPI`` calls into.

Both ``caddie.extensions.api`` (which fills an ``Extension`` in from ``register()``) and
``caddie.extensions.runner`` (which runs what it registered) import this module; neither imports the other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, TypedDict

from caddie.ai.messages import CustomMessage, UserContent
from caddie.ai.model import Model
from caddie.config.source_info import UNDECIDED, SourceInfo, command_source, extension_source
from caddie.extensions.handler_context import CommandContext, ConfigScope, ExtensionContext
from caddie.extensions.ui_components import ThemeView
from caddie.sandbox import Sandbox
from caddie.session.entries import CustomEntry
from caddie.tools.base import ToolDefinition

DeliverAs: TypeAlias = Literal["steer", "follow_up", "next_turn"]

Handler: TypeAlias = Callable[[Any, ExtensionContext], Any]
"""``handler(event, ctx)``; may be ``async``; its return value matters only for the events that take one."""

CommandHandler: TypeAlias = Callable[[str, CommandContext], Any]

ShortcutHandler: TypeAlias = Callable[[ExtensionContext], Any]
"""``handler(ctx)``, sync or async, run when the user presses the shortcut in the interactive UI."""


@dataclass(slots=True)
class FlagSpec:
    """A command-line option an extension adds (``--name value`` or ``--name`` for booleans)."""

    name: str
    description: str
    kind: Literal["string", "boolean"] = "string"
    default: str | bool | None = None
    source: str = ""
    check: Callable[[str], object] | None = None
    """For a string option: raises ``ValueError`` or ``UsageError`` (its message a sentence for the user) for a
    value the extension cannot use; caddie runs it before anything starts, and so do tools that pass the option on
    (``caddie batch`` for ``--goal``)."""


@dataclass(slots=True)
class CommandSpec:
    name: str
    description: str | None
    handler: CommandHandler
    get_argument_completions: Callable[[str], Sequence[str]] | None = None
    source: str = ""
    source_info: SourceInfo = UNDECIDED
    """Pi's ``sourceInfo``: the registering extension's."""


@dataclass(frozen=True, slots=True)
class SlashCommandInfo:
    """One ``/name`` the user can type, as ``api.get_commands()`` lists it (Pi's ``SlashCommandInfo``)."""

    name: str
    """Without the slash; a skill's is ``skill:<name>``."""
    description: str | None
    source: Literal["extension", "prompt", "skill"]
    path: str
    """Pi's ``sourceInfo.path``: the extension that registered it (``bundled:goal``, a file), or the prompt
    template's or skill's file."""
    scope: str | None = None
    """Where a template or skill was found (``user``, ``project``, a package's name); None for commands."""
    source_info: SourceInfo = UNDECIDED
    """Pi's ``sourceInfo`` (``path``, ``source``, ``scope``, ``origin``, ``base_dir``): which configuration
    brought the command in (docs/extensions.md)."""

    def __post_init__(self) -> None:
        if self.source_info is UNDECIDED:
            object.__setattr__(self, "source_info", command_source(self.path, self.source == "extension"))


@dataclass(slots=True)
class ShortcutSpec:
    """A key in the interactive UI (Textual's key names: ``ctrl+x``, ``ctrl+shift+p``, ``f5``...)."""

    key: str
    handler: ShortcutHandler
    description: str | None = None
    source: str = ""


@dataclass(slots=True)
class ConfigItem:
    """Something an extension lets the user switch on or off in ``caddie config`` and ``/settings``.

    Its id is ``<kind>:<name>`` (``mcp:github``). Switching it off adds ``name`` to the settings list
    ``switch_key`` (user settings, or the project's with ``caddie config -l``); on removes it."""

    kind: str
    name: str
    source: str
    """Where it is configured, for people: ``user settings``, ``project .mcp.json``…"""
    enabled: bool
    switch_key: str
    """The settings key of the list of names switched off, e.g. ``disabledMcpServers``."""
    description: str = ""
    on_switch: Callable[[bool], Any] | None = None
    """Called (sync or async) after a running session's ``/settings`` saved a switch, so it applies at once."""


ConfigLister: TypeAlias = Callable[[ConfigScope], Sequence[ConfigItem]]


@dataclass(slots=True)
class MessageRenderOptions:
    expanded: bool
    """True while the user has tool output expanded (ctrl+o): show details, not just a summary."""


@dataclass(frozen=True, slots=True)
class MarkdownTransformContext:
    """What a markdown transformer is told about the text it gets (Pi's ``MarkdownTransformContext``)."""

    message_type: Literal["user", "assistant", "assistant-thinking"]
    is_streaming: bool
    """True while an answer is still arriving (its text is partial)."""
    available_width: int
    """The columns the text is drawn in."""


MarkdownTransformer: TypeAlias = Callable[[str, MarkdownTransformContext], str]
"""``transformer(markdown, context)`` → the markdown to draw instead (``api.register_markdown_transformer``)."""

MessageRenderer: TypeAlias = Callable[[CustomMessage, MessageRenderOptions], object]
"""``renderer(message, options)`` → a ``str`` (plain text), any Rich renderable, or None for the default
look. Called in the interactive UI for messages of the registered ``custom_type``; keep it quick."""


@dataclass(slots=True)
class MessageRendererSpec:
    custom_type: str
    renderer: MessageRenderer
    source: str = ""


@dataclass(frozen=True, slots=True)
class EntryRenderOptions:
    """The ``options`` of an entry renderer (Pi's ``{expanded}``)."""

    expanded: bool
    """True while the user has tool output expanded (ctrl+o): show details, not just a summary."""


EntryRenderer: TypeAlias = Callable[[CustomEntry, EntryRenderOptions, ThemeView], object]
"""``renderer(entry, options, theme)`` → a component (``render(width) -> list[str]``), a ``str`` (ANSI colours
kept), any Rich renderable, or None to draw nothing. Called in the interactive UI for ``custom`` entries of the
registered ``custom_type``; keep it quick."""


@dataclass(slots=True)
class EntryRendererSpec:
    custom_type: str
    renderer: EntryRenderer
    source: str = ""


class ProviderModelConfig(TypedDict, total=False):
    """One model of a provider an extension registers: the shape of a ``models.json`` model."""

    id: str
    name: str
    api: str
    reasoning: bool
    input: list[Literal["text", "image"]]
    cost: dict[str, float]
    """``input`` / ``output`` / ``cacheRead`` / ``cacheWrite``: dollars per million tokens."""
    contextWindow: int
    maxTokens: int
    headers: dict[str, str]
    compat: dict[str, Any]
    thinkingLevelMap: dict[str, str | None]


class ProviderConfig(TypedDict, total=False):
    """A provider an extension registers (Pi's ``registerProvider`` config): the shape of a ``models.json``
    provider. Without ``models`` it adjusts an existing provider (e.g. only ``baseUrl``); with them, they
    replace the provider's models."""

    baseUrl: str
    apiKey: str
    """A literal, ``$ENV_VAR`` / ``${ENV_VAR}``, or ``!shell command`` (as in models.json)."""
    api: str
    """``openai-completions`` or ``anthropic-messages``."""
    headers: dict[str, str]
    compat: dict[str, Any]
    models: list[ProviderModelConfig]
    modelOverrides: dict[str, ProviderModelConfig]
    authHeader: bool
    """Send the key as ``Authorization: Bearer`` too."""
    oauth: dict[str, Any]
    """A login for ``/login`` (Pi's shape): ``name``, ``login(callbacks)``, ``refreshToken(credential)``,
    ``getApiKey(credential)``, optionally ``loginLabel``; the functions may be ``async``."""
    streamSimple: Any
    """``stream_simple(model, context, options)``: an async iterator of ``AssistantMessageEvent`` — the
    stream function of this provider's own ``api``."""
    refreshModels: Any
    """``async refresh_models()``: the provider's current models (models.json's model shape); kept in
    models-store.json and used instead of ``models``."""


PROVIDER_CONFIG_KEYS = frozenset(ProviderConfig.__annotations__)


class ProviderSink(Protocol):
    """Where registered providers go: the session's model registry (``caddie.models.ModelRegistry``)."""

    def register_provider(self, name: str, config: Mapping[str, Any], source: str) -> list[str]:
        """Add or replace ``name``; returns one line per problem (an empty list when all is well)."""
        ...

    def unregister_provider(self, name: str) -> None: ...


class ExtensionHost(Protocol):
    """What the running session does for ``ExtensionAPI`` action methods (implemented by the runtime)."""

    def append_entry(self, custom_type: str, data: Any) -> str: ...

    def send_message(
        self, message: CustomMessage, deliver_as: DeliverAs | None, trigger_turn: bool
    ) -> None: ...

    def send_user_message(
        self, content: str | list[UserContent], deliver_as: DeliverAs | None, expand: bool = False
    ) -> None: ...

    def set_label(self, entry_id: str, label: str | None) -> None: ...

    def set_session_name(self, name: str) -> None: ...

    def get_session_name(self) -> str | None: ...

    def get_active_tools(self) -> list[str]: ...

    def get_all_tools(self) -> list[ToolDefinition]: ...

    def set_active_tools(self, names: Sequence[str]) -> None: ...

    def get_commands(self) -> list[SlashCommandInfo]:
        """Extension commands, then prompt templates, then every skill (``skill:name``), as Pi's."""
        ...

    def refresh_tools(self) -> None:
        """Tools were registered or unregistered at run time: activate the new ones (as the session's tool
        selection allows) and drop the removed ones."""
        ...

    async def set_model(self, model: Model) -> bool: ...

    def get_thinking_level(self) -> str: ...

    def set_thinking_level(self, level: str) -> None: ...

    def publish(self, name: str, data: Any) -> None: ...

    def get_flag(self, name: str) -> str | bool | None: ...

    def set_exit_code(self, code: int) -> None: ...

    @property
    def sandbox(self) -> Sandbox: ...


class HostBinding(Protocol):
    """The part of ``ExtensionAPI`` the host uses: connect it to (or, with None, detach it from) a session."""

    def bind(self, host: ExtensionHost | None, *, stale: bool = False) -> None: ...


@dataclass
class Extension:
    """One loaded extension: where it came from and what it registered."""

    path: str
    name: str
    handlers: dict[str, list[Handler]] = field(default_factory=dict)
    tools: dict[str, ToolDefinition] = field(default_factory=dict)
    commands: dict[str, CommandSpec] = field(default_factory=dict)
    flags: dict[str, FlagSpec] = field(default_factory=dict)
    shortcuts: dict[str, ShortcutSpec] = field(default_factory=dict)
    message_renderers: dict[str, MessageRendererSpec] = field(default_factory=dict)
    entry_renderers: dict[str, EntryRendererSpec] = field(default_factory=dict)
    markdown_transformers: list[MarkdownTransformer] = field(default_factory=list)
    providers: dict[str, ProviderConfig] = field(default_factory=dict)
    expected_tools: list[str] = field(default_factory=list)
    """Glob patterns of tools registered later (``api.expect_tools``): ``--tools`` / ``-xt`` may name them."""
    config_listers: list[ConfigLister] = field(default_factory=list)
    provider_sink: ProviderSink | None = None
    """Set once the model registry exists; from then on ``register_provider`` applies at once."""
    api: HostBinding | None = None
    source_info: SourceInfo = UNDECIDED
    """Pi's ``sourceInfo`` of the extension, given to its tools and commands (the loader decides it; else it
    follows from ``path``)."""

    def __post_init__(self) -> None:
        if self.source_info is UNDECIDED:
            self.source_info = extension_source(self.path)
