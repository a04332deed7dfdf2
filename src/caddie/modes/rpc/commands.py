"""RPC mode's commands, one function per command ``type`` (``COMMANDS``), each on the session API.

A handler answers its request once (``rpc.reply``); a ``UsageError`` it raises becomes the error response
(``RpcServer.handle``). Names and shapes are Pi 0.84.4's (docs/rpc.md).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from caddie.ai.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    UserMessage,
    content_from_json,
    message_to_json,
    text_of,
)
from caddie.ai.model import THINKING_LEVELS
from caddie.errors import UsageError
from caddie.modes.rpc.server import RpcServer
from caddie.modes.rpc.wire import compaction_result_json, model_json, stats_json, tree_json
from caddie.modes.serialize import to_json
from caddie.runtime.session_api import QueueMode
from caddie.session.entries import MessageEntry, entry_to_json

Request = dict[str, Any]
Command = Callable[[RpcServer, Request], Awaitable[None]]


def _text(request: Request) -> str:
    message = request.get("message")
    if not isinstance(message, str):
        raise ValueError("message must be a string")
    return message


def _bool(request: Request, key: str) -> bool:
    value = request.get(key)
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false")
    return value


def _queue_mode(request: Request, label: str) -> QueueMode:
    mode = request.get("mode")
    if mode == "all":
        return "all"
    if mode == "one-at-a-time":
        return "one-at-a-time"
    raise UsageError(f"Unknown {label} mode {str(mode)!r}; use 'all' or 'one-at-a-time'.")


def _images(request: Request) -> list[ImageContent] | None:
    raw = request.get("images")
    if not raw:
        return None
    blocks = content_from_json(raw)
    return [b for b in blocks if isinstance(b, ImageContent)] if isinstance(blocks, list) else None


def _user_text(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b.text for b in content if isinstance(b, TextContent))


# -- prompting --------------------------------------------------------------------------------------------
async def prompt(rpc: RpcServer, request: Request) -> None:
    """Answered once the prompt was accepted (a command ran, it was queued, or its run is starting) or
    refused; what happens after acceptance arrives as events."""
    session = rpc.session
    message = _text(request)
    behavior = {"followUp": "follow_up", "follow_up": "follow_up", "steer": "steer"}.get(
        request.get("streamingBehavior") or ""
    )
    answered = False
    counted = False
    command = rpc.is_command(message)

    def settle() -> None:
        nonlocal counted
        if counted:
            counted = False
            rpc.prompting -= 1

    def preflight(ok: bool) -> None:
        nonlocal answered
        if not ok or answered:
            return  # a refusal is answered from the exception below
        if rpc.eof and not command:  # a command has run by now; a run would only be aborted
            raise UsageError("Input ended before the prompt started; it was not run.")
        answered = True
        settle()
        rpc.respond(request)

    state = session.state()
    if state.is_compacting and not command:
        raise UsageError(
            "Cannot submit a prompt while compaction is in progress. Wait for compaction to finish and retry."
        )
    busy = state.is_streaming or state.is_compacting or rpc.prompting > 0
    if busy and behavior is None and not command:
        raise UsageError(
            "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the "
            "message."
        )
    rpc.prompting += 1
    counted = True
    try:
        await session.prompt(
            message,
            _images(request),
            source="rpc",
            streaming_behavior=behavior,  # type: ignore[arg-type]
            preflight=preflight,
        )
    except Exception as e:
        if not answered:
            answered = True
            await rpc.reply(request, error=str(e) or type(e).__name__)
        else:  # failures after acceptance are events, never a second response
            rpc.write({"type": "error", "error": str(e) or type(e).__name__})
    finally:
        settle()


async def steer(rpc: RpcServer, request: Request) -> None:
    rpc.session.steer(_text(request), _images(request))
    await rpc.reply(request)


async def follow_up(rpc: RpcServer, request: Request) -> None:
    rpc.session.follow_up(_text(request), _images(request))
    await rpc.reply(request)


async def abort(rpc: RpcServer, request: Request) -> None:
    rpc.session.abort()
    await rpc.session.wait_for_idle(background=False)
    await rpc.reply(request)


async def clear_queue(rpc: RpcServer, request: Request) -> None:
    steering, follow = rpc.session.clear_queues()
    await rpc.reply(request, {"steering": steering, "followUp": follow})


# -- state ------------------------------------------------------------------------------------------------
async def get_state(rpc: RpcServer, request: Request) -> None:
    s = rpc.session.state()
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
    if s.session_file is not None:
        state["sessionFile"] = s.session_file
    state["sessionId"] = s.session_id
    if s.session_name is not None:
        state["sessionName"] = s.session_name
    state.update(
        autoCompactionEnabled=s.auto_compaction,
        messageCount=s.message_count,
        pendingMessageCount=s.pending_message_count,
    )
    if s.sandbox.active:  # caddie-only, and only when on: a Pi client sees Pi's keys
        state["sandbox"] = s.sandbox.state()
    await rpc.reply(request, state)


async def get_messages(rpc: RpcServer, request: Request) -> None:
    await rpc.reply(request, {"messages": [message_to_json(m) for m in rpc.session.messages]})


async def get_last_assistant_text(rpc: RpcServer, request: Request) -> None:
    for m in reversed(rpc.session.messages):
        if not isinstance(m, AssistantMessage) or (m.stop_reason == "aborted" and not m.content):
            continue
        text = "".join(b.text for b in m.content if isinstance(b, TextContent)).strip()
        await rpc.reply(request, {"text": text} if text else {})
        return
    await rpc.reply(request, {})


# -- model and thinking -----------------------------------------------------------------------------------
async def set_model(rpc: RpcServer, request: Request) -> None:
    provider, model_id = request.get("provider"), request.get("modelId")
    model = rpc.find_model(str(provider), str(model_id))
    if model is None:
        raise UsageError(f"Model not found: {provider}/{model_id}")
    if not rpc.has_auth(model):
        raise UsageError(f"No API key for {model.provider}/{model.id}")
    await rpc.session.set_model(model)
    await rpc.reply(request, model_json(model))


async def cycle_model(rpc: RpcServer, request: Request) -> None:
    cycled = await rpc.session.cycle_model("forward")
    if cycled is None:
        await rpc.reply(request, None)
        return
    data = {
        "model": model_json(cycled.model),
        "thinkingLevel": cycled.thinking_level,
        "isScoped": cycled.scoped,
    }
    await rpc.reply(request, data)


async def get_available_models(rpc: RpcServer, request: Request) -> None:
    await rpc.reply(request, {"models": [model_json(m) for m in rpc.session.available_models()]})


async def set_thinking_level(rpc: RpcServer, request: Request) -> None:
    level = request.get("level")
    if level not in THINKING_LEVELS:
        raise UsageError(f"Unknown thinking level {level!r}; use one of {', '.join(THINKING_LEVELS)}")
    rpc.session.set_thinking_level(str(level))
    await rpc.reply(request)


async def cycle_thinking_level(rpc: RpcServer, request: Request) -> None:
    level = rpc.session.cycle_thinking_level()
    await rpc.reply(request, {"level": level} if level is not None else None)


async def get_available_thinking_levels(rpc: RpcServer, request: Request) -> None:
    await rpc.reply(request, {"levels": rpc.session.state().thinking_levels})


# -- queue modes, compaction, retry -----------------------------------------------------------------------
async def set_steering_mode(rpc: RpcServer, request: Request) -> None:
    rpc.session.configure(steering_mode=_queue_mode(request, "steering"))
    await rpc.reply(request)


async def set_follow_up_mode(rpc: RpcServer, request: Request) -> None:
    rpc.session.configure(follow_up_mode=_queue_mode(request, "follow-up"))
    await rpc.reply(request)


async def compact(rpc: RpcServer, request: Request) -> None:
    instructions = request.get("customInstructions")
    result = await rpc.session.compact(instructions if isinstance(instructions, str) else None)
    await rpc.reply(request, compaction_result_json(to_json(result)))


async def set_auto_compaction(rpc: RpcServer, request: Request) -> None:
    rpc.session.configure(auto_compaction=_bool(request, "enabled"))
    await rpc.reply(request)


async def set_auto_retry(rpc: RpcServer, request: Request) -> None:
    rpc.session.configure(auto_retry=_bool(request, "enabled"))
    await rpc.reply(request)


async def abort_retry(rpc: RpcServer, request: Request) -> None:
    rpc.session.abort("retry")
    await rpc.reply(request)


# -- bash -------------------------------------------------------------------------------------------------
async def bash(rpc: RpcServer, request: Request) -> None:
    command = request.get("command")
    if not isinstance(command, str):
        raise ValueError("command must be a string")
    rid = request.get("id")
    message = await rpc.session.run_bash(
        command,
        exclude_from_context=bool(request.get("excludeFromContext")),
        request_id=str(rid) if rid is not None else None,
        announce=False,
    )
    data: dict[str, Any] = {"output": message.output}
    if message.exit_code is not None:
        data["exitCode"] = message.exit_code
    data.update(cancelled=message.cancelled, truncated=message.truncated)
    if message.full_output_path is not None:
        data["fullOutputPath"] = message.full_output_path
    await rpc.reply(request, data)


async def abort_bash(rpc: RpcServer, request: Request) -> None:
    rpc.session.abort("bash")
    await rpc.reply(request)


# -- session ----------------------------------------------------------------------------------------------
async def get_session_stats(rpc: RpcServer, request: Request) -> None:
    await rpc.reply(request, stats_json(rpc.session.stats()))


async def export_html(rpc: RpcServer, request: Request) -> None:
    from caddie.modes.export_html import export_session
    from caddie.modes.theme_files import settings_export_colours

    output = request.get("outputPath")
    session = rpc.session
    colours = await asyncio.to_thread(settings_export_colours, session)  # the settings' theme's, as Pi's
    path = await export_session(
        session.store, session.extensions, output if isinstance(output, str) else None, colours=colours
    )
    await rpc.reply(request, {"path": str(path)})


async def new_session(rpc: RpcServer, request: Request) -> None:
    parent = request.get("parentSession")
    done = await rpc.session.new_session(parent if isinstance(parent, str) else None, abort_running=True)
    await rpc.reply(request, {"cancelled": not done})


async def switch_session(rpc: RpcServer, request: Request) -> None:
    path = request.get("sessionPath")
    if not isinstance(path, str) or not path:
        raise ValueError("sessionPath must be a path")
    done = await rpc.session.switch_session(path, abort_running=True)
    await rpc.reply(request, {"cancelled": not done})


async def fork(rpc: RpcServer, request: Request) -> None:
    entry_id = request.get("entryId")
    entry = rpc.session.store.get_entry(str(entry_id))
    if (
        not isinstance(entry, MessageEntry)
        or getattr(entry.message, "role", None) != "user"
        or not isinstance(entry_id, str)
    ):
        raise UsageError("Invalid entry ID for forking")
    text = _user_text(entry.message)
    done = await rpc.session.fork(entry_id, position="before", abort_running=True)
    await rpc.reply(request, {"text": text, "cancelled": False} if done else {"cancelled": True})


async def clone(rpc: RpcServer, request: Request) -> None:
    leaf = rpc.session.store.leaf_id
    if leaf is None:
        raise UsageError("Cannot clone session: no current entry selected")
    done = await rpc.session.fork(leaf, position="at", abort_running=True)
    await rpc.reply(request, {"cancelled": not done})


async def get_fork_messages(rpc: RpcServer, request: Request) -> None:
    """Every user message of the session file, in order (Pi's fork selector)."""
    messages = []
    for entry in rpc.session.store.entries():
        if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage):
            text = text_of(entry.message.content)
            if text:
                messages.append({"entryId": entry.id, "text": text})
    await rpc.reply(request, {"messages": messages})


