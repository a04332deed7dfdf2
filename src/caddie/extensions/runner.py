"""Runs extension handlers: in load order, then registration order; sync or async; fail-open.

A handler that raises is reported through ``on_error`` and skipped, and the next one runs — except for
``tool_call``, where an exception blocks that tool call (its message becomes the model's error text).

Containment covers ``BaseException`` too: ``sys.exit()``, ``KeyboardInterrupt`` or any other
``BaseException`` raised by extension code (a handler, a command, ``register``, a tool's ``execute`` or
``prepare_arguments``) is turned into ``ExtensionExit``, an ordinary exception, so it is reported and the run
goes on like after any other failure. Only ``asyncio.CancelledError`` (and ``GeneratorExit``) pass through:
they are how caddie itself cancels work.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import traceback
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from caddie.agent.events import MessageEndEvent
from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    DraftAssistantMessage,
    ImageContent,
    TextContent,
    ToolResultMessage,
    UserMessage,
    freeze,
)
from caddie.errors import ExtensionError
from caddie.extensions.event_types import (
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    BeforeProviderHeadersEvent,
    BeforeProviderRequestEvent,
    ContextEvent,
    ContextResult,
    InputEvent,
    InputResult,
    MessageEndResult,
    ToolCallEvent,
    ToolCallResult,
    ToolResultEvent,
    ToolResultPatch,
)
from caddie.extensions.extension import (
    CommandSpec,
    EntryRendererSpec,
    Handler,
    MarkdownTransformContext,
    MessageRendererSpec,
    ShortcutSpec,
)
from caddie.extensions.extension import Extension as Extension  # runtime/ and modes/ import it from here
from caddie.extensions.handler_context import ExtensionContext
from caddie.tools.base import ToolDefinition

log = logging.getLogger("caddie.extensions")
_MESSAGE_TYPES = (
    UserMessage,
    AssistantMessage,
    ToolResultMessage,
    CustomMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
)
_EXACT_MESSAGE_TYPES: frozenset[type] = frozenset(_MESSAGE_TYPES)
InputSource = Literal["interactive", "rpc", "extension", "print"]
StreamingBehavior = Literal["steer", "follow_up"]


@dataclass(slots=True)
class ExtensionFailure:
    """What one extension handler's failure is reported as (Pi's ``ExtensionError`` record)."""

    extension_path: str
    event: str
    error: str
    stack: str | None = None


class ExtensionExit(ExtensionError):
    """Extension code raised ``SystemExit``, ``KeyboardInterrupt`` or another ``BaseException``; contained
    like any other failure (the original is the ``__cause__``)."""


def _escaping(err: BaseException) -> bool:
    """A ``BaseException`` that must not leave extension code (everything but cancellation)."""
    return not isinstance(err, Exception | asyncio.CancelledError | GeneratorExit)


def contained(err: BaseException) -> ExtensionExit:
    if isinstance(err, SystemExit):
        code = err.code
        text = f"SystemExit: the extension called sys.exit({'' if code is None else repr(code)})"
    else:
        text = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    return ExtensionExit(text)


async def call_handler(handler: Callable[..., Any], *args: Any) -> Any:
    """Call a sync or async extension function; a ``BaseException`` it raises becomes ``ExtensionExit``."""
    try:
        result = handler(*args)
        if inspect.isawaitable(result):
            result = await result
    except BaseException as e:
        if _escaping(e):
            raise contained(e) from e
        raise
    return result


def _contain_sync(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            result = fn(*args, **kwargs)
        except BaseException as e:
            if _escaping(e):
                raise contained(e) from e
            raise
        if inspect.isawaitable(result):
            return call_handler(lambda: result)
        return result

    wrapper.__caddie_contained__ = True  # type: ignore[attr-defined]
    return wrapper


def contain_tool(tool: ToolDefinition) -> ToolDefinition:
    """Make an extension tool's ``execute`` and ``prepare_arguments`` contain ``BaseException``s (in place,
    once), so ``sys.exit()`` in a tool becomes the model's error result instead of ending caddie."""
    if not getattr(tool.execute, "__caddie_contained__", False):
        tool.execute = _contain_sync(tool.execute)
    prepare = tool.prepare_arguments
    if prepare is not None and not getattr(prepare, "__caddie_contained__", False):
        tool.prepare_arguments = _contain_sync(prepare)
    return tool


def _all_messages(values: list[Any]) -> bool:
    """Every value is a message: one pass over the types in C, the per-value check only for subclasses."""
    return set(map(type, values)) <= _EXACT_MESSAGE_TYPES or all(
        isinstance(m, _MESSAGE_TYPES) for m in values
    )


