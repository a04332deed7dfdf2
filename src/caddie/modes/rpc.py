"""RPC mode (``--mode rpc``): Pi 0.84.4's JSONL protocol on stdin/stdout (see docs/rpc.md).

Each input line is ``{"id"?, "type": <command>, ...}``; each command gets one
``{"id"?, "type": "response", "command", "success", "data"? | "error"?}`` once it has done its work (a
``prompt`` once it was accepted: Pi's preflight). Session events stream as they happen. Extension dialogs
use the UI sub-protocol: ``{"type": "extension_ui_request", "id", "method", ...}`` answered by
``{"type": "extension_ui_response", "id", "value" | "confirmed" | "cancelled"}``.

Lines are split on LF only (never on U+2028/U+2029); a trailing CR is dropped. A line longer than the
reader's limit is answered with a ``parse`` error and skipped; the server keeps serving.

End of input (EOF) ends the process, as in Pi: open dialogs are answered "cancelled", running work (a
prompt's run, a compaction, a shell command) is aborted, commands still in flight answer with what really
happened (an aborted compaction fails with "Compaction cancelled"; a prompt not yet started is refused), the
session shuts down (``session_shutdown``) and the process exits 0. Work that does not stop within a bounded
grace is abandoned.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from caddie.ai.messages import AssistantMessage, ImageContent, TextContent, content_from_json, message_to_json
from caddie.ai.model import THINKING_LEVELS, Model
from caddie.extensions.api import NotifyLevel, WidgetPlacement
from caddie.modes.serialize import event_to_json, to_json
from caddie.runtime.session import AgentSession, SessionError
from caddie.session.entries import MessageEntry, entry_to_json
from caddie.session.store import TreeNode

Write = Callable[[dict[str, Any] | str], None]
"""Sends one record: a dict to encode, or a line already encoded (a tree too deep for ``json.dumps``)."""

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest command line the reader accepts; a longer one gets a ``parse`` error and is skipped."""
EOF_GRACE_S = 5.0
"""How long work in flight at EOF may take to wind down after it was aborted."""

_NO_DATA = object()


class RpcUI:
    """The extension UI over RPC: dialogs become requests the client answers."""

    def __init__(self, write: Write) -> None:
        self._write = write
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._closed = False

    def _fire(self, method: str, **fields: Any) -> None:
        self._write(
            {
                "type": "extension_ui_request",
                "id": str(uuid.uuid4()),
                "method": method,
                **{k: v for k, v in fields.items() if v is not None},
            }
        )

    async def _ask(self, method: str, timeout: float | None, **fields: Any) -> dict[str, Any] | None:
        if self._closed:
            return None
        request_id = str(uuid.uuid4())
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        payload: dict[str, Any] = {
            "type": "extension_ui_request",
            "id": request_id,
            "method": method,
            **{k: v for k, v in fields.items() if v is not None},
        }
        if timeout is not None:
            payload["timeout"] = int(timeout * 1000)
        self._write(payload)
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return None
        finally:
            self._pending.pop(request_id, None)

    def cancel_all(self) -> None:
        """stdin is gone: answer every open dialog "cancelled", and every later one at once."""
        self._closed = True
        for future in self._pending.values():
            if not future.done():
                future.set_result({"cancelled": True})

    def resolve(self, response: dict[str, Any]) -> bool:
        future = self._pending.get(str(response.get("id")))
        if future is None or future.done():
            return False
        future.set_result(response)
        return True

    def notify(self, message: str, level: NotifyLevel = "info") -> None:
        self._fire("notify", message=message, notifyType=level)

    def set_status(self, key: str, text: str | None) -> None:
        self._fire("setStatus", statusKey=key, statusText=text)

    def set_widget(
        self, key: str, lines: Sequence[str] | None, placement: WidgetPlacement = "aboveEditor"
    ) -> None:
        self._fire(
            "setWidget",
            widgetKey=key,
            widgetLines=list(lines) if lines is not None else None,
            widgetPlacement=placement,
        )

    def set_title(self, title: str) -> None:
        self._fire("setTitle", title=title)

    def set_editor_text(self, text: str) -> None:
        self._fire("set_editor_text", text=text)

    def get_editor_text(self) -> str:
        return ""  # the client owns the editor (Pi: always "")

    def set_working_message(self, message: str | None) -> None:
        pass

    async def confirm(self, title: str, message: str, timeout: float | None = None) -> bool:
        answer = await self._ask("confirm", timeout, title=title, message=message)
        return bool(answer and not answer.get("cancelled") and answer.get("confirmed") is True)

    async def select(self, title: str, options: Sequence[str], timeout: float | None = None) -> str | None:
        answer = await self._ask("select", timeout, title=title, options=list(options))
        return _value(answer)

    async def input(
        self, title: str, placeholder: str | None = None, timeout: float | None = None
    ) -> str | None:
        return _value(await self._ask("input", timeout, title=title, placeholder=placeholder))

    async def editor(self, title: str, prefill: str | None = None) -> str | None:
        return _value(await self._ask("editor", None, title=title, prefill=prefill))


