"""The ``openai-completions`` API: OpenAI Chat Completions, and every server that speaks it.

Covers OpenAI itself, OpenRouter, Groq, DeepSeek, xAI, and local servers (Ollama, LM Studio, vLLM,
llama.cpp) through the official ``openai`` SDK with a configurable ``base_url``. Differences between
servers are handled by Pi's compatibility flags (``model.compat``, camelCase keys): detected from the
provider name and base URL, overridden by what models.json says.

The pure halves — ``resolve_compat``, ``convert_messages``, ``build_params``, ``parse_usage`` — are
importable for tests; ``PROVIDER.stream`` does the I/O.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import msgspec

from caddie.ai.catalogue import missing_key_text
from caddie.ai.constrained_sampling import (
    GrammarInput,
    grammar_input_properties,
    grammar_tool_input,
    resolve_grammar,
    resolve_strict,
    tool_parameters,
)
from caddie.ai.conversion_cache import cached_conversion
from caddie.ai.messages import (
    AssistantContent,
    AssistantMessage,
    DraftAssistantMessage,
    DraftTextContent,
    DraftThinkingContent,
    DraftToolCall,
    ImageContent,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from caddie.ai.model import Context, Model, ModelCompat, StreamOptions, Tool
from caddie.ai.providers.blocks import StreamBuffer, final_arguments, parse_partial_json
from caddie.ai.providers.claude_code import copilot_headers, is_copilot
from caddie.ai.providers.cost import finish_usage
from caddie.ai.providers.request import (
    NO_KEY_PLACEHOLDER,
    compact_json,
    encode_body,
    headers_contain,
    is_local_base_url,
    sanitize_text,
)
from caddie.ai.providers.streaming import new_output, stream_via_sdk
from caddie.ai.providers.thinking import clamp_max_tokens, clamp_thinking_level, thinking_budget
from caddie.ai.providers.transport import ClientCache, openai_client_factory
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
from caddie.ai.transform import normalize_openai_tool_call_id, transform_messages

API = "openai-completions"
REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
"""Delta fields servers use for thinking text (llama.cpp/DeepSeek/vLLM: ``reasoning_content``)."""
LOCAL_PROVIDERS = frozenset({"ollama", "lmstudio", "lm-studio", "llamacpp", "llama.cpp", "llama-cpp", "vllm"})

# --------------------------------------------------------------------------------------------------
# Compatibility flags


def resolve_compat(model: Model) -> ModelCompat:
    """Pi's compat flags for ``model``: detected from provider and base URL, then ``model.compat`` wins."""
    provider = model.provider
    url = model.base_url.lower()
    is_openrouter = provider == "openrouter" or "openrouter.ai" in url
    is_deepseek = provider == "deepseek" or "deepseek.com" in url
    is_zai = provider in ("zai", "zai-coding-cn") or "api.z.ai" in url or "bigmodel.cn" in url
    is_grok = provider == "xai" or "api.x.ai" in url
    is_moonshot = provider.startswith("moonshotai") or "api.moonshot." in url
    is_together = provider == "together" or "together.ai" in url or "together.xyz" in url
    is_cerebras = provider == "cerebras" or "cerebras.ai" in url
    is_nvidia = provider == "nvidia" or "integrate.api.nvidia.com" in url
    is_workers_ai = provider == "cloudflare-workers-ai" or "api.cloudflare.com" in url
    is_ai_gateway = provider == "cloudflare-ai-gateway" or "gateway.ai.cloudflare.com" in url
    is_ant_ling = provider == "ant-ling" or "api.ant-ling.com" in url
    is_opencode = provider == "opencode" or "opencode.ai" in url
    is_chutes = "chutes.ai" in url
    non_standard = (
        is_deepseek
        or is_zai
        or is_grok
        or is_moonshot
        or is_together
        or is_cerebras
        or is_nvidia
        or is_workers_ai
        or is_ai_gateway
        or is_ant_ling
        or is_opencode
        or is_chutes
    )
    # caddie's addition: an unnamed server on this machine (Ollama, vLLM…) gets the conservative flags; a
    # provider Pi knows by name keeps Pi's flags wherever it is served from (a local proxy, a test fake).
    is_local = provider in LOCAL_PROVIDERS or (
        is_local_base_url(model.base_url) and not (non_standard or is_openrouter)
    )
    openrouter_dev = is_openrouter and (model.id.startswith("anthropic/") or model.id.startswith("openai/"))
    detected = ModelCompat(
        supports_store=not (non_standard or is_local),
        supports_developer_role=openrouter_dev or not (non_standard or is_openrouter or is_local),
        supports_reasoning_effort=not (
            is_grok or is_zai or is_moonshot or is_together or is_ai_gateway or is_nvidia or is_ant_ling
        ),
        supports_usage_in_streaming=True,
        supports_finish_reason=True,
        max_tokens_field=(
            "max_tokens"
            if (
                is_deepseek
                or is_moonshot
                or is_together
                or is_zai
                or is_chutes
                or is_ai_gateway
                or is_nvidia
                or is_ant_ling
                or is_local
            )
            else "max_completion_tokens"
        ),
        requires_tool_result_name=False,
        requires_assistant_after_tool_result=False,
        requires_thinking_as_text=False,
        requires_reasoning_content_on_assistant_messages=is_deepseek,
        thinking_format="deepseek"
        if is_deepseek
        else "zai"
        if is_zai
        else "openrouter"
        if is_openrouter
        else "openai",
        cache_control_format="anthropic" if is_openrouter and model.id.startswith("anthropic/") else None,
        supports_long_cache_retention=not (
            is_together or is_workers_ai or is_ai_gateway or is_nvidia or is_ant_ling
        ),
        supports_strict_mode=not (is_moonshot or is_together or is_ai_gateway or is_nvidia),
        chat_template_kwargs={},
        thinking_token_budget_field=None,
        supports_thinking_token_budget=False,
        open_router_routing=None,
    )
    return detected.merged(model.compat)


