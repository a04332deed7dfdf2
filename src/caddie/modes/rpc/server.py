"""RPC mode's command handlers: ``RpcServer`` answers each command (``cmd_<type>``) with one ``response``
and forwards session events to the client."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from caddie.ai.messages import AssistantMessage, ImageContent, TextContent, content_from_json, message_to_json
from caddie.ai.model import THINKING_LEVELS, Model
from caddie.modes.rpc.ui import RpcUI, Write
from caddie.modes.rpc.wire import _compaction_result, model_json, rpc_event, tree_json
from caddie.modes.serialize import to_json
from caddie.runtime.session import AgentSession, SessionError
from caddie.session.entries import MessageEntry, entry_to_json

_NO_DATA = object()


def _text(request: dict[str, Any]) -> str:
    message = request.get("message")
    if not isinstance(message, str):
        raise ValueError("message must be a string")
    return message


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
        if s.sandbox.active:  # caddie-only, and only when on: a Pi client sees Pi's keys
            state["sandbox"] = s.sandbox.state()
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
