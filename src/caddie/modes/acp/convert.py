"""Pure translations between caddie's message model and ACP's: tool call kind/title/locations, prompt content
blocks to a user message, stored messages to replayed ``session/update``s, goal state to a plan.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import unquote, urlparse

from acp.schema import (
    AudioContentBlock,
    BlobResourceContents,
    ContentToolCallContent,
    EmbeddedResourceContentBlock,
    FileEditToolCallContent,
    ImageContentBlock,
    PlanEntry,
    PlanEntryStatus,
    ResourceContentBlock,
    TerminalToolCallContent,
    TextContentBlock,
    TextResourceContents,
    ToolCallLocation,
    ToolKind,
)

from acp import RequestError, helpers
from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)
ToolContent = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent

_KINDS: dict[str, ToolKind] = {
    "read": "read",
    "edit": "edit",
    "write": "edit",
    "bash": "execute",
    "grep": "search",
    "find": "search",
    "ls": "search",
    "mulligan_audit": "think",
    "get_goal": "think",
}
PERMISSION_TOOLS = ("bash", "edit", "write")
"""The tools that change things: asked about before they run (unless the user allowed them)."""


def bad_params(sentence: str) -> RequestError:
    """JSON-RPC "Invalid params" whose message is the sentence an editor shows the user."""
    return RequestError(-32602, sentence, {"message": sentence})


def bad_request(sentence: str) -> RequestError:
    return RequestError(-32600, sentence, {"message": sentence})


def tool_kind(name: str) -> ToolKind:
    return _KINDS.get(name, "other")


def _one_line(text: str, limit: int = 120) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _abs(path: str, cwd: str) -> str:
    path = path[1:] if path.startswith("@") else path
    return os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))


def tool_title(name: str, args: Any, cwd: str) -> str:
    """A short human title, as editors show it in the tool call's header."""
    a = args if isinstance(args, dict) else {}
    path = a.get("path")
    rel = path if isinstance(path, str) and path else None
    if name == "read" and rel:
        offset, limit = a.get("offset"), a.get("limit")
        if isinstance(offset, int | float) and isinstance(limit, int | float):
            return f"Read {rel} (lines {int(offset)}-{int(offset) + int(limit) - 1})"
        if isinstance(offset, int | float):
            return f"Read {rel} (from line {int(offset)})"
        return f"Read {rel}"
    if name == "edit" and rel:
        return f"Edit {rel}"
    if name == "write" and rel:
        return f"Write {rel}"
    if name == "bash" and isinstance(a.get("command"), str):
        return f"`{_one_line(a['command'])}`"
    if name == "grep" and isinstance(a.get("pattern"), str):
        return f"grep {_one_line(a['pattern'], 80)}" + (f" in {rel}" if rel else "")
    if name == "find" and isinstance(a.get("pattern"), str):
        return f"find {_one_line(a['pattern'], 80)}" + (f" in {rel}" if rel else "")
    if name == "ls":
        return f"ls {rel or '.'}"
    if name == "mulligan_rewind":
        note = a.get("note")
        what = note.get("what_happened") if isinstance(note, dict) else None
        return "Mulligan rewind" + (f": {_one_line(what, 80)}" if isinstance(what, str) and what else "")
    return name


def tool_locations(name: str, args: Any, cwd: str) -> list[ToolCallLocation] | None:
    a = args if isinstance(args, dict) else {}
    path = a.get("path")
    if name in ("read", "edit", "write", "grep", "find", "ls") and isinstance(path, str) and path:
        line = a.get("offset") if name == "read" else None
        return [
            ToolCallLocation(path=_abs(path, cwd), line=int(line) if isinstance(line, int | float) else None)
        ]
    return None


def text_content(text: str) -> ContentToolCallContent:
    return helpers.tool_content(helpers.text_block(text))


def result_text(content: Iterable[TextContent | ImageContent]) -> str:
    return "\n".join(c.text for c in content if isinstance(c, TextContent))


def fenced(text: str, info: str = "") -> str:
    """``text`` as a Markdown code block whose fence is longer than any backtick run inside it."""
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{info}\n{text.rstrip(chr(10))}\n{fence}"


def result_content(
    name: str, content: Sequence[TextContent | ImageContent], is_error: bool
) -> list[ToolContent]:
    """What a finished tool call shows: its text (``read`` output fenced), and its images."""
    text = result_text(content)
    out: list[ToolContent] = []
    if text:
        out.append(text_content(fenced(text) if name == "read" and not is_error else text))
    for block in content:
        if isinstance(block, ImageContent):
            out.append(helpers.tool_content(helpers.image_block(block.data, block.mime_type)))
    return out


# -- prompts -------------------------------------------------------------------------------------------


def uri_path(uri: str) -> str | None:
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    return None


