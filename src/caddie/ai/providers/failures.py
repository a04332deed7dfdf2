"""What a failed request tells the user: HTTP status phrases, server messages, Retry-After, the final message."""

from __future__ import annotations

import ipaddress
import json
import sys
from urllib.parse import urlsplit

from caddie.ai.errors import parse_retry_after, redact_secrets
from caddie.ai.messages import AssistantMessage, DraftAssistantMessage, freeze
from caddie.ai.model import Model
from caddie.ai.providers.transport import CrossOriginRedirect, NoProgress, Stalled
from caddie.ai.secrets import safe_url
from caddie.errors import ProviderError

_TIMEOUTS = {"openai": "APITimeoutError", "anthropic": "APITimeoutError", "httpx2": "TimeoutException"}
"""Each SDK's (and their shared HTTP library's) exception for a request that timed out."""
_CONNECTION_FAILURES = {
    "openai": "APIConnectionError",
    "anthropic": "APIConnectionError",
    "httpx2": "TransportError",
}
"""Each SDK's (and their HTTP library's) exception for a connection that failed or broke; the SDKs' timeout
errors derive from these, so timeouts are told apart first."""


def _sdk_types(names: dict[str, str]) -> tuple[type[BaseException], ...]:
    """The named exception classes of the SDKs imported so far. An exception of an SDK's type exists only
    once that SDK is imported, so nothing is imported here (a failure must not load the other SDKs)."""
    found: list[type[BaseException]] = []
    for module_name, class_name in names.items():
        module = sys.modules.get(module_name)
        cls = getattr(module, class_name, None) if module is not None else None
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(found)


_STATUS_PHRASES = {
    400: "Bad Request",
    401: "Unauthorized",
    402: "Payment Required",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    409: "Conflict",
    413: "Request Too Large",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
    529: "Overloaded",
}
_ANTHROPIC_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


def server_message(body: object) -> str | None:
    """The human text in an error body: ``error.message``, ``message``, ``detail`` or ``error`` (string)."""
    if isinstance(body, str):
        text = body.strip()
        if text.startswith("{"):
            try:
                return server_message(json.loads(text)) or text
            except json.JSONDecodeError:
                return text
        return text or None
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, str) and err:
            return err
        holder = err if isinstance(err, dict) else body
        for key in ("message", "detail"):
            msg = holder.get(key)
            if isinstance(msg, str) and msg:
                code = holder.get("code") or holder.get("type")
                if isinstance(code, str) and code and code != "error" and code not in msg:
                    return f"{msg} ({code})"
                return msg
        return json.dumps(body)[:2000]
    return None


def status_from_error_body(body: object) -> int | None:
    """Anthropic mid-stream ``error`` events carry a type instead of an HTTP status."""
    if isinstance(body, dict):
        err = body.get("error")
        holder = err if isinstance(err, dict) else body
        kind = holder.get("type")
        if isinstance(kind, str):
            return _ANTHROPIC_ERROR_STATUS.get(kind)
    return None


def http_error_text(status: int, message: str | None, provider: str) -> str:
    """``"429 Too Many Requests: <server message>"`` plus what to do about auth errors."""
    phrase = _STATUS_PHRASES.get(status, "Error")
    text = f"{status} {phrase}: {message}" if message else f"{status} {phrase}"
    if status in (401, 403):
        text += f". Check the API key for provider '{provider}' (its environment variable, or apiKey in models.json)."
    return text


class FailureInfo:
    """What a provider puts on the final message when a request fails."""

    __slots__ = ("message", "retry_after_ms", "status")

    def __init__(self, message: str, status: int | None = None, retry_after_ms: int | None = None) -> None:
        self.message = message
        self.status = status
        self.retry_after_ms = retry_after_ms


