"""The transcript's blocks: one per message part, tool call or notice, in a line-based view (transcript_view.py).

Streaming touches only the block being written: text deltas go into that block's buffer and the view
re-draws dirty blocks at most ~15 times a second. A long reply is frozen piece by piece (the finished head
is drawn once, only the tail is drawn again), so the cost of a delta does not grow with the length of the
answer; the whole conversation is in the view however long the session, drawn only near the screen.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual.strip import Strip

from caddie.ai.messages import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
)
from caddie.ai.stream_events import (
    AssistantMessageEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from caddie.modes.interactive.markdown import chat_markdown, paragraph_cut, reinterprets_paragraph
from caddie.modes.interactive.render import (
    SkillInvocation,
    bash_exit_code,
    content_text,
    diff_text,
    markdown_split_point,
    preview_lines,
    summarize_tool_call,
)
from caddie.modes.interactive.transcript_view import Block, TranscriptView

if TYPE_CHECKING:
    from caddie.extensions.extension import MarkdownTransformContext
    from caddie.modes.interactive.keymap import Keybindings
    from caddie.tools.base import ToolRenderContext, ToolResult

B = TypeVar("B", bound=Block)
FLUSH_INTERVAL = 1 / 15
"""Seconds between markdown re-renders of a streaming message."""
FREEZE_AT = 3000
"""Characters of live (re-rendered) tail after which finished markdown blocks are frozen."""
LIVE_LINES = 8
"""Drawn lines of a long paragraph kept live when the lines before them are frozen (markdown.paragraph_cut)."""


def markdown(text: str) -> RenderableType:
    return chat_markdown(text, hyperlinks=True)  # links as OSC 8: clickable, the URL not printed


MarkdownTransform = Callable[[str, "MarkdownTransformContext"], str]


MarkdownKind = Literal["user", "assistant", "assistant-thinking"]


def transformed(block: Block, text: str, kind: MarkdownKind, streaming: bool = False, width: int = 0) -> str:
    """``text`` as the extensions' markdown transformers change it for display (unchanged without any)."""
    view = block.view
    transform = view.markdown_transform if isinstance(view, Conversation) else None
    if transform is None:
        return text
    from caddie.extensions.extension import MarkdownTransformContext

    columns = width if width > 0 else (block.measured_width if block.measured_width > 0 else 80)
    return transform(text, MarkdownTransformContext(kind, streaming, columns))


class Conversation(TranscriptView):
    """Holds every block of the transcript; stays scrolled to the end unless the user scrolls up. Dirty
    blocks are drawn again on a short timer; blocks that show a running time tick every second."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._dirty: dict[int, Block] = {}
        self._ticking: dict[int, Block] = {}
        self.markdown_transform: MarkdownTransform | None = None
        """The extensions' markdown transformers (``api.register_markdown_transformer``), display only."""

    def on_mount(self) -> None:
        super().on_mount()
        self.set_interval(FLUSH_INTERVAL, self._flush)
        self.set_interval(1.0, self._tick)

    def schedule(self, block: Block) -> None:
        """Draw ``block`` again at the next flush (at most ~15 times a second)."""
        self._dirty[id(block)] = block

    def ticking(self, block: Block, on: bool) -> None:
        if on:
            self._ticking[id(block)] = block
        else:
            self._ticking.pop(id(block), None)

    def _flush(self) -> None:
        dirty, self._dirty = self._dirty, {}
        for block in dirty.values():
            if isinstance(block, Streaming):
                block.flush()
            else:
                block.changed()

    def _tick(self) -> None:
        for block in list(self._ticking.values()):
            block.changed()

    async def reset(self) -> None:
        self._dirty.clear()
        self._ticking.clear()
        self.clear()

    def blocks_of(self, kind: type[B]) -> list[B]:
        return [b for b in self.blocks if isinstance(b, kind)]


class Streaming(Block):
    """A block that grows by deltas and is drawn again on the view's timer."""

    def schedule(self) -> None:
        view = self.view
        if isinstance(view, Conversation):
            view.schedule(self)
        elif view is not None:
            self.flush()

    def flush(self) -> None:
        self.changed()


