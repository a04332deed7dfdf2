"""The ``anthropic-bedrock`` API: Claude on Amazon Bedrock through the ``anthropic`` SDK's
``AsyncAnthropicBedrock`` client (install ``caddie-agent[bedrock]``: boto3/botocore sign requests and
decode Bedrock's event stream).

Credentials: ``AWS_BEARER_TOKEN_BEDROCK`` (a Bedrock API key, sent as a bearer token), else the usual AWS
chain — ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``, ``AWS_PROFILE``, SSO, instance
roles — with SigV4 signing. Region: ``AWS_REGION``/``AWS_DEFAULT_REGION``, the region of a
``bedrock-runtime.<region>.amazonaws.com`` base URL, or the profile's. The model id is the Bedrock model or
inference-profile id (``us.anthropic.claude-sonnet-4-5-20250929-v1:0``).

The body is the Messages body of ``anthropic_messages`` (same thinking, caching and tools), with
Bedrock's ``anthropic_version`` and betas in ``anthropic_beta``, posted as caddie's own bytes to
``/model/<id>/invoke-with-response-stream``.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

from caddie.ai import secrets
from caddie.ai.model import Context, Model, StreamOptions
from caddie.ai.providers.anthropic_messages import _EventAssembler, beta_headers, build_params, post_stream
from caddie.ai.providers.request import NO_KEY_PLACEHOLDER, encode_body
from caddie.ai.providers.streaming import new_output, stream_via_sdk
from caddie.ai.providers.transport import ClientCache, redirect_hooks
from caddie.ai.stream_events import AssistantMessageEvent
from caddie.errors import ProviderError

API = "anthropic-bedrock"
BEDROCK_VERSION = "bedrock-2023-05-31"
AMBIENT = "aws-credential-chain"
"""Stands for "no bearer token: sign with the AWS credential chain" (never sent)."""
_REGION_IN_URL = re.compile(r"bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com")
EXTRA_HINT = "Claude on Bedrock needs the bedrock extra: pip install 'caddie-agent[bedrock]' (or uv tool install 'caddie-agent[bedrock]')."


def resolve_region(model: Model) -> str | None:
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        return region
    match = _REGION_IN_URL.search(model.base_url or "")
    if match:
        return match.group(1)
    try:
        import boto3
    except ImportError:
        return None
    region_name = boto3.Session(profile_name=os.environ.get("AWS_PROFILE") or None).region_name
    return str(region_name) if region_name else None


def bearer_token(options: StreamOptions) -> str | None:
    key = options.api_key
    if key and key != NO_KEY_PLACEHOLDER:
        return key
    return os.environ.get("AWS_BEARER_TOKEN_BEDROCK") or None


def bedrock_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The invoke body: the Messages body without ``model``/``stream``, with Bedrock's version and betas."""
    params = build_params(model, context, options)
    params.pop("model", None)
    params.pop("stream", None)
    params["anthropic_version"] = BEDROCK_VERSION
    betas = beta_headers(model, context)
    if betas:
        params["anthropic_beta"] = betas
    return params


def make_client(model: Model, token: str, headers: dict[str, str], idle: float, retries: int) -> Any:
    try:
        import botocore  # noqa: F401  (its event-stream decoder is always needed)
        from anthropic import AsyncAnthropicBedrock, DefaultAsyncHttpxClient
    except ImportError as exc:
        raise ProviderError(EXTRA_HINT) from exc
    region = resolve_region(model)
    if not region:
        raise ProviderError("Claude on Bedrock needs an AWS region: set AWS_REGION (or AWS_DEFAULT_REGION).")
    bearer = None if token == AMBIENT else token
    if bearer is None:
        import boto3

        session = boto3.Session(profile_name=os.environ.get("AWS_PROFILE") or None)
        if session.get_credentials() is None:
            raise ProviderError(
                "No AWS credentials for Claude on Bedrock: set AWS_BEARER_TOKEN_BEDROCK, or "
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), then try again."
            )
    return AsyncAnthropicBedrock(
        api_key=bearer,
        aws_region=region,
        base_url=model.base_url or None,
        max_retries=retries,
        default_headers=headers,
        timeout=idle,
        http_client=DefaultAsyncHttpxClient(timeout=idle, event_hooks=redirect_hooks()),
    )


class AnthropicBedrockProvider:
    """Streams one assistant message from Claude on Bedrock (see the module docstring)."""

    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        output = new_output(model)
        output.api = API
        headers: dict[str, str] = {"User-Agent": "caddie", **(model.headers or {}), **(options.headers or {})}
        path = f"/model/{quote(model.id, safe=':')}/invoke-with-response-stream"
        token = bearer_token(options)
        secrets.register(token)
        events = stream_via_sdk(
            model,
            options,
            output,
            _EventAssembler(output, model),
            headers=headers,
            api_key=token or AMBIENT,
            missing_key_text="",
            build_params=lambda: bedrock_body(model, context, options),
            clients=_CLIENTS,
            make_client=lambda key, hdrs, idle: make_client(model, key, hdrs, idle, options.max_retries),
            create=lambda client, params: post_stream(client, path, encode_body(params)),
            stream_flag=False,
        )
        async for event in events:
            yield event


_CLIENTS = ClientCache()
PROVIDER = AnthropicBedrockProvider()
