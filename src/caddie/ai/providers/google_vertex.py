"""The ``google-vertex`` API: Gemini on Google Cloud Vertex AI (Pi's ``google-vertex``).

The request and the reply are Gemini's (``google_generative_ai`` builds and reads them), sent to Vertex's
documented REST endpoint ``…/v1/projects/<project>/locations/<location>/publishers/google/models/<id>:
streamGenerateContent?alt=sse`` as plain HTTP. Auth, as Pi's: a Vertex API key (``GOOGLE_CLOUD_API_KEY``,
sent as ``x-goog-api-key`` to the global endpoint), else Google's application-default credentials
(``gcloud auth application-default login`` or ``GOOGLE_APPLICATION_CREDENTIALS``) through ``google-auth`` —
the same credentials ``google-genai``'s Vertex mode uses (install ``caddie-agent[vertex]``); the token is
kept until it expires. Project: ``GOOGLE_CLOUD_PROJECT`` / ``GCLOUD_PROJECT``; location:
``GOOGLE_CLOUD_LOCATION`` (both required with credentials, as in Pi).

``google-genai``'s own Vertex mode is not used for the request: it re-validates the whole conversation
through pydantic on every turn (see ``google_generative_ai``).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator
from typing import Any

from caddie.ai.model import Context, Model, StreamOptions
from caddie.ai.providers.google_generative_ai import GeminiAssembler, build_params, post_stream
from caddie.ai.providers.http_stream import make_http_client
from caddie.ai.providers.streaming import new_output, stream_via_sdk
from caddie.ai.providers.transport import ClientCache
from caddie.ai.stream_events import AssistantMessageEvent
from caddie.errors import ProviderError

API = "google-vertex"
AMBIENT = "gcp-vertex-credentials"
"""Pi's marker for "authenticate with application-default credentials" (never sent)."""
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
API_KEY_BASE = "https://aiplatform.googleapis.com"
EXTRA_HINT = (
    "Gemini on Vertex with Google Cloud credentials needs the vertex extra: pip install 'caddie-agent[vertex]' "
    "(or set GOOGLE_CLOUD_API_KEY)."
)
CREDENTIALS_HINT = (
    "No Google Cloud credentials for Vertex AI: run gcloud auth application-default login, set "
    "GOOGLE_APPLICATION_CREDENTIALS to a key file, or set GOOGLE_CLOUD_API_KEY."
)


def resolve_project() -> str:
    project = os.environ.get("GOOGLE_CLOUD_PROJECT") or os.environ.get("GCLOUD_PROJECT")
    if not project:
        raise ProviderError("Vertex AI requires a project ID. Set GOOGLE_CLOUD_PROJECT/GCLOUD_PROJECT.")
    return project


def resolve_location() -> str:
    location = os.environ.get("GOOGLE_CLOUD_LOCATION")
    if not location:
        raise ProviderError("Vertex AI requires a location. Set GOOGLE_CLOUD_LOCATION.")
    return location


def api_key_of(options: StreamOptions) -> str | None:
    key = (options.api_key or "").strip()
    if not key or key == AMBIENT or (key.startswith("<") and key.endswith(">")):
        return None
    return key


def stream_url(model: Model, api_key: str | None) -> str:
    if api_key is not None:
        base = model.base_url if model.base_url and "{location}" not in model.base_url else API_KEY_BASE
        return f"{base.rstrip('/')}/v1/publishers/google/models/{model.id}:streamGenerateContent?alt=sse"
    project, location = resolve_project(), resolve_location()
    base = model.base_url or ""
    if not base or "{location}" in base:  # the catalogue's template: Vertex's regional (or global) host
        host = (
            "aiplatform.googleapis.com" if location == "global" else f"{location}-aiplatform.googleapis.com"
        )
        base = f"https://{host}"
    path = f"/v1/projects/{project}/locations/{location}/publishers/google/models/{model.id}"
    return f"{base.rstrip('/')}{path}:streamGenerateContent?alt=sse"


class _AdcToken:
    """Application-default credentials, refreshed (in a worker thread) only when they expire."""

    def __init__(self) -> None:
        self._credentials: Any = None
        self._lock = threading.Lock()

    def _token(self) -> str:
        try:
            import google.auth
            import google.auth.exceptions
            import google.auth.transport.requests
        except ImportError as exc:
            raise ProviderError(EXTRA_HINT) from exc
        with self._lock:
            try:
                if self._credentials is None:
                    self._credentials, _ = google.auth.default(scopes=[SCOPE])
                if not self._credentials.valid:
                    self._credentials.refresh(google.auth.transport.requests.Request())
            except google.auth.exceptions.DefaultCredentialsError:
                raise ProviderError(CREDENTIALS_HINT) from None
            return str(self._credentials.token)

    async def token(self) -> str:
        return await asyncio.to_thread(self._token)


_ADC = _AdcToken()


class GoogleVertexProvider:
    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        output = new_output(model)
        output.api = API
        headers = {"User-Agent": "caddie", "content-type": "application/json", **(model.headers or {})}
        headers.update(options.headers or {})
        key = api_key_of(options)

        async def create(client: Any, params: dict[str, Any]) -> Any:
            url = stream_url(model, key)
            auth = (
                {"x-goog-api-key": key}
                if key is not None
                else {"Authorization": f"Bearer {await _ADC.token()}"}
            )
            return await post_stream(client, url, {**headers, **auth}, params)

        events = stream_via_sdk(
            model,
            options,
            output,
            GeminiAssembler(output, model),
            headers=headers,
            api_key=key or AMBIENT,
            missing_key_text=CREDENTIALS_HINT,
            build_params=lambda: build_params(model, context, options),
            clients=_CLIENTS,
            make_client=lambda _key, _hdrs, idle: make_http_client(idle),
            create=create,
            stream_flag=False,
        )
        async for event in events:
            yield event


_CLIENTS = ClientCache()
PROVIDER = GoogleVertexProvider()
