"""Counting a reply's tokens with a local server's own tokenizer, for servers that report no usage.

Used only by ``caddie.ai.usage_estimate`` when a reply came back without usage, and only for models on a
local server (``is_local_base_url``: this machine or the local network) spoken to over
``openai-completions`` — never a cloud API, which would see the conversation a second time. Three
tokenizer endpoints are known:

| server | endpoint (at the server root, beside ``/v1``) | body | answer |
|---|---|---|---|
| llama.cpp ``llama-server`` | ``POST /tokenize`` | ``{"content", "add_special": false}`` | ``{"tokens": [...]}`` |
| vLLM | ``POST /tokenize`` | ``{"model", "prompt", "add_special_tokens": false}`` | ``{"count", "tokens", ...}`` |
| llama-cpp-python | ``POST /extras/tokenize/count`` | ``{"model", "input"}`` | ``{"count"}`` |

The first reply without usage from a server finds out which one it has (each kind in turn until one
answers; the answer — or that there is none — is remembered for the process); each such reply then costs
two short local requests: the request's text and the reply's text. Any failure (no endpoint, timeout, a strange
answer) falls back to caddie's four-characters-per-token estimate. The counts leave out the chat
template's few tokens per message, so the usage stays marked as estimated.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from caddie.ai.messages import AssistantMessage, TextContent, ThinkingContent, ToolCall
from caddie.ai.model import Context, Model, StreamOptions
from caddie.ai.providers.request import NO_KEY_PLACEHOLDER, is_local_base_url

__all__ = ["TOKENIZE_TIMEOUT_S", "count_with_server", "request_text", "server_root"]

TOKENIZE_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class TokenizerKind:
    name: str
    path: str
    body: Callable[[str, str], dict[str, Any]]
    """(model id, text) → request body."""


def _count(answer: Any) -> int | None:
    if not isinstance(answer, dict):
        return None
    count = answer.get("count")
    if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
        return count
    tokens = answer.get("tokens")
    return len(tokens) if isinstance(tokens, list) else None


KINDS = (
    TokenizerKind("llama.cpp", "/tokenize", lambda _model, text: {"content": text, "add_special": False}),
    TokenizerKind(
        "vllm", "/tokenize", lambda model, text: {"model": model, "prompt": text, "add_special_tokens": False}
    ),
    TokenizerKind(
        "llama-cpp-python", "/extras/tokenize/count", lambda model, text: {"model": model, "input": text}
    ),
)

_found: dict[str, TokenizerKind | None] = {}
"""Server root → the tokenizer it has (None: none), learnt on the first reply without usage."""


def server_root(base_url: str) -> str:
    """``http://host:port`` (and any path before ``/v1``) of an OpenAI-style base URL."""
    root = base_url.rstrip("/")
    return root[:-3] if root.endswith("/v1") else root


def request_text(context: Context) -> str:
    """The text a request carried, as the tokenizer should count it: system prompt, messages, tools."""
    parts = [context.system_prompt or ""]
    for message in context.messages:
        content = message.content
        if isinstance(content, str):
            parts.append(content)
            continue
        for block in content:
            parts.append(_block_text(block))
    for tool in context.tools or []:
        parts.append(f"{tool.name}\n{tool.description}\n{json.dumps(tool.parameters)}")
    return "\n".join(p for p in parts if p)


def _block_text(block: object) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ThinkingContent):
        return block.thinking
    if isinstance(block, ToolCall):
        return block.name + json.dumps(block.arguments, ensure_ascii=False, separators=(",", ":"))
    return ""  # images: the server's tokenizer cannot count them; the estimate below stays low


def reply_text(message: AssistantMessage) -> str:
    return "\n".join(t for t in map(_block_text, message.content) if t)


def _post(url: str, body: dict[str, Any], api_key: str | None, timeout_s: float) -> Any:
    import urllib.request  # only when a server reports no usage

    headers = {"Content-Type": "application/json"}
    if api_key and api_key != NO_KEY_PLACEHOLDER:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(
        url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
    )
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return json.loads(response.read().decode("utf-8"))


async def _ask(kind: TokenizerKind, root: str, model_id: str, text: str, api_key: str | None) -> int | None:
    try:
        answer = await asyncio.to_thread(
            _post, root + kind.path, kind.body(model_id, text), api_key, TOKENIZE_TIMEOUT_S
        )
    except (OSError, ValueError):  # HTTP errors, refused connections, timeouts, bad JSON
        return None
    return _count(answer)


async def _count_input(
    root: str, model_id: str, text: str, api_key: str | None
) -> tuple[TokenizerKind, int] | None:
    """The request's token count and the tokenizer that gave it: the one this server is known to have, or —
    the first time — each kind in turn until one answers (remembered, as is finding none)."""
    if root in _found:
        kind = _found[root]
        if kind is None:
            return None
        count = await _ask(kind, root, model_id, text, api_key)
        return None if count is None else (kind, count)
    for kind in KINDS:
        count = await _ask(kind, root, model_id, text, api_key)
        if count is not None:
            _found[root] = kind
            return kind, count
    _found[root] = None
    return None


async def count_with_server(
    model: Model, context: Context, message: AssistantMessage, options: StreamOptions
) -> tuple[int, int] | None:
    """(input, output) tokens of a request and its reply, counted by the local server's tokenizer; None when
    the model is not on a local OpenAI-style server, the server has no tokenizer endpoint, or it fails."""
    if model.api != "openai-completions" or not is_local_base_url(model.base_url):
        return None
    root = server_root(model.base_url)
    counted = await _count_input(root, model.id, request_text(context), options.api_key)
    if counted is None:
        return None
    kind, input_tokens = counted
    output = reply_text(message)
    output_tokens = await _ask(kind, root, model.id, output, options.api_key) if output else 0
    if output_tokens is None:
        return None
    return input_tokens, output_tokens


def forget_servers() -> None:
    """Forget which servers have which tokenizer (for tests)."""
    _found.clear()
