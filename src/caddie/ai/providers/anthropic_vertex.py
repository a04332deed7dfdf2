"""The ``anthropic-vertex`` API: Claude on Google Cloud Vertex AI through the ``anthropic`` SDK's
``AsyncAnthropicVertex`` client (install ``caddie-agent[vertex]``: google-auth).

Credentials are Google's application-default credentials (``gcloud auth application-default login``, or
``GOOGLE_APPLICATION_CREDENTIALS`` naming a service-account or user credentials file), refreshed by the
client. Project: ``ANTHROPIC_VERTEX_PROJECT_ID`` or ``GOOGLE_CLOUD_PROJECT``, else the credentials'
project. Region: ``CLOUD_ML_REGION`` or ``GOOGLE_CLOUD_LOCATION`` (default ``global``). The model id is
Vertex's (``claude-sonnet-4-5@20250929``).

The body is the Messages body of ``anthropic_messages`` with Vertex's ``anthropic_version``, posted as
caddie's own bytes to ``…/publishers/anthropic/models/<id>:streamRawPredict``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

from caddie.ai.model import Context, Model, StreamOptions
from caddie.ai.providers.anthropic_messages import _EventAssembler, beta_headers, build_params, post_stream
from caddie.ai.providers.request import encode_body
from caddie.ai.providers.streaming import new_output, stream_via_sdk
from caddie.ai.providers.transport import ClientCache, redirect_hooks
from caddie.ai.stream_events import AssistantMessageEvent
from caddie.errors import ProviderError

API = "anthropic-vertex"
VERTEX_VERSION = "vertex-2023-10-16"
AMBIENT = "google-application-default-credentials"
"""Stands for "authenticate with application-default credentials" (never sent)."""
DEFAULT_REGION = "global"
EXTRA_HINT = "Claude on Vertex needs the vertex extra: pip install 'caddie-agent[vertex]' (or uv tool install 'caddie-agent[vertex]')."


def resolve_region() -> str:
    return os.environ.get("CLOUD_ML_REGION") or os.environ.get("GOOGLE_CLOUD_LOCATION") or DEFAULT_REGION


def resolve_project() -> str | None:
    return os.environ.get("ANTHROPIC_VERTEX_PROJECT_ID") or os.environ.get("GOOGLE_CLOUD_PROJECT") or None


def vertex_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    params = build_params(model, context, options)
    params.pop("model", None)
    params["anthropic_version"] = VERTEX_VERSION
    return params


CREDENTIALS_HINT = (
    "No Google Cloud credentials for Claude on Vertex: run `gcloud auth application-default login` (or set "
    "GOOGLE_APPLICATION_CREDENTIALS) and set ANTHROPIC_VERTEX_PROJECT_ID, then try again"
)
SCOPE = "https://www.googleapis.com/auth/cloud-platform"


def make_client(model: Model, headers: dict[str, str], idle: float, retries: int) -> Any:
    """The client, with application-default credentials found by google-auth (run in a worker thread by
    ``ClientCache.get_async``); the client renews their token itself when it expires."""
    try:
        import google.auth
        import google.auth.exceptions
        from anthropic import AsyncAnthropicVertex, DefaultAsyncHttpxClient
    except ImportError as exc:
        raise ProviderError(EXTRA_HINT) from exc
    try:
        credentials, found_project = google.auth.default(scopes=[SCOPE])
    except google.auth.exceptions.DefaultCredentialsError as exc:
        raise ProviderError(f"{CREDENTIALS_HINT} ({exc}).") from exc
    project = resolve_project() or found_project
    if not project:
        raise ProviderError(
            "Claude on Vertex needs a project: set ANTHROPIC_VERTEX_PROJECT_ID (or GOOGLE_CLOUD_PROJECT)."
        )
    return AsyncAnthropicVertex(
        region=resolve_region(),
        project_id=project,
        credentials=credentials,
        base_url=model.base_url or None,
        max_retries=retries,
        default_headers=headers,
        timeout=idle,
        http_client=DefaultAsyncHttpxClient(timeout=idle, event_hooks=redirect_hooks()),
    )


async def post_vertex(client: Any, model: Model, params: dict[str, Any]) -> Any:
    """Post to the model's ``streamRawPredict`` path of the client's project and region."""
    from google.auth.exceptions import RefreshError  # loaded with the client

    path = (
        f"/projects/{quote(client.project_id, safe='')}/locations/{quote(client.region, safe='')}"
        f"/publishers/anthropic/models/{quote(model.id, safe='@')}:streamRawPredict"
    )
    try:
        return await post_stream(client, path, encode_body(params))
    except RefreshError as exc:
        raise ProviderError(f"{CREDENTIALS_HINT} ({exc}).") from exc


class AnthropicVertexProvider:
    """Streams one assistant message from Claude on Vertex AI (see the module docstring)."""

    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        output = new_output(model)
        output.api = API
        headers: dict[str, str] = {"User-Agent": "caddie"}
        betas = beta_headers(model, context)
        if betas:
            headers["anthropic-beta"] = ",".join(betas)
        headers.update(model.headers or {})
        headers.update(options.headers or {})
        events = stream_via_sdk(
            model,
            options,
            output,
            _EventAssembler(output, model),
            headers=headers,
            api_key=AMBIENT,
            missing_key_text="",
            build_params=lambda: vertex_body(model, context, options),
            clients=_CLIENTS,
            make_client=lambda _key, hdrs, idle: make_client(model, hdrs, idle, options.max_retries),
            create=lambda client, params: post_vertex(client, model, params),
        )
        async for event in events:
            yield event


_CLIENTS = ClientCache()
PROVIDER = AnthropicVertexProvider()