# --------------------------------------------------------------------------------------------------
# Request: our messages -> Chat Completions


def _normalize_id(tool_call_id: str, model: Model, _source: AssistantMessage) -> str:
    return normalize_openai_tool_call_id(tool_call_id, model)


def _image_part(block: ImageContent) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}}


_NOTHING: dict[str, Any] = {}
"""The cached conversion of a message that sends nothing; never sent, never changed."""


def _convert_user(msg: UserMessage) -> dict[str, Any]:
    if isinstance(msg.content, str):
        return {"role": "user", "content": sanitize_text(msg.content)}
    parts = [
        {"type": "text", "text": sanitize_text(b.text)} if isinstance(b, TextContent) else _image_part(b)
        for b in msg.content
    ]
    return {"role": "user", "content": parts} if parts else _NOTHING


def _convert_result(
    result: ToolResultMessage, model: Model, compat: ModelCompat
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``tool`` message for one result, and the image parts that follow the results as a user turn."""
    text = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
    has_images = any(isinstance(b, ImageContent) for b in result.content)
    content = text if text else "(see attached image)" if has_images else "(no tool output)"
    tool_msg: dict[str, Any] = {
        "role": "tool",
        "content": sanitize_text(content),
        "tool_call_id": result.tool_call_id,
    }
    if compat.requires_tool_result_name and result.tool_name:
        tool_msg["name"] = result.tool_name
    images = (
        [_image_part(b) for b in result.content if isinstance(b, ImageContent)]
        if has_images and model.supports_images
        else []
    )
    return tool_msg, images


def _cache_key(model: Model, compat: ModelCompat) -> tuple[object, ...]:
    """What a message's conversion depends on besides the message."""
    flags = (model.reasoning, model.supports_images, msgspec.msgpack.encode(compat))
    return ("openai-completions", model.api, model.provider, model.id, *flags)


def convert_messages(
    model: Model, context: Context, compat: ModelCompat | None = None
) -> list[dict[str, Any]]:
    """The ``messages`` array for ``context`` after the standard repairs (see ``caddie.ai.transform``).

    With ``context.conversion_cache``, each message's conversion is kept and reused while the same message
    object comes back, and so is the converted prefix (a checkpoint): a request that starts with the last
    one's messages converts only the new ones. Not when OpenRouter's cache markers are added: they change
    the messages in place. The cached dicts and lists are shared between requests and never changed."""
    compat = compat if compat is not None else resolve_compat(model)
    cache = context.conversion_cache
    messages = transform_messages(context.messages, model, _normalize_id, cache)
    if compat.cache_control_format is not None:
        cache = None
    grammar = grammar_input_properties(context.tools, compat.supports_open_ai_grammar_tools is True)
    key = (*_cache_key(model, compat), tuple(sorted(grammar.items())))
    resumed = cache.resume(key, messages) if cache is not None else None
    scope = cache.scope(key, keep=resumed is not None) if cache is not None else None
    out: list[dict[str, Any]] = []
    if context.system_prompt:
        role = "developer" if model.reasoning and compat.supports_developer_role else "system"
        out.append({"role": role, "content": sanitize_text(context.system_prompt)})
    converted: list[dict[str, Any]]
    last_role: str | None
    if resumed is not None:  # the converted messages the last request kept for the same first messages
        i, (done, last_role) = resumed
        converted = list(done)
    else:
        i, converted, last_role = 0, [], None
    n = len(messages)
    run_start: tuple[int, int, str | None] = (n, 0, None)
    """Where the last run of tool results began: the position, the converted length and the last role."""
    while i < n:
        msg = messages[i]
        if (
            compat.requires_assistant_after_tool_result
            and last_role == "toolResult"
            and isinstance(msg, UserMessage)
        ):
            converted.append({"role": "assistant", "content": "I have processed the tool results."})
        if isinstance(msg, ToolResultMessage):
            run_start = (i, len(converted), last_role)
            images: list[dict[str, Any]] = []
            while i < n:
                result = messages[i]
                if not isinstance(result, ToolResultMessage):
                    break
                pair = cached_conversion(scope, result, _convert_result, model, compat)
                converted.append(pair[0])
                images += pair[1]
                i += 1
            if images:
                if compat.requires_assistant_after_tool_result:
                    converted.append({"role": "assistant", "content": "I have processed the tool results."})
                converted.append(
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": "Attached image(s) from tool result:"}, *images],
                    }
                )
                last_role = "user"
            else:
                last_role = "toolResult"
            continue
        entry = cached_conversion(scope, msg, _convert_entry, model, compat, grammar)
        if entry is not _NOTHING:
            converted.append(entry)
        last_role = "user" if isinstance(msg, UserMessage) else "assistant"
        i += 1
    if cache is not None:
        # The state after whole turns: a run of tool results at the end is left out (resumed before it),
        # since its closing user turn of images, and the assistant line before that, depend on the
        # results that follow. Such a run was walked by this request: a checkpoint never ends in one.
        if n and isinstance(messages[-1], ToolResultMessage):
            at, length, role_there = run_start
            cache.checkpoint(key, messages[:at], (converted[:length], role_there))
        else:
            cache.checkpoint(key, messages, (list(converted), last_role))
    out += converted
    return out


