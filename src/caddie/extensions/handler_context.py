"""What extension handlers see and may do while the session runs: ``ExtensionContext`` (every handler and
tool ``execute``), ``CommandContext`` (command handlers), the UI and a read-only view of the session.
The host implements these protocols; extensions import them from ``caddie.extensions.api``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias

from caddie.ai.abort import AbortSignal
from caddie.ai.messages import AssistantMessage, UserContent, UserMessage
from caddie.ai.model import Model
from caddie.checkpoints.restore import RestoreReport
from caddie.extensions.event_types import SystemPromptOptions
from caddie.extensions.ui_components import (
    AutocompleteFactory,
    ComponentFactory,
    OverlayHandle,
    OverlayOptionsSource,
    TerminalInputHandler,
    ThemeInfo,
    ThemeResult,
    ThemeView,
)
from caddie.sandbox import Sandbox
from caddie.session.entries import CompactionEntry, SessionEntry, SessionHeader
from caddie.session.tree import TreeNode

Mode: TypeAlias = Literal["tui", "rpc", "json", "print"]
NotifyLevel: TypeAlias = Literal["info", "warning", "error"]
WidgetPlacement: TypeAlias = Literal["aboveEditor", "belowEditor"]


@dataclass(slots=True)
class ContextUsage:
    tokens: int | None
    """Estimated tokens the next request will carry; None right after a compaction, until a response."""
    context_window: int
    percent: float | None
    estimated: bool = False
    """``tokens`` rests on caddie's estimate of a reply the model's server reported no usage for (show it
    with "≈"); False when it rests on reported usage. caddie's addition to Pi's shape."""


@dataclass(slots=True)
class ConfigScope:
    """What a config lister (``api.register_config_items``) reads: the settings files as written, and whether
    the project is trusted. ``project`` is the whole project file, even keys an untrusted project may not use:
    the lister decides what an untrusted project's entries mean (listed, not started)."""

    cwd: str
    project_trusted: bool
    user: dict[str, Any]
    """``~/.caddie/agent/settings.json`` (relative paths resolved)."""
    project: dict[str, Any]
    """``<cwd>/.caddie/settings.json``."""
    agent_dir: str = ""
    """``~/.caddie/agent`` (``CADDIE_DIR``): where an extension keeps its own files (logs, credentials)."""


class ExtensionUI(Protocol):
    """The user interface as an extension sees it (Pi's ``ctx.ui``). Modes without a terminal answer the
    TUI-only calls as "unavailable" (``ui.supports(feature)`` says which work; see ui_components.py)."""

    def supports(self, feature: str) -> bool:
        """Whether this mode honours ``feature`` (``custom``, ``overlay``, ``footer``, ``themes`` …)."""
        ...

    def notify(self, message: str, level: NotifyLevel = "info") -> None: ...

    def set_status(self, key: str, text: str | None) -> None: ...

    def set_widget(
        self,
        key: str,
        lines: Sequence[str] | ComponentFactory | None,
        placement: WidgetPlacement = "aboveEditor",
    ) -> None:
        """Lines above or below the editor, or a component factory ``(tui, theme) -> component``."""
        ...

    def set_title(self, title: str) -> None: ...

    def set_editor_text(self, text: str) -> None: ...

    def get_editor_text(self) -> str: ...

    def paste_to_editor(self, text: str) -> None:
        """Insert text as a paste (a large one collapses to a ``[paste #1 …]`` marker)."""
        ...

    def set_working_message(self, message: str | None) -> None: ...

    def set_working_visible(self, visible: bool) -> None: ...

    def set_working_indicator(
        self, frames: Sequence[str] | None = None, interval_ms: int | None = None
    ) -> None:
        """The working line's spinner frames (``[]`` hides it, None restores the default)."""
        ...

    def set_hidden_thinking_label(self, label: str | None) -> None:
        """What a collapsed thinking block says instead of "Thinking" (None restores it)."""
        ...

    def set_footer(self, factory: ComponentFactory | None) -> None:
        """Replace the footer with a component (None restores caddie's)."""
        ...

    def set_header(self, factory: ComponentFactory | None) -> None:
        """Replace the transcript's first block with a component (None restores caddie's)."""
        ...

    async def custom(
        self,
        factory: ComponentFactory,
        *,
        overlay: bool = False,
        overlay_options: OverlayOptionsSource | None = None,
        on_handle: Callable[[OverlayHandle], None] | None = None,
    ) -> Any:
        """Show a component in place of the editor (or floating, ``overlay``) until it calls ``done(value)``;
        returns that value (None where there is no terminal)."""
        ...

    def on_terminal_input(self, handler: TerminalInputHandler) -> Callable[[], None]:
        """See every key first (return True to consume it); returns the function that stops it."""
        ...

    def add_autocomplete_provider(self, factory: AutocompleteFactory) -> None: ...

    def set_editor_component(self, factory: ComponentFactory | None) -> None:
        """Put an editor of the extension's (a ``CustomEditor``) in place of caddie's; None restores it."""
        ...

    def get_editor_component(self) -> ComponentFactory | None: ...

    @property
    def theme(self) -> ThemeView: ...

    def get_all_themes(self) -> list[ThemeInfo]: ...

    def get_theme(self, name: str) -> ThemeView | None: ...

    def set_theme(self, theme: str | ThemeView) -> ThemeResult: ...

    def get_tools_expanded(self) -> bool: ...

    def set_tools_expanded(self, expanded: bool) -> None: ...

    async def confirm(
        self, title: str, message: str, timeout: float | None = None, *, signal: AbortSignal | None = None
    ) -> bool: ...

    async def select(
        self,
        title: str,
        options: Sequence[str],
        timeout: float | None = None,
        *,
        signal: AbortSignal | None = None,
    ) -> str | None: ...

    async def input(
        self,
        title: str,
        placeholder: str | None = None,
        timeout: float | None = None,
        *,
        signal: AbortSignal | None = None,
    ) -> str | None: ...

    async def editor(
        self, title: str, prefill: str | None = None, *, signal: AbortSignal | None = None
    ) -> str | None: ...


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

    @property
    def session_dir(self) -> str | None:
        """The folder of the session file (Pi's ``getSessionDir``); None for a session kept in memory."""
        ...

    def tree(self) -> list[TreeNode]:
        """Every entry as a tree (Pi's ``getTree``): root nodes with their children, oldest first."""
        ...