class MarkdownText(Streaming):
    """Markdown that grows by deltas, freezing finished pieces of long text (drawn once, kept as lines)."""

    def __init__(self, text: str = "") -> None:
        super().__init__()
        self._text = text
        self._deltas: list[str] = []
        """Arrived since the text was last read: joined then, once (adding each to the text would copy the
        whole text per delta)."""
        self.frozen: list[str] = []
        """Finished pieces of the text, each drawn once per width."""
        self._frozen_upto = 0
        self._frozen_lines: list[list[Strip]] = []
        self._frozen_width = -1
        self._cut_in_paragraph: set[int] = set()
        """Frozen pieces that end inside a paragraph, at a line start of ``_frozen_width`` (no blank after)."""
        self.renders = 0
        """How often the live part was drawn (tests check the throttle)."""
        self.streaming = False
        """Deltas are arriving (the markdown transformers are told the text is partial)."""

    @property
    def text_so_far(self) -> str:
        if self._deltas:
            self._text += "".join(self._deltas)
            self._deltas.clear()
        return self._text

    @text_so_far.setter
    def text_so_far(self, text: str) -> None:
        self._text = text
        self._deltas.clear()

    @property
    def text(self) -> str:
        return self.text_so_far

    def search_text(self) -> str:
        return self.text_so_far

    def append(self, delta: str) -> None:
        self._deltas.append(delta)
        self.streaming = True
        self.schedule()

    def set_text(self, text: str) -> None:
        """The whole text (the message's final content): what was frozen is kept only if it still matches."""
        self.streaming = False
        if text != self.text_so_far or self.renders == 0:
            if not text.startswith(self.text_so_far[: self._frozen_upto]):
                self.frozen, self._frozen_lines, self._frozen_upto = [], [], 0
                self._cut_in_paragraph = set()
            self.text_so_far = text
            self.flush()

    def flush(self) -> None:
        tail = self.text_so_far[self._frozen_upto :]
        if len(self.frozen) - 1 in self._cut_in_paragraph and reinterprets_paragraph(tail):
            self._join_paragraph_cuts()
            tail = self.text_so_far[self._frozen_upto :]
        if len(tail) > FREEZE_AT:
            cut = markdown_split_point(tail)
            if cut > 0:
                self.frozen.append(tail[:cut])
                self._frozen_upto += cut
        self.changed()

    def content(self) -> RenderableType:
        tail = self.text_so_far[self._frozen_upto :]
        return markdown(transformed(self, tail, "assistant", self.streaming)) if tail.strip() else Text("")

    def restyle(self) -> None:
        super().restyle()
        self._join_paragraph_cuts()  # frozen lines are drawn again in the new colours (whole paragraphs)

    def lines(self, view: TranscriptView, width: int) -> list[Strip]:
        if self._lines is not None and self._width == width:
            return self._lines
        if width != self._frozen_width:
            self._join_paragraph_cuts()  # cut where lines started at the old width
            self._frozen_width = width
        while len(self._frozen_lines) < len(self.frozen):
            piece = self.frozen[len(self._frozen_lines)]
            self._frozen_lines.append(
                [
                    *view.render_renderable(
                        markdown(transformed(self, piece, "assistant", False, width)), self, width
                    ),
                    Strip.blank(width),
                ]
            )
        tail = self.text_so_far[self._frozen_upto :]
        live = view.render_renderable(self.content(), self, width) if tail.strip() else []
        if self.streaming and len(tail) > FREEZE_AT and transformed(self, tail, "assistant", True) == tail:
            live = self._cut_paragraph(view, width, tail, live)  # (not when extensions change the text)
        self.renders += 1
        self._lines = [line for piece in self._frozen_lines for line in piece] + live
        if not self._lines:
            self._lines = [Strip.blank(width, view.rich_style)]
        self._width = width
        return self._lines

    def _cut_paragraph(self, view: TranscriptView, width: int, tail: str, live: list[Strip]) -> list[Strip]:
        """Freeze the drawn lines of a long paragraph but the last few (see markdown.paragraph_cut); the
        live lines left."""
        cut = paragraph_cut(tail, [line.text for line in live], LIVE_LINES)
        if cut is None:
            return live
        count, offset = cut
        rest = view.render_renderable(markdown(tail[offset:]), self, width)
        if rest != live[count:]:
            return live
        self._cut_in_paragraph.add(len(self.frozen))
        self.frozen.append(tail[:offset])
        self._frozen_lines.append(live[:count])
        self._frozen_upto += offset
        return rest

    def _join_paragraph_cuts(self) -> None:
        """Undo the cuts inside paragraphs (each piece joins the next; the last ones the live tail)."""
        if self._cut_in_paragraph:
            pieces: list[str] = []
            carried = ""
            for index, piece in enumerate(self.frozen):
                if index in self._cut_in_paragraph:
                    carried += piece
                else:
                    pieces.append(carried + piece)
                    carried = ""
            self.frozen, self._cut_in_paragraph = pieces, set()
            self._frozen_upto -= len(carried)
        self._frozen_lines = []