def _value(answer: dict[str, Any] | None) -> str | None:
    if not answer or answer.get("cancelled"):
        return None
    value = answer.get("value")
    return value if isinstance(value, str) else None


def _text(request: dict[str, Any]) -> str:
    message = request.get("message")
    if not isinstance(message, str):
        raise ValueError("message must be a string")
    return message


def rpc_event(event: Any) -> dict[str, Any]:
    """A session event as Pi's RPC mode writes it: fields Pi leaves undefined are omitted, not null."""
    out = event_to_json(event)
    kind = out.get("type")
    if kind in ("turn_start", "turn_end"):  # Pi's turn events carry no index or time
        out.pop("turnIndex", None)
        out.pop("timestamp", None)
    elif kind in ("session_info_changed", "bash_execution_update"):
        out = {k: v for k, v in out.items() if v is not None}
    elif kind in ("tool_execution_update", "tool_execution_end"):
        for key in ("partialResult", "result"):
            value = out.get(key)
            if isinstance(value, dict) and value.get("details") is None:
                value.pop("details", None)
    elif kind == "compaction_end":
        if isinstance(out.get("result"), dict):
            out["result"] = _compaction_result(out["result"])
        if out.get("errorMessage") is None:
            out.pop("errorMessage", None)
    return out


def model_json(model: Model) -> dict[str, Any]:
    """A model as Pi serialises it: optional fields that are unset are left out."""
    data = to_json(model)
    return {k: v for k, v in data.items() if v is not None} if isinstance(data, dict) else data


def _compaction_result(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if v is not None or k == "details"}