async def get_entries(rpc: RpcServer, request: Request) -> None:
    store = rpc.session.store
    entries = store.entries()
    if "since" in request:
        since = request["since"]
        index = next((i for i, e in enumerate(entries) if e.id == since), None)
        if index is None:
            raise UsageError(f"Entry not found: {since}")
        entries = entries[index + 1 :]
    await rpc.reply(request, {"entries": [entry_to_json(e) for e in entries], "leafId": store.leaf_id})


async def get_tree(rpc: RpcServer, request: Request) -> None:
    store = rpc.session.store
    await rpc.session.flush_events()
    # A long session is a chain thousands of entries deep: encoded without recursion, then spliced into the
    # response (json.dumps stops at ~1,000 levels).
    marker = f"\u0000tree-{uuid.uuid4().hex}\u0000"
    out: dict[str, Any] = {"type": "response", "command": "get_tree", "success": True}
    if "id" in request:
        out = {"id": request["id"], **out}
    out["data"] = {"tree": marker, "leafId": store.leaf_id}
    line = json.dumps(out, ensure_ascii=False, separators=(",", ":"))
    rpc.write(line.replace(json.dumps(marker), tree_json(store.tree(), store.label_times()), 1))


async def set_session_name(rpc: RpcServer, request: Request) -> None:
    name = request.get("name")
    if not isinstance(name, str):
        raise ValueError("name must be a string")
    if not name.strip():
        raise UsageError("Session name cannot be empty")
    rpc.session.set_session_name(name.strip())
    await rpc.reply(request)


