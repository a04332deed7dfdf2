"""What a tool is: its definition (name, schema, ``execute``) and what running it returns.

Built-in tools and extension tools share this shape (Pi's ``ToolDefinition`` / ``AgentToolResult``). A tool
signals failure by raising; the agent turns the exception's message into an error result for the model.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from caddie.ai.abort import AbortSignal
from caddie.ai.constrained_sampling import ConstrainedSampling, constrained_sampling_of
from caddie.ai.messages import ImageContent, TextContent, Usage
from caddie.ai.model import Tool
from caddie.config.source_info import UNDECIDED, SourceInfo, builtin_tool_source
from caddie.errors import ToolError as ToolError  # raise it from ``execute``: the message is the result text


@dataclass(slots=True)
class ToolResult:
    content: list[TextContent | ImageContent]
    details: Any = None
    usage: Usage | None = None
    added_tool_names: list[str] | None = None
    terminate: bool = False
    """When every result of a batch terminates, the loop makes no further model call for it."""


OnUpdate = Callable[[ToolResult], None]
Execute = Callable[[str, Any, AbortSignal, OnUpdate, Any], Awaitable[ToolResult]]
"""``execute(tool_call_id, params, signal, on_update, ctx)``; ``ctx`` is the extension context."""


@dataclass(slots=True)
class ToolDefinition:
    name: str
    description: str
    parameters: dict[str, Any] | type[BaseModel]
    """A JSON Schema object, or a pydantic model (then ``execute`` receives a validated instance)."""
    execute: Execute
    label: str | None = None
    prompt_snippet: str | None = None
    """One line for "Available tools" in the system prompt; tools without one are not listed."""
    prompt_guidelines: list[str] = field(default_factory=list)
    prepare_arguments: Callable[[Any], Any] | None = None
    """Runs on the raw arguments before validation (to accept legacy or stringified shapes)."""
    execution_mode: Literal["parallel", "sequential"] | None = None
    source: str = "builtin"
    """Who registered it: ``builtin`` or the extension's path."""
    source_info: SourceInfo = UNDECIDED
    """Pi's ``sourceInfo``: a built-in tool's is ``<builtin:name>``; ``register_tool`` gives the extension's."""
    render_call: Callable[..., Any] | None = None
    """How the interactive UI shows a call (Pi's ``renderCall``): ``(args, theme, context) -> component | str
    | Rich renderable`` (``context``: a ``ToolRenderContext``; a renderer may leave it out); None: caddie's
    one-line summary."""
    render_result: Callable[..., Any] | None = None
    """How it shows the result (Pi's ``renderResult``): ``(result, options, theme, context)`` where
    ``options`` has ``expanded`` and ``is_partial`` and ``result`` is the whole ``ToolResult`` (images
    included); None: caddie's preview of the output."""
    render_shell: Literal["default", "self"] = "default"
    """Pi's ``renderShell``: ``self`` draws the tool's renderers without caddie's tool-block background and
    padding (the renderer draws its own frame)."""
    constrained_sampling: ConstrainedSampling | None = None
    """Pi's experimental ``constrainedSampling``: ``JsonSchemaSampling("prefer" | "require")`` has the provider
    hold the arguments to the schema exactly (strict tools), ``GrammarSampling(openai_lark=...)`` sends an
    OpenAI custom tool with a grammar (docs/extensions.md); Pi's dict shape is accepted too."""

    def __post_init__(self) -> None:
        self.constrained_sampling = constrained_sampling_of(
            self.constrained_sampling
        )  # ValueError if unusable
        if self.source_info is UNDECIDED:
            self.source_info = builtin_tool_source(self.name)

    def json_schema(self) -> dict[str, Any]:
        if isinstance(self.parameters, dict):
            return self.parameters
        return pydantic_json_schema(self.parameters)

    def as_provider_tool(self) -> Tool:
        return Tool(
            self.name,
            self.description,
            self.json_schema(),
            self.label,
            self.execution_mode,
            self.constrained_sampling,
        )


@dataclass(slots=True)
class ToolRenderContext:
    """The last argument of a tool's ``render_call`` / ``render_result`` (Pi's ``ToolRenderContext``): one
    per tool call, shared by its call and result renders."""

    args: Any
    tool_call_id: str
    invalidate: Callable[[], None]
    """Draw this tool call again (after changing ``state`` from a timer, say)."""
    last_component: Any
    """What this renderer returned last time for this call (None the first time)."""
    state: dict[str, Any]
    """The renderers' own state for this call, kept between renders."""
    cwd: str
    execution_started: bool
    args_complete: bool
    is_partial: bool
    expanded: bool
    show_images: bool
    """Whether the transcript shows images inline (``terminal.showImages``)."""
    is_error: bool


def pydantic_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A model's JSON Schema with ``$defs`` inlined (providers want one self-contained object)."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                target = dict(defs[ref.removeprefix("#/$defs/")])
                rest = {k: v for k, v in node.items() if k != "$ref"}
                return inline({**target, **rest})
            return {k: inline(v) for k, v in node.items()}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    result = inline(schema)
    assert isinstance(result, dict)
    return result


def text_result(text: str, details: Any = None) -> ToolResult:
    return ToolResult([TextContent(text)], details)