class RpcServer:
    def __init__(
        self,
        session: AgentSession,
        ui: RpcUI,
        write: Write,
        find_model: Callable[[str, str], Model | None],
        has_auth: Callable[[Model], bool] = lambda _m: True,
        cli_extensions: Sequence[str] = (),
    ) -> None:
        self.cli_extensions = {str(Path(p).expanduser().resolve()) for p in cli_extensions}
        self.session = session
        self.ui = ui
        self.write = write
        self.find_model = find_model
        self.has_auth = has_auth
        self.tasks: set[asyncio.Task[Any]] = set()
        self.eof = False
        self._prompting = 0
        """Prompts between arrival and acceptance (a second one without streamingBehavior is refused)."""
        self._compaction_results: list[Any] = []
        session.subscribe(self._on_event)

    def _on_event(self, event: Any) -> None:
        if getattr(event, "type", None) == "compaction_end" and event.reason == "manual":
            self._compaction_results.append(event.result)
        self.write(rpc_event(event))

    def _respond(self, request: dict[str, Any], data: Any = _NO_DATA, error: str | None = None) -> None:
        out: dict[str, Any] = {"type": "response", "command": request.get("type"), "success": error is None}
        if "id" in request and request["id"] is not None:
            out = {"id": request["id"], **out}
        if error is not None:
            out["error"] = error
        elif data is not _NO_DATA:
            out["data"] = data
        self.write(out)

    async def _reply(self, request: dict[str, Any], data: Any = _NO_DATA, error: str | None = None) -> None:
        """The response, after every event the command caused (Pi emits those synchronously before it)."""
        await self.session.flush_events()
        self._respond(request, data, error)

    def spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self.tasks.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self.tasks.discard(t)
            if not t.cancelled() and t.exception() is not None:
                self.write({"type": "error", "error": f"{type(t.exception()).__name__}: {t.exception()}"})

        task.add_done_callback(done)

    async def handle(self, request: dict[str, Any]) -> None:
        kind = request.get("type")
        if kind == "extension_ui_response":
            self.ui.resolve(request)
            return
        handler = getattr(self, f"cmd_{kind}", None) if isinstance(kind, str) else None
        if handler is None:
            self._respond(request, error=f"Unknown command: {kind}")
            return
        try:
            await handler(request)
        except SessionError as e:
            self._respond(request, error=str(e))
        except (KeyError, ValueError, TypeError) as e:
            self._respond(request, error=f"Bad request: {e}")
        except (
            Exception
        ) as e:  # e.g. a compaction that cannot run: the client gets the sentence, the server lives
            self._respond(request, error=str(e) or type(e).__name__)

    # -- prompting --------------------------------------------------------------------------------------
    def _images(self, request: dict[str, Any]) -> list[ImageContent] | None:
        raw = request.get("images")
        if not raw:
            return None
        blocks = content_from_json(raw)
        return [b for b in blocks if isinstance(b, ImageContent)] if isinstance(blocks, list) else None

    async def cmd_prompt(self, request: dict[str, Any]) -> None:
        """Answered once the prompt was accepted (a command ran, it was queued, or its run is starting)
        or refused; what happens after acceptance arrives as events."""
        message = _text(request)
        behavior = {"followUp": "follow_up", "follow_up": "follow_up", "steer": "steer"}.get(
            request.get("streamingBehavior") or ""
        )
        answered = False
        counted = False
        command = self._is_command(message)

        def settle() -> None:
            nonlocal counted
            if counted:
                counted = False
                self._prompting -= 1

        def preflight(ok: bool) -> None:
            nonlocal answered
            if not ok or answered:
                return  # a refusal is answered from the exception below
            if self.eof and not command:  # a command has run by now; a run would only be aborted
                raise SessionError("Input ended before the prompt started; it was not run.")
            answered = True
            settle()
            self._respond(request)

        if self.session.is_compacting and not self._is_command(message):
            raise SessionError(
                "Cannot submit a prompt while compaction is in progress. Wait for compaction to finish and retry."
            )
        busy = self.session.is_streaming or self.session.is_compacting or self._prompting > 0
        if busy and behavior is None and not self._is_command(message):
            raise SessionError(
                "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the "
                "message."
            )
        self._prompting += 1
        counted = True
        try:
            await self.session.prompt(
                message,
                self._images(request),
                source="rpc",
                streaming_behavior=behavior,  # type: ignore[arg-type]
                preflight=preflight,
            )
        except Exception as e:
            if not answered:
                answered = True
                await self._reply(request, error=str(e) or type(e).__name__)
            else:  # failures after acceptance are events, never a second response
                self.write({"type": "error", "error": str(e) or type(e).__name__})
        finally:
            settle()

    def _is_command(self, message: str) -> bool:
        return message.startswith("/") and message[1:].partition(" ")[0] in self.session.runner.commands()

    async def cmd_steer(self, request: dict[str, Any]) -> None:
        self.session.steer(_text(request), self._images(request))
        await self._reply(request)

    async def cmd_follow_up(self, request: dict[str, Any]) -> None:
        self.session.follow_up(_text(request), self._images(request))
        await self._reply(request)

    async def cmd_abort(self, request: dict[str, Any]) -> None:
        await self.session.abort_and_wait()
        await self._reply(request)

    async def cmd_clear_queue(self, request: dict[str, Any]) -> None:
        steering, follow = self.session.clear_queues()
        await self._reply(request, {"steering": steering, "followUp": follow})

    # -- state ------------------------------------------------------------------------------------------
    async def cmd_get_state(self, request: dict[str, Any]) -> None:
        s = self.session
        state: dict[str, Any] = {}
        if s.model is not None:
            state["model"] = model_json(s.model)
        state.update(
            thinkingLevel=s.thinking_level,
            isStreaming=s.is_streaming,
            isCompacting=s.is_compacting,
            steeringMode=s.steering_mode,
            followUpMode=s.follow_up_mode,
        )
        if s.store.session_file is not None:
            state["sessionFile"] = s.store.session_file
        state["sessionId"] = s.store.session_id
        if (name := s.store.session_name()) is not None:
            state["sessionName"] = name
        state.update(
            autoCompactionEnabled=s.auto_compaction_enabled,
            messageCount=len(s.messages),
            pendingMessageCount=s.pending_message_count(),
        )
        await self._reply(request, state)

    async def cmd_get_messages(self, request: dict[str, Any]) -> None:
        await self._reply(request, {"messages": [message_to_json(m) for m in self.session.messages]})

    async def cmd_get_last_assistant_text(self, request: dict[str, Any]) -> None:
        for m in reversed(self.session.messages):
            if not isinstance(m, AssistantMessage) or (m.stop_reason == "aborted" and not m.content):
                continue
            text = "".join(b.text for b in m.content if isinstance(b, TextContent)).strip()
            await self._reply(request, {"text": text} if text else {})
            return
        await self._reply(request, {})

    # -- model and thinking -----------------------------------------------------------------------------
    async def cmd_set_model(self, request: dict[str, Any]) -> None:
        provider, model_id = request.get("provider"), request.get("modelId")
        model = self.find_model(str(provider), str(model_id))
        if model is None:
            raise SessionError(f"Model not found: {provider}/{model_id}")
        if not self.has_auth(model):
            raise SessionError(f"No API key for {model.provider}/{model.id}")
        await self.session.set_model(model)
        await self._reply(request, model_json(model))

    async def cmd_cycle_model(self, request: dict[str, Any]) -> None:
        result = await self.session.cycle_model("forward")
        if result is None:
            await self._reply(request, None)
            return
        model, level, scoped = result
        await self._reply(request, {"model": model_json(model), "thinkingLevel": level, "isScoped": scoped})

    async def cmd_get_available_models(self, request: dict[str, Any]) -> None:
        await self._reply(request, {"models": [model_json(m) for m in self.session.available_models()]})

    async def cmd_set_thinking_level(self, request: dict[str, Any]) -> None:
        level = request.get("level")
        if level not in THINKING_LEVELS:
            raise SessionError(f"Unknown thinking level {level!r}; use one of {', '.join(THINKING_LEVELS)}")
        self.session.set_thinking_level(str(level))
        await self._reply(request)

    async def cmd_cycle_thinking_level(self, request: dict[str, Any]) -> None:
        level = self.session.cycle_thinking_level()
        await self._reply(request, {"level": level} if level is not None else None)

    async def cmd_get_available_thinking_levels(self, request: dict[str, Any]) -> None:
        await self._reply(request, {"levels": self.session.available_thinking_levels()})

    # -- queue modes, compaction, retry ------------------------------------------------------------------
    async def cmd_set_steering_mode(self, request: dict[str, Any]) -> None:
        self.session.set_steering_mode(str(request.get("mode")))
        await self._reply(request)

    async def cmd_set_follow_up_mode(self, request: dict[str, Any]) -> None:
        self.session.set_follow_up_mode(str(request.get("mode")))
        await self._reply(request)

    async def cmd_compact(self, request: dict[str, Any]) -> None:
        compactor = self.session.compactor
        if compactor is None:
            raise SessionError("Compaction is not available in this session.")
        instructions = request.get("customInstructions")
        self._compaction_results.clear()
        entry = await compactor.compact("manual", instructions if isinstance(instructions, str) else None)
        result = self._compaction_results[-1] if self._compaction_results else None
        if entry is None or result is None:
            raise SessionError("Compaction cancelled")
        await self._reply(request, _compaction_result(to_json(result)))

    async def cmd_set_auto_compaction(self, request: dict[str, Any]) -> None:
        self.session.set_auto_compaction_enabled(_bool(request, "enabled"))
        await self._reply(request)

    async def cmd_set_auto_retry(self, request: dict[str, Any]) -> None:
        self.session.set_auto_retry_enabled(_bool(request, "enabled"))
        await self._reply(request)

    async def cmd_abort_retry(self, request: dict[str, Any]) -> None:
        self.session.abort_retry()
        await self._reply(request)

    # -- bash -------------------------------------------------------------------------------------------
    async def cmd_bash(self, request: dict[str, Any]) -> None:
        command = request.get("command")
        if not isinstance(command, str):
            raise ValueError("command must be a string")
        rid = request.get("id")
        message = await self.session.run_user_bash(
            command,
            bool(request.get("excludeFromContext")),
            request_id=str(rid) if rid is not None else None,
            announce=False,
        )
        data: dict[str, Any] = {"output": message.output}
        if message.exit_code is not None:
            data["exitCode"] = message.exit_code
        data.update(cancelled=message.cancelled, truncated=message.truncated)
        if message.full_output_path is not None:
            data["fullOutputPath"] = message.full_output_path
        await self._reply(request, data)

    async def cmd_abort_bash(self, request: dict[str, Any]) -> None:
        self.session.abort_bash()
        await self._reply(request)

    # -- session ----------------------------------------------------------------------------------------
    async def cmd_get_session_stats(self, request: dict[str, Any]) -> None:
        stats = self.session.session_stats()
        if stats.get("sessionFile") is None:
            stats.pop("sessionFile", None)
        await self._reply(request, stats)

    async def cmd_export_html(self, request: dict[str, Any]) -> None:
        from caddie.modes.export_html import export_session

        output = request.get("outputPath")
        path = await export_session(
            self.session.store, self.session.runner, output if isinstance(output, str) else None
        )
        await self._reply(request, {"path": str(path)})

    async def cmd_new_session(self, request: dict[str, Any]) -> None:
        parent = request.get("parentSession")
        done = await self.session.new_session(parent if isinstance(parent, str) else None, abort_running=True)
        await self._reply(request, {"cancelled": not done})

    async def cmd_switch_session(self, request: dict[str, Any]) -> None:
        path = request.get("sessionPath")
        if not isinstance(path, str) or not path:
            raise ValueError("sessionPath must be a path")
        done = await self.session.switch_session(path, abort_running=True)
        await self._reply(request, {"cancelled": not done})

    async def cmd_fork(self, request: dict[str, Any]) -> None:
        entry_id = request.get("entryId")
        entry = self.session.store.get_entry(str(entry_id))
        if (
            not isinstance(entry, MessageEntry)
            or getattr(entry.message, "role", None) != "user"
            or not isinstance(entry_id, str)
        ):
            raise SessionError("Invalid entry ID for forking")
        text = _user_text(entry.message)
        done = await self.session.fork(entry_id, position="before", abort_running=True)
        await self._reply(request, {"text": text, "cancelled": False} if done else {"cancelled": True})

    async def cmd_clone(self, request: dict[str, Any]) -> None:
        leaf = self.session.store.leaf_id
        if leaf is None:
            raise SessionError("Cannot clone session: no current entry selected")
        done = await self.session.fork(leaf, position="at", abort_running=True)
        await self._reply(request, {"cancelled": not done})

    async def cmd_get_fork_messages(self, request: dict[str, Any]) -> None:
        messages = [{"entryId": i, "text": t} for i, t in self.session.user_messages_for_forking()]
        await self._reply(request, {"messages": messages})

    async def cmd_get_entries(self, request: dict[str, Any]) -> None:
        entries = self.session.store.entries()
        if "since" in request:
            since = request["since"]
            index = next((i for i, e in enumerate(entries) if e.id == since), None)
            if index is None:
                raise SessionError(f"Entry not found: {since}")
            entries = entries[index + 1 :]
        await self._reply(
            request,
            {"entries": [entry_to_json(e) for e in entries], "leafId": self.session.store.leaf_id},
        )

    async def cmd_get_tree(self, request: dict[str, Any]) -> None:
        store = self.session.store
        times: dict[str, str] = getattr(store, "_label_times", {})
        await self.session.flush_events()
        # A long session is a chain thousands of entries deep: encoded without recursion, then spliced into
        # the response (json.dumps stops at ~1,000 levels).
        marker = f"\u0000tree-{uuid.uuid4().hex}\u0000"
        out: dict[str, Any] = {"type": "response", "command": "get_tree", "success": True}
        if "id" in request:
            out = {"id": request["id"], **out}
        out["data"] = {"tree": marker, "leafId": store.leaf_id}
        line = json.dumps(out, ensure_ascii=False, separators=(",", ":"))
        self.write(line.replace(json.dumps(marker), tree_json(store.tree(), times), 1))

    async def cmd_set_session_name(self, request: dict[str, Any]) -> None:
        name = request.get("name")
        if not isinstance(name, str):
            raise ValueError("name must be a string")
        if not name.strip():
            raise SessionError("Session name cannot be empty")
        self.session.set_session_name(name.strip())
        await self._reply(request)

    def _source_info(self, path: str) -> dict[str, Any]:
        """Pi's ``sourceInfo`` for the extension loaded from ``path``."""
        info: dict[str, Any] = {"path": path}
        if path.startswith(("bundled:", "entry-point:")):
            info.update(source=path.partition(":")[0].replace("bundled", "builtin"), scope="temporary")
        elif str(Path(path).resolve()) in self.cli_extensions:
            info.update(source="cli", scope="temporary")
        else:
            project = Path(self.session.cwd).resolve()
            scope = "project" if Path(path).resolve().is_relative_to(project) else "user"
            info.update(source="local", scope=scope)
        info["origin"] = "top-level"
        if info["source"] == "local":
            info["baseDir"] = str(Path(path).parent)
        return info

    async def cmd_get_commands(self, request: dict[str, Any]) -> None:
        commands: list[dict[str, Any]] = []
        for name, spec in self.session.runner.commands().items():
            item: dict[str, Any] = {"name": name}
            if spec.description is not None:
                item["description"] = spec.description
            item["source"] = "extension"
            item["sourceInfo"] = self._source_info(spec.source)
            commands.append(item)
        resources = self.session.resources
        named = [(t.name, t.description, "prompt", t.file_path) for t in resources.prompts]
        named += [(f"skill:{k.name}", k.description, "skill", k.file_path) for k in resources.skills]
        for name, description, source, path in named:
            commands.append(
                {
                    "name": name,
                    "description": description,
                    "source": source,
                    "sourceInfo": self._source_info(path),
                }
            )
        await self._reply(request, {"commands": commands})


