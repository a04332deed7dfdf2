"""``Harness``: one extension registered on a real ``ExtensionAPI`` bound to the fake host, driven event by event."""

from __future__ import annotations

import asyncio
import copy
import inspect
from collections.abc import Callable
from typing import Any

from caddie.extensions.api import (
    AbortSignal,
    AgentMessage,
    ContextEvent,
    ContextResult,
    CustomEntry,
    EventBus,
    ExtensionAPI,
    ImageContent,
    SessionShutdownEvent,
    SessionStartEvent,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolResult,
    ToolResultEvent,
    ToolResultMessage,
    TurnEndEvent,
)
from caddie.extensions.extension import Extension
from caddie.testing.host import FakeContext, FakeHost, FakeSession, FakeUI
from caddie.testing.messages import assistant, assistant_text, text_of


def _settle(value: Any) -> Any:
    """A handler's result, awaited if it is a coroutine (on a fresh event loop)."""
    if inspect.isawaitable(value):
        return asyncio.run(_await(value))
    return value


async def _await(value: Any) -> Any:
    return await value


def extension_from(register: Callable[[ExtensionAPI], Any], name: str = "extension") -> Extension:
    """An extension built from its ``register`` function, as if loaded from a file: pass it in
    ``SessionRequest(inline_extensions=[...])`` to run it in a real session (with the faux provider, say)."""
    extension = Extension(f"<{name}>", name)
    extension.api = ExtensionAPI(extension, EventBus())
    _settle(register(extension.api))
    return extension


class Harness:
    """One extension registered on a bound ``ExtensionAPI``, with helpers to drive it like the host does.

    ``register``: the extension's ``register(api)``; what it returns is kept as ``state`` (handy when it
    returns its own state object). ``settings``: the merged settings ``ctx.settings()`` returns; when given,
    ``session_start`` is fired once. Handlers may be sync or async: the helpers here run async ones on a fresh
    event loop; inside an async test use ``await harness.emit_async(...)``.
    """

    def __init__(
        self,
        register: Callable[[ExtensionAPI], Any],
        settings: dict[str, Any] | None = None,
        *,
        name: str = "extension",
        session_id: str = "session-1",
        cwd: str = "/project",
    ) -> None:
        self.host = FakeHost(session_id, cwd)
        self.extension = Extension(f"/test/{name}", name)
        self.api = ExtensionAPI(self.extension, EventBus())
        self.extension.api = self.api
        self.state: Any = _settle(register(self.api))
        self.host.tools.update(self.extension.tools)
        self.host.active_tools = list(self.extension.tools)  # extension tools start active, as in caddie
        self.host.commands = list(self.extension.commands.values())
        self.api.bind(self.host)
        self.ctx = FakeContext(self.host)
        if settings is not None:
            self.configure(settings)

    # -- shortcuts ----------------------------------------------------------------------------------
    @property
    def session(self) -> FakeSession:
        return self.host.session

    @property
    def ui(self) -> FakeUI:
        return self.host.ui

    def configure(self, settings: dict[str, Any]) -> None:
        """New merged settings, applied the way the host applies them: through a session start."""
        self.host.settings = settings
        self.session_start()

    def add(self, *messages: AgentMessage) -> list[str]:
        """Append messages to the session (as if the conversation had them); returns their entry ids."""
        return [self.session.message(m) for m in messages]

    def custom_entries(self, custom_type: str | None = None) -> list[CustomEntry]:
        return [
            e
            for e in self.session.all
            if isinstance(e, CustomEntry) and (custom_type is None or e.custom_type == custom_type)
        ]

    # -- events -------------------------------------------------------------------------------------
    def handlers(self, event: str) -> list[Any]:
        return self.extension.handlers.get(event, [])

    def emit(self, event_name: str, event: Any) -> list[Any]:
        """Run the extension's handlers of one event, in registration order; their results."""
        return [_settle(h(event, self.ctx)) for h in self.handlers(event_name)]

    async def emit_async(self, event_name: str, event: Any) -> list[Any]:
        out = []
        for h in self.handlers(event_name):
            value = h(event, self.ctx)
            out.append(await value if inspect.isawaitable(value) else value)
        return out

    def session_start(self, reason: str = "startup") -> None:
        self.emit("session_start", SessionStartEvent(reason))  # type: ignore[arg-type]

    def session_shutdown(self) -> None:
        self.emit("session_shutdown", SessionShutdownEvent("quit"))

    def fire(self, messages: list[AgentMessage] | None = None) -> ContextResult | None:
        """A ``context`` event over a deep copy of the current context (or of ``messages``): the last
        handler's result."""
        base = self.session.context_messages() if messages is None else messages
        out: ContextResult | None = None
        for value in self.emit("context", ContextEvent(copy.deepcopy(base))):
            out = value
        return out

    def view(self, messages: list[AgentMessage] | None = None) -> list[AgentMessage]:
        """What the model would be sent now (the handler's messages, or the unchanged ones)."""
        base = self.session.context_messages() if messages is None else messages
        out = self.fire(base)
        return base if out is None or out.messages is None else out.messages

    def tool_result_event(
        self, tool_name: str, content: list[TextContent | ImageContent], call_id: str = "c"
    ) -> Any:
        """A ``tool_result`` event: the last handler's patch."""
        out = None
        for value in self.emit("tool_result", ToolResultEvent(call_id, tool_name, {}, content, None, False)):
            out = value
        return out

    def turn_end(self, turn_index: int) -> None:
        self.emit("turn_end", TurnEndEvent(turn_index, assistant_text("done"), []))

    # -- tools and commands -------------------------------------------------------------------------
    def tool(self, name: str) -> ToolDefinition:
        return self.extension.tools[name]

    def execute(self, name: str, params: Any, tool_call_id: str = "call-x") -> ToolResult:
        """Run a tool's ``prepare_arguments`` then ``execute`` (no session bookkeeping)."""
        tool = self.tool(name)
        if tool.prepare_arguments is not None:
            params = tool.prepare_arguments(params)
        out: ToolResult = _settle(
            tool.execute(tool_call_id, params, AbortSignal(), lambda _r: None, self.ctx)
        )
        return out

    def call_tool(
        self, name: str, params: Any, call_id: str = "call-x", result_text: str | None = None
    ) -> ToolResult:
        """The whole round trip: the assistant message making the call, the run, its result entry, then the
        messages the tool queued (delivered as the host delivers steering)."""
        self.add(assistant(ToolCall(call_id, name, params if isinstance(params, dict) else {})))
        self.host.streaming = True
        try:
            out = self.execute(name, params, call_id)
        finally:
            self.host.streaming = False
        text = text_of(out) if result_text is None else result_text
        self.add(ToolResultMessage(call_id, name, [TextContent(text)], timestamp=1))
        self.host.flush()
        return out

    def command(self, name: str, args: str = "") -> None:
        """Run ``/name args`` as the user would."""
        _settle(self.extension.commands[name].handler(args, self.ctx))