def format_duration(seconds: float) -> str:
    """``0.4s``, ``12s``, ``3m 05s``."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m {rest:02d}s"


class RunningLine(Block):
    """``$ cmd  running… 3s`` while a shell command of the user's runs (replaced by its block after)."""

    component = "transcript--tool"
    padding = 1

    def __init__(self, label: str) -> None:
        super().__init__()
        self.label = label
        self.started = time.monotonic()

    def attached(self) -> None:
        if isinstance(self.view, Conversation):
            self.view.ticking(self, True)

    def content(self) -> RenderableType:
        text = Text(self.label, style="bold")
        text.append(f"  running… {format_duration(time.monotonic() - self.started)}", style="dim")
        return text

    def search_text(self) -> str:
        return self.label


class UserBlock(Block):
    component = "transcript--user"
    padding = 1

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def content(self) -> RenderableType:
        return Text(transformed(self, self.text, "user"))

    def search_text(self) -> str:
        return self.text


class InfoBlock(Block):
    """A line or a few from caddie itself: command output, warnings, errors."""

    def __init__(self, content: RenderableType, level: str = "info") -> None:
        super().__init__()
        self.renderable = content
        self.level = level
        self.component = {"notice": "transcript--notice", "warning": "transcript--warning",
                          "error": "transcript--error"}.get(level, "transcript--muted")  # fmt: skip

    def content(self) -> RenderableType:
        return self.renderable

    def search_text(self) -> str:
        return self.renderable.plain if isinstance(self.renderable, Text) else ""


class StatusLine(Block):
    """A short confirmation of what the user just did ("Model: …"), dimmed; the next one replaces it when
    nothing came between them (Pi's ``showStatus``)."""

    component = "transcript--status"
    padding = 1

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message

    def set_message(self, message: str) -> None:
        self.message = message
        self.changed()

    def content(self) -> RenderableType:
        return Text(self.message)

    def search_text(self) -> str:
        return self.message


class ExpandableBlock(Block):
    """Shared by everything Ctrl+O or Ctrl+T expands: tool calls, thinking, summaries."""

    group: ClassVar[str] = "tools"
    """``tools`` (Ctrl+O) or ``thinking`` (Ctrl+T)."""

    def __init__(self, expanded: bool = False) -> None:
        super().__init__()
        self.expanded = expanded

    def set_expanded(self, expanded: bool) -> None:
        if expanded != self.expanded:
            self.expanded = expanded
            self.redraw()

    def redraw(self) -> None:
        self.changed()

    def content(self) -> RenderableType:
        return self.build()

    def build(self) -> RenderableType:
        raise NotImplementedError


