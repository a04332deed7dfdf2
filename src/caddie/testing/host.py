"""The fake host: the session tree (``FakeSession``), the UI (``FakeUI``), the handler context (``FakeContext``)
and the host itself (``FakeHost``), all in memory, recording what the extension does."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from caddie.extensions.api import (
    AbortSignal,
    AgentMessage,
    AssistantMessage,
    AuthStatus,
    CommandSpec,
    CompactionEntry,
    ConfigScope,
    ContextUsage,
    CustomEntry,
    CustomMessage,
    CustomMessageEntry,
    LabelEntry,
    MessageEntry,
    Mode,
    Model,
    ModelLookup,
    ProviderSummary,
    ResolvedAuth,
    RestoreReport,
    Sandbox,
    SessionEntry,
    SessionHeader,
    SlashCommandInfo,
    SystemPromptOptions,
    ToolDefinition,
    TreeNode,
    UnavailableUI,
    UserContent,
    UserMessage,
    entry_to_context_messages,
)
from caddie.session.context import context_entries_of_path


class Failures(dict[str, BaseException]):
    """Method name → the exception that method raises (empty: nothing fails)."""

    def check(self, name: str) -> None:
        error = self.get(name)
        if error is not None:
            raise error


class FakeSession:
    """The session tree as ``ctx.session`` shows it (``ReadonlySession``), plus the writes the host makes."""

    def __init__(self, failures: Failures, session_id: str = "session-1", cwd: str = "/project") -> None:
        self._fail = failures
        self._session_id = session_id
        self._cwd = cwd
        self.all: list[SessionEntry] = []
        """Every entry, in file order."""
        self.by_id: dict[str, SessionEntry] = {}
        self.leaf: str | None = None
        self.labels: dict[str, str] = {}
        self.name: str | None = None
        self._ids = (f"{n:08x}" for n in itertools.count(0xE0000001))
        self._clock = itertools.count(1)

    # -- ReadonlySession ----------------------------------------------------------------------------
    @property
    def session_id(self) -> str:
        self._fail.check("session_id")
        return self._session_id

    @property
    def session_file(self) -> str | None:
        return None

    @property
    def cwd(self) -> str:
        return self._cwd

    @property
    def leaf_id(self) -> str | None:
        self._fail.check("leaf_id")
        return self.leaf

    @property
    def header(self) -> SessionHeader:
        return SessionHeader(self._session_id, "2026-01-01T00:00:00.000Z", self._cwd, 3)

    def entries(self) -> list[SessionEntry]:
        self._fail.check("entries")
        return list(self.all)

    def branch(self, from_id: str | None = None) -> list[SessionEntry]:
        self._fail.check("branch")
        path: list[SessionEntry] = []
        current = self.by_id.get(from_id or self.leaf or "")
        while current is not None:
            path.append(current)
            current = self.by_id.get(current.parent_id) if current.parent_id else None
        path.reverse()
        return path

    def get_entry(self, entry_id: str) -> SessionEntry | None:
        return self.by_id.get(entry_id)

    def leaf_entry(self) -> SessionEntry | None:
        return self.by_id.get(self.leaf) if self.leaf else None

    def get_label(self, entry_id: str) -> str | None:
        self._fail.check("get_label")
        return self.labels.get(entry_id)

    def context_entries(self) -> list[SessionEntry]:
        self._fail.check("context_entries")
        return context_entries_of_path(self.branch())

    def session_name(self) -> str | None:
        return self.name

    @property
    def session_dir(self) -> str | None:
        return None

    def tree(self) -> list[TreeNode]:
        nodes = {e.id: TreeNode(e, label=self.labels.get(e.id)) for e in self.all}
        roots: list[TreeNode] = []
        for entry in self.all:
            parent = nodes.get(entry.parent_id) if entry.parent_id else None
            (parent.children if parent is not None else roots).append(nodes[entry.id])
        return roots

    # -- writing (what the host does) ---------------------------------------------------------------
    def timestamp(self) -> str:
        n = next(self._clock)
        return f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z"

    def add(self, make: Callable[[str, str | None, str], SessionEntry]) -> SessionEntry:
        """Append an entry made from (id, parent id, timestamp) at the leaf; it becomes the leaf."""
        entry = make(next(self._ids), self.leaf, self.timestamp())
        self.all.append(entry)
        self.by_id[entry.id] = entry
        self.leaf = entry.id
        if isinstance(entry, LabelEntry):
            if entry.label:
                self.labels[entry.target_id] = entry.label
            else:
                self.labels.pop(entry.target_id, None)
        return entry

    def message(self, message: AgentMessage) -> str:
        return self.add(lambda i, p, t: MessageEntry(i, p, t, message)).id

    def custom_entry(self, custom_type: str, data: Any) -> str:
        return self.add(lambda i, p, t: CustomEntry(i, p, t, custom_type, data)).id

    def custom_message(self, msg: CustomMessage) -> str:
        return self.add(
            lambda i, p, t: CustomMessageEntry(
                i, p, t, msg.custom_type, msg.content, msg.display, msg.details
            )
        ).id

    def label(self, target_id: str, label: str | None) -> str:
        return self.add(lambda i, p, t: LabelEntry(i, p, t, target_id, label)).id

    def compaction(self, first_kept_entry_id: str, summary: str = "summary") -> str:
        return self.add(lambda i, p, t: CompactionEntry(i, p, t, summary, first_kept_entry_id, 1000)).id

    def move_leaf(self, entry_id: str | None) -> None:
        """Continue from another entry (what ``/tree`` does): the next entry starts a new branch there."""
        self.leaf = entry_id

    def context_messages(self) -> list[AgentMessage]:
        """The messages a request would be built from (compaction-aware), before any ``context`` handler."""
        return [m for e in context_entries_of_path(self.branch()) for m in entry_to_context_messages(e)]


@dataclass
class FakeUI(UnavailableUI):
    """Records everything the extension shows; dialogs answer from the queues (None / False when empty);
    what needs a terminal (components, themes) answers as a mode without one (``UnavailableUI``)."""

    notifications: list[tuple[str, str]] = field(default_factory=list)
    statuses: dict[str, str] = field(default_factory=dict)
    status_history: list[tuple[str, str | None]] = field(default_factory=list)
    widgets: dict[str, list[str]] = field(default_factory=dict)
    widget_calls: list[tuple[str, list[str] | None, str]] = field(default_factory=list)
    title: str = ""
    editor_text: str = ""
    working_message: str | None = None
    confirm_answers: list[bool] = field(default_factory=list)
    select_answers: list[str | None] = field(default_factory=list)
    input_answers: list[str | None] = field(default_factory=list)
    editor_answers: list[str | None] = field(default_factory=list)
    fail_widget: BaseException | None = None
    """Raised by ``set_widget`` (a UI that fails)."""

    def notify(self, message: str, level: str = "info") -> None:
        self.notifications.append((message, level))

    def notice_texts(self) -> list[str]:
        return [m for m, _ in self.notifications]

    def set_status(self, key: str, text: str | None) -> None:
        self.status_history.append((key, text))
        if text is None:
            self.statuses.pop(key, None)
        else:
            self.statuses[key] = text

    def set_widget(self, key: str, lines: Sequence[str] | Any, placement: str = "aboveEditor") -> None:
        if self.fail_widget is not None:
            raise self.fail_widget
        if callable(lines):  # a component factory: drawn only where there is a terminal
            return
        self.widget_calls.append((key, None if lines is None else list(lines), placement))
        if lines is None:
            self.widgets.pop(key, None)
        else:
            self.widgets[key] = list(lines)

    def set_title(self, title: str) -> None:
        self.title = title

    def set_editor_text(self, text: str) -> None:
        self.editor_text = text

    def get_editor_text(self) -> str:
        return self.editor_text

    def set_working_message(self, message: str | None) -> None:
        self.working_message = message

    async def confirm(
        self, title: str, message: str, timeout: float | None = None, *, signal: Any = None
    ) -> bool:
        return self.confirm_answers.pop(0) if self.confirm_answers else False

    async def select(
        self, title: str, options: Sequence[str], timeout: float | None = None, *, signal: Any = None
    ) -> str | None:
        return self.select_answers.pop(0) if self.select_answers else None

    async def input(
        self, title: str, placeholder: str | None = None, timeout: float | None = None, *, signal: Any = None
    ) -> str | None:
        return self.input_answers.pop(0) if self.input_answers else None

    async def editor(self, title: str, prefill: str | None = None, *, signal: Any = None) -> str | None:
        return self.editor_answers.pop(0) if self.editor_answers else None


class FakeContext:
    """``ExtensionContext`` / ``CommandContext`` over the fake host (what handlers and tools receive)."""

    def __init__(self, host: FakeHost) -> None:
        self._host = host

    @property
    def cwd(self) -> str:
        return self._host.session.cwd

    @property
    def session(self) -> FakeSession:
        return self._host.session

    @property
    def mode(self) -> Mode:
        return self._host.mode

    @property
    def has_ui(self) -> bool:
        return self._host.has_ui

    @property
    def ui(self) -> FakeUI:
        return self._host.ui

    @property
    def model(self) -> Model | None:
        return self._host.model

    @property
    def signal(self) -> AbortSignal | None:
        return None

    @property
    def thinking_level(self) -> str:
        return self._host.thinking_level

    @property
    def model_registry(self) -> ModelLookup:
        return _FakeModels(self._host)

    @property
    def scoped_models(self) -> list[Model]:
        return []

    def is_project_trusted(self) -> bool:
        return self._host.trusted

    @property
    def sandbox(self) -> Sandbox:
        return self._host.sandbox

    def is_idle(self) -> bool:
        return not self._host.streaming

    def abort(self) -> None:
        self._host.calls.append("abort")

    def has_pending_messages(self) -> bool:
        return bool(self._host.queued)

    def get_context_usage(self) -> ContextUsage | None:
        self._host.calls.append("get_context_usage")
        self._host.fail.check("get_context_usage")
        return self._host.usage

    def compact(
        self, custom_instructions: str | None = None, on_complete: Any = None, on_error: Any = None
    ) -> None:
        self._host.calls.append("compact")

    def get_system_prompt(self) -> str:
        return self._host.system_prompt

    def settings(self) -> dict[str, Any]:
        self._host.fail.check("settings")
        return copy.deepcopy(self._host.settings)

    def shutdown(self) -> None:
        self._host.calls.append("shutdown")

    async def restore_files(self, entry_id: str) -> RestoreReport | None:
        """No workspace behind the fake: nothing to restore."""
        return None

    def config_scope(self) -> ConfigScope:
        return ConfigScope(self._host.session.cwd, self._host.trusted, copy.deepcopy(self._host.settings), {})

    async def complete(
        self,
        messages: Sequence[UserMessage | AssistantMessage],
        system_prompt: str = "",
        max_tokens: int | None = None,
        signal: AbortSignal | None = None,
    ) -> AssistantMessage:
        """The fake host has no model: set ``host.completions`` to the replies ``ctx.complete`` returns."""
        self._host.calls.append("complete")
        if not self._host.completions:
            raise RuntimeError("the fake host has no model: append replies to host.completions")
        return self._host.completions.pop(0)

    def stop_after_turn(self) -> None:
        self._host.calls.append("stop_after_turn")

    async def wait_for_idle(self) -> None:
        pass

    def get_system_prompt_options(self) -> SystemPromptOptions:
        tools = list(self._host.active_tools)
        return SystemPromptOptions(self._host.session.cwd, None, None, tools, {}, [], [], [])

    async def new_session(
        self, parent_session: str | None = None, setup: Any = None, with_session: Any = None
    ) -> bool:
        return False

    async def fork(self, entry_id: str, position: Any = "before", with_session: Any = None) -> bool:
        return False

    async def navigate_tree(
        self,
        target_id: str,
        summarize: bool = False,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> bool:
        self._host.session.move_leaf(target_id)
        return True

    async def switch_session(self, path: str, with_session: Any = None) -> bool:
        return False

    async def reload(self) -> None:
        pass


@dataclass
class _FakeModels:
    """``ctx.model_registry`` over the fake host: only its ``model`` is known."""

    host: FakeHost

    def find(self, provider: str, model_id: str) -> Model | None:
        model = self.host.model
        return model if model is not None and (model.provider, model.id) == (provider, model_id) else None

    def get_available(self) -> list[Model]:
        return [self.host.model] if self.host.model is not None else []

    def get_all(self) -> list[Model]:
        return self.get_available()

    def get_error(self) -> str | None:
        return None

    def refresh(self) -> None:
        pass

    def has_configured_auth(self, model: Model) -> bool:
        return model.provider in self.host.api_keys

    def is_using_oauth(self, model: Model) -> bool:
        return False

    def get_provider_auth_status(self, provider: str) -> AuthStatus:
        return AuthStatus(True, "stored") if provider in self.host.api_keys else AuthStatus(False)

    def get_provider(self, provider: str) -> ProviderSummary | None:
        models = [m for m in self.get_available() if m.provider == provider]
        return (
            ProviderSummary(provider, provider, models[0].base_url, models[0].api, models) if models else None
        )

    def get_provider_display_name(self, provider: str) -> str:
        return provider

    async def get_api_key_and_headers(self, model: Model) -> ResolvedAuth:
        key = self.host.api_keys.get(model.provider)
        if key is None:
            return ResolvedAuth(False, error=f'No API key found for "{model.provider}"')
        return ResolvedAuth(True, api_key=key, headers=dict(model.headers or {}) or None)

    async def get_provider_auth(self, provider: str) -> ResolvedAuth | None:
        key = self.host.api_keys.get(provider)
        return ResolvedAuth(True, api_key=key) if key is not None else None

    async def get_api_key_for_provider(self, provider: str) -> str | None:
        return self.host.api_keys.get(provider)

    def get_registered_provider_ids(self) -> list[str]:
        return []


class FakeHost:
    """``ExtensionHost``: the writes and settings an extension asks of the running session, recorded.

    Set ``settings`` (the merged settings ``ctx.settings()`` returns), ``usage`` (``ctx.get_context_usage()``),
    ``model``, ``system_prompt``, ``flags`` (command-line values), ``has_ui`` / ``mode`` before firing events;
    ``api_keys`` (provider → key) is what ``ctx.model_registry`` says is configured.
    """

    def __init__(self, session_id: str = "session-1", cwd: str = "/project") -> None:
        self.fail = Failures()
        self.session = FakeSession(self.fail, session_id, cwd)
        self.ui = FakeUI()
        self.has_ui = True
        self.mode: Mode = "tui"
        self.usage: ContextUsage | None = None
        self.model: Model | None = None
        self.system_prompt = ""
        self.settings: dict[str, Any] = {}
        self.sandbox = Sandbox.off()
        """Where commands run, as ``ctx.sandbox`` reports it (off; a test may put a real one here)."""
        self.trusted = False
        """Whether the project is trusted, as ``ctx.config_scope()`` reports it."""
        self.completions: list[AssistantMessage] = []
        """The replies ``ctx.complete(...)`` returns, in order."""
        self.calls: list[str] = []
        """The host methods called, in order (``writes`` filters the ones that change the session)."""
        self.queued: list[CustomMessage] = []
        self.streaming = False
        """While True, ``send_message`` queues (steering) until ``flush()``, as during a tool call."""
        self.flags: dict[str, str | bool] = {}
        self.published: list[tuple[str, Any]] = []
        self.user_messages: list[tuple[str | list[UserContent], Any]] = []
        self.exit_code: int | None = None
        self.tools: dict[str, ToolDefinition] = {}
        """Every tool known (the harness puts the extension's here)."""
        self.active_tools: list[str] = []
        self.commands: list[CommandSpec] = []
        self.prompt_commands: list[SlashCommandInfo] = []
        self.api_keys: dict[str, str] = {}
        """What ``get_commands`` lists after ``commands``: prompt templates and skills a test sets up."""
        self.thinking_level = "off"

    def append_entry(self, custom_type: str, data: Any) -> str:
        self.calls.append("append_entry")
        self.fail.check("append_entry")
        return self.session.custom_entry(custom_type, copy.deepcopy(data))

    def send_message(self, message: CustomMessage, deliver_as: Any, trigger_turn: bool) -> None:
        self.calls.append("send_message")
        self.fail.check("send_message")
        if self.streaming:
            self.queued.append(message)
        else:
            self.session.custom_message(message)

    def flush(self) -> None:
        """Deliver the messages queued while ``streaming`` (what the host does when the turn's tools finish)."""
        for message in self.queued:
            self.session.custom_message(message)
        self.queued.clear()

    def send_user_message(
        self, content: str | list[UserContent], deliver_as: Any, expand: bool = False
    ) -> None:
        self.calls.append("send_user_message")
        self.user_messages.append((content, deliver_as))

    def set_label(self, entry_id: str, label: str | None) -> None:
        self.calls.append("set_label")
        self.fail.check("set_label")
        self.session.label(entry_id, label)

    def set_session_name(self, name: str) -> None:
        self.session.name = name

    def get_session_name(self) -> str | None:
        return self.session.name

    def get_active_tools(self) -> list[str]:
        return list(self.active_tools)

    def get_all_tools(self) -> list[ToolDefinition]:
        return list(self.tools.values())

    def set_active_tools(self, names: Sequence[str]) -> None:
        self.calls.append("set_active_tools")
        self.active_tools = [n for n in dict.fromkeys(names) if n in self.tools]

    def get_commands(self) -> list[SlashCommandInfo]:
        """The commands the fake's ``commands`` holds, then its ``prompt_commands`` (templates and skills)."""
        listed = [
            SlashCommandInfo(c.name, c.description, "extension", c.source, source_info=c.source_info)
            for c in self.commands
        ]
        return [*listed, *self.prompt_commands]

    def refresh_tools(self) -> None:
        pass

    async def set_model(self, model: Model) -> bool:
        self.model = model
        return True

    def get_thinking_level(self) -> str:
        return self.thinking_level

    def set_thinking_level(self, level: str) -> None:
        self.thinking_level = level

    def publish(self, name: str, data: Any) -> None:
        self.calls.append("publish")
        self.published.append((name, copy.deepcopy(data)))

    def get_flag(self, name: str) -> str | bool | None:
        return self.flags.get(name)

    def set_exit_code(self, code: int) -> None:
        self.calls.append("set_exit_code")
        self.exit_code = code

    @property
    def writes(self) -> list[str]:
        return [c for c in self.calls if c in ("append_entry", "send_message", "set_label")]
