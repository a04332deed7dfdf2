"""Pieces both HTTP providers share: cost, thinking levels, partial JSON, abort/stall guarding, error text."""

from __future__ import annotations

import asyncio
import ipaddress
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

import msgspec

from caddie.ai.abort import AbortSignal
from caddie.ai.errors import parse_retry_after, redact_secrets
from caddie.ai.events import (
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
)
from caddie.ai.messages import (
    AssistantMessage,
    Cost,
    Usage,
)
from caddie.ai.model import THINKING_LEVELS, Context, Model, ProviderResponse, StreamOptions, ThinkingLevel
from caddie.ai.secrets import safe_url
from caddie.ai.tokens import context_tokens_of_usage, estimate_message_tokens, estimate_request_tokens

T = TypeVar("T")

DEFAULT_IDLE_TIMEOUT_S = 300.0
"""Used when ``StreamOptions.timeout_s`` is None (Pi's ``httpIdleTimeoutMs`` default)."""
NO_KEY_PLACEHOLDER = "caddie-no-key"
"""Sent to keyless local servers (Ollama, LM Studio, vLLM, llama.cpp) because the SDKs insist on a key."""

# --------------------------------------------------------------------------------------------------
# Cost


def calculate_cost(model: Model, usage: Usage) -> Cost:
    """Fill ``usage.cost`` from the model's $/million rates (1-hour cache writes cost twice the input rate)."""
    rates = model.cost
    long_write = usage.cache_write_1h or 0
    short_write = usage.cache_write - long_write
    cost = usage.cost
    cost.input = rates.input * usage.input / 1_000_000
    cost.output = rates.output * usage.output / 1_000_000
    cost.cache_read = rates.cache_read * usage.cache_read / 1_000_000
    cost.cache_write = (rates.cache_write * short_write + rates.input * 2 * long_write) / 1_000_000
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write
    return cost


def finish_usage(model: Model, usage: Usage) -> Usage:
    usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write
    calculate_cost(model, usage)
    return usage


# --------------------------------------------------------------------------------------------------
# Thinking levels

THINKING_BUDGETS: dict[str, int] = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
MIN_ANSWER_TOKENS = 1024


def supported_thinking_levels(model: Model) -> list[ThinkingLevel]:
    """The levels a model offers: only ``off`` for non-reasoning models; ``xhigh``/``max`` only when mapped."""
    if not model.reasoning:
        return ["off"]
    mapping = model.thinking_level_map or {}
    levels: list[ThinkingLevel] = []
    for level in THINKING_LEVELS:
        if level in mapping and mapping[level] is None:
            continue
        if level in ("xhigh", "max") and level not in mapping:
            continue
        levels.append(level)
    return levels


def clamp_thinking_level(model: Model, level: ThinkingLevel | str | None) -> ThinkingLevel:
    """The nearest level the model supports (upwards first, then downwards); ``off`` for None."""
    available = supported_thinking_levels(model)
    if level is None:
        level = "off"
    if level in available:
        return level
    if level not in THINKING_LEVELS:
        return available[0] if available else "off"
    index = THINKING_LEVELS.index(level)
    for candidate in THINKING_LEVELS[index:]:
        if candidate in available:
            return candidate
    for candidate in reversed(THINKING_LEVELS[:index]):
        if candidate in available:
            return candidate
    return available[0] if available else "off"


def thinking_budget(level: ThinkingLevel) -> int:
    """Token budget for budget-based thinking (``xhigh``/``max`` use the ``high`` budget)."""
    key = "high" if level in ("xhigh", "max") else level
    return THINKING_BUDGETS.get(key, THINKING_BUDGETS["medium"])


def context_tokens(context: Context) -> int:
    """What the request will hold, as Pi estimates it: the last reported usage plus estimates of the
    messages after it (only the tail is walked, so the cost does not grow with the conversation); the
    whole request by characters when no usage was reported yet."""
    messages = context.messages
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if (
            isinstance(message, AssistantMessage)
            and message.stop_reason not in ("error", "aborted")
            and context_tokens_of_usage(message.usage) > 0
        ):
            return context_tokens_of_usage(message.usage) + sum(
                estimate_message_tokens(m) for m in messages[index + 1 :]
            )
    return estimate_request_tokens(context)


def clamp_max_tokens(model: Model, context: Context, max_tokens: int) -> int:
    """Keep the output cap inside what the context window leaves free (with a 4096-token margin)."""
    if model.context_window <= 0:
        return max(1, max_tokens)
    available = model.context_window - context_tokens(context) - 4096
    return min(max_tokens, max(1, available))