async def get_commands(rpc: RpcServer, request: Request) -> None:
    commands: list[dict[str, Any]] = []
    for command in rpc.session.commands(every_skill=True):
        item: dict[str, Any] = {"name": command.name}
        if command.kind != "extension" or command.description is not None:
            item["description"] = command.description
        item["source"] = command.kind
        item["sourceInfo"] = command.source_info.to_json()
        commands.append(item)
    await rpc.reply(request, {"commands": commands})


async def get_checkpoints(rpc: RpcServer, request: Request) -> None:
    """A caddie addition: the session's file checkpoints, oldest first (docs/checkpoints.md)."""
    await rpc.reply(request, {"checkpoints": [c.to_json() for c in rpc.session.checkpoints.all()]})


async def restore_checkpoint(rpc: RpcServer, request: Request) -> None:
    """A caddie addition: go back to a checkpoint — its files, the conversation before its prompt, or both."""
    ref = request.get("checkpoint")
    if not isinstance(ref, str) or not ref:
        raise ValueError("checkpoint must be a checkpoint id (or its entry id)")
    files = _bool(request, "files") if "files" in request else True
    conversation = _bool(request, "conversation") if "conversation" in request else False
    force = _bool(request, "force") if "force" in request else False
    report = await rpc.session.checkpoints.restore(ref, files=files, conversation=conversation, force=force)
    data: dict[str, Any] = {"conversation": conversation}
    if report is not None:
        data.update(report.to_json())
    await rpc.reply(request, data)