class ThinkingBlock(ExpandableBlock):
    component = "transcript--thinking"
    group = "thinking"

    def __init__(self, text: str = "", expanded: bool = False, label: str | None = None) -> None:
        super().__init__(expanded)
        self.text = text
        self.label = label
        """What the collapsed block says instead of "Thinking" (``ui.set_hidden_thinking_label``)."""
        self.streaming = False

    def append(self, delta: str) -> None:
        self.text += delta
        if isinstance(self.view, Conversation):
            self.view.schedule(self)

    def search_text(self) -> str:
        return self.text if self.expanded else ""

    def build(self) -> RenderableType:
        lines = self.text.strip().count("\n") + 1 if self.text.strip() else 0
        if not self.expanded:
            if self.label is not None:
                return Text(f"▸ {self.label}  ctrl+t to expand")
            state = "Thinking…" if self.streaming else "Thinking"
            count = f" ({lines} line{'s' if lines != 1 else ''})" if lines else ""
            return Text(f"▸ {state}{count}  ctrl+t to expand")
        return Text(
            f"▾ Thinking\n{transformed(self, self.text.strip(), 'assistant-thinking', self.streaming)}"
        )


class ToolBlock(ExpandableBlock):
    """One tool call: a one-line summary, then the start (or for shell output the end) of its result."""

    component = "transcript--tool"
    padding = 1

    def __init__(self, call_id: str, name: str, args: Any, cwd: str | None, expanded: bool = False) -> None:
        super().__init__(expanded)
        self.call_id = call_id
        self.tool_name = name
        self.args = args
        self.cwd = cwd
        self.status = "pending"
        """``pending`` (arguments streaming), ``running``, ``done`` or ``error``."""
        self.output = ""
        self.details: Any = None
        self.started: float | None = None
        """When the tool began running (monotonic); the bash block shows the time since, then the duration."""
        self.duration: float | None = None
        self.render_call: Callable[..., Any] | None = None
        """The tool's own look for its call (``ToolDefinition.render_call``), with ``theme``."""
        self.render_result: Callable[..., Any] | None = None
        self.theme: Any = None
        self.result_content: list[Any] | None = None
        """The result's content as the tool returned it (images included), for ``render_result``."""
        self.render_state: dict[str, Any] = {}
        """The renderers' ``context.state`` for this call."""
        self.last_drawn: dict[str, Any] = {}
        """What ``render_call`` / ``render_result`` returned last (their ``context.last_component``)."""
        self.show_images = True
        self.render_shell = "default"
        """``self``: the tool's renderers draw without the tool block's background and padding."""

    def use_renderers(
        self,
        render_call: Callable[..., Any] | None,
        render_result: Callable[..., Any] | None,
        shell: str,
        theme: Any,
    ) -> None:
        """The tool's own renderers (``ToolDefinition``), its ``render_shell`` and the theme to draw with."""
        self.render_call, self.render_result, self.render_shell, self.theme = (
            render_call,
            render_result,
            shell,
            theme,
        )
        if shell == "self":
            self.padding = 0
            self.component = "transcript--text"

    def set_args(self, args: Any) -> None:
        self.args = args
        self.redraw()

    def start(self, args: Any) -> None:
        self.status = "running"
        self.started = time.monotonic()
        if isinstance(args, dict) and args:
            self.args = args
        if self.tool_name == "bash" and isinstance(self.view, Conversation):
            self.view.ticking(self, True)
        self.redraw()

    def progress(self, partial: ToolResult) -> None:
        """Streaming output (bash): redrawn at most ~15 times a second."""
        self.result_content = list(partial.content)
        self.output = content_text(self.result_content)
        if isinstance(self.view, Conversation):
            self.view.schedule(self)

    def finish(self, content: str | Sequence[Any], details: Any, is_error: bool) -> None:
        """The result: its text, or its content (then images reach ``render_result`` too)."""
        if isinstance(self.view, Conversation):
            self.view.ticking(self, False)
        if self.started is not None and self.duration is None:
            self.duration = time.monotonic() - self.started
        self.status = "error" if is_error else "done"
        if isinstance(content, str):
            self.output, self.result_content = content, None
        else:
            self.result_content = list(content)
            self.output = content_text(self.result_content)
        self.details = details
        if self.render_shell != "self":
            self.component = "transcript--tool-error" if is_error else "transcript--tool"
        self.redraw()

    def search_text(self) -> str:
        summary = summarize_tool_call(self.tool_name, self.args, self.cwd)
        return f"{summary.label} {summary.subject}\n{self.output}"

    def render_context(self, slot: str) -> ToolRenderContext:
        """Pi's ``ToolRenderContext`` for the ``call`` or ``result`` renderer of this call."""
        from caddie.tools.base import ToolRenderContext

        return ToolRenderContext(
            args=self.args,
            tool_call_id=self.call_id,
            invalidate=self.redraw,
            last_component=self.last_drawn.get(slot),
            state=self.render_state,
            cwd=self.cwd or "",
            execution_started=self.status != "pending",
            args_complete=self.status != "pending",
            is_partial=self.status == "running",
            expanded=self.expanded,
            show_images=self.show_images,
            is_error=self.status == "error",
        )

    def _drawn_by_tool(self, slot: str, draw: Callable[..., Any], *args: Any) -> RenderableType | None:
        """What the tool's renderer draws (a component, a string or a Rich renderable), given the theme and
        the render context after ``args`` (a renderer that takes fewer arguments gets fewer); on failure
        caddie's look with the reason."""
        from caddie.extensions.ui_components import call_leading
        from caddie.modes.interactive.extension_ui import as_renderable

        try:
            drawn = call_leading(draw, *args, self.theme, self.render_context(slot))
            self.last_drawn[slot] = drawn
            return as_renderable(drawn, self.measured_width if self.measured_width > 0 else 80)
        except Exception as e:  # the tool's renderer failed: caddie's look, with the reason
            return Text(f"[{self.tool_name} renderer failed: {type(e).__name__}: {e}]", style="red")

    def build(self) -> RenderableType:
        custom_head = self._drawn_by_tool("call", self.render_call, self.args) if self.render_call else None
        custom_body = None
        has_result = bool(self.output or self.result_content)
        if self.render_result is not None and self.status in ("running", "done", "error") and has_result:
            from caddie.ai.messages import TextContent
            from caddie.tools.base import ToolResult

            options = ResultRenderOptions(self.expanded, self.status == "running")
            content = self.result_content if self.result_content is not None else [TextContent(self.output)]
            result = ToolResult(list(content), self.details)
            custom_body = self._drawn_by_tool("result", self.render_result, result, options)
        if custom_head is not None or custom_body is not None:
            head_part = custom_head if custom_head is not None else self._head()
            return Group(head_part, custom_body) if custom_body is not None else head_part
        head = self._head()
        body = self._body()
        return Group(head, body) if body is not None else head

    def _head(self) -> Text:
        summary = summarize_tool_call(self.tool_name, self.args, self.cwd)
        head = Text()
        bullet_style = {"pending": "dim", "running": "yellow", "done": "green", "error": "red"}[self.status]
        head.append("● ", style=bullet_style)
        head.append(summary.label, style="bold")
        if summary.subject:
            head.append(" " + summary.subject)
        if self.tool_name == "bash" and self.status in ("done", "error"):
            code = bash_exit_code(self.output, self.status == "error")
            if code is not None:
                head.append(f"  exit {code}", style="green" if code == 0 else "red")
            if self.duration is not None:
                head.append(f"  {format_duration(self.duration)}", style="dim")
        if self.status == "running":
            elapsed = (
                f" {format_duration(time.monotonic() - self.started)}"
                if self.tool_name == "bash" and self.started is not None
                else ""
            )
            head.append(f"  running…{elapsed}", style="dim")
        return head

    def _body(self) -> RenderableType | None:
        diff = self.details.get("diff") if isinstance(self.details, dict) else None
        if self.tool_name == "edit" and isinstance(diff, str) and diff and self.status == "done":
            preview = preview_lines(diff, self.expanded, limit=12)
            text = diff_text("\n".join(preview.lines))
        else:
            if not self.output.strip():
                return None
            preview = preview_lines(self.output, self.expanded, from_end=self.tool_name == "bash")
            text = Text("\n".join(preview.lines), style="red" if self.status == "error" else "")
        if preview.hidden:
            more = Text(
                f"… {preview.hidden} more line{'s' if preview.hidden != 1 else ''}"
                + ("" if self.expanded else " (ctrl+o to expand)"),
                style="dim",
            )
            text = Text("\n").join([more, text]) if preview.from_end else Text("\n").join([text, more])
        return text


