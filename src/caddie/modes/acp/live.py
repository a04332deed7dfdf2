"""One ACP session: a caddie ``AgentSession`` seen through ``session/update``s.

The session is built like any other (``open_session``), so its file is an ordinary caddie session
(``caddie -c`` continues it). Three things are supplied when it is built, none patched in later:
- ``AcpUI`` as the extension UI (notify → message, confirm/select → a permission-style request);
- ``tool_operations`` that route ``read``/``edit``/``write`` through the editor's buffers and ``bash`` into
  an editor terminal, when the client offers them;
- an inline extension whose ``tool_call`` handler shows edit previews as diffs and asks
  ``session/request_permission`` before ``bash``/``edit``/``write`` (allow once / always / reject; "always"
  is remembered for this session; the "auto" mode never asks).
Everything else is the session's event stream turned into updates, in order, through one outbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    ClientCapabilities,
    Cost,
    FileEditToolCallContent,
    PermissionOption,
    PromptResponse,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
    StopReason,
    ToolCallLocation,
    ToolCallUpdate,
    UnstructuredCommandInput,
    UsageUpdate,
)

from acp import RequestError, helpers
from caddie.agent.events import (
    AgentStartEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
)
from caddie.ai.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    text_of,
)
from caddie.ai.model import THINKING_LEVELS
from caddie.errors import UsageError
from caddie.extensions.api import EventBus, ExtensionAPI, ExtensionContext, ToolCallEvent, ToolCallResult
from caddie.extensions.runner import Extension
from caddie.models import ModelRegistry
from caddie.modes.acp.client_tools import ClientConnection, ClientTerminal, client_files
from caddie.modes.acp.convert import (
    PERMISSION_TOOLS,
    PromptBlock,
    ToolContent,
    bad_params,
    bad_request,
    goal_plan,
    message_updates,
    prompt_to_user,
    result_content,
    result_text,
    text_content,
    tool_kind,
    tool_locations,
    tool_title,
)
from caddie.modes.acp.ui import AcpUI, picked_option
from caddie.runtime.factory import SessionRequest, SetupError, open_session
from caddie.runtime.session_api import Session
from caddie.runtime.session_events import (
    AutoRetryStartEvent,
    CompactionEndEvent,
    CompactionStartEvent,
    ExtensionErrorEvent,
    ExtensionEvent,
    SessionEvent,
)
from caddie.session.entries import CompactionEntry, CustomEntry, MessageEntry
from caddie.tools import ToolError, ToolOperations
from caddie.tools.edit import apply_edits_to_normalized_content, normalize_to_lf
from caddie.tools.paths import resolve_to_cwd

log = logging.getLogger("caddie.acp")

MODES = [
    SessionMode(id="ask", name="Ask", description="Ask before running commands and changing files"),
    SessionMode(id="auto", name="Auto", description="Run commands and change files without asking"),
]
GOAL_ENTRY = "goal:state"
RUN_GRACE_S = 0.3
"""How long a slash command's own run may take to start and still count as part of its prompt turn."""


def _with_hint(description: str | None, argument_hint: str | None) -> str | None:
    """A template's menu text: its argument hint before the description."""
    return f"{argument_hint} — {description}" if argument_hint else description


@dataclass
class AcpOptions:
    """What ``caddie acp`` was started with (applies to every session it opens)."""

    model: str | None = None
    thinking: str | None = None
    extension_paths: list[str] = field(default_factory=list)
    no_extensions: bool = False
    trust: bool | None = None
    tools: list[str] | None = None
    session_dir: str | None = None
    no_context_files: bool = False
    mode: str = "ask"
    sandbox: str | None = None
    """``--sandbox``: the mode of every session's commands (None: the settings decide)."""


