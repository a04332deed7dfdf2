"""Claude Code's request shape, which Anthropic requires of a Claude Pro/Max (OAuth) token, and Copilot's
per-request headers — both as Pi 0.84.4 sends them.

A token containing ``sk-ant-oat`` is sent as ``Authorization: Bearer`` with Claude Code's betas and
identity (``CLAUDE_CODE_BETAS``, ``user-agent: claude-cli/2.1.75``, ``x-app: cli``); the system prompt
starts with ``IDENTITY``; tools whose names match Claude Code's (case-insensitively) travel under Claude
Code's casing (``read`` → ``Read``) and come back under the name the tool has here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from caddie.ai.messages import (
    AssistantMessage,
    ImageContent,
    LlmMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from caddie.ai.model import Model, Tool

OAUTH_TOKEN_MARK = "sk-ant-oat"
CLAUDE_CODE_VERSION = "2.1.75"
CLAUDE_CODE_BETAS = ("claude-code-20250219", "oauth-2025-04-20")
IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."
CLAUDE_CODE_TOOLS = (
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Grep",
    "Glob",
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "KillShell",
    "NotebookEdit",
    "Skill",
    "Task",
    "TaskOutput",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
)
_BY_LOWER = {name.lower(): name for name in CLAUDE_CODE_TOOLS}


def is_oauth_token(api_key: str | None) -> bool:
    return bool(api_key) and OAUTH_TOKEN_MARK in (api_key or "")


def to_claude_code_name(name: str) -> str:
    return _BY_LOWER.get(name.lower(), name)


def from_claude_code_name(name: str, tools: Iterable[Tool] | None) -> str:
    """The name of the tool here that ``name`` (Claude Code's casing) stands for; ``name`` when none."""
    lowered = name.lower()
    for tool in tools or ():
        if tool.name.lower() == lowered:
            return tool.name
    return name


CLAUDE_CODE_API_VERSION = "2023-06-01"
"""The ``anthropic-version`` Claude Code (and Pi) sends; newer SDKs default to a later one."""


def oauth_headers(betas: Sequence[str]) -> dict[str, str]:
    """The headers of a Claude Pro/Max request (before the model's and the caller's own)."""
    return {
        "anthropic-version": CLAUDE_CODE_API_VERSION,
        "accept": "application/json",
        "anthropic-dangerous-direct-browser-access": "true",
        "anthropic-beta": ",".join([*CLAUDE_CODE_BETAS, *betas]),
        "user-agent": f"claude-cli/{CLAUDE_CODE_VERSION}",
        "x-app": "cli",
    }


# --------------------------------------------------------------------------------------------------
# GitHub Copilot


def is_copilot(model: Model) -> bool:
    return model.provider == "github-copilot"


def _has_image(message: LlmMessage) -> bool:
    content = getattr(message, "content", None)
    if not isinstance(message, UserMessage | ToolResultMessage) or isinstance(content, str):
        return False
    return any(isinstance(b, ImageContent) for b in content or ())


def copilot_headers(messages: Sequence[LlmMessage]) -> dict[str, str]:
    """Copilot's per-request headers: who started this request (the user, or the agent continuing after a
    tool), the intent, and whether it carries images."""
    last = messages[-1] if messages else None
    headers = {
        "X-Initiator": "agent" if last is not None and getattr(last, "role", "user") != "user" else "user",
        "Openai-Intent": "conversation-edits",
    }
    if any(_has_image(m) for m in messages):
        headers["Copilot-Vision-Request"] = "true"
    return headers


# --------------------------------------------------------------------------------------------------
# Deferred tools (Anthropic ``defer_loading`` / ``tool_reference``)

_TOOL_SEARCH_VERSION = re.compile(r"^claude-(?:opus|sonnet|fable)-(\d+)(?:-(\d+))?(?:-|$)")


def default_supports_tool_references(model: Model) -> bool:
    """First-party Anthropic models from Claude 4.5 on, except Haiku (Pi's default)."""
    if model.provider != "anthropic" or "haiku" in model.id:
        return False
    match = _TOOL_SEARCH_VERSION.match(model.id)
    if match is None:
        return False
    major = int(match.group(1))
    minor_text = match.group(2)
    minor = int(minor_text) if minor_text and len(minor_text) < 8 else 0
    return major > 4 or (major == 4 and minor >= 5)


def split_deferred_tools(
    tools: Sequence[Tool], messages: Sequence[LlmMessage], normalize: Callable[[str], str] | None = None
) -> tuple[list[Tool], dict[str, Tool]]:
    """(tools sent up front, tools loaded later by name): a tool a tool result announced in
    ``addedToolNames`` — and the model has not called before — is deferred."""
    norm = normalize or (lambda n: n)
    unique: dict[str, Tool] = {}
    for tool in tools:
        unique[norm(tool.name)] = tool
    deferred_names: set[str] = set()
    used: set[str] = set()
    for message in messages:
        if isinstance(message, AssistantMessage):
            used.update(norm(call.name) for call in message.content if isinstance(call, ToolCall))
        elif isinstance(message, ToolResultMessage):
            for name in message.added_tool_names or ():
                if norm(name) not in used:
                    deferred_names.add(norm(name))
    immediate = [t for n, t in unique.items() if n not in deferred_names]
    deferred = {n: t for n, t in unique.items() if n in deferred_names}
    return immediate, deferred
