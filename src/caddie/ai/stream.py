"""One entry point for every model API: ``stream(model, context, options)``.

Each API (``openai-completions``, ``openai-responses``, ``anthropic-messages``, ``google-generative-ai``...)
is an ``ApiProvider``. Built-in ones are imported on first use, so starting caddie does not pay for SDKs it
will not call.

``stream`` is also the choke point where a failure becomes the message the rest of caddie shows and stores:
the request's secrets (key, header values, a ``baseUrl`` password) join the process's secret registry
(``caddie.ai.secrets``) and the final error text is redacted against all of it, whichever provider — built
in or registered by an extension — produced it. It is also where a reply whose provider reported no usage
gets caddie's estimate, marked as such (``caddie.ai.usage_estimate``).
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from typing import Protocol

from caddie.ai import errors, secrets
from caddie.ai.messages import AssistantMessage, TextContent, freeze, replace
from caddie.ai.model import Context, Model, StreamOptions
from caddie.ai.providers.preload import wait_preloaded
from caddie.ai.stream_events import AssistantMessageEvent, DoneEvent, ErrorEvent, final_message
from caddie.ai.usage_estimate import fill_missing_usage, needs_estimate


class ApiProvider(Protocol):
    """Streams one assistant message. Never raises for API failures: the last event is ``done`` or
    ``error`` and carries the final message (``stop_reason`` ``error``/``aborted`` with ``error_message``)."""

    def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]: ...


_BUILTIN_MODULES = {
    "openai-completions": "caddie.ai.providers.openai_completions",
    "anthropic-messages": "caddie.ai.providers.anthropic_messages",
    "openai-responses": "caddie.ai.providers.openai_responses",
    "azure-openai-responses": "caddie.ai.providers.azure_openai_responses",
    "google-generative-ai": "caddie.ai.providers.google_generative_ai",
    "anthropic-bedrock": "caddie.ai.providers.anthropic_bedrock",
    "anthropic-vertex": "caddie.ai.providers.anthropic_vertex",
    "openai-codex-responses": "caddie.ai.providers.openai_codex_responses",
    "pi-messages": "caddie.ai.providers.pi_messages",
    "mistral-conversations": "caddie.ai.providers.mistral_conversations",
    "google-vertex": "caddie.ai.providers.google_vertex",
    "bedrock-converse-stream": "caddie.ai.providers.bedrock_converse_stream",
    "faux": "caddie.ai.providers.faux",
}
_registry: dict[str, ApiProvider] = {}


def register_api(api: str, provider: ApiProvider) -> None:
    _registry[api] = provider


def builtin_provider_module(api: str) -> str | None:
    """The module of a built-in API's provider (imported on first use), if ``api`` is built in."""
    return _BUILTIN_MODULES.get(api)


def get_api(api: str) -> ApiProvider | None:
    if api not in _registry and api in _BUILTIN_MODULES:
        module = importlib.import_module(_BUILTIN_MODULES[api])
        _registry[api] = module.PROVIDER
    return _registry.get(api)


def error_message_for(model: Model, text: str, reason: str = "error") -> AssistantMessage:
    """A final assistant message that reports a failure (what providers return instead of raising)."""
    return AssistantMessage(
        content=[],
        api=model.api,
        provider=model.provider,
        model=model.id,
        stop_reason="aborted" if reason == "aborted" else "error",
        error_message=text,
    )


async def stream(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AsyncIterator[AssistantMessageEvent]:
    options = options or StreamOptions()
    register_request_secrets(model, options)
    await wait_preloaded(model.api)  # the SDK is imported in a worker thread, never on the event loop
    provider = get_api(model.api)
    if provider is None:
        yield ErrorEvent("error", error_message_for(model, f"No provider for API {model.api!r}"))
        return
    if context.conversion_cache is not None and options.on_payload is not None:
        # A payload hook may change the body in place, cached conversions included: convert afresh.
        context = Context(context.system_prompt, context.messages, context.tools)
    async for event in provider.stream(model, context, options):
        if isinstance(event, ErrorEvent):
            final = finish_error(event.error, options)
            if needs_estimate(final):
                final = await fill_missing_usage(model, context, options, final)
            event = ErrorEvent(event.reason, final)
        elif isinstance(event, DoneEvent):  # a provider an extension registered may end on a draft
            final = freeze(event.message)
            if needs_estimate(final):
                final = await fill_missing_usage(model, context, options, final)
            event = DoneEvent(event.reason, final)
        yield event


def register_request_secrets(model: Model, options: StreamOptions) -> None:
    """Everything a request authenticates with becomes a known secret before the request is sent."""
    secrets.register(options.api_key)
    secrets.register_headers(model.headers)
    secrets.register_headers(options.headers)
    secrets.register_url(model.base_url)


def finish_error(message: AssistantMessage, options: StreamOptions | None = None) -> AssistantMessage:
    """A failed message as it may be shown and stored (frozen): its error text without any known secret,
    and — when the server asked for a longer wait than ``options.max_retry_delay_ms`` — Pi's "Server
    requested Ns retry delay" text, which ``caddie.ai.errors`` never retries."""
    limit = options.max_retry_delay_ms if options is not None else 0
    wait = message.retry_after_ms
    text = message.error_message or ""
    if (
        message.stop_reason == "error"
        and wait is not None
        and limit > 0
        and wait > limit
        and not errors.RETRY_DELAY_EXCEEDED.match(text)
    ):
        text = errors.retry_delay_exceeded_text(wait, limit, text or "Request failed")
    redacted = secrets.redact(text) if text else message.error_message
    message = freeze(message)
    return message if redacted == message.error_message else replace(message, error_message=redacted)


async def complete(model: Model, context: Context, options: StreamOptions | None = None) -> AssistantMessage:
    """Run a stream to its end and return the final message (for summaries and other one-shot calls)."""
    last: AssistantMessage | None = None
    async for event in stream(model, context, options):
        msg = final_message(event)
        if msg is not None:
            last = msg
    if last is None:
        last = error_message_for(model, "Provider stream ended without a final message")
    return last


def assistant_text(message: AssistantMessage) -> str:
    return "".join(b.text for b in message.content if isinstance(b, TextContent))