def _bool(request: dict[str, Any], key: str) -> bool:
    value = request.get(key)
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false")
    return value


def _user_text(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b.text for b in content if isinstance(b, TextContent))


# -- input ------------------------------------------------------------------------------------------------


class LineTooLong:
    """Stands in for a line that exceeded the reader's limit (it was skipped)."""

    def __init__(self, size: int) -> None:
        self.size = size


async def _chunks(stdin: Any) -> AsyncIterator[bytes]:
    """Raw stdin chunks; pipes and sockets through the event loop, regular files through a thread."""
    loop = asyncio.get_running_loop()
    try:
        reader = asyncio.StreamReader(limit=1 << 20)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    except ValueError:  # a regular file (``caddie --mode rpc < commands.jsonl``)
        binary = getattr(stdin, "buffer", stdin)
        fd = binary.fileno() if hasattr(binary, "fileno") else None
        read = (lambda: os.read(fd, 1 << 20)) if fd is not None else (lambda: binary.read(1 << 20))
        while chunk := await asyncio.to_thread(read):
            yield chunk
        return
    while chunk := await reader.read(1 << 20):
        yield chunk


async def _lines(stdin: Any, max_line_bytes: int = MAX_LINE_BYTES) -> AsyncIterator[bytes | LineTooLong]:
    """Lines split on LF only. A line over ``max_line_bytes`` is dropped as it streams in (memory stays
    bounded) and reported once as ``LineTooLong``; the next line is read normally."""
    buffer = bytearray()
    skipping = 0  # bytes of an over-long line dropped so far (0: not skipping)
    async for chunk in _chunks(stdin):
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            piece = chunk[start:] if newline < 0 else chunk[start:newline]
            if skipping:
                skipping += len(piece)
            else:
                buffer += piece
                if len(buffer) > max_line_bytes:
                    skipping = len(buffer)
                    buffer.clear()
            if newline < 0:
                break
            if skipping:
                yield LineTooLong(skipping)
                skipping = 0
            else:
                yield bytes(buffer)
                buffer.clear()
            start = newline + 1
    if skipping:
        yield LineTooLong(skipping)
    elif buffer:
        yield bytes(buffer)


