"""A provider with its own wire code and login (Pi's custom-provider-anthropic example): ``custom-anthropic``
speaks Anthropic's Messages API through the ``anthropic`` SDK under its own API name
(``custom-anthropic-api``), so caddie sends its requests through ``stream_simple`` below rather than its
built-in Anthropic provider.

- With a key: ``CUSTOM_ANTHROPIC_API_KEY=sk-ant-… caddie -e examples/extensions/custom_provider_anthropic
  --model custom-anthropic/claude-sonnet-4-5``.
- With a Claude Pro/Max login: ``/login custom-anthropic`` (a browser page gives a code to paste); the login
  is kept in auth.json and renewed with ``refresh_token`` when it runs out. Requests with a login carry
  Claude Code's headers, system line and tool names, as Anthropic expects of such logins.

``CUSTOM_ANTHROPIC_BASE_URL`` points it at a proxy (or a test server); ``CUSTOM_ANTHROPIC_OAUTH_URL`` moves
the login's authorize and token endpoints likewise.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any, Literal
from urllib.parse import urlencode

import anthropic
import httpx2

from caddie.extensions.api import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    DoneEvent,
    ErrorEvent,
    ExtensionAPI,
    ImageContent,
    Model,
    ProviderModelConfig,
    StartEvent,
    StreamOptions,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolResultMessage,
    Usage,
    UserMessage,
    calculate_cost,
)

API = "custom-anthropic-api"
CLIENT_ID = base64.b64decode("OWQxYzI1MGEtZTYxYi00NGQ5LTg4ZWQtNTk0NGQxOTYyZjVl").decode()
REDIRECT_URI = "https://console.anthropic.com/oauth/code/callback"
SCOPES = "org:create_api_key user:profile user:inference"
CLAUDE_CODE = "You are Claude Code, Anthropic's official CLI for Claude."
CLAUDE_CODE_TOOLS = {
    n.lower(): n
    for n in (
        "Read",
        "Write",
        "Edit",
        "Bash",
        "Grep",
        "Glob",
        "AskUserQuestion",
        "TodoWrite",
        "WebFetch",
        "WebSearch",
    )
}
BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32000, "max": 32000}
STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "toolUse"}


# -- login --------------------------------------------------------------------------------------------
def _oauth_url(path: str, default: str) -> str:
    base = os.environ.get("CUSTOM_ANTHROPIC_OAUTH_URL")
    return f"{base.rstrip('/')}{path}" if base else default


def _pkce() -> tuple[str, str]:
    verifier = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


async def _token(body: dict[str, str]) -> dict[str, Any]:
    url = _oauth_url("/v1/oauth/token", "https://console.anthropic.com/v1/oauth/token")
    async with httpx2.AsyncClient(timeout=30) as client:
        response = await client.post(url, json=body)
    if response.status_code >= 400:
        raise RuntimeError(f"Token request failed ({response.status_code}): {response.text}")
    data = response.json()
    expires = int(time.time() * 1000) + int(data["expires_in"]) * 1000 - 5 * 60 * 1000
    return {"access": data["access_token"], "refresh": data["refresh_token"], "expires": expires}


async def login(callbacks: Any) -> dict[str, Any]:
    verifier, challenge = _pkce()
    query = urlencode(
        {
            "code": "true",
            "client_id": CLIENT_ID,
            "response_type": "code",
            "redirect_uri": REDIRECT_URI,
            "scope": SCOPES,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": verifier,
        }
    )
    callbacks.on_auth(f"{_oauth_url('/oauth/authorize', 'https://claude.ai/oauth/authorize')}?{query}")
    pasted = await callbacks.on_prompt("Paste the authorization code:")
    code, _, state = pasted.strip().partition("#")
    return await _token(
        {
            "grant_type": "authorization_code",
            "client_id": CLIENT_ID,
            "code": code,
            "state": state,
            "redirect_uri": REDIRECT_URI,
            "code_verifier": verifier,
        }
    )


async def refresh_token(credential: dict[str, Any]) -> dict[str, Any]:
    return await _token(
        {"grant_type": "refresh_token", "client_id": CLIENT_ID, "refresh_token": credential["refresh"]}
    )


# -- the request --------------------------------------------------------------------------------------
def _blocks(content: str | list[TextContent | ImageContent]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [
        {"type": "text", "text": b.text}
        if isinstance(b, TextContent)
        else {"type": "image", "source": {"type": "base64", "media_type": b.mime_type, "data": b.data}}
        for b in content
    ]


def wire_messages(context: Context, oauth: bool) -> list[dict[str, Any]]:
    """caddie's messages as Messages API turns (tool results of one turn go back in one user message)."""
    out: list[dict[str, Any]] = []
    results: list[dict[str, Any]] | None = None  # the open user turn of tool results, if the last is one
    for message in context.messages:
        if isinstance(message, ToolResultMessage):
            result = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": _blocks(message.content),
                "is_error": message.is_error,
            }
            if results is None:
                results = []
                out.append({"role": "user", "content": results})
            results.append(result)
            continue
        results = None
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": _blocks(message.content)})
        elif isinstance(message, AssistantMessage):
            blocks: list[dict[str, Any]] = []
            for block in message.content:
                if isinstance(block, TextContent) and block.text:
                    blocks.append({"type": "text", "text": block.text})
                elif isinstance(block, ThinkingContent) and block.thinking_signature:
                    blocks.append(
                        {
                            "type": "thinking",
                            "thinking": block.thinking,
                            "signature": block.thinking_signature,
                        }
                    )
                elif isinstance(block, ToolCall):
                    name = CLAUDE_CODE_TOOLS.get(block.name.lower(), block.name) if oauth else block.name
                    blocks.append(
                        {"type": "tool_use", "id": block.id, "name": name, "input": block.arguments}
                    )
            if blocks:
                out.append({"role": "assistant", "content": blocks})
    return out


