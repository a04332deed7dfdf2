"""caddie as a library: create a session, subscribe to its events, prompt it, give it tools (docs/sdk.md).

The Python counterpart of Pi's ``createAgentSession``::

    from caddie.sdk import MessageUpdateEvent, open_session

    def show(event):
        if isinstance(event, MessageUpdateEvent) and event.assistant_message_event.type == "text_delta":
            print(event.assistant_message_event.delta, end="")

    async with open_session("/path/to/project", model="anthropic/claude-sonnet-4-5", on_event=show) as session:
        await session.prompt("What files are in this directory?")

The session is the same one every caddie mode drives (``Session``, ``caddie/runtime/session_api.py``):
settings, models, credentials, extensions, skills and context files are found as the ``caddie`` command
finds them. What this module adds is the setting up: one call with typed options instead of a
``SessionRequest``, extensions and tools given as Python objects, and a context manager that ends the
session (``session_shutdown``, the session file complete) however the block is left. Everything a program
needs is importable from here; nothing else in ``caddie`` is promised to stay put.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
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
from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    replace,
)
from caddie.ai.model import ThinkingLevel
from caddie.ai.providers.faux import FauxProvider, faux_message, faux_text, faux_thinking, faux_tool_call
from caddie.config.source_info import sdk_tool_source
from caddie.errors import (
    Aborted,
    CaddieError,
    ConfigurationError,
    ExtensionError,
    ProviderError,
    SessionStoreError,
    ToolError,
    UsageError,
)
from caddie.extensions.api import (
    ContextEvent,
    ContextResult,
    EventBus,
    ExtensionAPI,
    ExtensionContext,
    ExtensionUI,
    ToolCallEvent,
    ToolCallResult,
    ToolDefinition,
    ToolResult,
    text_result,
)
from caddie.extensions.runner import Extension
from caddie.runtime.compaction_port import StreamFn
from caddie.runtime.request import SessionChoice, SessionRequest
from caddie.runtime.session_api import (
    ModelCycle,
    Session,
    SessionState,
    SessionStats,
    SlashCommand,
    Subscriber,
)
from caddie.runtime.session_events import (
    AgentSettledEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    CompactionEndEvent,
    CompactionStartEvent,
    ExtensionErrorEvent,
    NoticeEvent,
    QueueUpdateEvent,
    SessionEvent,
)
from caddie.session.listing import SessionSummary
from caddie.session.listing import list_sessions as _list_sessions

__all__ = [
    "Aborted",
    "AgentEndEvent",
    "AgentMessage",
    "AgentSettledEvent",
    "AgentStartEvent",
    "AssistantMessage",
    "AutoRetryEndEvent",
    "AutoRetryStartEvent",
    "CaddieError",
    "CompactionEndEvent",
    "CompactionStartEvent",
    "ConfigurationError",
    "ContextEvent",
    "ContextResult",
    "ExtensionAPI",
    "ExtensionContext",
    "ExtensionError",
    "ExtensionErrorEvent",
    "ExtensionFactory",
    "ExtensionUI",
    "FauxProvider",
    "ImageContent",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "ModelCycle",
    "NoticeEvent",
    "ProviderError",
    "QueueUpdateEvent",
    "Session",
    "SessionEvent",
    "SessionState",
    "SessionStats",
    "SessionStoreError",
    "SessionSummary",
    "SlashCommand",
    "StreamFn",
    "Subscriber",
    "TextContent",
    "ThinkingContent",
    "ToolCall",
    "ToolCallEvent",
    "ToolCallResult",
    "ToolDefinition",
    "ToolError",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "ToolResult",
    "ToolResultMessage",
    "TurnEndEvent",
    "TurnStartEvent",
    "UsageError",
    "UserMessage",
    "create_session",
    "faux_message",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "list_sessions",
    "open_session",
    "replace",
    "text_result",
]

ExtensionFactory = Callable[[ExtensionAPI], Any]
"""An extension given as a function: what a file's ``register(api)`` would do (sync or async)."""

Storage = Literal["memory", "new", "continue"]