async def run_rpc(
    session: AgentSession,
    ui: RpcUI,
    find_model: Callable[[str, str], Model | None],
    start: Callable[[], Awaitable[None]],
    stdin: BinaryIO | None = None,
    *,
    has_auth: Callable[[Model], bool] = lambda _m: True,
    cli_extensions: Sequence[str] = (),
    max_line_bytes: int = MAX_LINE_BYTES,
    eof_grace_s: float = EOF_GRACE_S,
) -> int:
    """Serve commands until stdin ends. ``start`` (the session's ``session_start``) runs once the reader is
    up, so an extension may open a dialog from it. Every command runs as its own task: a command waiting
    for a dialog answer, a compaction or a shell command never blocks ``abort`` or the dialog's answer."""
    write = ui._write
    server = RpcServer(session, ui, write, find_model, has_auth, cli_extensions)
    shutdown = asyncio.Event()
    session.on_shutdown = shutdown.set  # ctx.shutdown(): called once the session is idle
    starting = asyncio.ensure_future(start())
    async for line in _until(_lines(stdin or sys.stdin, max_line_bytes), shutdown):
        if isinstance(line, LineTooLong):
            write(
                {
                    "type": "response",
                    "command": "parse",
                    "success": False,
                    "error": f"Failed to parse command: the line is {line.size} bytes, over the "
                    f"{max_line_bytes}-byte limit; it was skipped",
                }
            )
            continue
        text = line.decode("utf-8", "replace")
        if text.endswith("\r"):
            text = text[:-1]
        if not text.strip():
            continue
        try:
            request = json.loads(text)
        except json.JSONDecodeError as e:
            write(
                {
                    "type": "response",
                    "command": "parse",
                    "success": False,
                    "error": f"Failed to parse command: {e}",
                }
            )
            continue
        if not isinstance(request, dict):
            write(
                {
                    "type": "response",
                    "command": "parse",
                    "success": False,
                    "error": "Failed to parse command: each line must be a JSON object",
                }
            )
            continue
        if request.get("type") == "extension_ui_response":
            ui.resolve(request)
        else:
            server.spawn(_after(starting, server.handle(request)))
    if shutdown.is_set():  # graceful: the commands in flight answer first (Pi: after the current response)
        pending = [t for t in server.tasks if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=eof_grace_s)
    await _wind_down(server, starting, eof_grace_s)
    return 0


