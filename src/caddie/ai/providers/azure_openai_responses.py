"""The ``azure-openai-responses`` API: the Responses API on Azure OpenAI, through the ``openai`` SDK's
``AsyncAzureOpenAI`` client (``api-key`` header, ``api-version`` query).

As in Pi:

- the key comes from ``AZURE_OPENAI_API_KEY`` (or ``apiKey`` in models.json / auth.json);
- the endpoint is ``AZURE_OPENAI_BASE_URL``, else ``https://$AZURE_OPENAI_RESOURCE_NAME.openai.azure.com/openai/v1``,
  else the model's ``baseUrl``; an Azure host given without a path gets ``/openai/v1``;
- ``AZURE_OPENAI_API_VERSION`` (default ``v1``);
- the deployment sent as ``model`` is the model id, unless ``AZURE_OPENAI_DEPLOYMENT_NAME_MAP``
  (``model-id=deployment,other=deployment2``) names another.

Messages, reasoning items and usage are exactly those of ``openai_responses``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import AsyncIterator, Mapping
from urllib.parse import urlsplit, urlunsplit

from caddie.ai.catalogue import missing_key_text
from caddie.ai.constrained_sampling import grammar_input_properties
from caddie.ai.model import Context, Model, StreamOptions
from caddie.ai.providers.failures import FailureInfo, fail
from caddie.ai.providers.openai_completions import post_stream
from caddie.ai.providers.openai_responses import (
    TOOL_CALL_PROVIDERS,
    ResponsesAssembler,
    build_params,
    resolve_compat,
)
from caddie.ai.providers.streaming import new_output, stream_via_sdk
from caddie.ai.providers.transport import ClientCache, openai_client_factory
from caddie.ai.stream_events import AssistantMessageEvent, ErrorEvent

API = "azure-openai-responses"
DEFAULT_API_VERSION = "v1"
AZURE_TOOL_CALL_PROVIDERS = TOOL_CALL_PROVIDERS | {"azure-openai-responses"}
_AZURE_HOST_SUFFIXES = (".openai.azure.com", ".cognitiveservices.azure.com", ".ai.azure.com")


def parse_deployment_map(value: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in (value or "").split(","):
        model_id, sep, deployment = entry.strip().partition("=")
        if sep and model_id.strip() and deployment.strip():
            out[model_id.strip()] = deployment.strip()
    return out


def deployment_name(model: Model, env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return parse_deployment_map(env.get("AZURE_OPENAI_DEPLOYMENT_NAME_MAP")).get(model.id) or model.id


def normalize_base_url(base_url: str) -> str:
    """An Azure host with no path (or ``/openai``, or the full ``…/responses`` URL) gets ``/openai/v1``."""
    parts = urlsplit(base_url.strip().rstrip("/"))
    if not parts.scheme or not parts.hostname:
        raise ValueError(f"Invalid Azure OpenAI base URL: {base_url}")
    path = parts.path.rstrip("/")
    if parts.hostname.endswith(_AZURE_HOST_SUFFIXES) and path in ("", "/openai", "/openai/v1/responses"):
        return urlunsplit((parts.scheme, parts.netloc, "/openai/v1", "", ""))
    return urlunsplit(parts).rstrip("/")


def resolve_endpoint(model: Model, env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """``(base URL, api version)`` for ``model``; ValueError with what to set when there is none."""
    env = os.environ if env is None else env
    version = env.get("AZURE_OPENAI_API_VERSION") or DEFAULT_API_VERSION
    url = (env.get("AZURE_OPENAI_BASE_URL") or "").strip()
    resource = (env.get("AZURE_OPENAI_RESOURCE_NAME") or "").strip()
    if not url and resource:
        url = f"https://{resource}.openai.azure.com/openai/v1"
    if not url:
        url = model.base_url
    if not url:
        raise ValueError(
            "Azure OpenAI needs an endpoint: set AZURE_OPENAI_BASE_URL (or AZURE_OPENAI_RESOURCE_NAME), "
            "or baseUrl for the provider in models.json."
        )
    return normalize_base_url(url), version


class AzureOpenAIResponsesProvider:
    """Streams one assistant message from an Azure OpenAI Responses endpoint."""

    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        output = new_output(model)
        output.api = API
        try:
            base_url, version = resolve_endpoint(model)
        except ValueError as exc:
            yield ErrorEvent("error", fail(output, FailureInfo(str(exc)), aborted=False, secrets=[]))
            return
        target = dataclasses.replace(model, base_url=base_url)
        compat = resolve_compat(model, strict_default=True)
        headers = {"User-Agent": "caddie", **(model.headers or {}), **(options.headers or {})}
        deployment = deployment_name(model)
        events = stream_via_sdk(
            target,
            options,
            output,
            lambda: ResponsesAssembler(
                output,
                model,
                grammar=grammar_input_properties(
                    context.tools, compat.supports_open_ai_grammar_tools is True
                ),
            ),
            headers=headers,
            api_key=options.api_key,
            missing_key_text=missing_key_text(model.provider),
            build_params=lambda: build_params(
                model,
                context,
                dataclasses.replace(options, service_tier=None),
                compat,
                model_name=deployment,
                providers=AZURE_TOOL_CALL_PROVIDERS,
                always_cache_key=True,
            ),
            clients=_CLIENTS,
            make_client=openai_client_factory(base_url, options.max_retries, azure_api_version=version),
            create=lambda client, params: post_stream(client, "/responses", params),
        )
        async for event in events:
            yield event


_CLIENTS = ClientCache()
PROVIDER = AzureOpenAIResponsesProvider()