@dataclass(frozen=True, slots=True)
class ResolvedAuth:
    """How a request to a model or provider authenticates right now (Pi's ``ResolvedRequestAuth`` and
    ``AuthResult``): ``ok`` False with ``error`` when it cannot (no key, a login that failed to renew)."""

    ok: bool
    api_key: str | None = None
    headers: dict[str, str] | None = None
    base_url: str | None = None
    """Only when the credential decides it (Copilot's proxy); else the model's own."""
    env: dict[str, str] | None = None
    """Variables stored with the key in auth.json (Pi's provider-scoped environment)."""
    error: str | None = None


@dataclass(frozen=True, slots=True)
class AuthStatus:
    """Pi's ``AuthStatus``: whether a provider has auth, without running key commands."""

    configured: bool
    source: str | None = None
    """``stored`` (auth.json: a key or a login), ``runtime`` (``--api-key``), ``environment``,
    ``models_json_key``, ``models_json_command``."""
    label: str | None = None
    """The environment variable's name, or ``OAuth``."""


@dataclass(frozen=True, slots=True)
class ProviderSummary:
    """What ``model_registry.get_provider`` tells about a provider (Pi returns its pi-ai ``Provider``)."""

    id: str
    name: str
    """How people call it (``Anthropic``); the id for providers of models.json and extensions."""
    base_url: str | None
    api: str | None
    models: list[Model]


