"""A model's description (Pi's ``Model``) and the request shapes a provider takes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, get_args

import msgspec

from caddie.ai import secrets
from caddie.ai.abort import AbortSignal
from caddie.ai.constrained_sampling import ConstrainedSampling
from caddie.ai.conversion_cache import ConversionCache
from caddie.ai.messages import LlmMessage

ThinkingLevel: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]
THINKING_LEVELS: tuple[ThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
DEFAULT_THINKING_LEVEL: ThinkingLevel = "medium"


Api: TypeAlias = Literal[
    "openai-completions",
    "openai-responses",
    "azure-openai-responses",
    "anthropic-messages",
    "google-generative-ai",
    "anthropic-bedrock",
    "anthropic-vertex",
    "openai-codex-responses",
    "pi-messages",
    "mistral-conversations",
    "google-vertex",
    "bedrock-converse-stream",
    "faux",
]
"""The wire protocols caddie speaks (Pi's ``Api`` names); each has a module in ``caddie.ai.providers``."""
APIS: tuple[Api, ...] = get_args(Api)


_EXTENSION_APIS: set[str] = set()
"""APIs extensions provide (``register_provider`` with ``streamSimple``): their own names."""


def register_api_name(name: str) -> None:
    """Let ``name`` be used as a model's ``api`` (an extension provides its stream function)."""
    _EXTENSION_APIS.add(name)


def as_api(value: object) -> Api | None:
    """``value`` when it names an API caddie speaks (built in, or provided by an extension), else None."""
    for api in APIS:
        if value == api:
            return api
    if isinstance(value, str) and value in _EXTENSION_APIS:
        return value  # type: ignore[return-value]  # an extension's API: a name outside the built-in list
    return None


class ModelCompat(msgspec.Struct, rename="camel", omit_defaults=True, frozen=True, kw_only=True):
    """Pi's per-model compatibility flags, typed. camelCase on the wire (models.json, the catalogue, RPC),
    snake_case here; None means "not set" (the provider detects or defaults it). One struct covers every
    API's flags (Pi's ``OpenAICompletionsCompat``, ``OpenAIResponsesCompat``, ``AnthropicMessagesCompat``):
    an API reads the ones it knows and ignores the rest."""

    # openai-completions
    supports_store: bool | None = None
    supports_developer_role: bool | None = None
    supports_reasoning_effort: bool | None = None
    supports_usage_in_streaming: bool | None = None
    supports_finish_reason: bool | None = None
    max_tokens_field: Literal["max_completion_tokens", "max_tokens"] | None = None
    requires_tool_result_name: bool | None = None
    requires_assistant_after_tool_result: bool | None = None
    requires_thinking_as_text: bool | None = None
    requires_reasoning_content_on_assistant_messages: bool | None = None
    thinking_format: (
        Literal[
            "openai",
            "openrouter",
            "deepseek",
            "together",
            "baseten",
            "zai",
            "qwen",
            "chat-template",
            "qwen-chat-template",
            "string-thinking",
            "ant-ling",
        ]
        | None
    ) = None
    chat_template_kwargs: dict[str, Any] | None = None
    chat_template_args: dict[str, Any] | None = None
    open_router_routing: dict[str, Any] | None = None
    vercel_gateway_routing: dict[str, Any] | None = None
    zai_tool_stream: bool | None = None
    thinking_token_budget_field: (
        Literal["thinking_token_budget", "thinking_budget", "thinking_budget_tokens"] | None
    ) = None
    supports_thinking_token_budget: bool | None = None
    supports_open_ai_grammar_tools: bool | None = msgspec.field(
        default=None, name="supportsOpenAIGrammarTools"
    )
    supports_strict_mode: bool | None = None
    cache_control_format: Literal["anthropic"] | None = None
    send_session_affinity_headers: bool | None = None
    deferred_tools_mode: Literal["kimi"] | None = None
    session_affinity_format: Literal["openai", "openai-nosession", "openrouter"] | None = None
    supports_long_cache_retention: bool | None = None
    # openai-responses / azure-openai-responses
    supports_additional_tools: bool | None = None
    supports_tool_search: bool | None = None
    supports_explicit_prompt_cache_mode: bool | None = None
    # anthropic-messages
    supports_eager_tool_input_streaming: bool | None = None
    supports_cache_control_on_tools: bool | None = None
    supports_temperature: bool | None = None
    force_adaptive_thinking: bool | None = None
    allow_empty_signature: bool | None = None
    supports_strict_tools: bool | None = None
    allowed_fallback_models: list[dict[str, Any]] | None = None
    supports_tool_references: bool | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModelCompat:
        """From Pi's camelCase object; unknown flags are ignored (as Pi does), a wrongly typed one raises
        ``msgspec.ValidationError`` naming it (``Expected `bool`, got `str` - at `$.supportsStore```)."""
        return msgspec.convert(data, cls)

    def to_json(self) -> dict[str, Any]:
        """The flags that are set, camelCase."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out

    def merged(self, over: ModelCompat | None) -> ModelCompat:
        """These flags with every flag ``over`` sets replacing ours."""
        if over is None:
            return self
        changes = {f: v for f in over.__struct_fields__ if (v := getattr(over, f)) is not None}
        return msgspec.structs.replace(self, **changes) if changes else self


@dataclass(frozen=True, slots=True)
class ModelCostTier:
    """Rates for requests whose input exceeds ``input_tokens_above`` tokens (Pi's ``ModelCostTier``)."""

    input_tokens_above: int
    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


@dataclass(slots=True)
class ModelCost:
    """Dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    tiers: tuple[ModelCostTier, ...] = ()
    """Request-wide tiers: the highest ``input_tokens_above`` the request exceeds sets every rate."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
        }
        if self.tiers:
            out["tiers"] = [
                {
                    "inputTokensAbove": t.input_tokens_above,
                    "input": t.input,
                    "output": t.output,
                    "cacheRead": t.cache_read,
                    "cacheWrite": t.cache_write,
                }
                for t in self.tiers
            ]
        return out


@dataclass(slots=True)
class Model:
    id: str
    name: str
    api: Api
    provider: str
    base_url: str = ""
    reasoning: bool = False
    input: list[str] = field(default_factory=lambda: ["text"])
    cost: ModelCost = field(default_factory=ModelCost)
    context_window: int = 128_000
    max_tokens: int = 16_384
    headers: dict[str, str] | None = None
    compat: ModelCompat | None = None
    """Pi's per-API compatibility flags (``compat`` in models.json)."""
    thinking_level_map: dict[str, str | None] | None = None
    """Pi's ``thinkingLevelMap``: thinking level → provider value; ``None`` marks a level unsupported."""
    sampling_params: dict[str, Any] | None = None
    """Pi's ``samplingParams``: keys merged as they are into every request body of the OpenAI-style APIs
    (Chat Completions, Responses, Azure), after caddie's own fields, so they win (``min_p``, ``top_k``…)."""

    @property
    def supports_images(self) -> bool:
        return "image" in self.input

    @property
    def ref(self) -> str:
        return f"{self.provider}/{self.id}"

    def to_json(self) -> dict[str, Any]:
        """The model as Pi-shaped JSON (camelCase) fit to leave the process: header *names* are kept but
        every value reads ``[redacted]``, and a password in ``baseUrl`` reads ``***`` (RPC ``get_state`` /
        ``set_model``, ``--mode json`` events)."""
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "api": self.api,
            "provider": self.provider,
            "baseUrl": secrets.safe_url(self.base_url),
            "reasoning": self.reasoning,
            "input": list(self.input),
            "cost": self.cost.to_json(),
            "contextWindow": self.context_window,
            "maxTokens": self.max_tokens,
            "headers": {name: secrets.REDACTED for name in self.headers}
            if self.headers is not None
            else None,
            "compat": self.compat.to_json() if self.compat is not None else None,
            "thinkingLevelMap": dict(self.thinking_level_map)
            if self.thinking_level_map is not None
            else None,
        }
        if self.sampling_params is not None:
            out["samplingParams"] = dict(self.sampling_params)
        return out