async def _until(
    lines: AsyncIterator[bytes | LineTooLong], stop: asyncio.Event
) -> AsyncIterator[bytes | LineTooLong]:
    """``lines`` until they end or ``stop`` is set (an extension's ``ctx.shutdown()``)."""
    iterator = aiter(lines)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        while True:
            following = asyncio.ensure_future(anext(iterator))
            await asyncio.wait({following, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if not following.done():
                following.cancel()
                with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                    await following
                return
            try:
                line = following.result()
            except StopAsyncIteration:
                return
            yield line
    finally:
        stopped.cancel()


async def _wind_down(server: RpcServer, starting: asyncio.Future[None], grace_s: float) -> None:
    """EOF: nobody is left to answer a dialog or to send ``abort``. Cancel the dialogs, abort the running
    work (again whenever something new started), and give what is in flight ``grace_s`` to answer."""
    server.eof = True
    server.ui.cancel_all()
    session = server.session
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_s
    while True:
        session.abort()
        session.abort_bash()
        pending = [t for t in server.tasks if not t.done()]
        if not starting.done():
            pending.append(starting)  # type: ignore[arg-type]
        if not pending:
            break
        left = deadline - loop.time()
        if left <= 0:
            for task in pending:
                task.cancel()
            break
        await asyncio.wait(pending, timeout=min(0.05, left))
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(session.wait_until_run_ends(), max(0.1, deadline - loop.time()))


async def _after(first: asyncio.Future[None], then: Awaitable[None]) -> None:
    """Run ``then`` once the session has started (commands that arrive during start-up wait for it)."""
    with contextlib.suppress(Exception):  # a failing session_start handler was reported already
        await asyncio.shield(first)
    await then


def tree_json(roots: Sequence[TreeNode], label_times: dict[str, str]) -> str:
    """Pi's ``get_tree`` nodes (``entry``, ``children``, ``label``, ``labelTimestamp``) as JSON text, built
    with an explicit stack so depth costs no recursion."""

    def dumps(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    parts = ["["]
    stack: list[tuple[Iterator[TreeNode], str, list[bool]]] = [(iter(roots), "]", [True])]
    while stack:
        children, closing, first = stack[-1]
        node = next(children, None)
        if node is None:
            stack.pop()
            parts.append(closing)
            continue
        if not first[0]:
            parts.append(",")
        first[0] = False
        tail: dict[str, Any] = {}
        if node.label is not None:
            tail["label"] = node.label
            if node.entry.id in label_times:
                tail["labelTimestamp"] = label_times[node.entry.id]
        parts.append(dumps({"entry": entry_to_json(node.entry)})[:-1] + ',"children":[')
        stack.append((iter(node.children), "]" + ("," + dumps(tail)[1:] if tail else "}"), [True]))
    return "".join(parts)