def _convert_entry(
    msg: UserMessage | AssistantMessage, model: Model, compat: ModelCompat, grammar: dict[str, str]
) -> Any:
    """A user or assistant message's entry; ``_NOTHING`` for an assistant message that sends nothing."""
    if isinstance(msg, UserMessage):
        return _convert_user(msg)
    return _convert_assistant(msg, model, compat, grammar) or _NOTHING


def _convert_assistant(
    msg: AssistantMessage, model: Model, compat: ModelCompat, grammar: dict[str, str] | None = None
) -> dict[str, Any] | None:
    texts = [sanitize_text(b.text) for b in msg.content if isinstance(b, TextContent) and b.text.strip()]
    thinking = [b for b in msg.content if isinstance(b, ThinkingContent) and b.thinking.strip()]
    calls = msg.tool_calls()
    out: dict[str, Any] = {
        "role": "assistant",
        "content": "" if compat.requires_assistant_after_tool_result else None,
    }
    text = "".join(texts)
    if thinking and compat.requires_thinking_as_text:
        joined = "\n\n".join(sanitize_text(b.thinking) for b in thinking)
        out["content"] = "\n\n".join(p for p in (joined, text) if p)
    else:
        if text:
            out["content"] = text
        if thinking:
            # Servers that stream reasoning in a field (llama.cpp, DeepSeek...) want it back in that field.
            field = thinking[0].thinking_signature
            if field in REASONING_FIELDS:
                out[field] = "\n".join(b.thinking for b in thinking)
    if calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "custom",
                "custom": {
                    "name": c.name,
                    "input": sanitize_text(grammar_tool_input(c.name, c.arguments, grammar[c.name])),
                },
            }
            if grammar and c.name in grammar
            else {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": compact_json(c.arguments)},
            }
            for c in calls
        ]
    if (
        compat.requires_reasoning_content_on_assistant_messages
        and model.reasoning
        and "reasoning_content" not in out
    ):
        out["reasoning_content"] = ""
    if not out.get("content") and not calls:
        return None
    return out