async def create_session(
    cwd: str | Path = ".",
    *,
    model: str | None = None,
    thinking: ThinkingLevel | None = None,
    session: Storage | str | Path = "memory",
    session_dir: str | Path | None = None,
    tools: Sequence[str] | None = None,
    exclude_tools: Sequence[str] = (),
    custom_tools: Sequence[ToolDefinition] = (),
    extensions: Sequence[ExtensionFactory | str | Path] = (),
    discover_extensions: bool = True,
    skills: Sequence[str | Path] = (),
    discover_skills: bool = True,
    prompt_templates: Sequence[str | Path] = (),
    discover_prompt_templates: bool = True,
    settings: Mapping[str, Any] | None = None,
    system_prompt: str | None = None,
    append_system_prompt: str | None = None,
    context_files: bool = True,
    trust_project: bool | None = None,
    api_key: str | None = None,
    ui: ExtensionUI | None = None,
    on_event: Subscriber | None = None,
    stream_fn: StreamFn | None = None,
) -> Session:
    """A started session (``session_start`` has run); end it with ``await session.shutdown()``, or use
    ``open_session``, which does. Raises ``ConfigurationError`` with one sentence when it cannot be made
    (an unknown model, no credentials, a session file that cannot be read).

    - ``cwd``: the project (context files, project settings and extensions when trusted, session naming).
    - ``model``: ``provider/id`` (``:level`` sets the thinking level too); default: the session's, then
      settings ``defaultModel``, then the first model with credentials. ``thinking``: the thinking level.
    - ``session``: ``"memory"`` (no file), ``"new"`` (a new session file), ``"continue"`` (the project's
      most recent, else new) or the path of a session file; ``session_dir`` overrides where files go.
    - ``tools``: the built-in tools to activate (default ``read``, ``bash``, ``edit``, ``write``);
      ``exclude_tools``: tools (built-in or an extension's) to leave inactive; ``custom_tools``: tools of
      your own (``ToolDefinition``), active unless excluded.
    - ``extensions``: functions ``register(api)`` or paths of extension files, loaded after the ones
      caddie discovers (``discover_extensions=False``: none of those — the bundled ones neither).
    - ``skills`` / ``prompt_templates``: paths of skill directories or ``SKILL.md`` files / of template
      files or directories, loaded besides the discovered ones (``discover_skills=False`` /
      ``discover_prompt_templates=False``: only these).
    - ``settings``: overrides deep-merged over the settings files (``{"compaction": {"enabled": False}}``),
      for this session only; nothing is written.
    - ``system_prompt`` replaces caddie's, ``append_system_prompt`` is added to it; ``context_files=False``
      leaves AGENTS.md/CLAUDE.md out; ``trust_project`` decides whether project extensions and settings that
      run code apply (None: the remembered decision).
    - ``api_key``: the key for the chosen model's provider, over the environment and models.json.
    - ``ui``: what extensions' dialogs and notices reach (default: dialogs answer "no", notices become
      ``NoticeEvent``s); ``on_event``: subscribed before the session starts, so it sees everything — the
      set-up warnings first, as ``NoticeEvent``s.
    - ``stream_fn``: replaces the model call (tests: ``caddie.ai.providers.faux``).
    """
    from caddie.runtime.factory import open_session as build

    inline = await _inline_extensions(extensions, custom_tools)
    paths = [str(Path(e).expanduser()) for e in extensions if isinstance(e, str | Path)]
    choices: dict[Any, SessionChoice] = {"memory": "memory", "new": "new", "continue": "continue"}
    stored = choices.get(session, "file")
    session_file = str(Path(session).expanduser()) if stored == "file" else None
    request = SessionRequest(
        cwd=str(cwd),
        mode="print",
        model=model,
        thinking=thinking,
        session=stored,
        session_file=session_file,
        session_dir=str(session_dir) if session_dir is not None else None,
        extension_paths=paths,
        no_extensions=not discover_extensions,
        trust=trust_project,
        tools=list(tools) if tools is not None else None,
        exclude_tools=list(exclude_tools),
        skill_paths=[str(Path(p).expanduser()) for p in skills],
        no_skills=not discover_skills,
        prompt_paths=[str(Path(p).expanduser()) for p in prompt_templates],
        no_prompt_templates=not discover_prompt_templates,
        settings_overrides=dict(settings) if settings else None,
        system_prompt=system_prompt,
        append_system_prompt=append_system_prompt,
        no_context_files=not context_files,
        ui=ui,
        stream_fn=stream_fn,
        inline_extensions=inline,
        api_key=api_key,
    )
    built = await build(request)
    created: Session = built.session
    if on_event is not None:
        created.subscribe(on_event)
        for warning in built.warnings:
            delivered = on_event(NoticeEvent(warning, "warning"))
            if inspect.isawaitable(delivered):
                await delivered
    await created.start("startup")
    return created


@asynccontextmanager
async def open_session(cwd: str | Path = ".", **options: Any) -> AsyncIterator[Session]:
    """``create_session`` (same options) for an ``async with`` block; the session shuts down when the block
    ends, by return, exception or cancellation (``session_shutdown`` runs, the session file is complete)."""
    session = await create_session(cwd, **options)
    try:
        yield session
    finally:
        await session.shutdown("quit")


def list_sessions(cwd: str | Path = ".", session_dir: str | Path | None = None) -> list[SessionSummary]:
    """The saved sessions of the project ``cwd`` (in ``session_dir``, default the project's folder under
    ``~/.caddie/agent/sessions``), most recently active first; open one with ``session=summary.path``."""
    return _list_sessions(cwd, session_dir)


async def _inline_extensions(
    extensions: Sequence[ExtensionFactory | str | Path], custom_tools: Sequence[ToolDefinition]
) -> list[Extension]:
    """The functions and the custom tools as extensions; they share one event bus (``api.events``)."""
    bus = EventBus()
    out: list[Extension] = []
    factories = [e for e in extensions if not isinstance(e, str | Path)]
    for index, factory in enumerate(factories):
        name = getattr(factory, "__name__", "") or f"extension{index + 1}"
        extension = Extension(f"<sdk:{name}>", name)
        api = ExtensionAPI(extension, bus)
        extension.api = api
        registered = factory(api)
        if inspect.isawaitable(registered):
            await registered
        out.append(extension)
    if custom_tools:
        extension = Extension("<sdk:tools>", "tools")
        api = ExtensionAPI(extension, bus)
        extension.api = api
        for tool in custom_tools:
            api.register_tool(tool)
            tool.source_info = sdk_tool_source(tool.name)  # Pi's ``<sdk:name>``
        out.append(extension)
    return out
