"""RPC mode (``--mode rpc``): JSONL commands on stdin, responses and events on stdout.

Each input line is ``{"id"?, "type": <command>, ...}``; each command gets one
``{"id"?, "type": "response", "command", "success", "data"? | "error"?}``. Session events stream as they
happen. Extension dialogs use the UI sub-protocol: ``{"type": "extension_ui_request", "id", "method", ...}``
answered by ``{"type": "extension_ui_response", "id", "value" | "confirmed" | "cancelled"}``.
Lines are split on LF only (never on U+2028/U+2029).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, BinaryIO

from caddie.ai.messages import AssistantMessage, ImageContent, content_from_json, message_to_json
from caddie.ai.model import THINKING_LEVELS
from caddie.extensions.api import NotifyLevel, WidgetPlacement
from caddie.modes.serialize import event_to_json, to_json
from caddie.runtime.session import AgentSession, SessionError
from caddie.session.entries import entry_to_json
from caddie.session.store import TreeNode

Write = Callable[[dict[str, Any]], None]


class RpcUI:
    """The extension UI over RPC: dialogs become requests the client answers."""

    def __init__(self, write: Write) -> None:
        self._write = write
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._closed = False
        self.editor_text = ""

    def _fire(self, method: str, **fields: Any) -> None:
        self._write({"type": "extension_ui_request", "id": str(uuid.uuid4()), "method": method, **fields})

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
            **fields,
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
        self.editor_text = text
        self._fire("set_editor_text", text=text)

    def get_editor_text(self) -> str:
        return self.editor_text

    def set_working_message(self, message: str | None) -> None:
        pass

    async def confirm(self, title: str, message: str, timeout: float | None = None) -> bool:
        answer = await self._ask("confirm", timeout, title=title, message=message)
        return bool(answer and answer.get("confirmed"))

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
    message = request["message"]
    if not isinstance(message, str):
        raise ValueError("message must be a string")
    return message


def _tree_json(nodes: list[TreeNode]) -> list[dict[str, Any]]:
    return [
        {"entry": entry_to_json(n.entry), "label": n.label, "children": _tree_json(n.children)} for n in nodes
    ]


class RpcServer:
    def __init__(
        self, session: AgentSession, ui: RpcUI, write: Write, find_model: Callable[[str, str], Any]
    ) -> None:
        self.session = session
        self.ui = ui
        self.write = write
        self.find_model = find_model
        self.tasks: set[asyncio.Task[Any]] = set()
        session.subscribe(lambda event: write(event_to_json(event)))

    def _respond(self, request: dict[str, Any], data: Any = None, error: str | None = None) -> None:
        out: dict[str, Any] = {"type": "response", "command": request.get("type"), "success": error is None}
        if "id" in request:
            out = {"id": request["id"], **out}
        if error is not None:
            out["error"] = error
        elif data is not None:
            out["data"] = data
        self.write(out)

    def _background(self, work: Awaitable[Any]) -> None:
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

    # -- commands ---------------------------------------------------------------------------------------
    def _images(self, request: dict[str, Any]) -> list[ImageContent] | None:
        raw = request.get("images")
        if not raw:
            return None
        blocks = content_from_json(raw)
        return [b for b in blocks if isinstance(b, ImageContent)] if isinstance(blocks, list) else None

    async def cmd_prompt(self, request: dict[str, Any]) -> None:
        message = request["message"]
        if not isinstance(message, str):
            raise ValueError("message must be a string")
        if self.session.model is None and not self._is_command(message):
            raise SessionError(
                "No model is configured: send set_model first (get_available_models lists them)."
            )
        behavior = request.get("streamingBehavior")
        behavior = {"followUp": "follow_up", "follow_up": "follow_up", "steer": "steer"}.get(behavior or "")
        if self.session.is_streaming and behavior is None and not message.startswith("/"):
            raise SessionError(
                "The agent is working: send streamingBehavior 'steer' or 'followUp' to queue the message."
            )
        self._respond(request)
        self._background(self._run_prompt(message, self._images(request), behavior))

    def _is_command(self, message: str) -> bool:
        return message.startswith("/") and message[1:].partition(" ")[0] in self.session.runner.commands()

    async def _run_prompt(self, message: str, images: list[ImageContent] | None, behavior: Any) -> None:
        try:
            await self.session.prompt(message, images, source="rpc", streaming_behavior=behavior)
        except SessionError as e:
            self.write({"type": "error", "error": str(e)})

    async def cmd_steer(self, request: dict[str, Any]) -> None:
        self.session.steer(_text(request), self._images(request))
        self._respond(request)

    async def cmd_follow_up(self, request: dict[str, Any]) -> None:
        self.session.follow_up(_text(request), self._images(request))
        self._respond(request)

    async def cmd_abort(self, request: dict[str, Any]) -> None:
        self.session.abort()
        self._respond(request)

    async def cmd_clear_queue(self, request: dict[str, Any]) -> None:
        steering, follow = self.session.clear_queues()
        self._respond(request, {"steering": steering, "followUp": follow})

    async def cmd_get_state(self, request: dict[str, Any]) -> None:
        s = self.session
        model = s.model
        self._respond(
            request,
            {
                "model": to_json(model) if model else None,
                "thinkingLevel": s.thinking_level,
                "isStreaming": s.is_streaming,
                "sessionFile": s.store.session_file,
                "sessionId": s.store.session_id,
                "sessionName": s.store.session_name(),
                "messageCount": len(s.messages),
                "pendingMessageCount": s.pending_message_count(),
                "activeTools": s.get_active_tools(),
            },
        )

    async def cmd_get_messages(self, request: dict[str, Any]) -> None:
        self._respond(request, {"messages": [message_to_json(m) for m in self.session.messages]})

    async def cmd_get_last_assistant_text(self, request: dict[str, Any]) -> None:
        text = next(
            (m.text() for m in reversed(self.session.messages) if isinstance(m, AssistantMessage)), None
        )
        self._respond(request, {"text": text})

    async def cmd_set_model(self, request: dict[str, Any]) -> None:
        model = self.find_model(request["provider"], request["modelId"])
        if model is None:
            raise SessionError(f"Unknown model {request['provider']}/{request['modelId']}")
        await self.session.set_model(model)
        self._respond(request, to_json(model))

    async def cmd_set_thinking_level(self, request: dict[str, Any]) -> None:
        level = request["level"]
        if level not in THINKING_LEVELS:
            raise SessionError(f"Unknown thinking level {level!r}; use one of {', '.join(THINKING_LEVELS)}")
        self.session.set_thinking_level(level)
        self._respond(request, {"level": self.session.thinking_level})

    async def cmd_get_available_thinking_levels(self, request: dict[str, Any]) -> None:
        self._respond(request, {"levels": list(THINKING_LEVELS)})

    async def cmd_new_session(self, request: dict[str, Any]) -> None:
        await self.session.new_session(request.get("parentSession"))
        self._respond(request, {"cancelled": False})

    async def cmd_switch_session(self, request: dict[str, Any]) -> None:
        await self.session.switch_session(request["sessionPath"])
        self._respond(request, {"cancelled": False})

    async def cmd_fork(self, request: dict[str, Any]) -> None:
        await self.session.fork(request["entryId"])
        self._respond(request, {"cancelled": False})

    async def cmd_compact(self, request: dict[str, Any]) -> None:
        compactor = self.session.compactor
        if compactor is None:
            raise SessionError("Compaction is not available in this session.")
        entry = await compactor.compact(self.session, "manual", request.get("customInstructions"))
        self._respond(request, entry_to_json(entry) if entry is not None else None)

    async def cmd_get_entries(self, request: dict[str, Any]) -> None:
        entries = self.session.store.entries()
        since = request.get("since")
        if isinstance(since, str):
            ids = [e.id for e in entries]
            entries = entries[ids.index(since) + 1 :] if since in ids else entries
        self._respond(request, {"entries": [entry_to_json(e) for e in entries]})

    async def cmd_get_tree(self, request: dict[str, Any]) -> None:
        self._respond(
            request, {"tree": _tree_json(self.session.store.tree()), "leafId": self.session.store.leaf_id}
        )

    async def cmd_set_session_name(self, request: dict[str, Any]) -> None:
        self.session.set_session_name(str(request["name"]))
        self._respond(request)

    async def cmd_get_commands(self, request: dict[str, Any]) -> None:
        commands = [
            {"name": name, "description": spec.description, "source": "extension"}
            for name, spec in self.session.runner.commands().items()
        ]
        commands += [
            {"name": name, "description": description, "source": source.split(" · ")[0]}
            for name, description, source in self.session.resource_commands()
        ]
        self._respond(request, {"commands": commands})

    async def cmd_get_session_stats(self, request: dict[str, Any]) -> None:
        usage = self.session.get_context_usage()
        totals = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "cost": 0.0}
        for m in self.session.messages:
            if isinstance(m, AssistantMessage):
                totals["input"] += m.usage.input
                totals["output"] += m.usage.output
                totals["cacheRead"] += m.usage.cache_read
                totals["cacheWrite"] += m.usage.cache_write
                totals["cost"] += m.usage.cost.total
        self._respond(
            request,
            {
                "sessionId": self.session.store.session_id,
                "messages": len(self.session.messages),
                "tokens": totals,
                "contextUsage": to_json(usage) if usage else None,
            },
        )

    async def cmd_bash(self, request: dict[str, Any]) -> None:
        message = await self.session.run_user_bash(
            str(request["command"]), bool(request.get("excludeFromContext"))
        )
        self._respond(request, message_to_json(message))


async def _lines(stdin: Any) -> AsyncIterator[bytes]:
    """Lines of stdin, split on LF only; works for pipes and sockets (event loop) and files (a thread)."""
    loop = asyncio.get_running_loop()
    try:
        reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    except ValueError:  # a regular file (``caddie --mode rpc < commands.jsonl``)
        binary = getattr(stdin, "buffer", stdin)
        while line := await asyncio.to_thread(binary.readline):
            yield line
        return
    while line := await reader.readline():
        yield line


async def run_rpc(
    session: AgentSession,
    ui: RpcUI,
    find_model: Callable[[str, str], Any],
    start: Callable[[], Awaitable[None]],
    stdin: BinaryIO | None = None,
) -> int:
    """Serve commands until stdin ends. ``start`` (the session's ``session_start``) runs once the reader is
    up, so an extension may open a dialog from it. Every command runs as its own task: a command waiting
    for a dialog answer, a compaction or a shell command never blocks ``abort`` or the dialog's answer."""
    server = RpcServer(session, ui, ui._write, find_model)
    starting = asyncio.ensure_future(start())
    async for line in _lines(stdin or sys.stdin):
        text = line.decode("utf-8", "replace").rstrip("\r\n")
        if not text.strip():
            continue
        try:
            request = json.loads(text)
        except json.JSONDecodeError as e:
            ui._write({"type": "response", "success": False, "error": f"Invalid JSON: {e.msg}"})
            continue
        if not isinstance(request, dict):
            ui._write({"type": "response", "success": False, "error": "Each line must be a JSON object"})
            continue
        if request.get("type") == "extension_ui_response":
            ui.resolve(request)
        else:
            server._background(_after(starting, server.handle(request)))
    ui.cancel_all()  # nobody is left to answer a dialog
    session.abort()
    await asyncio.gather(starting, *server.tasks, return_exceptions=True)
    await session.wait_for_idle()
    return 0


async def _after(first: asyncio.Future[None], then: Awaitable[None]) -> None:
    """Run ``then`` once the session has started (commands that arrive during start-up wait for it)."""
    with contextlib.suppress(Exception):  # a failing session_start handler was reported already
        await asyncio.shield(first)
    await then