@dataclass(frozen=True, slots=True)
class ResultRenderOptions:
    """The ``options`` of a tool's ``render_result`` (Pi's ``{expanded, isPartial}``)."""

    expanded: bool
    is_partial: bool


class AssistantView:
    """One assistant message: its thinking, text and tool-call blocks, built as the reply streams and kept
    together in the conversation."""

    def __init__(
        self,
        cwd: str | None,
        tools_expanded: bool = False,
        thinking_expanded: bool = False,
        message: AssistantMessage | None = None,
        *,
        hidden_thinking_label: str | None = None,
        decorate: Callable[[ToolBlock], None] | None = None,
    ) -> None:
        self.view: Conversation | None = None
        self.decorate = decorate
        """Gives each new tool block its tool's own renderers (``render_call``/``render_result``)."""
        self.cwd = cwd
        self.hidden_thinking_label = hidden_thinking_label
        self.tools_expanded = tools_expanded
        self.thinking_expanded = thinking_expanded
        self.blocks: dict[int, Block] = {}
        self.tool_blocks: dict[str, ToolBlock] = {}
        self._initial = message
        # Built now, not at compose time: the app looks the tool blocks up by call id to attach the results
        # that follow in the history (otherwise each result would get a second, orphan block).
        self.initial_blocks: list[Block] = []
        self._last: Block | None = None
        if message is not None:
            self.initial_blocks = self._blocks_for(message)
            error = self._error_line(message)
            if error is not None:
                self.initial_blocks.append(error)

    def _blocks_for(self, message: AssistantMessage) -> list[Block]:
        made: list[Block] = []
        for index, block in enumerate(message.content):
            widget = self._make(index, block)
            if widget is not None:
                made.append(widget)
        return made

    def _make(self, index: int, block: Any) -> Block | None:
        # While a reply streams, a text or thinking block starts empty and grows by its deltas: the
        # provider's partial message may already hold deltas whose events are still on their way (it
        # parses a network chunk into several events at once), so its text is not the text so far.
        streaming = self._initial is None
        widget: Block
        if isinstance(block, TextContent):
            if not block.text.strip() and not streaming:
                return None
            widget = MarkdownText("" if streaming else block.text)
        elif isinstance(block, ThinkingContent):
            if not block.thinking.strip() and not streaming:
                return None
            widget = ThinkingBlock(
                "" if streaming else block.thinking, self.thinking_expanded, self.hidden_thinking_label
            )
        elif isinstance(block, ToolCall):
            tool = ToolBlock(block.id, block.name, block.arguments, self.cwd, self.tools_expanded)
            if self.decorate is not None:
                self.decorate(tool)
            self.tool_blocks[block.id] = tool
            widget = tool
        else:
            return None
        self.blocks[index] = widget
        return widget

    def _error_line(self, message: AssistantMessage) -> InfoBlock | None:
        if message.stop_reason == "aborted":
            return InfoBlock(Text("Aborted."), "warning")
        if message.stop_reason == "error":
            return InfoBlock(Text(f"Error: {message.error_message or 'the request failed'}"), "error")
        return None

    def _ensure(self, index: int, block: Any) -> Block | None:
        widget = self.blocks.get(index)
        if widget is None:
            widget = self._make(index, block)
            if widget is not None:
                self._place(widget)
        return widget

    def _place(self, block: Block) -> None:
        """Add a part while streaming: right after this message's previous part (notices that came in
        between stay after the message)."""
        view = self.view
        if view is None:
            return
        if self._last is None:
            view.add(block)
        else:
            view.insert_after(self._last, [block])
        self._last = block

    def apply(self, event: AssistantMessageEvent) -> ToolBlock | None:
        """Feed one streaming event; returns a tool block when one was created (for id lookup)."""
        partial = getattr(event, "partial", None)
        if (
            isinstance(event, TextStartEvent | ThinkingStartEvent | ToolCallStartEvent)
            and partial is not None
        ):
            if event.content_index < len(partial.content):
                block = partial.content[event.content_index]
                widget = self._ensure(event.content_index, block)
                if isinstance(widget, ThinkingBlock):
                    widget.streaming = True
                return widget if isinstance(widget, ToolBlock) else None
        elif isinstance(event, TextDeltaEvent):
            widget = self.blocks.get(event.content_index)
            if isinstance(widget, MarkdownText):
                widget.append(event.delta)
        elif isinstance(event, ThinkingDeltaEvent):
            widget = self.blocks.get(event.content_index)
            if isinstance(widget, ThinkingBlock):
                widget.append(event.delta)
        elif isinstance(event, TextEndEvent):
            widget = self.blocks.get(event.content_index)
            if isinstance(widget, MarkdownText):
                widget.set_text(event.content)
        elif isinstance(event, ThinkingEndEvent):
            widget = self.blocks.get(event.content_index)
            if isinstance(widget, ThinkingBlock):
                widget.text = event.content
                widget.streaming = False
                widget.redraw()
        elif isinstance(event, ToolCallEndEvent):
            widget = self.blocks.get(event.content_index)
            if isinstance(widget, ToolBlock):
                widget.set_args(event.tool_call.arguments)
        return None

    def finish(self, message: AssistantMessage) -> list[ToolBlock]:
        """The final message: bring every block in line with it and add an error line if it failed."""
        for index, block in enumerate(message.content):
            widget = self._ensure(index, block)
            if isinstance(widget, MarkdownText) and isinstance(block, TextContent):
                widget.set_text(block.text)
            elif isinstance(widget, ThinkingBlock) and isinstance(block, ThinkingContent):
                widget.text = block.thinking
                widget.streaming = False
                widget.redraw()
            elif isinstance(widget, ToolBlock) and isinstance(block, ToolCall):
                widget.set_args(block.arguments)
        error = self._error_line(message)
        if error is not None:
            self._place(error)
        return list(self.tool_blocks.values())