class ModelLookup(Protocol):
    """``ctx.model_registry`` (Pi's ``ctx.modelRegistry``): the models caddie knows and how they
    authenticate. Pi's ``registerProvider`` / ``unregisterProvider`` are ``api.register_provider`` /
    ``api.unregister_provider``; its ``complete`` is ``ctx.complete``."""

    def find(self, provider: str, model_id: str) -> Model | None:
        """A model by provider and id (with or without a key for it)."""
        ...

    def get_available(self) -> list[Model]:
        """Every model with a key or login, as ``/model`` lists them."""
        ...

    def get_all(self) -> list[Model]:
        """Every model caddie knows, with a key or not."""
        ...

    def get_error(self) -> str | None:
        """What was wrong with models.json or auth.json when they were last read (None: nothing)."""
        ...

    def refresh(self) -> None:
        """Read models.json and auth.json again."""
        ...

    def has_configured_auth(self, model: Model) -> bool:
        """Whether ``model``'s provider has a key or login (or needs none), without running key commands."""
        ...

    def is_using_oauth(self, model: Model) -> bool:
        """Whether requests to ``model`` use a subscription login."""
        ...

    def get_provider_auth_status(self, provider: str) -> AuthStatus: ...

    def get_provider(self, provider: str) -> ProviderSummary | None:
        """None for a provider caddie does not know."""
        ...

    def get_provider_display_name(self, provider: str) -> str: ...

    async def get_api_key_and_headers(self, model: Model) -> ResolvedAuth:
        """The key and headers a request to ``model`` would carry now (a login is renewed first if due)."""
        ...

    async def get_provider_auth(self, provider: str) -> ResolvedAuth | None:
        """``get_api_key_and_headers`` for the provider rather than a model; None without auth."""
        ...

    async def get_api_key_for_provider(self, provider: str) -> str | None: ...

    def get_registered_provider_ids(self) -> list[str]:
        """The providers this session's extensions registered."""
        ...


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

    @property
    def thinking_level(self) -> str: ...

    @property
    def model_registry(self) -> ModelLookup: ...

    @property
    def scoped_models(self) -> list[Model]:
        """The models ``--models`` / settings ``enabledModels`` limit cycling to (empty: no limit)."""
        ...

    def is_project_trusted(self) -> bool:
        """Whether the project's own extensions and code-running settings are in use."""
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

    def config_scope(self) -> ConfigScope:
        """The settings files as written and whether the project is trusted (``settings()`` is the merged
        result, where an untrusted project's sensitive keys are already left out)."""
        ...

    async def complete(
        self,
        messages: Sequence[UserMessage | AssistantMessage],
        system_prompt: str = "",
        max_tokens: int | None = None,
        signal: AbortSignal | None = None,
    ) -> AssistantMessage:
        """One model request with the session's model and key, outside the conversation (nothing is stored,
        no tools, no thinking). Its cost reaches every extension as ``summary_usage`` (kind ``extension``),
        so a goal's budget counts it. A failed request comes back as a message with ``stop_reason`` ``error``
        (``error_message`` says why); without a model, ``RuntimeError``."""
        ...

    def shutdown(self) -> None: ...

    async def restore_files(self, entry_id: str) -> RestoreReport | None:
        """Put the workspace's files back as they were when the span of the current branch starting at
        ``entry_id`` began: the file checkpoint taken there (before the prompt that opens the span, or the
        first one after it when only idle time lies between; docs/checkpoints.md). A checkpoint of the
        current files is taken first; files edited by hand since are left and listed in ``conflicts``.
        Works during a run (from a tool), unlike a user's restore. None when no checkpoint marks that point
        or the session takes none (no session file, checkpoints off)."""
        ...

    @property
    def sandbox(self) -> Sandbox:
        """Where the session runs commands for the model (``caddie.sandbox``): start your own through
        ``sandbox.prepare(argv, cwd, env)`` so they are confined like the ``bash`` tool's (``api.exec`` does)."""
        ...

    def stop_after_turn(self) -> None:
        """End the current run once this turn's tools finish: no further model request is made — no next
        turn, no compaction summary still to write, no retry. Messages extensions queued for the run
        (``send_message`` follow-ups and steering) are dropped with it; the user's own queued messages stay.
        Outside a run it does nothing."""
        ...


class CommandContext(ExtensionContext, Protocol):
    """What command handlers get: the extension context plus session-changing operations."""

    def get_system_prompt_options(self) -> SystemPromptOptions:
        """What the system prompt is built from (tools, snippets, guidelines, context files, skills)."""
        ...

    async def wait_for_idle(self) -> None: ...

    async def new_session(
        self,
        parent_session: str | None = None,
        setup: Callable[[Any], Any] | None = None,
        with_session: Callable[[ReplacedSessionContext], Any] | None = None,
    ) -> bool:
        """Start a new session; returns False if an extension cancelled it. ``setup(store)`` fills the new
        session's store in before it loads; ``with_session(ctx)`` runs afterwards with the new session's
        context (use it, not this one's ``api``, to send messages into the new session)."""
        ...

    async def fork(
        self,
        entry_id: str,
        position: Literal["before", "at"] = "before",
        with_session: Callable[[ReplacedSessionContext], Any] | None = None,
    ) -> bool:
        """``before``: a new session from before this user message (``/fork``); ``at``: a copy up to and
        including the entry (``/clone``). False if an extension cancelled it."""
        ...

    async def navigate_tree(
        self,
        target_id: str,
        summarize: bool = False,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> bool:
        """Move within the session tree (``/tree``); with ``summarize`` the branch left behind is summarised
        (``custom_instructions`` added to the prompt, or replacing it with ``replace_instructions``);
        ``label`` goes on the summary (or the target). False if an extension cancelled it."""
        ...

    async def switch_session(
        self, path: str, with_session: Callable[[ReplacedSessionContext], Any] | None = None
    ) -> bool: ...

    async def reload(self) -> None: ...


class ReplacedSessionContext(CommandContext, Protocol):
    """What ``with_session`` gets after ``new_session`` / ``fork`` / ``switch_session``: the new session's
    command context, plus ``send_message`` and ``send_user_message`` (as ``ExtensionAPI``'s)."""

    def send_message(
        self,
        custom_type: str,
        content: str | list[UserContent],
        display: bool = True,
        details: Any = None,
        deliver_as: Literal["steer", "follow_up", "next_turn"] | None = None,
        trigger_turn: bool = False,
    ) -> None: ...

    def send_user_message(
        self,
        content: str | list[UserContent],
        deliver_as: Literal["steer", "follow_up", "next_turn"] | None = None,
        expand: bool = False,
    ) -> None: ...
