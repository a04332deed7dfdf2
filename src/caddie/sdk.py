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
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, TextIO

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
    Mode,
    ToolCallEvent,
    ToolCallResult,
    ToolDefinition,
    ToolResult,
    text_result,
)
from caddie.extensions.runner import Extension
from caddie.models.auth import AuthStore, InMemoryCredentialStore
from caddie.runtime.compaction_port import StreamFn
from caddie.runtime.request import SessionChoice, SessionRequest

if TYPE_CHECKING:
    from caddie.runtime.factory import SessionBuild
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
from caddie.tools.factories import (
    CodingOperations,
    create_bash_tool,
    create_coding_tools,
    create_edit_tool,
    create_find_tool,
    create_grep_tool,
    create_ls_tool,
    create_read_only_tools,
    create_read_tool,
    create_write_tool,
)
from caddie.tools.operations import (
    BashOperations,
    EditOperations,
    FindOperations,
    LsOperations,
    ReadOperations,
    ShellTimedOut,
    WriteOperations,
)

__all__ = [
    "AbortController",
    "AbortSignal",
    "Aborted",
    "AgentEndEvent",
    "AgentMessage",
    "AgentSettledEvent",
    "AgentStartEvent",
    "AssistantMessage",
    "AuthStore",
    "AutoRetryEndEvent",
    "AutoRetryStartEvent",
    "BashOperations",
    "CaddieError",
    "CodingOperations",
    "CompactionEndEvent",
    "CompactionStartEvent",
    "ConfigurationError",
    "ContextEvent",
    "ContextResult",
    "EditOperations",
    "ExtensionAPI",
    "ExtensionContext",
    "ExtensionError",
    "ExtensionErrorEvent",
    "ExtensionFactory",
    "ExtensionUI",
    "FauxProvider",
    "FindOperations",
    "ImageContent",
    "InMemoryCredentialStore",
    "LsOperations",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "ModelCycle",
    "NoticeEvent",
    "ProviderError",
    "QueueUpdateEvent",
    "ReadOperations",
    "Session",
    "SessionEvent",
    "SessionState",
    "SessionStats",
    "SessionStoreError",
    "SessionSummary",
    "ShellTimedOut",
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
    "WriteOperations",
    "create_bash_tool",
    "create_coding_tools",
    "create_edit_tool",
    "create_find_tool",
    "create_grep_tool",
    "create_ls_tool",
    "create_read_only_tools",
    "create_read_tool",
    "create_session",
    "create_write_tool",
    "faux_message",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "list_sessions",
    "open_session",
    "replace",
    "run_interactive_mode",
    "run_print_mode",
    "run_rpc_mode",
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
    credentials: AuthStore | None = None,
    auth_path: str | Path | None = None,
    models_path: str | Path | None = None,
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
    - ``credentials``: where stored keys and logins are — an ``InMemoryCredentialStore`` (nothing touches a
      file) or an ``AuthStore``; ``auth_path``: an auth.json of your own instead (give one of the two);
      default the agent folder's ``auth.json``. ``models_path``: a models.json of your own.
    - ``ui``: what extensions' dialogs and notices reach (default: dialogs answer "no", notices become
      ``NoticeEvent``s); ``on_event``: subscribed before the session starts, so it sees everything — the
      set-up warnings first, as ``NoticeEvent``s.
    - ``stream_fn``: replaces the model call (tests: ``caddie.ai.providers.faux``).
    """
    built = await _build(dict(locals()), "print")  # every option above, by name
    created: Session = built.session
    await _subscribe(created, on_event, built.warnings)
    await created.start("startup")
    return created


async def _build(options: dict[str, Any], mode: Mode, ui: ExtensionUI | None = None) -> SessionBuild:
    """The session ``create_session``'s ``options`` describe, built for ``mode`` but not started; ``ui``
    (a mode's own) goes over ``options["ui"]``."""
    from caddie.runtime.factory import open_session as build

    return await build(await _request(options, mode, ui))


async def _request(options: dict[str, Any], mode: Mode, ui: ExtensionUI | None = None) -> SessionRequest:
    """``create_session``'s ``options`` as the ``SessionRequest`` the factory builds a session from."""
    if options["credentials"] is not None and options["auth_path"] is not None:
        raise UsageError("Give create_session credentials= or auth_path=, not both.")
    auth_path, models_path, session = options["auth_path"], options["models_path"], options["session"]
    store = AuthStore(Path(auth_path).expanduser()) if auth_path is not None else options["credentials"]
    extensions: Sequence[ExtensionFactory | str | Path] = options["extensions"]
    inline = await _inline_extensions(extensions, options["custom_tools"])
    paths = [str(Path(e).expanduser()) for e in extensions if isinstance(e, str | Path)]
    choices: dict[Any, SessionChoice] = {"memory": "memory", "new": "new", "continue": "continue"}
    stored = choices.get(session, "file")
    tools, session_dir, settings = options["tools"], options["session_dir"], options["settings"]
    return SessionRequest(
        cwd=str(options["cwd"]),
        mode=mode,
        model=options["model"],
        thinking=options["thinking"],
        session=stored,
        session_file=str(Path(session).expanduser()) if stored == "file" else None,
        session_dir=str(session_dir) if session_dir is not None else None,
        extension_paths=paths,
        no_extensions=not options["discover_extensions"],
        trust=options["trust_project"],
        tools=list(tools) if tools is not None else None,
        exclude_tools=list(options["exclude_tools"]),
        skill_paths=[str(Path(p).expanduser()) for p in options["skills"]],
        no_skills=not options["discover_skills"],
        prompt_paths=[str(Path(p).expanduser()) for p in options["prompt_templates"]],
        no_prompt_templates=not options["discover_prompt_templates"],
        settings_overrides=dict(settings) if settings else None,
        system_prompt=options["system_prompt"],
        append_system_prompt=options["append_system_prompt"],
        no_context_files=not options["context_files"],
        ui=ui or options["ui"],
        stream_fn=options["stream_fn"],
        inline_extensions=inline,
        api_key=options["api_key"],
        credentials=store,
        models_json=str(Path(models_path).expanduser()) if models_path is not None else None,
        require_model=mode in ("print", "json"),  # RPC and the screen start without one, as Pi's
    )


@asynccontextmanager
async def open_session(cwd: str | Path = ".", **options: Any) -> AsyncIterator[Session]:
    """``create_session`` (same options) for an ``async with`` block; the session shuts down when the block
    ends, by return, exception or cancellation (``session_shutdown`` runs, the session file is complete)."""
    session = await create_session(cwd, **options)
    try:
        yield session
    finally:
        await session.shutdown("quit")


async def run_print_mode(
    cwd: str | Path = ".",
    prompts: Sequence[str] = (),
    *,
    mode: Literal["text", "json"] = "text",
    images: Sequence[ImageContent] = (),
    out: TextIO | None = None,
    err: TextIO | None = None,
    **options: Any,
) -> int:
    """``caddie -p`` / ``caddie --mode json`` inside your program (Pi's ``runPrintMode``): make the session
    ``options`` describe (``create_session``'s), send ``prompts`` one after another (``images`` with the
    first), end the session, and return the exit code — 0, or 1 when the last reply failed or was aborted
    (an extension may set another, as a headless goal does).

    ``mode="text"`` writes the last answer's text to ``out`` (default stdout); ``"json"`` writes the session
    header and then every event as a JSON line (docs/json-mode.md). Set-up warnings, notices, retries and
    errors go to ``err`` (default stderr), as the command's do."""
    built = await _build(_options(cwd, options), "json" if mode == "json" else "print")
    session = built.session
    to_err = err or sys.stderr
    for warning in [*built.warnings, *built.take_store_warnings()]:
        to_err.write(f"caddie: warning: {warning}\n")
    try:
        await _subscribe(session, options.get("on_event"), [])
        await session.start("startup")
        from caddie.modes.headless import run_headless

        return await run_headless(
            session, list(prompts), json_mode=mode == "json", out=out, err=to_err, images=list(images) or None
        )
    finally:
        await session.shutdown("quit")


async def run_rpc_mode(
    cwd: str | Path = ".",
    *,
    stdin: BinaryIO | None = None,
    stdout: TextIO | None = None,
    err: TextIO | None = None,
    eof_grace_s: float = 5.0,
    **options: Any,
) -> int:
    """``caddie --mode rpc`` inside your program (Pi's ``runRpcMode``): serve RPC commands (JSON lines,
    docs/rpc.md) read from ``stdin`` and answer, with the session's events, on ``stdout`` (defaults: the
    process's own), until ``stdin`` ends; then end the session and return 0. Extension dialogs become
    ``extension_ui_request`` lines; ``options`` are ``create_session``'s (without ``ui``, which RPC is), and
    no model is needed to start (the client may ``set_model``). ``stdin`` may be any binary stream: a pipe or
    a socket is read on the event loop, anything else in a thread. Set-up warnings go to ``err``."""
    from caddie.modes.rpc import RpcUI, run_rpc
    from caddie.modes.rpc.ui import json_line_writer

    if options.get("ui") is not None:
        raise UsageError("run_rpc_mode's dialogs go to the RPC client; leave ui= out.")
    ui = RpcUI(json_line_writer(stdout or sys.stdout))
    built = await _build(_options(cwd, options), "rpc", ui)
    session = built.session
    for warning in built.warnings:
        (err or sys.stderr).write(f"caddie: warning: {warning}\n")
    try:
        await _subscribe(session, options.get("on_event"), [])
        return await run_rpc(
            session,
            ui,
            built.registry.find,
            lambda: session.start("startup"),
            stdin or sys.stdin.buffer,
            has_auth=built.has_auth or built.registry.has_auth,
            eof_grace_s=eof_grace_s,
        )
    finally:
        await session.shutdown("quit", settle_timeout=eof_grace_s)


async def run_interactive_mode(cwd: str | Path = ".", prompts: Sequence[str] = (), **options: Any) -> int:
    """caddie's full-screen terminal UI inside your program (Pi's ``InteractiveMode``): the editor, the
    transcript and every command, on the process's terminal, with the session ``options`` describe
    (``create_session``'s; without ``ui``, which the screen is); ``prompts`` are sent first. Returns the exit
    code once the user quits; 2 (and a line on stderr) when stdin or stdout is not a terminal."""
    from caddie.modes.interactive import run_interactive

    if options.get("ui") is not None or options.get("on_event") is not None:
        raise UsageError("run_interactive_mode draws everything itself; leave ui= and on_event= out.")
    request = await _request(_options(cwd, options), "tui")
    return await run_interactive(request, initial_prompts=list(prompts))


def _options(cwd: str | Path, options: dict[str, Any]) -> dict[str, Any]:
    """Every ``create_session`` option by name, defaults filled in; an unknown one is a ``UsageError``."""
    try:
        bound = inspect.signature(create_session).bind(cwd, **options)
    except TypeError as e:
        raise UsageError(f"{e}; the options are create_session's (docs/sdk.md).") from None
    bound.apply_defaults()
    return dict(bound.arguments)


async def _subscribe(session: Session, on_event: Subscriber | None, warnings: list[str]) -> None:
    """``on_event`` subscribed before the session starts, the set-up ``warnings`` first (as notices)."""
    if on_event is None:
        return
    session.subscribe(on_event)
    for warning in warnings:
        delivered = on_event(NoticeEvent(warning, "warning"))
        if inspect.isawaitable(delivered):
            await delivered


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