class CustomBlock(Block):
    """A message an extension injected, shown with its type."""

    component = "transcript--custom"
    padding = 1

    def __init__(self, message: CustomMessage) -> None:
        super().__init__()
        self.custom_type = message.custom_type
        self.text = content_text(message.content)

    def content(self) -> RenderableType:
        return Group(Text(f"[{self.custom_type}]", style="bold"), markdown(self.text))

    def search_text(self) -> str:
        return f"[{self.custom_type}] {self.text}"


class BashBlock(Block):
    """A shell command the user ran with ``!`` or ``!!``."""

    component = "transcript--tool"
    padding = 1

    def __init__(
        self, message: BashExecutionMessage, expanded: bool = False, duration: float | None = None
    ) -> None:
        super().__init__()
        self.message = message
        self.duration = duration
        self.expanded = expanded

    def content(self) -> RenderableType:
        return self._build(self.expanded)

    def search_text(self) -> str:
        return f"$ {self.message.command}\n{self.message.output}"

    def _build(self, expanded: bool) -> RenderableType:
        m = self.message
        head = Text()
        head.append("$ ", style="bold")
        head.append(m.command)
        if m.exit_code is not None:
            head.append(f"  exit {m.exit_code}", style="green" if m.exit_code == 0 else "red")
        if self.duration is not None:
            head.append(f"  {format_duration(self.duration)}", style="dim")
        if m.exclude_from_context:
            head.append("  (not sent to the model)", style="dim")
        preview = preview_lines(m.output, expanded, from_end=True)
        if not preview.lines:
            return head
        body = Text("\n".join(preview.lines))
        if preview.hidden:
            body = Text("\n").join([Text(f"… {preview.hidden} more lines", style="dim"), body])
        return Group(head, body)

    def set_expanded(self, expanded: bool) -> None:
        if expanded != self.expanded:
            self.expanded = expanded
            self.changed()