def prompt_to_user(blocks: Sequence[PromptBlock]) -> tuple[str, list[ImageContent]]:
    """ACP prompt blocks as the text and images of one user message.

    Text blocks join in order; a resource link becomes an ``@path`` mention the model can ``read``; an
    embedded text resource (a file the editor attached, as the user sees it) is quoted in a ``<context>``
    block after the text; images (blocks, or embedded image resources) become image content.
    """
    parts: list[tuple[str, bool]] = []  # (text, is a mention)
    context: list[str] = []
    images: list[ImageContent] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append((block.text, False))
        elif isinstance(block, ImageContentBlock):
            images.append(ImageContent(block.data, block.mime_type))
        elif isinstance(block, ResourceContentBlock):
            path = uri_path(block.uri)
            parts.append((f"@{path}" if path else f"[{block.name}]({block.uri})", True))
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                ref = uri_path(resource.uri) or resource.uri
                context.append(f'<context ref="{ref}">\n{resource.text}\n</context>')
            elif isinstance(resource, BlobResourceContents):
                mime = resource.mime_type or ""
                if mime.startswith("image/"):
                    images.append(ImageContent(resource.blob, mime))
                else:
                    ref = uri_path(resource.uri) or resource.uri
                    size = len(base64.b64decode(resource.blob, validate=False)) if resource.blob else 0
                    context.append(
                        f'<context ref="{ref}">[binary, {mime or "unknown type"}, {size} bytes]</context>'
                    )
        elif isinstance(block, AudioContentBlock):
            context.append("[an audio clip was attached; caddie cannot listen to audio]")
    text = ""
    previous_mention = False
    for part, mention in parts:  # a mention next to text gets a space: "see" + "@a.py" reads "see @a.py"
        spaced = not text or text.endswith((" ", "\n")) or part.startswith((" ", "\n"))
        text += part if spaced or not (mention or previous_mention) else " " + part
        previous_mention = mention
    if context:
        text = (text + "\n\n" if text else "") + "\n\n".join(context)
    return text, images


# -- replay --------------------------------------------------------------------------------------------

Update = Any


def message_updates(message: AgentMessage, cwd: str, calls: dict[str, ToolCall]) -> list[Update]:
    """The updates that show a stored message again (``session/load``). ``calls`` collects tool calls by
    id so their results can finish them."""
    out: list[Update] = []
    if isinstance(message, UserMessage):
        if isinstance(message.content, str):
            out.append(helpers.update_user_message_text(message.content))
        else:
            for block in message.content:
                if isinstance(block, TextContent):
                    out.append(helpers.update_user_message_text(block.text))
                elif isinstance(block, ImageContent):
                    out.append(helpers.update_user_message(helpers.image_block(block.data, block.mime_type)))
    elif isinstance(message, AssistantMessage):
        for part in message.content:
            if isinstance(part, ThinkingContent) and part.thinking and not part.redacted:
                out.append(helpers.update_agent_thought_text(part.thinking))
            elif isinstance(part, TextContent) and part.text:
                out.append(helpers.update_agent_message_text(part.text))
            elif isinstance(part, ToolCall):
                calls[part.id] = part
                out.append(
                    helpers.start_tool_call(
                        part.id,
                        tool_title(part.name, part.arguments, cwd),
                        kind=tool_kind(part.name),
                        status="pending",
                        locations=tool_locations(part.name, part.arguments, cwd),
                        raw_input=part.arguments,
                    )
                )
        if message.stop_reason == "error" and message.error_message:
            out.append(helpers.update_agent_message_text(f"\n\nError: {message.error_message}"))
    elif isinstance(message, ToolResultMessage):
        content: list[ToolContent] = result_content(
            message.tool_name,
            [c for c in message.content if isinstance(c, TextContent | ImageContent)],
            message.is_error,
        )
        details = message.details if isinstance(message.details, dict) else {}
        if message.tool_name == "edit" and isinstance(details.get("patch"), str) and not message.is_error:
            content.append(text_content(fenced(details["patch"], "diff")))
        if message.tool_call_id not in calls:
            out.append(
                helpers.start_tool_call(
                    message.tool_call_id,
                    message.tool_name,
                    kind=tool_kind(message.tool_name),
                    status="pending",
                )
            )
        out.append(
            helpers.update_tool_call(
                message.tool_call_id,
                status="failed" if message.is_error else "completed",
                content=content,
                raw_output={"content": result_text(c for c in message.content if isinstance(c, TextContent))},
            )
        )
    elif isinstance(message, BashExecutionMessage):
        call_id = f"user-bash-{int(message.timestamp)}"
        out.append(
            helpers.start_tool_call(
                call_id,
                f"`{_one_line(message.command)}`",
                kind="execute",
                status="failed" if message.exit_code not in (0, None) or message.cancelled else "completed",
                content=[text_content(message.output or "(no output)")],
                raw_input={"command": message.command},
            )
        )
    return out


# -- goal → plan ---------------------------------------------------------------------------------------

_GOAL_STATUS: dict[str, PlanEntryStatus] = {"active": "in_progress", "complete": "completed"}


def goal_plan(goal: dict[str, Any] | None) -> list[PlanEntry]:
    """The goal as a plan: the objective, the check that must pass, and the agent's notes (one entry each
    line; ``[x]`` marks a done item)."""
    if not goal or goal.get("status") == "cleared":
        return []
    status = str(goal.get("status", "active"))
    done = status == "complete"
    entries = [
        helpers.plan_entry(
            f"Goal: {goal.get('objective', '')}"
            + ("" if status in _GOAL_STATUS else f" ({status.replace('_', ' ')})"),
            priority="high",
            status=_GOAL_STATUS.get(status, "pending"),
        )
    ]
    check = goal.get("check")
    if isinstance(check, str) and check:
        entries.append(
            helpers.plan_entry(
                f"Check passes: {check}", priority="high", status="completed" if done else "pending"
            )
        )
    notes = goal.get("notes")
    for raw in (notes if isinstance(notes, str) else "").splitlines():
        line = raw.strip().removeprefix("- ").removeprefix("* ").strip()
        if not line:
            continue
        item_status: PlanEntryStatus = "completed" if done else "pending"
        if line[:3].lower() == "[x]":
            item_status, line = "completed", line[3:].strip()
        elif line.startswith("[ ]"):
            line = line[3:].strip()
        entries.append(helpers.plan_entry(line, priority="medium", status=item_status))
    return entries
