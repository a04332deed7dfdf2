"""A small in-memory host for driving the mulligan extension deterministically.

It implements the host side of the extension API: an append-only entry list with 8-hex ids and parent ids, a
leaf, labels (latest wins), the root→leaf branch walk and compaction-aware context entries, plus a UI that
records notifications and widgets. ``Harness`` registers the extension on an ``ExtensionAPI`` bound to it and
offers one-line helpers to build a conversation, fire events, call tools and run commands.

Any host or session method can be made to raise by putting its name in ``host.fail`` (e.g.
``host.fail["entries"] = RuntimeError("boom")``), the way the TypeScript tests inject throwing stubs.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from caddie.extensions.api import (
    AbortSignal,
    AgentMessage,
    AssistantMessage,
    CompactionEntry,
    ConfigScope,
    ContextEvent,
    ContextResult,
    ContextUsage,
    CustomEntry,
    CustomMessage,
    CustomMessageEntry,
    EventBus,
    ExtensionAPI,
    ImageContent,
    LabelEntry,
    MessageEntry,
    Mode,
    Sandbox,
    SessionEntry,
    SessionHeader,
    SessionShutdownEvent,
    SessionStartEvent,
    TextContent,
    ToolCall,
    ToolResult,
    ToolResultEvent,
    ToolResultMessage,
    ToolResultPatch,
    TurnEndEvent,
    UserMessage,
    entry_to_context_messages,
)
from caddie.extensions.bundled.mulligan import Mulligan, register
from caddie.extensions.runner import Extension
from caddie.session.context import context_entries_of_path

# --------------------------------------------------------------------------------------------------
# Message builders


def user(text: str) -> UserMessage:
    return UserMessage(text, timestamp=1)


def assistant_text(text: str) -> AssistantMessage:
    return AssistantMessage([TextContent(text)], api="faux", provider="faux", model="faux", timestamp=1)


def call(call_id: str, name: str = "tool", **arguments: Any) -> ToolCall:
    return ToolCall(call_id, name, dict(arguments))


def assistant(*calls: ToolCall | str) -> AssistantMessage:
    """An assistant message issuing the given calls (a bare string is a call id of tool ``tool``)."""
    blocks: list[Any] = [call(c) if isinstance(c, str) else c for c in calls]
    return AssistantMessage(blocks, api="faux", provider="faux", model="faux", timestamp=1)


def result(call_id: str, text: str = "...", tool_name: str = "tool") -> ToolResultMessage:
    return ToolResultMessage(call_id, tool_name, [TextContent(text)], timestamp=1)


def custom(custom_type: str, content: str = "x") -> CustomMessage:
    return CustomMessage(custom_type, content, True, None, 1)


def text_of(message: AgentMessage) -> str:
    """The first text of a message (string content or first text block)."""
    content = getattr(message, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for block in content:
            if isinstance(block, TextContent):
                return block.text
    return ""


# --------------------------------------------------------------------------------------------------
# Host side


class Failures(dict[str, BaseException]):
    def check(self, name: str) -> None:
        error = self.get(name)
        if error is not None:
            raise error


class FakeSession:
    """The session tree (``ReadonlySession``)."""

    def __init__(self, failures: Failures, session_id: str = "session-1") -> None:
        self._fail = failures
        self._session_id = session_id
        self.all: list[SessionEntry] = []
        self.by_id: dict[str, SessionEntry] = {}
        self.leaf: str | None = None
        self.labels: dict[str, str] = {}
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
        return "/project"

    @property
    def leaf_id(self) -> str | None:
        self._fail.check("leaf_id")
        return self.leaf

    @property
    def header(self) -> SessionHeader:
        return SessionHeader(self._session_id, "2026-01-01T00:00:00.000Z", "/project", 3)

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
        return None

    # -- writing (what the host does) ---------------------------------------------------------------
    def timestamp(self) -> str:
        n = next(self._clock)
        return f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z"

    def add(self, make: Callable[[str, str | None, str], SessionEntry]) -> SessionEntry:
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

    def context_messages(self) -> list[AgentMessage]:
        return [m for e in context_entries_of_path(self.branch()) for m in entry_to_context_messages(e)]


@dataclass
class FakeUI:
    notifications: list[tuple[str, str]] = field(default_factory=list)
    widgets: dict[str, list[str]] = field(default_factory=dict)
    widget_calls: list[tuple[str, list[str] | None, str]] = field(default_factory=list)
    fail_widget: BaseException | None = None

    def notify(self, message: str, level: str = "info") -> None:
        self.notifications.append((message, level))

    def set_status(self, key: str, text: str | None) -> None:
        pass

    def set_widget(self, key: str, lines: Sequence[str] | None, placement: str = "aboveEditor") -> None:
        if self.fail_widget is not None:
            raise self.fail_widget
        self.widget_calls.append((key, None if lines is None else list(lines), placement))
        if lines is None:
            self.widgets.pop(key, None)
        else:
            self.widgets[key] = list(lines)

    def set_title(self, title: str) -> None:
        pass

    def set_editor_text(self, text: str) -> None:
        pass

    def get_editor_text(self) -> str:
        return ""

    def set_working_message(self, message: str | None) -> None:
        pass

    async def confirm(self, title: str, message: str, timeout: float | None = None) -> bool:
        return False

    async def select(self, title: str, options: Sequence[str], timeout: float | None = None) -> str | None:
        return None

    async def input(
        self, title: str, placeholder: str | None = None, timeout: float | None = None
    ) -> str | None:
        return None

    async def editor(self, title: str, prefill: str | None = None) -> str | None:
        return None


class FakeContext:
    """``ExtensionContext`` / ``CommandContext`` over the fake session."""

    def __init__(self, host: FakeHost) -> None:
        self._host = host

    @property
    def cwd(self) -> str:
        return "/project"

    @property
    def session(self) -> FakeSession:
        return self._host.session

    @property
    def mode(self) -> Mode:
        return "tui" if self._host.has_ui else "print"

    @property
    def has_ui(self) -> bool:
        return self._host.has_ui

    @property
    def ui(self) -> FakeUI:
        return self._host.ui

    @property
    def model(self) -> None:
        return None

    @property
    def signal(self) -> AbortSignal | None:
        return None

    @property
    def sandbox(self) -> Sandbox:
        return self._host.sandbox

    def is_idle(self) -> bool:
        return True

    def abort(self) -> None:
        pass

    def has_pending_messages(self) -> bool:
        return False

    def get_context_usage(self) -> ContextUsage | None:
        self._host.calls.append("get_context_usage")
        self._host.fail.check("get_context_usage")
        return self._host.usage

    def compact(
        self, custom_instructions: str | None = None, on_complete: Any = None, on_error: Any = None
    ) -> None:
        pass

    def get_system_prompt(self) -> str:
        return ""

    def settings(self) -> dict[str, Any]:
        self._host.fail.check("settings")
        return copy.deepcopy(self._host.settings)

    def shutdown(self) -> None:
        pass

    def config_scope(self) -> ConfigScope:
        return ConfigScope("/project", False, copy.deepcopy(self._host.settings), {})

    async def complete(
        self,
        messages: Sequence[UserMessage | AssistantMessage],
        system_prompt: str = "",
        max_tokens: int | None = None,
        signal: AbortSignal | None = None,
    ) -> AssistantMessage:
        raise RuntimeError("the fake host has no model")

    def stop_after_turn(self) -> None:
        pass

    async def wait_for_idle(self) -> None:
        pass

    async def new_session(self, parent_session: str | None = None) -> bool:
        return False

    async def fork(self, entry_id: str) -> bool:
        return False

    async def navigate_tree(self, target_id: str, summarize: bool = False) -> bool:
        return False

    async def switch_session(self, path: str) -> bool:
        return False

    async def reload(self) -> None:
        pass


class FakeHost:
    """``ExtensionHost``: the writes an extension asks of the running session."""

    def __init__(self, session_id: str = "session-1") -> None:
        self.fail = Failures()
        self.session = FakeSession(self.fail, session_id)
        self.ui = FakeUI()
        self.has_ui = True
        self.usage: ContextUsage | None = None
        self.settings: dict[str, Any] = {}
        self.calls: list[str] = []
        self.sandbox = Sandbox.off()
        self.queued: list[CustomMessage] = []
        self.streaming = False
        """While True, ``send_message`` queues (steering) until ``flush()``, as during a tool call."""
        self.flags: dict[str, str | bool] = {}
        """Command-line flag values, as ``caddie --name value`` would give them."""
        self.published: list[tuple[str, Any]] = []
        self.exit_code: int | None = None

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
        for message in self.queued:
            self.session.custom_message(message)
        self.queued.clear()

    def send_user_message(self, content: Any, deliver_as: Any) -> None:
        self.calls.append("send_user_message")

    def set_label(self, entry_id: str, label: str | None) -> None:
        self.calls.append("set_label")
        self.fail.check("set_label")
        self.session.label(entry_id, label)

    def set_session_name(self, name: str) -> None:
        pass

    def get_session_name(self) -> str | None:
        return None

    def get_active_tools(self) -> list[str]:
        return []

    def get_all_tools(self) -> list[Any]:
        return []

    def set_active_tools(self, names: Sequence[str]) -> None:
        pass

    def get_commands(self) -> list[Any]:
        return []

    def refresh_tools(self) -> None:
        pass

    async def set_model(self, model: Any) -> bool:
        return False

    def get_thinking_level(self) -> str:
        return "off"

    def set_thinking_level(self, level: str) -> None:
        pass

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


# --------------------------------------------------------------------------------------------------
# The harness


class Harness:
    """The extension registered on a bound API, with helpers to drive it like the TypeScript tests do."""

    def __init__(self, settings: dict[str, Any] | None = None, session_id: str = "session-1") -> None:
        self.host = FakeHost(session_id)
        self.extension = Extension("/bundled/mulligan", "mulligan")
        self.api = ExtensionAPI(self.extension, EventBus())
        self.mulligan: Mulligan = register(self.api)
        self.api.bind(self.host)
        self.ctx = FakeContext(self.host)
        if settings is not None:
            self.host.settings = {"mulligan": settings}
            self.session_start()

    # -- shortcuts ----------------------------------------------------------------------------------
    @property
    def session(self) -> FakeSession:
        return self.host.session

    @property
    def rt(self) -> Any:
        return self.mulligan.runtimes.get(self.session.session_id)

    def configure(self, settings: dict[str, Any]) -> None:
        """Apply a ``mulligan`` settings block the way the host does: through a session start."""
        self.host.settings = {"mulligan": settings}
        self.session_start()

    def add(self, *messages: AgentMessage) -> list[str]:
        return [self.session.message(m) for m in messages]

    def custom_entries(self, custom_type: str | None = None) -> list[CustomEntry]:
        return [
            e
            for e in self.session.all
            if isinstance(e, CustomEntry) and (custom_type is None or e.custom_type == custom_type)
        ]

    def markers_data(self, custom_type: str) -> list[dict[str, Any]]:
        return [e.data for e in self.custom_entries(custom_type)]

    def notes(self) -> list[CustomMessageEntry]:
        return [
            e
            for e in self.session.all
            if isinstance(e, CustomMessageEntry) and e.custom_type == "mulligan:note"
        ]

    # -- events -------------------------------------------------------------------------------------
    def handlers(self, event: str) -> list[Any]:
        return self.extension.handlers.get(event, [])

    def session_start(self, reason: str = "startup") -> None:
        for h in self.handlers("session_start"):
            h(SessionStartEvent(reason), self.ctx)  # type: ignore[arg-type]

    def session_shutdown(self) -> None:
        for h in self.handlers("session_shutdown"):
            h(SessionShutdownEvent("quit"), self.ctx)

    def fire(self, messages: list[AgentMessage] | None = None) -> ContextResult | None:
        """A ``context`` event over a deep copy of the current context (or of ``messages``)."""
        base = self.session.context_messages() if messages is None else messages
        event = ContextEvent(copy.deepcopy(base))
        out: ContextResult | None = None
        for h in self.handlers("context"):
            out = h(event, self.ctx)
        return out

    def view(self, messages: list[AgentMessage] | None = None) -> list[AgentMessage]:
        """What the model would see now (the filtered messages, or the unchanged ones on pass-through)."""
        base = self.session.context_messages() if messages is None else messages
        out = self.fire(base)
        return base if out is None or out.messages is None else out.messages

    def tool_result_event(
        self, tool_name: str, content: list[TextContent | ImageContent], call_id: str = "c"
    ) -> ToolResultPatch | None:
        event = ToolResultEvent(call_id, tool_name, {}, content, None, False)
        out = None
        for h in self.handlers("tool_result"):
            out = h(event, self.ctx)
        return out

    def turn_end(self, turn_index: int) -> None:
        event = TurnEndEvent(turn_index, assistant_text("done"), [])
        for h in self.handlers("turn_end"):
            h(event, self.ctx)

    # -- tools and commands -------------------------------------------------------------------------
    def tool(self, name: str) -> Any:
        return self.extension.tools[name]

    def execute(self, name: str, params: Any, tool_call_id: str = "call-x") -> ToolResult:
        """Run a tool's ``prepare_arguments`` then ``execute`` (no session bookkeeping)."""
        tool = self.tool(name)
        if tool.prepare_arguments is not None:
            params = tool.prepare_arguments(params)
        out: ToolResult = asyncio.run(
            tool.execute(tool_call_id, params, AbortSignal(), lambda _r: None, self.ctx)
        )
        return out

    def call_tool(
        self, name: str, params: Any, call_id: str = "call-x", result_text: str | None = None
    ) -> ToolResult:
        """The whole tool round trip: the assistant message issuing it, the run, the result, steering flush."""
        self.add(assistant(ToolCall(call_id, name, params if isinstance(params, dict) else {})))
        self.host.streaming = True
        try:
            out = self.execute(name, params, call_id)
        finally:
            self.host.streaming = False
        text = out.content[0].text if result_text is None else result_text  # type: ignore[union-attr]
        self.add(ToolResultMessage(call_id, name, [TextContent(text)], timestamp=1))
        self.host.flush()
        return out

    def command(self, name: str, args: str = "") -> None:
        self.extension.commands[name].handler(args, self.ctx)


def result_text(out: ToolResult) -> str:
    block = out.content[0]
    assert isinstance(block, TextContent)
    return block.text


NOTE = {"what_happened": "went wrong", "true_current_state": "state", "next": "do next"}