@dataclass(frozen=True)
class Loaded:
    """What the startup header lists (Pi's ``[Context]``, ``[Skills]``, ``[Prompts]``, ``[Extensions]``,
    ``[Themes]``): each section's short labels and, for Ctrl+O, the files."""

    sections: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]


class StartupHeader(ExpandableBlock):
    """The first block: caddie's version and main keys, then what was loaded — context files, skills,
    prompt templates, extensions, themes — as short lists; Ctrl+O shows their files (as Pi's header)."""

    def __init__(self, keys: Keybindings, loaded: Loaded | None, quiet: bool = False) -> None:
        super().__init__(False)
        self.keys = keys
        self.loaded = loaded
        self.quiet = quiet

    def build(self) -> RenderableType:
        from caddie import __version__

        keys = self.keys
        text = Text()
        text.append(f"caddie {__version__}", style="bold")
        if self.quiet:
            return text
        hints = [
            ("app.interrupt", "to interrupt"), ("app.clear", "to clear"), ("app.exit", "to exit (empty)"),
            ("app.thinking.cycle", "to cycle thinking level"), ("app.model.select", "to select model"),
            ("app.tools.expand", "to expand tools"), ("app.thinking.toggle", "to expand thinking"),
        ]  # fmt: skip
        shown = [f"{keys.hint(i).lower()} {what}" for i, what in hints if keys.keys(i)]
        shown += ["/ for commands", "! to run bash", "@ for files", "/hotkeys for all keys"]
        text.append("\n" + " · ".join(shown), style="dim")
        for name, short, files in self.loaded.sections if self.loaded is not None else ():
            text.append(f"\n\n[{name}]", style="bold")
            if self.expanded:
                text.append("".join(f"\n  {f}" for f in files), style="dim")
            else:
                text.append("\n  " + ", ".join(short), style="dim")
        return text

    def search_text(self) -> str:
        return ""