class AcpSession:
    def __init__(self, conn: Any, client: ClientCapabilities, options: AcpOptions) -> None:
        self.conn = conn
        self.client = client
        self.options = options
        self.id = ""
        self.mode = options.mode
        self.always: set[str] = set()
        self.ui = AcpUI(self.send, self.ask)
        self._outbox: asyncio.Queue[Any] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None
        self._asking: set[asyncio.Task[Any]] = set()
        self._diffs: dict[str, FileEditToolCallContent] = {}
        self._terminals: dict[str, str] = {}
        self._titles: dict[str, str] = {}
        self._kept_from_model: dict[str, str] = {}
        """Tool call id → why the model is no longer sent it, as shown in the call's title."""
        self._echo_skip: str | None = None
        self._prompting = False
        self._answered = asyncio.Event()
        """Set while no ``session/prompt`` is being answered."""
        self._answered.set()
        self._run_started = asyncio.Event()
        self._cancelled = False
        self._shutdown_watch: asyncio.Task[None] | None = None
        self.session: Session
        self.registry: ModelRegistry

    # -- building ------------------------------------------------------------------------------------
    def _operations(self) -> ToolOperations | None:
        fs = self.client.fs
        read = bool(fs and fs.read_text_file)
        write = bool(fs and fs.write_text_file)
        conn: ClientConnection = self.conn
        files = client_files(conn, lambda: self.id, read=read, write=write) if read or write else None
        shell = (
            ClientTerminal(
                conn, lambda: self.id, self._show_terminal, lambda: self.session.settings.shell_path
            )
            if self.client.terminal
            else None
        )
        return ToolOperations(files=files, shell=shell) if files or shell else None

    def _gate_extension(self) -> Extension:
        extension = Extension("<acp>", "acp")
        extension.api = ExtensionAPI(extension, EventBus())
        extension.api.on("tool_call", self._gate)
        return extension

    async def open(self, cwd: str, session: str, session_file: str | None = None) -> None:
        o = self.options
        request = SessionRequest(
            cwd=cwd,
            mode="rpc",
            model=o.model,
            thinking=o.thinking,
            session=session,  # type: ignore[arg-type]
            session_file=session_file,
            session_dir=o.session_dir,
            extension_paths=list(o.extension_paths),
            no_extensions=o.no_extensions,
            trust=o.trust,
            tools=o.tools,
            no_context_files=o.no_context_files,
            require_model=True,
            ui=self.ui,
            inline_extensions=[self._gate_extension()],
            tool_operations=self._operations(),
            sandbox=o.sandbox,
        )
        try:
            build = await open_session(request)
        except SetupError as e:
            raise RequestError(-32603, str(e)) from None
        for warning in build.warnings:
            log.warning("%s", warning)
        self.session = build.session
        self.registry = build.registry
        self.id = self.session.store.session_id
        self.session.subscribe(self._on_event)
        self._sender = asyncio.ensure_future(self._send_loop())

    async def start(self, reason: str) -> None:
        await self.session.start(reason)  # type: ignore[arg-type]

    def on_shutdown_request(self, retire: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
        """Run ``retire`` once an extension asked to end this session (``ctx.shutdown()``) and the prompt in
        progress has been answered."""

        async def watch() -> None:
            await self.session.wait_for_shutdown_request()
            await self._answered.wait()
            await retire()

        self._shutdown_watch = asyncio.ensure_future(watch())
        return self._shutdown_watch

    async def close(self) -> None:
        if self._shutdown_watch is not None and self._shutdown_watch is not asyncio.current_task():
            self._shutdown_watch.cancel()
        self.cancel()
        # Closing must finish whatever went wrong before: extension failures were reported as they happened,
        # and a client that stopped reading cannot be told anything more.
        with contextlib.suppress(Exception):
            await self.session.shutdown("quit", settle_timeout=5.0)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.flush(), 2.0)
        if self._sender is not None:
            self._sender.cancel()

    # -- sending -------------------------------------------------------------------------------------
    def send(self, update: Any) -> None:
        self._outbox.put_nowait(update)

    async def _send_loop(self) -> None:
        while True:
            update = await self._outbox.get()
            try:
                await self.conn.session_update(session_id=self.id, update=update)
            except Exception as e:  # the client is gone or refused it: nothing to show it on
                log.debug("session/update failed: %s", e)
            finally:
                self._outbox.task_done()

    async def flush(self) -> None:
        await self._outbox.join()

    async def ask(
        self, tool_call: ToolCallUpdate, options: list[PermissionOption], timeout: float | None
    ) -> str | None:
        """A ``session/request_permission``: the option id picked, or None (cancelled, timed out, failed)."""
        await self.flush()
        task = asyncio.ensure_future(
            self.conn.request_permission(session_id=self.id, tool_call=tool_call, options=options)
        )
        self._asking.add(task)
        try:
            done, _ = await asyncio.wait({task}, timeout=timeout)
        finally:
            self._asking.discard(task)
        if not done:
            task.cancel()
            return None
        if task.cancelled() or task.exception() is not None:
            return None
        return picked_option(task.result().outcome)

    # -- modes, models, commands ----------------------------------------------------------------------
    def modes(self) -> SessionModeState:
        return SessionModeState(current_mode_id=self.mode, available_modes=MODES)

    def set_mode(self, mode_id: str) -> None:
        if mode_id not in {m.id for m in MODES}:
            raise bad_params(f"Unknown mode {mode_id!r}; use ask or auto.")
        self.mode = mode_id

    def config_options(self) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
        mode = SessionConfigOptionSelect(
            id="mode",
            name="Mode",
            category="mode",
            type="select",
            current_value=self.mode,
            options=[
                SessionConfigSelectOption(value=m.id, name=m.name, description=m.description) for m in MODES
            ],
        )
        out: list[SessionConfigOptionSelect | SessionConfigOptionBoolean] = [mode]
        model = self.session.model
        models = list(self.registry.available())
        if model is not None and all(m.ref != model.ref for m in models):
            models.insert(0, model)
        if model is not None:
            out.append(
                SessionConfigOptionSelect(
                    id="model",
                    name="Model",
                    category="model",
                    type="select",
                    current_value=model.ref,
                    options=[
                        SessionConfigSelectOption(value=m.ref, name=m.name or m.id, description=m.ref)
                        for m in models
                    ],
                )
            )
            if model.reasoning:
                out.append(
                    SessionConfigOptionSelect(
                        id="thinking",
                        name="Thinking",
                        category="thought_level",
                        type="select",
                        current_value=self.session.thinking_level,
                        options=[
                            SessionConfigSelectOption(value=level, name=level) for level in THINKING_LEVELS
                        ],
                    )
                )
        return out

    async def set_config(self, config_id: str, value: str | bool) -> None:
        if not isinstance(value, str):
            raise bad_params(f"{config_id} takes a value from its list")
        if config_id == "mode":
            self.set_mode(value)
        elif config_id == "model":
            provider, _, model_id = value.partition("/")
            model = self.registry.find(provider, model_id)
            if model is None:
                raise bad_params(f"Unknown model {value}")
            await self.session.set_model(model)
        elif config_id == "thinking":
            if value not in THINKING_LEVELS:
                raise bad_params(f"Unknown thinking level {value!r}")
            self.session.set_thinking_level(value)
        else:
            raise bad_params(f"Unknown option {config_id!r}")

    def commands(self) -> list[AvailableCommand]:
        """Extension commands, then prompt templates and skills (``/skill:name``), as the slash menu shows."""
        every = self.session.commands()
        named = sorted((c.name, c.description or f"/{c.name}") for c in every if c.kind == "extension")
        named += [
            (c.name, _with_hint(c.description, c.argument_hint) or f"/{c.name}")
            for c in every
            if c.kind != "extension"
        ]
        return [
            AvailableCommand(
                name=name,
                description=description,
                input=AvailableCommandInput(root=UnstructuredCommandInput(hint="arguments")),
            )
            for name, description in named
        ]

    def announce(self) -> None:
        """What an editor shows beside the prompt box: the slash commands (after the session is known)."""
        self.send(helpers.update_available_commands(self.commands()))

    # -- replay (session/load) ------------------------------------------------------------------------
    def replay(self) -> None:
        calls: dict[str, ToolCall] = {}
        goal: dict[str, Any] | None = None
        for entry in self.session.store.branch():
            if isinstance(entry, MessageEntry):
                for update in message_updates(entry.message, self.session.cwd, calls):
                    self.send(update)
            elif isinstance(entry, CompactionEntry):
                self.send(
                    helpers.update_agent_thought_text("(earlier conversation compacted into a summary)")
                )
            elif (
                isinstance(entry, CustomEntry)
                and entry.custom_type == GOAL_ENTRY
                and isinstance(entry.data, dict)
            ):
                goal = entry.data
        if goal is not None and goal.get("status") != "cleared":
            self.send(helpers.update_plan(goal_plan(goal)))

    # -- prompting ------------------------------------------------------------------------------------
    @property
    def prompting(self) -> bool:
        """A ``session/prompt`` is being answered."""
        return self._prompting

    async def prompt(self, blocks: list[PromptBlock]) -> PromptResponse:
        if self._prompting:
            raise bad_request(
                "caddie is still working on the previous prompt; cancel it or wait for it to end."
            )
        text, images = prompt_to_user(blocks)
        if not text.strip() and not images:
            raise bad_params("The prompt is empty.")
        self._prompting = True
        self._answered.clear()
        self._run_started.clear()
        self._cancelled = False
        before = self._last_assistant()
        try:
            if self.session.is_streaming:  # a run the editor did not start (a /loop timer): join it
                self._echo_skip = text
                self.session.steer(text, images or None)
            else:
                self._echo_skip = text
                await self.session.prompt(text, images or None, source="rpc")
                if text.startswith("/"):  # a command may start a run of its own (/goal): it is this turn
                    await self._grace_for_run()
            await self._until_settled()
        except UsageError as e:
            raise RequestError(-32603, str(e)) from None
        finally:
            self._prompting = False
            self._echo_skip = None
            await self.flush()
            self._answered.set()
        last = self._last_assistant()
        stop: StopReason = "end_turn"
        if self._cancelled or (last is not None and last is not before and last.stop_reason == "aborted"):
            stop = "cancelled"
        elif last is not None and last is not before:
            if last.stop_reason == "length":
                stop = "max_tokens"
            elif last.stop_reason == "error":
                raise RequestError(-32603, last.error_message or "The model request failed.")
        return PromptResponse(stop_reason=stop)

    async def _grace_for_run(self, seconds: float = RUN_GRACE_S) -> None:
        """Give work a command spawned the moment it needs to start its run (``agent_start``)."""
        if not self.session.is_streaming:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._run_started.wait(), seconds)

    async def _until_settled(self) -> None:
        await self.session.wait_for_idle(background=False)

    def _last_assistant(self) -> AssistantMessage | None:
        for message in reversed(self.session.messages):
            if isinstance(message, AssistantMessage):
                return message
        return None

    def cancel(self) -> None:
        """``session/cancel``: stop the turn, answer every open question "cancelled"."""
        self._cancelled = self._prompting or self._cancelled
        for task in list(self._asking):
            task.cancel()
        if self.session.is_streaming:
            self.session.clear_queues()
            self.session.abort()

    # -- tools ----------------------------------------------------------------------------------------
    async def _show_terminal(self, tool_call_id: str, terminal_id: str) -> None:
        self._terminals[tool_call_id] = terminal_id
        self.send(helpers.update_tool_call(tool_call_id, content=[helpers.tool_terminal_ref(terminal_id)]))
        await self.flush()

    async def _read_text(self, path: str) -> str | None:
        fs = self.client.fs
        try:
            if fs and fs.read_text_file:
                if not os.path.exists(path):
                    return None
                response = await self.conn.read_text_file(session_id=self.id, path=path)
                return str(response.content)
            return await asyncio.to_thread(_read_local_text, path)
        except Exception:  # unreadable (gone, binary, refused by the client): no diff preview; the tool runs
            return None

    async def _preview(self, name: str, args: Any) -> FileEditToolCallContent | None:
        """The change an ``edit``/``write`` is about to make, as a diff (None when it cannot be worked out)."""
        if (
            name not in ("edit", "write")
            or not isinstance(args, dict)
            or not isinstance(args.get("path"), str)
        ):
            return None
        path = resolve_to_cwd(args["path"], self.session.cwd)
        old = await self._read_text(path)
        if name == "write":
            content = args.get("content")
            return helpers.tool_diff_content(path, content, old) if isinstance(content, str) else None
        edits = args.get("edits")
        if old is None or not isinstance(edits, list):
            return None
        try:
            pairs = [{"oldText": str(e["oldText"]), "newText": str(e["newText"])} for e in edits]
            base, new = apply_edits_to_normalized_content(
                normalize_to_lf(old.removeprefix("\ufeff")), pairs, args["path"]
            )
        except (ToolError, KeyError, TypeError):
            return None
        return helpers.tool_diff_content(path, new, base)

    async def _gate(self, event: ToolCallEvent, ctx: ExtensionContext) -> ToolCallResult | None:
        name, call_id = event.tool_name, event.tool_call_id
        diff = await self._preview(name, event.input)
        if diff is not None:
            self._diffs[call_id] = diff
            self.send(helpers.update_tool_call(call_id, content=[diff]))
        if name in PERMISSION_TOOLS and self.mode == "ask" and name not in self.always:
            options = [
                PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                PermissionOption(option_id="always", name=f"Always allow {name}", kind="allow_always"),
                PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ]
            request = ToolCallUpdate(
                tool_call_id=call_id,
                title=tool_title(name, event.input, self.session.cwd),
                kind=tool_kind(name),
                status="pending",
                content=[diff] if diff is not None else None,
                locations=tool_locations(name, event.input, self.session.cwd),
                raw_input=event.input,
            )
            picked = await self.ask(request, options, None)
            if picked == "always":
                self.always.add(name)
            elif picked != "allow":
                why = "rejected" if picked == "reject" else "cancelled"
                return ToolCallResult(block=True, reason=f"The user {why} this {name} call.")
        self.send(helpers.update_tool_call(call_id, status="in_progress"))
        return None

    # -- the event stream ------------------------------------------------------------------------------
    async def _on_event(self, event: SessionEvent) -> None:
        if isinstance(event, AgentStartEvent):
            self._run_started.set()
        elif isinstance(event, MessageUpdateEvent):
            update = event.assistant_message_event
            if update.type == "text_delta" and update.delta:
                self.send(helpers.update_agent_message_text(update.delta))
            elif update.type == "thinking_delta" and update.delta:
                self.send(helpers.update_agent_thought_text(update.delta))
        elif isinstance(event, MessageStartEvent) and isinstance(event.message, UserMessage):
            text = text_of(event.message.content)
            if self._echo_skip is not None and text == self._echo_skip:
                self._echo_skip = None  # the prompt itself: the editor shows it already
            else:
                for update in message_updates(event.message, self.session.cwd, {}):
                    self.send(update)
        elif isinstance(event, ToolExecutionStartEvent):
            cwd = self.session.cwd
            title = tool_title(event.tool_name, event.args, cwd)
            self._titles[event.tool_call_id] = title
            self.send(
                helpers.start_tool_call(
                    event.tool_call_id,
                    title,
                    kind=tool_kind(event.tool_name),
                    status="pending",
                    locations=tool_locations(event.tool_name, event.args, cwd),
                    raw_input=event.args,
                )
            )
        elif isinstance(event, ToolExecutionUpdateEvent):
            if event.tool_call_id not in self._terminals:
                partial = result_text(event.partial_result.content)
                if partial:
                    self.send(helpers.update_tool_call(event.tool_call_id, content=[text_content(partial)]))
        elif isinstance(event, ToolExecutionEndEvent):
            self._tool_done(event)
        elif isinstance(event, TurnEndEvent):
            self._usage()
            await self._mark_kept_from_model()
        elif (
            isinstance(event, ExtensionEvent) and event.name == "goal_state" and isinstance(event.data, dict)
        ):
            self.send(helpers.update_plan(goal_plan(event.data.get("goal"))))
        elif isinstance(event, ExtensionErrorEvent):
            self.ui.notify(
                f"extension {event.extension_path} failed in {event.event}: {event.error}", "error"
            )
        elif isinstance(event, AutoRetryStartEvent):
            self.send(
                helpers.update_agent_thought_text(
                    f"{event.error_message} — retrying in {event.delay_ms / 1000:.1f} s "
                    f"(attempt {event.attempt} of {event.max_attempts})\n"
                )
            )
        elif isinstance(event, CompactionStartEvent):
            self.send(helpers.update_agent_thought_text(f"Compacting the context ({event.reason})…\n"))
        elif isinstance(event, CompactionEndEvent) and event.error_message:
            self.ui.notify(f"compaction failed: {event.error_message}", "error")

    def _usage(self) -> None:
        """How full the context is, and what the session cost so far (``usage_update``)."""
        usage = self.session.context_usage()
        if usage is None or usage.tokens is None:
            return
        spent = sum(m.usage.cost.total for m in self.session.messages if isinstance(m, AssistantMessage))
        self.send(
            UsageUpdate(
                session_update="usage_update",
                used=usage.tokens,
                size=usage.context_window,
                cost=Cost(amount=spent, currency="USD") if spent else None,
            )
        )

    def _tool_done(self, event: ToolExecutionEndEvent) -> None:
        call_id, name = event.tool_call_id, event.tool_name
        content_blocks = [c for c in event.result.content if isinstance(c, TextContent | ImageContent)]
        diff = self._diffs.pop(call_id, None)
        terminal = self._terminals.pop(call_id, None)
        content: list[ToolContent]
        if terminal is not None:
            content = [helpers.tool_terminal_ref(terminal)]
            if event.is_error:
                content.append(text_content(result_text(content_blocks).rsplit("\n\n", 1)[-1]))
        elif diff is not None and not event.is_error:
            content = [diff]
        else:
            content = result_content(name, content_blocks, event.is_error)
        locations = None
        details = event.result.details
        if (
            name == "edit"
            and isinstance(details, dict)
            and isinstance(details.get("firstChangedLine"), int)
            and diff
        ):
            locations = [ToolCallLocation(path=diff.path, line=details["firstChangedLine"])]
        self.send(
            helpers.update_tool_call(
                call_id,
                status="failed" if event.is_error else "completed",
                content=content,
                locations=locations,
                raw_output={"content": result_text(content_blocks)},
            )
        )

    async def _mark_kept_from_model(self) -> None:
        """Retitle each tool call of this connection that an extension's ``context`` handler now keeps from
        the model, as the extensions answer ``entry_visibility`` (the question ``caddie export`` asks): "`cat
        big.txt` — hidden by mulligan_rewind (last_tool_call_group)". A call sent again as it was (a rewind
        cancelled) gets its title back."""
        runner = self.session.extensions
        if not self._titles or not runner.has_handlers("entry_visibility"):
            return
        from caddie.modes.export_html.visibility import branch_context

        event = branch_context(self.session.store.branch())
        await runner.emit("entry_visibility", event)
        reasons: dict[str, str] = {}
        answers = sorted(event.answers.items(), key=lambda item: item[1].state != "hidden")  # hidden first
        for entry_id, answer in answers:
            entry = self.session.store.get_entry(entry_id)
            message = entry.message if isinstance(entry, MessageEntry) else None
            if isinstance(message, ToolResultMessage):
                calls = [message.tool_call_id]
            elif isinstance(message, AssistantMessage):
                calls = [c.id for c in message.tool_calls()]
            else:
                continue
            for call_id in calls:
                if call_id in self._titles:
                    reasons.setdefault(call_id, answer.reason)
        for call_id in [*self._kept_from_model, *(c for c in reasons if c not in self._kept_from_model)]:
            reason = reasons.get(call_id)
            if self._kept_from_model.get(call_id) == reason:
                continue
            title = self._titles[call_id]
            self.send(helpers.update_tool_call(call_id, title=f"{title} — {reason}" if reason else title))
            if reason is None:
                del self._kept_from_model[call_id]
            else:
                self._kept_from_model[call_id] = reason


def _read_local_text(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return None