async def handle(rpc: RpcServer, request: Request) -> None:
    """Answer one command; a ``UsageError`` (or a bad field) becomes its error response."""
    kind = request.get("type")
    if kind == "extension_ui_response":
        rpc.ui.resolve(request)
        return
    handler = COMMANDS.get(kind) if isinstance(kind, str) else None
    if handler is None:
        rpc.respond(request, error=f"Unknown command: {kind}")
        return
    try:
        await handler(rpc, request)
    except UsageError as e:
        rpc.respond(request, error=str(e))
    except (KeyError, ValueError, TypeError) as e:
        rpc.respond(request, error=f"Bad request: {e}")
    except (
        Exception
    ) as e:  # e.g. a compaction that cannot run: the client gets the sentence, the server lives
        rpc.respond(request, error=str(e) or type(e).__name__)


COMMANDS: dict[str, Command] = {
    "prompt": prompt,
    "steer": steer,
    "follow_up": follow_up,
    "abort": abort,
    "clear_queue": clear_queue,
    "get_state": get_state,
    "get_messages": get_messages,
    "get_last_assistant_text": get_last_assistant_text,
    "set_model": set_model,
    "cycle_model": cycle_model,
    "get_available_models": get_available_models,
    "set_thinking_level": set_thinking_level,
    "cycle_thinking_level": cycle_thinking_level,
    "get_available_thinking_levels": get_available_thinking_levels,
    "set_steering_mode": set_steering_mode,
    "set_follow_up_mode": set_follow_up_mode,
    "compact": compact,
    "set_auto_compaction": set_auto_compaction,
    "set_auto_retry": set_auto_retry,
    "abort_retry": abort_retry,
    "bash": bash,
    "abort_bash": abort_bash,
    "get_session_stats": get_session_stats,
    "export_html": export_html,
    "new_session": new_session,
    "switch_session": switch_session,
    "fork": fork,
    "clone": clone,
    "get_fork_messages": get_fork_messages,
    "get_entries": get_entries,
    "get_tree": get_tree,
    "set_session_name": set_session_name,
    "get_commands": get_commands,
    "get_checkpoints": get_checkpoints,  # caddie additions from here on
    "restore_checkpoint": restore_checkpoint,
}
"""Command ``type`` → handler (Pi 0.84.4's RPC commands, then caddie's additions)."""