class ImageBlock(Block):
    """An image of a message or a tool result, drawn inline (images.py)."""

    padding = 1

    def __init__(self, image: ImageContent, kind: str, width: int) -> None:
        super().__init__()
        self.image = image
        self.kind = kind
        self.width = width

    def content(self) -> RenderableType:
        from caddie.modes.interactive.images import image_renderable

        kind = self.kind if self.kind in ("kitty", "halfcell", "off") else "halfcell"
        return image_renderable(self.image.data, self.image.mime_type, kind, self.width)  # type: ignore[arg-type]

    def estimate(self, width: int) -> int:
        return 1 if self.kind == "off" else max(1, min(self.width, width) // 2)

    def search_text(self) -> str:
        return "[image]"


class SkillBlock(ExpandableBlock):
    """A ``/skill:name`` invocation: one line, the skill's text when tool output is expanded (as Pi)."""

    component = "transcript--custom"
    padding = 1

    def __init__(self, invocation: SkillInvocation, expanded: bool = False) -> None:
        super().__init__(expanded)
        self.invocation = invocation

    def build(self) -> RenderableType:
        head = Text("[skill] ", style="bold")
        head.append(self.invocation.name)
        if not self.expanded:
            head.append(" (ctrl+o to expand)", style="dim")
            return head
        return Group(head, markdown(f"**{self.invocation.name}**\n\n{self.invocation.content}"))


class SummaryBlock(ExpandableBlock):
    """A compaction or branch summary: one line, the summary itself when tool output is expanded."""

    component = "transcript--summary"
    padding = 1

    def __init__(self, title: str, summary: str, expanded: bool = False) -> None:
        super().__init__(expanded)
        self.title = title
        self.summary = summary

    def build(self) -> RenderableType:
        if not self.expanded:
            return Text(f"{self.title}  (ctrl+o to expand)")
        return Group(Text(self.title), markdown(self.summary))


def user_text(message: UserMessage) -> str:
    return content_text(message.content)


def summary_block(message: CompactionSummaryMessage | BranchSummaryMessage, expanded: bool) -> SummaryBlock:
    if isinstance(message, CompactionSummaryMessage):
        return SummaryBlock(
            f"⟲ Context compacted ({message.tokens_before:,} tokens before)", message.summary, expanded
        )
    return SummaryBlock("⎇ Summary of the branch left behind", message.summary, expanded)