def describe_failure(exc: BaseException, model: Model, *, streaming_started: bool) -> FailureInfo:
    """Turn an SDK or transport exception into a clean sentence, HTTP status and Retry-After.

    The server is named by ``safe_url`` (a password in ``baseUrl`` reads ``***``)."""
    url = safe_url(model.base_url)
    if isinstance(exc, Stalled):
        return FailureInfo(
            f"Request timed out: the server at {url} stalled (no data for {exc.seconds:g}s). "
            "Try again; if the model legitimately needs longer, raise httpIdleTimeoutMs in settings."
        )
    redirect = exc if isinstance(exc, CrossOriginRedirect) else exc.__cause__ or exc.__context__
    if isinstance(redirect, CrossOriginRedirect):
        return FailureInfo(
            f"The server at {url} redirected the request to another origin ({safe_url(redirect.target)}); "
            "caddie does not send credentials across origins. Set baseUrl to the address the server "
            "redirects to."
        )
    if isinstance(exc, NoProgress):
        return FailureInfo(
            f"Request timed out: the server at {url} sent no content for {exc.seconds:g}s (only empty "
            "chunks or keep-alives). Try again; if the model legitimately needs longer, raise "
            "httpIdleTimeoutMs in settings."
        )
    if isinstance(exc, json.JSONDecodeError):
        return FailureInfo(
            f"Malformed JSON in the stream from {url}: {exc.msg} at line {exc.lineno} "
            f"column {exc.colno}. The server sent data that is not valid JSON; check that baseUrl points "
            "at an OpenAI- or Anthropic-compatible endpoint."
        )
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    response = getattr(exc, "response", None)
    if isinstance(status, int) and response is not None:
        headers: dict[str, str] = {}
        raw_headers = getattr(response, "headers", None)
        if raw_headers is not None:
            headers = {str(k): str(v) for k, v in raw_headers.items()}
        if 200 <= status < 300:  # an error event inside a 200 stream
            status = status_from_error_body(body) or 500
        msg = server_message(body) or server_message(str(getattr(exc, "message", "") or exc))
        return FailureInfo(http_error_text(status, msg, model.provider), status, parse_retry_after(headers))
    if body is not None and not isinstance(status, int):  # an error object inside a 200 stream
        msg = server_message(body) or str(exc)
        return FailureInfo(
            f"The provider reported an error mid-response: {msg}", status_from_error_body(body)
        )
    if isinstance(
        exc, ProviderError
    ):  # e.g. what the user must set up first (credentials, region, an SDK extra)
        return FailureInfo(str(exc))
    name = type(exc).__name__
    if isinstance(exc, _sdk_types(_TIMEOUTS)):
        return FailureInfo(
            f"Request timed out: the server at {url} stalled. "
            "Try again; if the model legitimately needs longer, raise httpIdleTimeoutMs in settings."
        )
    if isinstance(exc, _sdk_types(_CONNECTION_FAILURES)):
        cause = exc.__cause__ or exc.__context__ or exc
        detail = str(cause) or type(cause).__name__
        if streaming_started:
            return FailureInfo(
                f"Connection lost: the server at {url} closed the stream before the reply "
                f"finished ({detail}). Try again."
            )
        return FailureInfo(
            f"Connection error: could not reach {url} ({detail}). {connection_advice(model.base_url)}"
        )
    return FailureInfo(f"{name}: {exc}" if str(exc) else name)


def connection_advice(base_url: str) -> str:
    """What to check when ``base_url`` cannot be reached: a server of the user's own (this machine or the
    local network) may not be running; a cloud API is most often out of reach of the network."""
    host = urlsplit(base_url).hostname or ""
    local = host == "localhost" or host.endswith((".local", ".localhost", ".internal")) or "." not in host
    try:
        address = ipaddress.ip_address(host)
        local = address.is_private or address.is_loopback or address.is_link_local or address.is_unspecified
    except ValueError:
        pass
    if local:
        return "Check that the server is running and that baseUrl is right."
    return "Check your network connection (and proxy settings such as HTTPS_PROXY), then try again."


def fail(
    output: DraftAssistantMessage,
    info: FailureInfo,
    *,
    aborted: bool,
    secrets: list[str | None],
) -> AssistantMessage:
    """Finish ``output`` as an ``error``/``aborted`` message with a redacted error text (frozen)."""
    output.stop_reason = "aborted" if aborted else "error"
    output.error_message = "Request was aborted" if aborted else redact_secrets(info.message, secrets)
    if not aborted:
        output.error_status = info.status
        output.retry_after_ms = info.retry_after_ms
    return freeze(output)