# --------------------------------------------------------------------------------------------------
# Linear assembly of streamed blocks

EXACT_PREVIEW_BELOW = 4096
"""Up to this many characters a block's live text (and a tool call's argument preview) is rebuilt on every
delta; past it, only when the part not yet included reaches 1/``REFRESH_FRACTION`` of what is."""
REFRESH_FRACTION = 8


class StreamBuffer:
    """The streamed pieces of one block (text, thinking or tool-call argument JSON), assembled in linear work.

    A Python string cannot grow in place, so ``block.text += piece`` copies the whole text on every delta
    and a long reply costs the square of its length. Pieces go into a list instead; ``add`` says when the
    live view is due for a rebuild — on every delta while the buffer is small, then each time the new part
    reaches 1/8 of the last rebuild — so every rebuild together copies (or parses) at most about nine times
    the reply, plus a fixed allowance for the first ``EXACT_PREVIEW_BELOW`` characters. ``text()`` is always
    exact, and is what ends a block.
    """

    __slots__ = ("_length", "_pieces", "_shown")

    def __init__(self, initial: str = "") -> None:
        self._pieces: list[str] = [initial] if initial else []
        self._length = len(initial)
        self._shown = len(initial)

    def __len__(self) -> int:
        return self._length

    def add(self, piece: str) -> bool:
        """Append ``piece``; True when the live view should be rebuilt now (then call ``text()``)."""
        if not piece:
            return False
        self._pieces.append(piece)
        self._length += len(piece)
        if self._length <= EXACT_PREVIEW_BELOW:
            return True
        return (self._length - self._shown) * REFRESH_FRACTION >= self._shown

    def text(self) -> str:
        """The whole buffer (joined once; later calls reuse the joined string)."""
        if len(self._pieces) > 1:
            self._pieces = ["".join(self._pieces)]
        self._shown = self._length
        return self._pieces[0] if self._pieces else ""


# --------------------------------------------------------------------------------------------------
# Streaming JSON (tool-call arguments arrive in pieces)


def _close_partial_json(text: str) -> str:
    stack: list[str] = []
    in_string = False
    escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
    out = text
    if in_string:
        if escaped:
            out = out[:-1]
        out += '"'
    out = out.rstrip()
    while out and out[-1] in ",:":
        out = out[:-1].rstrip()
    return out + "".join(reversed(stack))


