"""The ``bedrock-converse-stream`` API: every Amazon Bedrock model (Claude, Nova, Llama, Mistral, DeepSeek,
OpenAI's open models…) through AWS's Converse API, as Pi 0.84.4 reaches Bedrock.

Through ``boto3``'s ``bedrock-runtime`` client (install ``caddie-agent[bedrock]``): botocore signs the request
(SigV4 with the usual AWS credential chain, or ``AWS_BEARER_TOKEN_BEDROCK`` / a stored key as a Bedrock API
key) and parses Bedrock's binary event stream itself. The client is synchronous, so the request and the
reading of its events run in a worker thread, handing each event to the event loop; an abort closes the
stream. Region: an inference-profile ARN's, else ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, else the one in a
``bedrock-runtime.<region>.amazonaws.com`` base URL, else ``us-east-1``; any other base URL is used as the
endpoint (proxies, VPC endpoints, tests).

The conversation in Converse's shapes, as Pi sends it: consecutive tool results in one user turn, Claude's
signed reasoning replayed (other models' reasoning as text), a cache point after the system prompt and the
newest user turn for Claude, thinking budgets for Claude through ``additionalModelRequestFields``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import re
import threading
from collections.abc import AsyncIterator
from typing import Any, ClassVar

from caddie.ai.constrained_sampling import resolve_strict, tool_parameters
from caddie.ai.messages import (
    AssistantMessage,
    DraftAssistantMessage,
    DraftTextContent,
    DraftThinkingContent,
    DraftToolCall,
    ImageContent,
    LlmMessage,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    replace,
)
from caddie.ai.model import Context, Model, StreamOptions
from caddie.ai.providers.blocks import StreamBuffer, final_arguments, parse_partial_json
from caddie.ai.providers.cost import finish_usage
from caddie.ai.providers.request import sanitize_text
from caddie.ai.providers.streaming import new_output, stream_via_sdk
from caddie.ai.providers.thinking import clamp_max_tokens, clamp_thinking_level, thinking_budget
from caddie.ai.providers.transport import ClientCache
from caddie.ai.stream_events import (
    AssistantMessageEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from caddie.ai.transform import transform_messages
from caddie.errors import ProviderError

API = "bedrock-converse-stream"
AMBIENT = "aws-credential-chain"
"""Stands for "sign with the AWS credential chain" (never sent)."""
EMPTY_TEXT = "<empty>"
REDACTED_TEXT = "[Reasoning redacted]"
EXTRA_HINT = "Amazon Bedrock needs the bedrock extra: pip install 'caddie-agent[bedrock]' (or uv tool install 'caddie-agent[bedrock]')."
_ARN_REGION = re.compile(r"^arn:aws(?:-[a-z0-9-]+)?:bedrock:([a-z0-9-]+):")
_STANDARD_HOST = re.compile(r"^bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$")
_STOPS: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
}
_IMAGE_FORMATS = {
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/png": "png",
    "image/gif": "gif",
    "image/webp": "webp",
}


def is_claude(model: Model) -> bool:
    text = f"{model.id} {model.name}".lower()
    return "anthropic.claude" in text or "claude" in text


def _text_block(text: str) -> dict[str, Any] | None:
    clean = sanitize_text(text)
    return {"text": clean} if clean.strip() else None


def _image(block: ImageContent) -> dict[str, Any]:
    fmt = _IMAGE_FORMATS.get(block.mime_type)
    if fmt is None:
        raise ValueError(f"Unknown image type: {block.mime_type}")
    return {"image": {"format": fmt, "source": {"bytes": base64.b64decode(block.data)}}}


def _result(msg: ToolResultMessage) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for block in msg.content:
        if isinstance(block, TextContent):
            content.append({"text": sanitize_text(block.text) or EMPTY_TEXT})
        else:
            content.append(_image(block))
    return {
        "toolResult": {
            "toolUseId": msg.tool_call_id,
            "content": content or [{"text": EMPTY_TEXT}],
            "status": "error" if msg.is_error else "success",
        }
    }


def _assistant(msg: AssistantMessage, claude: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for b in msg.content:
        if isinstance(b, TextContent):
            text = _text_block(b.text)
            if text:
                blocks.append(text)
        elif isinstance(b, ToolCall):
            blocks.append({"toolUse": {"toolUseId": b.id, "name": b.name, "input": b.arguments or {}}})
        elif b.redacted:
            with contextlib.suppress(ValueError):
                if b.thinking_signature:
                    blocks.append(
                        {"reasoningContent": {"redactedContent": base64.b64decode(b.thinking_signature)}}
                    )
        elif b.thinking.strip():
            if not claude:
                blocks.append({"reasoningContent": {"reasoningText": {"text": sanitize_text(b.thinking)}}})
            elif b.thinking_signature and b.thinking_signature.strip():
                reasoning = {"text": sanitize_text(b.thinking), "signature": b.thinking_signature}
                blocks.append({"reasoningContent": {"reasoningText": reasoning}})
            else:
                blocks.append({"text": sanitize_text(b.thinking)})
    return blocks


def convert_messages(model: Model, messages: list[LlmMessage], cache: bool) -> list[dict[str, Any]]:
    claude = is_claude(model)
    out: list[dict[str, Any]] = []
    for msg in transform_messages(messages, model, lambda i, _m, _s: re.sub(r"[^a-zA-Z0-9_-]", "_", i)[:64]):
        if isinstance(msg, ToolResultMessage):
            if out and out[-1]["role"] == "user" and out[-1].get("_results"):
                out[-1]["content"].append(_result(msg))
            else:
                out.append({"role": "user", "content": [_result(msg)], "_results": True})
            continue
        if isinstance(msg, UserMessage):
            if isinstance(msg.content, str):
                content = [{"text": sanitize_text(msg.content) if msg.content.strip() else EMPTY_TEXT}]
            else:
                content = []
                for b in msg.content:
                    if isinstance(b, TextContent):
                        text = _text_block(b.text)
                        if text:
                            content.append(text)
                    else:
                        content.append(_image(b))
                content = content or [{"text": EMPTY_TEXT}]
            out.append({"role": "user", "content": content})
        elif isinstance(msg, AssistantMessage) and msg.content:
            blocks = _assistant(msg, claude)
            if blocks:
                out.append({"role": "assistant", "content": blocks})
    for message in out:
        message.pop("_results", None)
    if cache and out and out[-1]["role"] == "user":
        out[-1]["content"].append({"cachePoint": {"type": "default"}})
    return out


def build_request(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    claude = is_claude(model)
    cache = claude and options.cache_retention != "none"
    request: dict[str, Any] = {
        "modelId": model.id,
        "messages": convert_messages(model, context.messages, cache),
    }
    if context.system_prompt:
        system: list[dict[str, Any]] = [{"text": sanitize_text(context.system_prompt)}]
        if cache:
            system.append({"cachePoint": {"type": "default"}})
        request["system"] = system
    inference: dict[str, Any] = {}
    # Pi's agent always asks for an output cap (streamSimple: the request's, else the model's, within the
    # context window), for every vendor.
    max_tokens: int | None = clamp_max_tokens(model, context, options.max_tokens or model.max_tokens)
    level = clamp_thinking_level(model, options.reasoning) if model.reasoning and options.reasoning else "off"
    extra: dict[str, Any] | None = None
    if claude and level != "off":
        budget = thinking_budget(level)
        max_tokens = clamp_max_tokens(
            model, context, min(model.max_tokens, (options.max_tokens or model.max_tokens) + budget)
        )
        extra = {
            "thinking": {
                "type": "enabled",
                "budget_tokens": max(1024, min(budget, max_tokens - 1024)),
                "display": "summarized",
            },
            "anthropic_beta": ["interleaved-thinking-2025-05-14"],
        }
    if max_tokens is not None:
        inference["maxTokens"] = max_tokens
    if options.temperature is not None and level == "off":
        inference["temperature"] = options.temperature
    request["inferenceConfig"] = inference
    if context.tools:
        supports_strict = (model.compat.supports_strict_mode if model.compat else None) is True
        specs = []
        for t in context.tools:
            strict = resolve_strict(t, supports_strict)
            spec: dict[str, Any] = {
                "name": t.name,
                "description": t.description,
                "inputSchema": {"json": tool_parameters(t, strict)},
            }
            if strict is True:
                spec["strict"] = True
            specs.append({"toolSpec": spec})
        request["toolConfig"] = {"tools": specs}
    if extra is not None:
        request["additionalModelRequestFields"] = extra
    return request


# --------------------------------------------------------------------------------------------------
# The client and its stream


def region_for(model: Model) -> tuple[str, str | None]:
    """(region, endpoint URL or None for AWS's own)."""
    arn = _ARN_REGION.match(model.id)
    configured = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    host = re.sub(r"^https?://", "", model.base_url or "").split("/")[0].split(":")[0].lower()
    standard = _STANDARD_HOST.match(host)
    endpoint = None if not model.base_url or standard else model.base_url
    if arn:
        return arn.group(1), endpoint
    if configured:
        return configured, endpoint
    if standard:
        return standard.group(1), None
    return "us-east-1", endpoint


SKIP_AUTH_ENV = "AWS_BEDROCK_SKIP_AUTH"
"""``1``: sign with dummy credentials, for a Bedrock proxy that authenticates by other means (as Pi)."""


def make_client(model: Model, token: str | None, idle: float) -> Any:
    try:
        import boto3
        from botocore.config import Config
    except ImportError as exc:
        raise ProviderError(EXTRA_HINT) from exc
    region, endpoint = region_for(model)
    settings: dict[str, Any] = {"read_timeout": idle if idle > 0 else None, "retries": {"max_attempts": 1}}
    skip_auth = os.environ.get(SKIP_AUTH_ENV) == "1"  # a proxy that needs no AWS credentials (Pi's switch)
    token = None if skip_auth else token or os.environ.get("AWS_BEARER_TOKEN_BEDROCK")
    if token:  # a Bedrock API key: sent as a bearer token instead of a SigV4 signature
        from botocore import UNSIGNED

        settings["signature_version"] = UNSIGNED
    elif skip_auth:  # SigV4 with the dummy keys, even where botocore would pick up a Bedrock API key itself
        settings["signature_version"] = "v4"
    dummy = {"aws_access_key_id": "dummy-access-key", "aws_secret_access_key": "dummy-secret-key"}
    client = boto3.session.Session(**(dummy if skip_auth else {})).client(
        "bedrock-runtime", region_name=region, endpoint_url=endpoint, config=Config(**settings)
    )
    if token:
        bearer = f"Bearer {token}"

        def authorize(request: Any, **_kwargs: Any) -> None:
            request.headers["Authorization"] = bearer

        client.meta.events.register("before-send.bedrock-runtime.*", authorize)
    return client


class _EventPump:
    """``converse_stream`` in a worker thread; its events handed to the event loop one by one."""

    def __init__(self, client: Any, request: dict[str, Any]) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._stream: Any = None
        self._closed = threading.Event()
        self.response: Any = None
        self._started: asyncio.Future[None] = self._loop.create_future()
        threading.Thread(target=self._run, args=(client, request), name="bedrock-stream", daemon=True).start()

    def _put(self, item: tuple[str, Any]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody is listening any more
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    def _run(self, client: Any, request: dict[str, Any]) -> None:
        try:
            response = client.converse_stream(**request)
            self._stream = response["stream"]
            self._put(("started", response.get("ResponseMetadata")))
            for event in self._stream:
                if self._closed.is_set():
                    break
                self._put(("event", event))
            self._put(("end", None))
        except BaseException as exc:  # handed to the event loop, raised there
            self._put(("error", exc))

    async def start(self) -> _EventPump:
        kind, value = await self._queue.get()
        if kind == "error":
            raise value
        return self

    async def __anext__(self) -> dict[str, Any]:
        kind, value = await self._queue.get()
        if kind == "error":
            raise value
        if kind == "end":
            raise StopAsyncIteration
        event: dict[str, Any] = value
        return event

    async def close(self) -> None:
        self._closed.set()
        if self._stream is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self._stream.close)


class ConverseAssembler:
    """Converse stream events → ``output`` (blocks keyed by ``contentBlockIndex``)."""

    def __init__(self, output: DraftAssistantMessage, model: Model) -> None:
        self.output = output
        self.model = model
        self.blocks: dict[int, tuple[int, StreamBuffer]] = {}
        self.stopped = False
        self.done = False

    def _open(self, index: int, block: Any) -> int:
        self.output.content.append(block)
        position = len(self.output.content) - 1
        self.blocks[index] = (position, StreamBuffer())
        return position

    def apply(self, event: dict[str, Any]) -> list[AssistantMessageEvent]:
        out = self.output
        events: list[AssistantMessageEvent] = []
        for name in (
            "internalServerException",
            "modelStreamErrorException",
            "validationException",
            "throttlingException",
            "serviceUnavailableException",
        ):
            if name in event:
                raise BedrockStreamError(name, event[name])
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            tool = (start.get("start") or {}).get("toolUse")
            if tool:
                position = self._open(
                    int(start.get("contentBlockIndex", 0)),
                    DraftToolCall(str(tool.get("toolUseId") or ""), str(tool.get("name") or ""), {}),
                )
                events.append(ToolCallStartEvent(position, out))
        elif "contentBlockDelta" in event:
            data = event["contentBlockDelta"]
            index = int(data.get("contentBlockIndex", 0))
            delta = data.get("delta") or {}
            if "text" in delta:
                if index not in self.blocks:
                    events.append(TextStartEvent(self._open(index, DraftTextContent("")), out))
                position, buffer = self.blocks[index]
                block = out.content[position]
                if isinstance(block, DraftTextContent):
                    if buffer.add(delta["text"]):
                        block.text = buffer.text()
                    events.append(TextDeltaEvent(position, delta["text"], out))
            elif "toolUse" in delta and index in self.blocks:
                position, buffer = self.blocks[index]
                block = out.content[position]
                piece = str(delta["toolUse"].get("input") or "")
                if isinstance(block, DraftToolCall):
                    if buffer.add(piece):
                        block.arguments = parse_partial_json(buffer.text())
                    events.append(ToolCallDeltaEvent(position, piece, out))
            elif "reasoningContent" in delta:
                reasoning = delta["reasoningContent"]
                if index not in self.blocks:
                    events.append(
                        ThinkingStartEvent(
                            self._open(index, DraftThinkingContent("", thinking_signature="")), out
                        )
                    )
                position, buffer = self.blocks[index]
                block = out.content[position]
                if isinstance(block, DraftThinkingContent):
                    if reasoning.get("text"):
                        if buffer.add(reasoning["text"]):
                            block.thinking = buffer.text()
                        events.append(ThinkingDeltaEvent(position, reasoning["text"], out))
                    if reasoning.get("signature") and not block.redacted:
                        block.thinking_signature = (block.thinking_signature or "") + reasoning["signature"]
                    if reasoning.get("redactedContent"):
                        if not block.redacted:
                            block.redacted, block.thinking_signature = True, ""
                            buffer.add(REDACTED_TEXT)
                            block.thinking = buffer.text()
                            events.append(ThinkingDeltaEvent(position, REDACTED_TEXT, out))
                        raw = reasoning["redactedContent"]
                        previous = base64.b64decode(block.thinking_signature or "")
                        block.thinking_signature = base64.b64encode(previous + bytes(raw)).decode()
        elif "contentBlockStop" in event:
            events += self._close(int(event["contentBlockStop"].get("contentBlockIndex", 0)))
        elif "messageStop" in event:
            reason = str(event["messageStop"].get("stopReason") or "")
            out.raw_stop_reason = reason
            out.stop_reason = _STOPS.get(reason, "error")
            if out.stop_reason == "error":
                out.error_message = f"Provider stopped with: {reason}" if reason else "Provider stopped"
            self.stopped = True
        elif "metadata" in event:
            usage = event["metadata"].get("usage") or {}
            out.usage = finish_usage(
                self.model,
                replace(
                    out.usage,
                    input=int(usage.get("inputTokens") or 0),
                    output=int(usage.get("outputTokens") or 0),
                    cache_read=int(usage.get("cacheReadInputTokens") or 0),
                    cache_write=int(usage.get("cacheWriteInputTokens") or 0),
                ),
            )
            self.done = True
        return events

    def _close(self, index: int) -> list[AssistantMessageEvent]:
        entry = self.blocks.pop(index, None)
        if entry is None:
            return []
        position, buffer = entry
        block = self.output.content[position]
        if isinstance(block, DraftTextContent):
            block.text = buffer.text()
            return [TextEndEvent(position, block.text, self.output)]
        if isinstance(block, DraftThinkingContent):
            block.thinking = buffer.text()
            return [ThinkingEndEvent(position, block.thinking, self.output)]
        if isinstance(block, DraftToolCall):
            block.arguments, block.arguments_error = final_arguments(buffer.text())
            return [ToolCallEndEvent(position, block, self.output)]
        return []

    def complete(self) -> bool:
        return self.done

    def finish(self) -> list[AssistantMessageEvent]:
        if not self.stopped:
            raise ConnectionResetError("Bedrock stream ended without a stop reason")
        events: list[AssistantMessageEvent] = []
        for index in list(self.blocks):
            events += self._close(index)
        return events

    def finalize_quietly(self) -> None:
        for index in list(self.blocks):
            self._close(index)


class BedrockStreamError(ProviderError):
    """An exception event inside the stream (Pi's prefixes: ``Throttling error: …``)."""

    PREFIXES: ClassVar[dict[str, str]] = {
        "internalServerException": "Internal server error",
        "modelStreamErrorException": "Model stream error",
        "validationException": "Validation error",
        "throttlingException": "Throttling error",
        "serviceUnavailableException": "Service unavailable",
    }

    def __init__(self, name: str, detail: Any) -> None:
        message = detail.get("message") if isinstance(detail, dict) else str(detail)
        super().__init__(f"{self.PREFIXES.get(name, name)}: {message}")
        self.body = {"message": str(self)}


class BedrockConverseProvider:
    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        output = new_output(model)
        output.api = API
        token = options.api_key if options.api_key and options.api_key != AMBIENT else None

        async def create(client: Any, request: dict[str, Any]) -> Any:
            return await _EventPump(client, request).start()

        events = stream_via_sdk(
            model,
            options,
            output,
            ConverseAssembler(output, model),
            headers={},
            api_key=token or AMBIENT,
            missing_key_text="",
            build_params=lambda: build_request(model, context, options),
            clients=_CLIENTS,
            make_client=lambda _key, _hdrs, idle: make_client(model, token, idle),
            create=create,
            stream_flag=False,
        )
        async for event in events:
            yield event


_CLIENTS = ClientCache()
PROVIDER = BedrockConverseProvider()