class ExtensionRunner:
    def __init__(
        self,
        extensions: list[Extension],
        context: Callable[[], ExtensionContext],
        on_error: Callable[[ExtensionFailure], None],
    ) -> None:
        self.extensions = extensions
        self._context = context
        self._on_error = on_error

    def context(self) -> ExtensionContext:
        """The ``ctx`` handlers get, for a handler the host calls itself (a shortcut's)."""
        return self._context()

    def has_handlers(self, event: str) -> bool:
        return any(ext.handlers.get(event) for ext in self.extensions)

    def _handlers(self, event: str) -> list[tuple[Extension, Handler]]:
        return [(ext, h) for ext in self.extensions for h in ext.handlers.get(event, ())]

    def _expect(self, ext: Extension, event: str, value: Any, kind: type) -> Any:
        """``value`` if it is None or a ``kind``; anything else is the handler's bug, reported and ignored."""
        if value is None or isinstance(value, kind):
            return value
        self._on_error(
            ExtensionFailure(
                ext.path,
                event,
                f"{event} handler returned {type(value).__name__}; expected {kind.__name__} or None",
            )
        )
        return None

    def _report(self, ext: Extension, event: str, err: BaseException) -> None:
        stack = "".join(traceback.format_exception(err))
        log.debug("extension %s failed in %s: %s", ext.path, event, stack)
        self._on_error(ExtensionFailure(ext.path, event, str(err) or type(err).__name__, stack))

    # -- generic --------------------------------------------------------------------------------------
    async def emit(self, name: str, event: Any, ctx: ExtensionContext | None = None) -> Any:
        """Run every handler; for ``session_before_*`` the last truthy result wins and ``cancel`` stops."""
        before = name.startswith("session_before_")
        result: Any = None
        ctx = ctx or self._context()
        for ext, handler in self._handlers(name):
            try:
                value = await call_handler(handler, event, ctx)
            except Exception as e:
                self._report(ext, name, e)
                continue
            if before and value:
                result = value
                if getattr(value, "cancel", False) or (isinstance(value, dict) and value.get("cancel")):
                    return value
        return result

    async def emit_first(self, name: str, event: Any, kind: type) -> Any:
        """The first handler's answer of type ``kind`` decides; the later handlers do not run (Pi's
        ``user_bash``). A failing handler is reported and the next one asked."""
        ctx = self._context()
        for ext, handler in self._handlers(name):
            try:
                value = await call_handler(handler, event, ctx)
            except Exception as e:
                self._report(ext, name, e)
                continue
            value = self._expect(ext, name, value, kind)
            if value:
                return value
        return None

    # -- events whose results matter ------------------------------------------------------------------
    async def emit_context(self, messages: list[AgentMessage]) -> list[AgentMessage]:
        """Each handler gets the previous one's output (the first: a new list of the stored messages); one
        that returns ``ContextResult(messages=...)`` replaces it. The messages themselves are frozen values,
        so a handler changes what is sent by returning new ones (``replace(message, content=...)``), never
        by editing a message — an attempt raises, and is reported like any handler failure."""

        current = list(messages)
        handlers = self._handlers("context")
        if not handlers:
            return current
        ctx = self._context()
        for ext, handler in handlers:
            try:
                value = await call_handler(handler, ContextEvent(current), ctx)
            except Exception as e:
                self._report(ext, "context", e)
                continue
            value = self._expect(ext, "context", value, ContextResult)
            if value is None or value.messages is None or value.messages is current:
                continue
            if not isinstance(value.messages, list) or not _all_messages(value.messages):
                self._on_error(
                    ExtensionFailure(
                        ext.path, "context", "context handler returned messages that are not messages"
                    )
                )
                continue
            current = list(value.messages)
            if DraftAssistantMessage in set(map(type, current)):  # a reply still being built: freeze it
                current = [freeze(m) if isinstance(m, DraftAssistantMessage) else m for m in current]
        return current

    async def emit_before_provider_request(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        """Each handler sees the previous one's payload; a returned dict replaces it. None when no handler
        replaced it (changes made in place stand either way)."""
        current = payload
        ctx = self._context()
        for ext, handler in self._handlers("before_provider_request"):
            try:
                value = await call_handler(handler, BeforeProviderRequestEvent(current), ctx)
            except Exception as e:
                self._report(ext, "before_provider_request", e)
                continue
            value = self._expect(ext, "before_provider_request", value, dict)
            if value is not None:
                current = value
        return None if current is payload else current

    async def emit_before_provider_headers(self, headers: dict[str, str]) -> dict[str, str]:
        """Handlers change ``event.headers`` in place; a header set to None is removed."""
        event = BeforeProviderHeadersEvent(dict[str, str | None](headers))
        ctx = self._context()
        for ext, handler in self._handlers("before_provider_headers"):
            try:
                await call_handler(handler, event, ctx)
            except Exception as e:
                self._report(ext, "before_provider_headers", e)
        return {str(k): str(v) for k, v in event.headers.items() if v is not None}

    async def emit_tool_call(self, event: ToolCallEvent) -> ToolCallResult | None:
        """The first ``block`` wins. A handler exception is not swallowed: it blocks the call."""

        result: ToolCallResult | None = None
        ctx = self._context()
        for ext, handler in self._handlers("tool_call"):
            value: ToolCallResult | None = self._expect(
                ext, "tool_call", await call_handler(handler, event, ctx), ToolCallResult
            )
            if value:
                result = value
                if value.block:
                    return result
        return result

    async def emit_tool_result(self, event: ToolResultEvent) -> ToolResultPatch | None:

        modified = False
        ctx = self._context()
        for ext, handler in self._handlers("tool_result"):
            try:
                value = await call_handler(handler, event, ctx)
            except Exception as e:
                self._report(ext, "tool_result", e)
                continue
            value = self._expect(ext, "tool_result", value, ToolResultPatch)
            if not value:
                continue
            if value.content is not None and not (
                isinstance(value.content, list)
                and all(isinstance(b, TextContent | ImageContent) for b in value.content)
            ):
                self._on_error(
                    ExtensionFailure(
                        ext.path, "tool_result", "tool_result content must be a list of text/image blocks"
                    )
                )
                continue
            if value.content is not None:
                event.content = list(value.content)
                modified = True
            if value.details is not None:
                event.details = value.details
                modified = True
            if value.is_error is not None:
                event.is_error = value.is_error
                modified = True
            if value.usage is not None:
                event.usage = value.usage
                modified = True
        if not modified:
            return None
        return ToolResultPatch(event.content, event.details, event.is_error, event.usage)

    async def emit_message_end(self, message: AgentMessage) -> AgentMessage | None:
        """A replacement message (same role) or None; handlers chain."""

        current = message
        modified = False
        ctx = self._context()
        for ext, handler in self._handlers("message_end"):
            try:
                value = await call_handler(handler, MessageEndEvent(current), ctx)
            except Exception as e:
                self._report(ext, "message_end", e)
                continue
            value = self._expect(ext, "message_end", value, MessageEndResult)
            replacement = value.message if value is not None else None
            if replacement is None:
                continue
            if not isinstance(replacement, _MESSAGE_TYPES) or replacement.role != current.role:
                self._on_error(
                    ExtensionFailure(
                        ext.path,
                        "message_end",
                        "message_end handlers must return a message with the same role",
                    )
                )
                continue
            current = replacement
            modified = True
        return current if modified else None

    async def emit_before_agent_start(
        self, event: BeforeAgentStartEvent, ctx_with_prompt: Callable[[Callable[[], str]], ExtensionContext]
    ) -> tuple[list[CustomMessage], str | None]:
        """Custom messages from every handler, and the chained system prompt if any handler changed it."""

        messages: list[CustomMessage] = []
        system_prompt = event.system_prompt
        changed = False
        ctx = ctx_with_prompt(lambda: system_prompt)
        for ext, handler in self._handlers("before_agent_start"):
            try:
                event.system_prompt = system_prompt
                value = await call_handler(handler, event, ctx)
            except Exception as e:
                self._report(ext, "before_agent_start", e)
                continue
            value = self._expect(ext, "before_agent_start", value, BeforeAgentStartResult)
            if not value:
                continue
            if value.message is not None:
                if not isinstance(value.message, CustomMessage):
                    self._on_error(
                        ExtensionFailure(ext.path, "before_agent_start", "message must be a CustomMessage")
                    )
                    continue
                messages.append(value.message)
            if value.system_prompt is not None:
                system_prompt = value.system_prompt
                changed = True
        return messages, (system_prompt if changed else None)

    async def emit_input(
        self,
        text: str,
        images: list[ImageContent] | None,
        source: InputSource,
        streaming_behavior: StreamingBehavior | None,
    ) -> InputResult:

        current_text, current_images = text, images
        ctx = self._context()
        for ext, handler in self._handlers("input"):
            try:
                value = await call_handler(
                    handler,
                    InputEvent(current_text, current_images, source, streaming_behavior),
                    ctx,
                )
            except Exception as e:
                self._report(ext, "input", e)
                continue
            value = self._expect(ext, "input", value, InputResult)
            if not value:
                continue
            if value.action == "handled":
                return InputResult("handled")
            if value.action == "transform" and value.text is not None:
                current_text = value.text
                current_images = value.images if value.images is not None else current_images
        if current_text != text or current_images is not images:
            return InputResult("transform", current_text, current_images)
        return InputResult("continue")

    # -- registrations ---------------------------------------------------------------------------------
    def tools(self) -> list[ToolDefinition]:
        """Every extension tool; a later registration of the same name wins."""
        out: dict[str, ToolDefinition] = {}
        for ext in self.extensions:
            for name, tool in ext.tools.items():
                out[name] = contain_tool(tool)
        return list(out.values())

    def commands(self) -> dict[str, CommandSpec]:
        """Commands by invocation name, as Pi names them: a name that several extensions register is
        ``name:1``, ``name:2`` … for each of them in load order (none keeps the bare name); a suffix that is
        already taken moves on to the next free number."""
        registered = [(name, spec) for ext in self.extensions for name, spec in ext.commands.items()]
        counts: dict[str, int] = {}
        for name, _ in registered:
            counts[name] = counts.get(name, 0) + 1
        seen: dict[str, int] = {}
        out: dict[str, CommandSpec] = {}
        for name, spec in registered:
            occurrence = seen[name] = seen.get(name, 0) + 1
            key = f"{name}:{occurrence}" if counts[name] > 1 else name
            suffix = occurrence
            while key in out:
                suffix += 1
                key = f"{name}:{suffix}"
            out[key] = spec
        return out

    def shortcuts(self, builtin: Mapping[str, str], reserved: Collection[str]) -> ShortcutSet:
        """Extension shortcuts by key, as Pi resolves them: a ``reserved`` built-in key is skipped, another
        ``builtin`` key (key → what it does) is taken over, and of two extensions the later one wins — each
        with a warning (Pi's texts)."""
        out: dict[str, ShortcutSpec] = {}
        warnings: list[str] = []
        for ext in self.extensions:
            for key, spec in ext.shortcuts.items():
                if key in reserved:
                    warnings.append(
                        f"Extension shortcut '{key}' from {spec.source} conflicts with built-in shortcut. Skipping."
                    )
                    continue
                if key in builtin:
                    warnings.append(
                        f"Extension shortcut conflict: '{key}' is built-in shortcut for {builtin[key]} and "
                        f"{spec.source}. Using {spec.source}."
                    )
                existing = out.get(key)
                if existing is not None:
                    warnings.append(
                        f"Extension shortcut conflict: '{key}' registered by both {existing.source} and "
                        f"{spec.source}. Using {spec.source}."
                    )
                out[key] = spec
        return ShortcutSet(out, warnings)

    def transform_markdown(
        self, markdown: str, context: MarkdownTransformContext, on_error: Callable[[str, Exception], None]
    ) -> str:
        """``markdown`` through every extension's markdown transformers in load order; one that raises (or
        returns something else than a string) is skipped and ``on_error(extension path, error)`` told."""
        for ext in self.extensions:
            for transformer in ext.markdown_transformers:
                try:
                    changed = transformer(markdown, context)
                except Exception as e:  # an extension's transformer must not break the drawing
                    on_error(ext.path, e)
                    continue
                if isinstance(changed, str):
                    markdown = changed
                else:
                    on_error(ext.path, TypeError(f"returned {type(changed).__name__}, not the markdown text"))
        return markdown

    def has_markdown_transformers(self) -> bool:
        return any(ext.markdown_transformers for ext in self.extensions)

    def entry_renderer(self, custom_type: str) -> EntryRendererSpec | None:
        """The renderer registered for ``custom`` entries of ``custom_type`` (the first extension wins, as
        Pi's ``getEntryRenderer``)."""
        for ext in self.extensions:
            if (spec := ext.entry_renderers.get(custom_type)) is not None:
                return spec
        return None

    def message_renderer(self, custom_type: str) -> MessageRendererSpec | None:
        """The renderer registered for ``custom_type`` (the first extension wins, as Pi's
        ``getMessageRenderer``)."""
        for ext in self.extensions:
            if (spec := ext.message_renderers.get(custom_type)) is not None:
                return spec
        return None


@dataclass(slots=True)
class ShortcutSet:
    by_key: dict[str, ShortcutSpec]
    warnings: list[str]