def parse_partial_json(text: str) -> dict[str, Any]:
    """The object a possibly incomplete JSON text describes so far ({} when nothing usable yet)."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        try:
            value = json.loads(_close_partial_json(text))
        except json.JSONDecodeError:
            # A dangling key without a value: drop back to the last complete member.
            cut = text.rfind(",")
            if cut <= 0:
                return {}
            try:
                value = json.loads(_close_partial_json(text[:cut]))
            except json.JSONDecodeError:
                return {}
    return value if isinstance(value, dict) else {}


def final_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """A finished tool call's arguments and, when they are not one complete JSON object, why not.

    The repaired object is still returned (to show what the model meant), but a call with an error is
    never executed: a cut-off ``{"command": "rm -rf build/tmp`` must not run as ``rm -rf build``.
    """
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return parse_partial_json(raw), f"{exc.msg} at character {exc.pos} of {len(raw)}"
    if not isinstance(value, dict):
        return {}, f"expected a JSON object, got {type(value).__name__}"
    return value, None


# --------------------------------------------------------------------------------------------------
# Abort and stall guard


class Aborted(Exception):
    """The caller's signal fired while a request was in flight."""


class Stalled(Exception):
    """No data arrived from the server for the idle timeout."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no data for {seconds:g}s")
        self.seconds = seconds


class SetupError(Exception):
    """What the user must set up before a request can be sent (credentials, region, an optional extra);
    the message is one sentence saying what to do, shown as it is."""


class CrossOriginRedirect(Exception):
    """The server redirected a request to another origin; the request is not sent there."""

    def __init__(self, source: str, target: str) -> None:
        super().__init__(f"redirect from {source} to {target}")
        self.source = source
        self.target = target


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: Any) -> tuple[str, str, int | None]:
    scheme = str(url.scheme).lower()
    return scheme, str(url.host).lower(), url.port or _DEFAULT_PORTS.get(scheme)


async def refuse_cross_origin_redirects(response: Any) -> None:
    """An httpx response hook: a redirect to another origin (scheme, host, port) raises
    ``CrossOriginRedirect`` before the redirected request is built, so no header of ours — key, models.json
    headers — ever reaches that origin. Same-origin redirects, and the upgrade of the same host from http
    to https on default ports, are followed as usual."""
    if not response.has_redirect_location:
        return
    source = response.request.url
    target = source.join(response.headers["location"])
    here, there = _origin(source), _origin(target)
    if here == there:
        return
    upgrade = here[0] == "http" and there[0] == "https" and here[1] == there[1] and here[2] == 80
    if upgrade and there[2] == 443:
        return
    raise CrossOriginRedirect(str(source), str(target.copy_with(query=None, fragment=None)))


def redirect_hooks() -> dict[str, list[Any]]:
    """``event_hooks`` for an SDK's httpx client (see ``refuse_cross_origin_redirects``)."""
    return {"response": [refuse_cross_origin_redirects]}


class NoProgress(Exception):
    """Data kept arriving, but no content (only empty chunks or keep-alives) for the no-progress deadline."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no content for {seconds:g}s")
        self.seconds = seconds


class ClientCache:
    """SDK clients kept per event loop and configuration, so requests reuse HTTP connections.

    Creating a client per request costs a TCP (and TLS) handshake and the SDK's set-up on every turn; a
    long session makes hundreds of requests to the same endpoint. Clients are bound to the loop they were
    created on (their connection pool is), hence the loop in the key; clients of a loop that has closed are
    dropped the next time the cache is used.
    """

    def __init__(self, limit: int = 16) -> None:
        self._clients: dict[tuple[Any, ...], tuple[asyncio.AbstractEventLoop, Any]] = {}
        self._limit = limit

    def get(self, key: tuple[Any, ...], create: Any) -> Any:
        loop = asyncio.get_running_loop()
        for k, (owner, _) in list(self._clients.items()):
            if owner.is_closed():
                del self._clients[k]
        full_key = (id(loop), *key)
        entry = self._clients.get(full_key)
        if entry is None:
            if len(self._clients) >= self._limit:
                self._clients.pop(next(iter(self._clients)))
            entry = (loop, create())
            self._clients[full_key] = entry
        return entry[1]

    async def get_async(self, key: tuple[Any, ...], create: Any) -> Any:
        """``get``, but a new client is built in a worker thread (its TLS set-up reads the CA bundle)."""
        if (id(asyncio.get_running_loop()), *key) in self._clients:
            return self.get(key, create)
        client = await asyncio.to_thread(create)
        return self.get(key, lambda: client)


class StreamGuard:
    """Runs each network await against the abort signal and an idle timeout.

    ``await guard.run(x)`` returns ``x``'s result, raises ``Aborted`` at once when the signal fires (the
    pending read is cancelled, which closes the HTTP stream) and ``Stalled`` when ``x`` takes longer than
    the idle timeout.
    """

    def __init__(self, signal: AbortSignal | None, idle_timeout_s: float | None) -> None:
        self.idle_timeout_s = idle_timeout_s if idle_timeout_s and idle_timeout_s > 0 else None
        self._loop = asyncio.get_running_loop()
        self._abort: asyncio.Future[None] = self._loop.create_future()
        self._remove = signal.add_listener(self._on_abort) if signal is not None else None

    def _on_abort(self) -> None:
        def fire() -> None:
            if not self._abort.done():
                self._abort.set_result(None)

        try:
            self._loop.call_soon_threadsafe(fire)
        except RuntimeError:  # loop already closed
            pass

    @property
    def aborted(self) -> bool:
        return self._abort.done()

    async def run(self, awaitable: Awaitable[T], timeout_s: float | None = None) -> T:
        """``awaitable``'s result; ``Stalled`` after ``timeout_s`` (default: the idle timeout)."""
        limit = timeout_s if timeout_s is not None else self.idle_timeout_s
        if self._abort.done():
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise Aborted()
        task: asyncio.Future[T] = asyncio.ensure_future(awaitable)
        waiting: set[asyncio.Future[Any]] = {task, self._abort}
        try:
            done, _ = await asyncio.wait(waiting, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # our caller was cancelled: do not leave the read running
            task.cancel()
            raise
        if task in done:
            return task.result()
        task.cancel()
        await asyncio.wait({task}, timeout=1.0)
        if self._abort.done():
            raise Aborted()
        raise Stalled(limit or 0.0)

    def close(self) -> None:
        if self._remove is not None:
            self._remove()
            self._remove = None
        if not self._abort.done():
            self._abort.cancel()


# --------------------------------------------------------------------------------------------------
# Error text

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
    if isinstance(exc, SetupError):
        return FailureInfo(str(exc))
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
    name = type(exc).__name__
    if "Timeout" in name:
        return FailureInfo(
            f"Request timed out: the server at {url} stalled. "
            "Try again; if the model legitimately needs longer, raise httpIdleTimeoutMs in settings."
        )
    if any(part in name for part in ("Connect", "Protocol", "Network", "ReadError", "WriteError")):
        cause = exc.__cause__ or exc.__context__ or exc
        detail = str(cause) or type(cause).__name__
        if streaming_started:
            return FailureInfo(
                f"Connection lost: the server at {url} closed the stream before the reply "
                f"finished ({detail}). Try again."
            )
        return FailureInfo(
            f"Connection error: could not reach {url} ({detail}). "
            "Check that the server is running and that baseUrl is right."
        )
    return FailureInfo(f"{name}: {exc}" if str(exc) else name)


def fail(
    output: AssistantMessage,
    info: FailureInfo,
    *,
    aborted: bool,
    secrets: list[str | None],
) -> AssistantMessage:
    """Finalise ``output`` as an ``error``/``aborted`` message with a redacted error text."""
    output.stop_reason = "aborted" if aborted else "error"
    output.error_message = "Request was aborted" if aborted else redact_secrets(info.message, secrets)
    if not aborted:
        output.error_status = info.status
        output.retry_after_ms = info.retry_after_ms
    return output


def sanitize_text(text: str) -> str:
    """Replace lone surrogates (from broken tool output) that would make the request body unencodable."""
    if text.isascii():  # the common case, checked without copying the text
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def is_local_base_url(base_url: str) -> bool:
    """A server on this machine or the local network (Ollama, LM Studio, vLLM, llama.cpp): no key needed."""
    host = (urlsplit(base_url).hostname or "").lower()
    if host in ("localhost", "0.0.0.0", "::1", "host.docker.internal") or host.endswith(".local"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_link_local


def headers_contain(headers: dict[str, str] | None, *names: str) -> bool:
    wanted = {n.lower() for n in names}
    return any(k.lower() in wanted and str(v).strip() for k, v in (headers or {}).items())


def new_output(model: Model) -> AssistantMessage:
    return AssistantMessage(
        content=[], api=model.api, provider=model.provider, model=model.id, stop_reason="pending"
    )


def compact_json(value: Any) -> str:
    """JSON as JavaScript's ``JSON.stringify`` writes it (no spaces, UTF-8 kept): the text Pi sends and
    stores for tool arguments and reasoning items. msgspec writes the same text 15× faster than ``json``;
    what it refuses (lone surrogates, non-string keys) goes through ``json``."""
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, ValueError, msgspec.EncodeError):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def encode_body(params: dict[str, Any]) -> bytes:
    """The request body as JSON bytes, serialised once by caddie.

    The SDKs' ``create`` methods re-walk every request through their own type transforms before
    serialising it (``_utils._transform``), which costs more than everything else caddie does per turn
    once a session holds a few hundred messages. The providers send these bytes through the SDK's
    lower-level ``post`` instead, which still gives auth, the HTTP client, streaming and error classes.
    """
    try:
        return msgspec.json.encode(params)
    except (TypeError, ValueError, msgspec.EncodeError):  # e.g. a payload hook put in non-string keys
        return json.dumps(params, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------------------------------
# The streaming skeleton both SDK providers share


class SdkAssembler(Protocol):
    """Turns one API's stream chunks into caddie events on ``output`` (one per provider)."""

    def apply(self, chunk: Any) -> list[AssistantMessageEvent]: ...

    def complete(self) -> bool:
        """The API said the reply is over (stop reading even if the connection stays open)."""
        ...

    def finish(self) -> list[AssistantMessageEvent]:
        """End events after the stream ended; raises ``ConnectionResetError`` when the reply is incomplete."""
        ...

    def finalize_quietly(self) -> None:
        """On failure: give tool calls the best arguments seen so far (no events)."""
        ...


def _progress_marker(output: AssistantMessage) -> tuple[object, ...]:
    """What a content-free chunk may still advance: the stop reason, the usage, the number of blocks."""
    usage = output.usage
    return (
        output.stop_reason,
        usage.input,
        usage.output,
        usage.cache_read,
        usage.cache_write,
        len(output.content),
    )


def _is_progress(event: AssistantMessageEvent) -> bool:
    """Content arrived: a non-empty delta, or a block completed."""
    if isinstance(event, TextDeltaEvent | ThinkingDeltaEvent | ToolCallDeltaEvent):
        return bool(event.delta)
    return isinstance(event, TextEndEvent | ThinkingEndEvent | ToolCallEndEvent)


async def stream_via_sdk(
    model: Model,
    options: StreamOptions,
    output: AssistantMessage,
    assembler: SdkAssembler,
    *,
    headers: dict[str, str],
    api_key: str | None,
    missing_key_text: str,
    build_params: Callable[[], dict[str, Any]],
    clients: ClientCache,
    make_client: Callable[[str, dict[str, str], float], Any],
    create: Callable[[Any, dict[str, Any]], Awaitable[Any]],
    stream_flag: bool = True,
) -> AsyncIterator[AssistantMessageEvent]:
    """Key check → payload (through ``on_payload``) → SDK stream → events; failures become the final
    message, never an exception. ``create`` sends ``params`` (see ``encode_body``) and returns the SDK's
    stream of decoded events. The SDK stream is closed on every exit, so an abort closes the HTTP
    connection at once; the client itself is kept for the next request."""
    idle = options.timeout_s if options.timeout_s is not None else DEFAULT_IDLE_TIMEOUT_S
    progress = options.progress_timeout_s if options.progress_timeout_s is not None else idle
    guard = StreamGuard(options.signal, idle)
    loop = asyncio.get_running_loop()
    secrets = [options.api_key]
    sdk_stream: Any = None
    started = False
    try:
        if not api_key:
            yield ErrorEvent(
                "error", fail(output, FailureInfo(missing_key_text), aborted=False, secrets=secrets)
            )
            return
        params = build_params()
        if options.on_payload is not None:
            replaced = await options.on_payload(params)
            if replaced is not None:
                params = replaced
        if stream_flag:
            params["stream"] = True  # the providers read a stream; a hook cannot turn that off
        key = (api_key, model.base_url, options.max_retries, tuple(sorted(headers.items())), idle)
        client = await clients.get_async(key, lambda: make_client(api_key, headers, idle))
        sdk_stream = await guard.run(create(client, params))
        response = getattr(sdk_stream, "response", None)
        if options.on_response is not None and response is not None:
            await options.on_response(
                ProviderResponse(response.status_code, {str(k): str(v) for k, v in response.headers.items()})
            )
        yield StartEvent(output)
        started = True
        # The no-progress deadline: chunks that carry no content (empty deltas, pings) do not move it.
        deadline = loop.time() + progress if progress > 0 else None
        idle_chunks = 0  # chunks since the last progress
        while True:
            wait = guard.idle_timeout_s
            if deadline is not None:
                left = deadline - loop.time()
                if left <= 0:
                    raise NoProgress(progress) if idle_chunks else Stalled(progress)
                wait = left if wait is None else min(wait, left)
            try:
                chunk = await guard.run(sdk_stream.__anext__(), wait)
            except StopAsyncIteration:
                break
            except Stalled:
                if deadline is not None and loop.time() >= deadline:
                    # Cut by the deadline: busy without content, or plain silence since the last content.
                    raise (NoProgress(progress) if idle_chunks else Stalled(progress)) from None
                raise
            before = _progress_marker(output)
            events = assembler.apply(chunk)
            for event in events:
                yield event
            if deadline is not None and (
                any(_is_progress(e) for e in events) or _progress_marker(output) != before
            ):
                deadline = loop.time() + progress
                idle_chunks = 0
            else:
                idle_chunks += 1
            if assembler.complete():
                break
        if guard.aborted:
            raise Aborted()
        for event in assembler.finish():
            yield event
        if output.stop_reason == "error":
            info = FailureInfo(output.error_message or "The provider returned an error")
            yield ErrorEvent("error", fail(output, info, aborted=False, secrets=secrets))
            return
        if output.stop_reason not in ("stop", "length", "toolUse"):
            output.stop_reason = "stop"
        yield DoneEvent(output.stop_reason, output)
    except Aborted:
        assembler.finalize_quietly()
        yield ErrorEvent("aborted", fail(output, FailureInfo(""), aborted=True, secrets=secrets))
    except Exception as exc:
        assembler.finalize_quietly()
        if isinstance(exc, ConnectionResetError):
            info = FailureInfo(
                f"Connection lost: the stream from {safe_url(model.base_url)} ended before the reply finished ({exc}). "
                "Try again."
            )
        else:
            info = describe_failure(exc, model, streaming_started=started)
        aborted = guard.aborted
        yield ErrorEvent(
            "aborted" if aborted else "error", fail(output, info, aborted=aborted, secrets=secrets)
        )
    finally:
        guard.close()
        if sdk_stream is not None:
            try:
                await sdk_stream.close()
            except Exception:  # closing a broken stream can fail; the request is over either way
                pass
