"""A model's description (Pi's ``Model``) and the request shapes a provider takes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from caddie.ai import secrets
from caddie.ai.abort import AbortSignal
from caddie.ai.messages import LlmMessage

ThinkingLevel: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]
THINKING_LEVELS: tuple[ThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
DEFAULT_THINKING_LEVEL: ThinkingLevel = "medium"


@dataclass(slots=True)
class ModelCost:
    """Dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


@dataclass(slots=True)
class Model:
    id: str
    name: str
    api: str
    """``openai-completions``, ``anthropic-messages`` or ``faux``."""
    provider: str
    base_url: str = ""
    reasoning: bool = False
    input: list[str] = field(default_factory=lambda: ["text"])
    cost: ModelCost = field(default_factory=ModelCost)
    context_window: int = 128_000
    max_tokens: int = 16_384
    headers: dict[str, str] | None = None
    compat: dict[str, Any] | None = None
    """Pi's per-API compatibility flags, camelCase keys as in models.json (e.g. ``supportsDeveloperRole``)."""
    thinking_level_map: dict[str, str | None] | None = None
    """Pi's ``thinkingLevelMap``: thinking level → provider value; ``None`` marks a level unsupported."""

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
            "cost": {
                "input": self.cost.input,
                "output": self.cost.output,
                "cacheRead": self.cost.cache_read,
                "cacheWrite": self.cost.cache_write,
            },
            "contextWindow": self.context_window,
            "maxTokens": self.max_tokens,
            "headers": {name: secrets.REDACTED for name in self.headers}
            if self.headers is not None
            else None,
            "compat": dict(self.compat) if self.compat is not None else None,
            "thinkingLevelMap": dict(self.thinking_level_map)
            if self.thinking_level_map is not None
            else None,
        }
        return out


@dataclass(slots=True)
class Tool:
    """A tool as a provider sees it: name, description and a JSON Schema for the arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(slots=True)
class Context:
    system_prompt: str | None
    messages: list[LlmMessage]
    tools: list[Tool] | None = None


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
    on_payload: Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]] | None = None
    """Sees (and may replace) the provider payload just before it is sent (``before_provider_request``)."""
    on_response: Callable[[ProviderResponse], Awaitable[None]] | None = None