def request_params(model: Model, context: Context, options: StreamOptions, oauth: bool) -> dict[str, Any]:
    max_tokens = min(options.max_tokens or model.max_tokens, model.max_tokens)
    params: dict[str, Any] = {
        "model": model.id,
        "max_tokens": max_tokens,
        "messages": wire_messages(context, oauth),
        "stream": True,
    }
    system = [{"type": "text", "text": CLAUDE_CODE}] if oauth else []
    if context.system_prompt:
        system.append({"type": "text", "text": context.system_prompt})
    if system:
        params["system"] = system
    if context.tools:
        params["tools"] = [
            {
                "name": CLAUDE_CODE_TOOLS.get(t.name.lower(), t.name) if oauth else t.name,
                "description": t.description,
                "input_schema": t.parameters,
            }
            for t in context.tools
        ]
    level = options.reasoning
    if model.reasoning and level and level != "off":
        budget = min(BUDGETS.get(level, 8192), max_tokens - 1024)
        if budget >= 1024:
            params["thinking"] = {"type": "enabled", "budget_tokens": budget}
    return params


class _Reply:
    """The reply as it grows: content blocks by their index in the stream, and the usage so far."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.blocks: dict[int, TextContent | ThinkingContent | ToolCall] = {}
        self.json: dict[int, str] = {}
        self.usage = Usage()
        self.stop = "stop"

    def message(self, **extra: Any) -> AssistantMessage:
        u = self.usage
        usage = Usage(
            u.input, u.output, u.cache_read, u.cache_write, u.input + u.output + u.cache_read + u.cache_write
        )
        usage = Usage(usage.input, usage.output, usage.cache_read, usage.cache_write, usage.total_tokens,
                      calculate_cost(self.model, usage))  # fmt: skip
        content = [self.blocks[i] for i in sorted(self.blocks)]
        return AssistantMessage(content, API, self.model.provider, self.model.id, usage, **extra)


def _tool_name(name: str, context: Context) -> str:
    """A Claude Code tool name back to the session's own (``Read`` → ``read``)."""
    return next((t.name for t in context.tools or [] if t.name.lower() == name.lower()), name)


async def stream_simple(
    model: Model, context: Context, options: StreamOptions
) -> AsyncIterator[AssistantMessageEvent]:
    key = options.api_key or ""
    oauth = "sk-ant-oat" in key
    reply = _Reply(model)
    yield StartEvent(reply.message())
    base_url = os.environ.get("CUSTOM_ANTHROPIC_BASE_URL") or model.base_url
    if oauth:
        client = anthropic.AsyncAnthropic(
            auth_token=key,
            base_url=base_url,
            default_headers={"anthropic-beta": "claude-code-20250219,oauth-2025-04-20", "x-app": "cli"},
        )
    else:
        client = anthropic.AsyncAnthropic(api_key=key, base_url=base_url)
    try:
        stream = await client.messages.create(**request_params(model, context, options, oauth))
        async for event in stream:
            if options.signal is not None and options.signal.aborted:
                raise RuntimeError("Request was aborted")
            for out in _events(event, reply, context):
                yield out
        yield DoneEvent(reply.stop, reply.message(stop_reason=reply.stop))  # type: ignore[arg-type]
    except Exception as e:
        aborted = options.signal is not None and options.signal.aborted
        reason: Literal["aborted", "error"] = "aborted" if aborted else "error"
        yield ErrorEvent(reason, reply.message(stop_reason=reason, error_message=str(e) or type(e).__name__))
    finally:
        await client.close()