@dataclass(slots=True)
class Tool:
    """A tool as a provider sees it: name, description and a JSON Schema for the arguments."""

    name: str
    description: str
    parameters: dict[str, Any]
    label: str | None = None
    """The tool's display name; only ``pi-messages`` sends it (Pi's context carries it)."""
    execution_mode: str | None = None
    """``parallel`` / ``sequential`` when the tool sets it; likewise only sent by ``pi-messages``."""
    constrained_sampling: ConstrainedSampling | None = None
    """Strict arguments or a grammar, where the provider can (``caddie.ai.constrained_sampling``)."""


@dataclass(slots=True)
class Context:
    system_prompt: str | None
    messages: list[LlmMessage]
    tools: list[Tool] | None = None
    conversion_cache: ConversionCache | None = None
    """Per-message wire-format conversions kept across requests by message identity (the runtime keeps one
    for a session; see ``caddie.ai.conversion_cache``)."""


@dataclass(slots=True)
class ProviderResponse:
    status: int
    headers: dict[str, str]


@dataclass(slots=True)
class StreamOptions:
    signal: AbortSignal | None = None
    api_key: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    reasoning: ThinkingLevel | None = None
    """Thinking level for reasoning models; None or ``off`` disables thinking."""
    session_id: str | None = None
    cache_retention: Literal["none", "short", "long"] = "short"
    service_tier: str | None = None
    """OpenAI Responses ``service_tier`` (``flex``, ``priority``...); the price follows the tier served."""
    headers: dict[str, str] | None = None
    timeout_s: float | None = None
    """Idle timeout for the HTTP stream (no byte for this long ends the request with an error)."""
    progress_timeout_s: float | None = None
    """No-progress deadline: a stream that delivers no content for this long — however many empty chunks
    or keep-alives arrive — ends with a retryable error. None means the idle timeout; 0 turns it off."""
    max_retry_delay_ms: int = 60_000
    """The longest server-requested wait (Retry-After) worth waiting for (settings
    ``retry.provider.maxRetryDelayMs``); a failure asking for longer fails at once, not retryable, with
    the wait in its text. 0 means no limit."""
    max_retries: int = 0
    """SDK-level retries; the session retries with backoff on its own (settings ``retry``)."""
    thinking_budgets: dict[str, int] | None = None
    """Settings ``thinkingBudgets``: token budgets per level (minimal, low, medium, high) for budget-based
    thinking, over the defaults (``caddie.ai.providers.thinking.THINKING_BUDGETS``)."""
    on_payload: Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]] | None = None
    """Sees (and may replace) the provider payload just before it is sent (``before_provider_request``)."""
    on_response: Callable[[ProviderResponse], Awaitable[None]] | None = None
    on_headers: Callable[[dict[str, str]], Awaitable[dict[str, str]]] | None = None
    """Sees the request's assembled HTTP headers and returns the ones to send (``before_provider_headers``)."""
    transport: Literal["auto", "sse", "websocket", "websocket-cached"] | None = None
    """Settings ``transport`` (Pi's): how ``openai-codex-responses`` talks to its server; None: ``auto``."""