def convert_tools(tools: list[Tool], compat: ModelCompat | None = None) -> list[dict[str, Any]]:
    """Function tools as Pi sends them: ``strict`` (false unless the tool's constrained sampling makes it
    strict) unless the server rejects the field; a tool with a grammar, where the server takes them, as a
    custom tool."""
    with_strict = (compat.supports_strict_mode if compat else None) is not False
    grammar_tools = bool(compat and compat.supports_open_ai_grammar_tools)
    out: list[dict[str, Any]] = []
    for t in tools:
        grammar = resolve_grammar(t, grammar_tools)
        if grammar is not None:
            out.append(
                {
                    "type": "custom",
                    "custom": {
                        "name": t.name,
                        "description": t.description,
                        "format": {
                            "type": "grammar",
                            "grammar": {"syntax": grammar.syntax, "definition": grammar.definition},
                        },
                    },
                }
            )
            continue
        strict = resolve_strict(t, with_strict)
        function: dict[str, Any] = {
            "name": t.name,
            "description": t.description,
            "parameters": tool_parameters(t, strict),
        }
        if with_strict:
            function["strict"] = strict is True
        out.append({"type": "function", "function": function})
    return out


def _add_cache_marker(message: dict[str, Any], marker: dict[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, str) and content:
        message["content"] = [{"type": "text", "text": content, "cache_control": marker}]
        return True
    if isinstance(content, list):
        for part in reversed(content):
            if isinstance(part, dict) and part.get("type") == "text":
                part["cache_control"] = marker
                return True
    return False


def _apply_anthropic_cache_control(params: dict[str, Any], marker: dict[str, Any]) -> None:
    messages: list[dict[str, Any]] = params["messages"]
    for m in messages:
        if m.get("role") in ("system", "developer"):
            _add_cache_marker(m, marker)
            break
    tools = params.get("tools")
    if tools:
        tools[-1]["cache_control"] = marker
    for m in reversed(messages):
        if m.get("role") in ("user", "assistant", "tool") and _add_cache_marker(m, marker):
            break


def _chat_template_kwargs(
    model: Model, compat: ModelCompat, enabled: bool, effort: str | None, budget: int | None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in (compat.chat_template_kwargs or {}).items():
        if isinstance(value, dict):
            if not enabled and value.get("omitWhenOff"):
                continue
            var = value.get("$var")
            resolved: Any = (
                enabled if var == "thinking.enabled" else budget if var == "thinking.budget" else effort
            )
            if resolved is not None:
                out[key] = resolved
        else:
            out[key] = value
    return out


def _apply_thinking(
    params: dict[str, Any], model: Model, options: StreamOptions, compat: ModelCompat
) -> None:
    if not model.reasoning:
        return
    level = clamp_thinking_level(model, options.reasoning)
    mapping = model.thinking_level_map or {}
    enabled = level != "off"
    effort: str | None = None
    if enabled:
        mapped = mapping.get(level, level)
        effort = mapped if isinstance(mapped, str) else None
    fmt = compat.thinking_format or "openai"
    supports_effort = bool(compat.supports_reasoning_effort)
    max_out = params.get("max_tokens") or params.get("max_completion_tokens") or model.max_tokens
    budget = (
        min(thinking_budget(level, options.thinking_budgets), max(0, int(max_out) - 1024))
        if enabled
        else None
    )
    if fmt == "openrouter":
        if enabled:
            params["reasoning"] = {"effort": effort or level}
        elif mapping.get("off", "none") is not None:
            params["reasoning"] = {"effort": mapping.get("off") or "none"}
    elif fmt == "deepseek":
        params["thinking"] = {"type": "enabled" if enabled else "disabled"}
        if enabled and supports_effort and effort:
            params["reasoning_effort"] = effort
    elif fmt == "zai":
        params["thinking"] = {"type": "enabled" if enabled else "disabled"}
    elif fmt == "qwen":
        params["enable_thinking"] = enabled
    elif fmt == "qwen-chat-template":
        params["chat_template_kwargs"] = {"enable_thinking": enabled, "preserve_thinking": True}
    elif fmt == "chat-template":
        kwargs = _chat_template_kwargs(model, compat, enabled, effort, budget)
        if kwargs:
            params["chat_template_kwargs"] = kwargs
    elif supports_effort:
        if enabled and effort:
            params["reasoning_effort"] = effort
        elif not enabled and isinstance(mapping.get("off"), str):
            params["reasoning_effort"] = mapping["off"]
    budget_field = compat.thinking_token_budget_field or (
        "thinking_token_budget" if compat.supports_thinking_token_budget else None
    )
    if budget_field and budget:
        params[budget_field] = budget


def build_params(
    model: Model, context: Context, options: StreamOptions, compat: ModelCompat | None = None
) -> dict[str, Any]:
    """The request body for one streamed Chat Completions call."""
    compat = compat if compat is not None else resolve_compat(model)
    params: dict[str, Any] = {
        "model": model.id,
        "messages": convert_messages(model, context, compat),
        "stream": True,
    }
    if compat.supports_usage_in_streaming is not False:
        params["stream_options"] = {"include_usage": True}
    if compat.supports_store:
        params["store"] = False
    max_tokens = clamp_max_tokens(model, context, options.max_tokens or model.max_tokens)
    params["max_tokens" if compat.max_tokens_field == "max_tokens" else "max_completion_tokens"] = max_tokens
    if options.temperature is not None:
        params["temperature"] = options.temperature
    if context.tools:
        params["tools"] = convert_tools(context.tools, compat)
    if "api.openai.com" in model.base_url and options.cache_retention != "none" and options.session_id:
        params["prompt_cache_key"] = options.session_id[:64]
        if options.cache_retention == "long" and compat.supports_long_cache_retention:
            params["prompt_cache_retention"] = "24h"
    if compat.cache_control_format == "anthropic" and options.cache_retention != "none":
        marker: dict[str, Any] = {"type": "ephemeral"}
        if options.cache_retention == "long" and compat.supports_long_cache_retention:
            marker["ttl"] = "1h"
        _apply_anthropic_cache_control(params, marker)
    _apply_thinking(params, model, options, compat)
    routing = compat.open_router_routing
    if routing:
        params["provider"] = routing
    if model.sampling_params:  # last, so its keys win (Pi's samplingParams)
        params.update(model.sampling_params)
    return params


# --------------------------------------------------------------------------------------------------
# Response: Chat Completions chunks -> our message


def _get(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def parse_usage(raw: Any, model: Model) -> Usage:
    """Usage from a Chat Completions ``usage`` object; ``input`` excludes cached (read) and written tokens."""
    prompt = _int(_get(raw, "prompt_tokens"))
    details = _get(raw, "prompt_tokens_details")
    cache_read = (
        _int(_get(details, "cached_tokens"))
        or _int(_get(raw, "prompt_cache_hit_tokens"))
        or _int(_get(raw, "cached_tokens"))
    )
    cache_write = _int(_get(details, "cache_write_tokens"))
    output = _int(_get(raw, "completion_tokens"))
    reasoning = _int(_get(_get(raw, "completion_tokens_details"), "reasoning_tokens"))
    usage = Usage(
        input=max(0, prompt - cache_read - cache_write),
        output=output,
        cache_read=cache_read,
        cache_write=cache_write,
        reasoning=reasoning or None,
    )
    return finish_usage(model, usage)


def map_finish_reason(reason: str) -> tuple[StopReason, str | None]:
    if reason in ("stop", "end"):
        return "stop", None
    if reason == "length":
        return "length", None
    if reason in ("tool_calls", "function_call"):
        return "toolUse", None
    return "error", f"The provider stopped the response: finish_reason {reason}"


class _ChunkAssembler:
    """Folds streamed chunks into ``output`` and says which events that produced.

    Text, thinking and argument JSON accumulate in ``StreamBuffer``s (linear work however long the reply);
    the blocks in ``output`` are refreshed from them as the buffers decide, and exactly at the end.
    """

    def __init__(
        self,
        output: DraftAssistantMessage,
        model: Model,
        *,
        require_finish: bool = True,
        grammar: dict[str, str] | None = None,
    ) -> None:
        self.output = output
        self.model = model
        self.require_finish = require_finish
        self.grammar = grammar or {}
        """Grammar tools by name → the property their custom tool input fills (Pi: ``input`` for others)."""
        self.custom: dict[int, GrammarInput] = {}  # id(block) -> a custom tool call's input
        self.text: DraftTextContent | None = None
        self.thinking: DraftThinkingContent | None = None
        self.calls_by_index: dict[int, DraftToolCall] = {}
        self.calls_by_id: dict[str, DraftToolCall] = {}
        self.buffers: dict[int, StreamBuffer] = {}  # id(block) -> its streamed text / argument JSON
        self.positions: dict[int, int] = {}  # id(block) -> index in output.content
        self.has_finish = False

    def _add_block(self, block: AssistantContent) -> int:
        self.output.content.append(block)
        index = len(self.output.content) - 1
        self.positions[id(block)] = index
        self.buffers[id(block)] = StreamBuffer()
        return index

    def apply(self, chunk: Any) -> list[AssistantMessageEvent]:
        out = self.output
        events: list[AssistantMessageEvent] = []
        chunk_id = _get(chunk, "id")
        if chunk_id and not out.response_id:
            out.response_id = str(chunk_id)
        chunk_model = _get(chunk, "model")
        if (
            isinstance(chunk_model, str)
            and chunk_model
            and chunk_model != self.model.id
            and not out.response_model
        ):
            out.response_model = chunk_model
        usage = _get(chunk, "usage")
        if usage:
            out.usage = parse_usage(usage, self.model)
        choices = _get(chunk, "choices") or []
        if not choices:
            return events
        choice = choices[0]
        if not usage and _get(choice, "usage"):
            out.usage = parse_usage(_get(choice, "usage"), self.model)
        finish = _get(choice, "finish_reason")
        if finish:
            out.raw_stop_reason = str(finish)
            out.stop_reason, message = map_finish_reason(str(finish))
            if message:
                out.error_message = message
            self.has_finish = True
        delta = _get(choice, "delta")
        if delta is None:
            return events
        content = _get(delta, "content")
        if isinstance(content, str) and content:
            text = self.text
            if text is None:
                text = self.text = DraftTextContent("")
                events.append(TextStartEvent(self._add_block(text), out))
            if self.buffers[id(text)].add(content):
                text.text = self.buffers[id(text)].text()
            events.append(TextDeltaEvent(self.positions[id(text)], content, out))
        for field in REASONING_FIELDS:
            value = _get(delta, field)
            if isinstance(value, str) and value:
                thinking = self.thinking
                if thinking is None:
                    thinking = self.thinking = DraftThinkingContent("", thinking_signature=field)
                    events.append(ThinkingStartEvent(self._add_block(thinking), out))
                if self.buffers[id(thinking)].add(value):
                    thinking.thinking = self.buffers[id(thinking)].text()
                events.append(ThinkingDeltaEvent(self.positions[id(thinking)], value, out))
                break  # some servers send the same text in two fields
        for tc in _get(delta, "tool_calls") or []:
            events += self._apply_tool_delta(tc)
        return events

    def _apply_tool_delta(self, tc: Any) -> list[AssistantMessageEvent]:
        out = self.output
        events: list[AssistantMessageEvent] = []
        index = _get(tc, "index")
        call_id = _get(tc, "id")
        fn = _get(tc, "function")
        custom = _get(tc, "custom") if fn is None else None
        name = _get(fn, "name") or _get(custom, "name")
        block = self.calls_by_index.get(index) if isinstance(index, int) else None
        if block is None and call_id:
            block = self.calls_by_id.get(str(call_id))
        if block is None:
            block = DraftToolCall(id=str(call_id or ""), name=str(name or ""), arguments={})
            events.append(ToolCallStartEvent(self._add_block(block), out))
        if isinstance(index, int):
            self.calls_by_index.setdefault(index, block)
        if call_id:
            if not block.id:
                block.id = str(call_id)
            self.calls_by_id[str(call_id)] = block
        if name and not block.name:
            block.name = str(name)
        if custom is not None:
            grammar = self.custom.get(id(block))
            if grammar is None:
                grammar = self.custom[id(block)] = GrammarInput(self.grammar.get(block.name, "input"))
                block.arguments = {grammar.prop: ""}
            added = _get(custom, "input")
            text = grammar.input + (added if isinstance(added, str) else "")
            piece_json = grammar.advance(text, False) if text != grammar.input else None
            block.arguments = {grammar.prop: text}
            events.append(ToolCallDeltaEvent(self.positions[id(block)], piece_json or "", out))
            return events
        piece = _get(fn, "arguments")
        delta = piece if isinstance(piece, str) else ""
        buffer = self.buffers[id(block)]
        if buffer.add(delta):  # a live preview of the arguments, re-parsed only as the buffer allows
            block.arguments = parse_partial_json(buffer.text())
        events.append(ToolCallDeltaEvent(self.positions[id(block)], delta, out))
        return events

    def complete(self) -> bool:
        return False  # Chat Completions ends with the HTTP stream ([DONE])

    def finish(self) -> list[AssistantMessageEvent]:
        if not self.has_finish:
            if self.require_finish:
                raise ConnectionResetError("no finish_reason")
            self.output.stop_reason = "toolUse" if self.output.tool_calls() else "stop"
        return self.finish_blocks()

    def _settle(self, block: AssistantContent) -> None:
        """Give ``block`` its exact, complete content from its buffer."""
        buffer = self.buffers.get(id(block))
        if buffer is None:
            return
        if isinstance(block, DraftTextContent):
            block.text = buffer.text()
        elif isinstance(block, DraftThinkingContent):
            block.thinking = buffer.text()
        elif isinstance(block, DraftToolCall) and id(block) not in self.custom:
            block.arguments, block.arguments_error = final_arguments(buffer.text())

    def finish_blocks(self) -> list[AssistantMessageEvent]:
        events: list[AssistantMessageEvent] = []
        for i, block in enumerate(self.output.content):
            self._settle(block)
            grammar = self.custom.get(id(block))
            if grammar is not None:  # a custom tool call's input is closed: the last piece of its JSON
                closing = grammar.advance(grammar.input, True)
                if closing is not None:
                    events.append(ToolCallDeltaEvent(i, closing, self.output))
            if isinstance(block, TextContent):
                events.append(TextEndEvent(i, block.text, self.output))
            elif isinstance(block, ThinkingContent):
                events.append(ThinkingEndEvent(i, block.thinking, self.output))
            elif isinstance(block, ToolCall):
                events.append(ToolCallEndEvent(i, block, self.output))
        return events

    def finalize_quietly(self) -> None:
        """On failure: every block gets all that arrived (tool calls the best arguments seen; no events)."""
        for block in self.output.content:
            self._settle(block)


# --------------------------------------------------------------------------------------------------
# The provider


async def post_stream(client: Any, path: str, params: dict[str, Any]) -> Any:
    """POST caddie's own serialised body through the ``openai`` client's public ``post`` (auth, headers,
    error classes) and return its SSE stream of plain dicts — no SDK re-walk of the messages (see
    ``encode_body``)."""
    import openai

    return await client.post(
        path, cast_to=object, content=encode_body(params), stream=True, stream_cls=openai.AsyncStream[object]
    )


def _missing_key_text(model: Model) -> str:
    return missing_key_text(model.provider)


class OpenAICompletionsProvider:
    """Streams one assistant message from a Chat Completions endpoint (see the module docstring)."""

    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        output = new_output(model)
        headers = {"User-Agent": "caddie", **(model.headers or {})}
        if is_copilot(model):
            headers.update(copilot_headers(context.messages))
        headers.update(options.headers or {})
        api_key = options.api_key
        if not api_key and (headers_contain(headers, "authorization") or is_local_base_url(model.base_url)):
            api_key = NO_KEY_PLACEHOLDER
        compat = resolve_compat(model)
        events = stream_via_sdk(
            model,
            options,
            output,
            lambda: _ChunkAssembler(
                output,
                model,
                require_finish=compat.supports_finish_reason is not False,
                grammar=grammar_input_properties(
                    context.tools, compat.supports_open_ai_grammar_tools is True
                ),
            ),
            headers=headers,
            api_key=api_key,
            missing_key_text=_missing_key_text(model),
            build_params=lambda: build_params(model, context, options, compat),
            clients=_CLIENTS,
            make_client=openai_client_factory(model.base_url, options.max_retries),
            create=lambda client, params: post_stream(client, "/chat/completions", params),
        )
        async for event in events:
            yield event


_CLIENTS = ClientCache()
PROVIDER = OpenAICompletionsProvider()