def _events(event: Any, reply: _Reply, context: Context) -> list[AssistantMessageEvent]:
    kind, index = event.type, getattr(event, "index", 0)
    if kind == "message_start":
        u = event.message.usage
        reply.usage = Usage(u.input_tokens, u.output_tokens or 0, u.cache_read_input_tokens or 0,
                            u.cache_creation_input_tokens or 0)  # fmt: skip
    elif kind == "message_delta":
        reply.stop = STOP_REASONS.get(event.delta.stop_reason or "", "stop")
        u = reply.usage
        reply.usage = Usage(u.input, event.usage.output_tokens, u.cache_read, u.cache_write)
    elif kind == "content_block_start":
        block = event.content_block
        if block.type == "text":
            reply.blocks[index] = TextContent("")
            return [TextStartEvent(index, reply.message())]
        if block.type == "thinking":
            reply.blocks[index] = ThinkingContent("")
            return [ThinkingStartEvent(index, reply.message())]
        if block.type == "tool_use":
            reply.blocks[index] = ToolCall(block.id, _tool_name(block.name, context), {})
            reply.json[index] = ""
            return [ToolCallStartEvent(index, reply.message())]
    elif kind == "content_block_delta":
        return _delta(event.delta, index, reply)
    elif kind == "content_block_stop":
        block = reply.blocks.get(index)
        if isinstance(block, TextContent):
            return [TextEndEvent(index, block.text, reply.message())]
        if isinstance(block, ThinkingContent):
            return [ThinkingEndEvent(index, block.thinking, reply.message())]
        if isinstance(block, ToolCall):
            call = ToolCall(block.id, block.name, json.loads(reply.json[index] or "{}"))
            reply.blocks[index] = call
            return [ToolCallEndEvent(index, call, reply.message())]
    return []


def _delta(delta: Any, index: int, reply: _Reply) -> list[AssistantMessageEvent]:
    block = reply.blocks.get(index)
    if delta.type == "text_delta" and isinstance(block, TextContent):
        reply.blocks[index] = TextContent(block.text + delta.text)
        return [TextDeltaEvent(index, delta.text, reply.message())]
    if delta.type == "thinking_delta" and isinstance(block, ThinkingContent):
        reply.blocks[index] = ThinkingContent(block.thinking + delta.thinking, block.thinking_signature)
        return [ThinkingDeltaEvent(index, delta.thinking, reply.message())]
    if delta.type == "signature_delta" and isinstance(block, ThinkingContent):
        reply.blocks[index] = ThinkingContent(
            block.thinking, (block.thinking_signature or "") + delta.signature
        )
    elif delta.type == "input_json_delta" and isinstance(block, ToolCall):
        reply.json[index] += delta.partial_json
        return [ToolCallDeltaEvent(index, delta.partial_json, reply.message())]
    return []


MODEL_COST = {"opus": (5, 25, 0.5, 6.25), "sonnet": (3, 15, 0.3, 3.75)}


def register(api: ExtensionAPI) -> None:
    def model(model_id: str, name: str, kind: str) -> ProviderModelConfig:
        rates = MODEL_COST[kind]
        return {
            "id": model_id,
            "name": name,
            "reasoning": True,
            "input": ["text", "image"],
            "cost": {"input": rates[0], "output": rates[1], "cacheRead": rates[2], "cacheWrite": rates[3]},
            "contextWindow": 200000,
            "maxTokens": 64000,
        }

    api.register_provider(
        "custom-anthropic",
        {
            "baseUrl": "https://api.anthropic.com",
            "apiKey": "$CUSTOM_ANTHROPIC_API_KEY",
            "api": API,
            "models": [
                model("claude-opus-4-5", "Claude Opus 4.5 (Custom)", "opus"),
                model("claude-sonnet-4-5", "Claude Sonnet 4.5 (Custom)", "sonnet"),
            ],
            "oauth": {
                "name": "Custom Anthropic (Claude Pro/Max)",
                "login": login,
                "refreshToken": refresh_token,
                "getApiKey": lambda credential: credential["access"],
            },
            "streamSimple": stream_simple,
        },
    )
