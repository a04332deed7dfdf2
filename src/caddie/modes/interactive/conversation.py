"""The transcript: one widget per message, tool call or notice, in a scroll view anchored to the bottom.

Streaming touches only the message being written: text deltas go into that message's buffer and a
short timer re-renders its markdown at most ~15 times a second. A long reply is frozen block by block
(the finished head is rendered once, only the tail re-renders), so the cost of a delta does not grow
with the length of the answer.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual.containers import Vertical, VerticalScroll
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Static

from caddie.ai.messages import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
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
from caddie.modes.interactive.markdown import chat_markdown
from caddie.modes.interactive.render import (
    SkillInvocation,
    bash_exit_code,
    content_text,
    diff_text,
    markdown_split_point,
    preview_lines,
    summarize_tool_call,
)

if TYPE_CHECKING:
    from caddie.tools.base import ToolResult

FLUSH_INTERVAL = 1 / 15
"""Seconds between markdown re-renders of a streaming message."""
FREEZE_AT = 3000
"""Characters of live (re-rendered) tail after which finished markdown blocks are frozen."""


def markdown(text: str) -> RenderableType:
    return chat_markdown(text)


class Conversation(VerticalScroll):
    """Holds every block of the transcript; stays scrolled to the end unless the user scrolls up."""

    DEFAULT_CSS = """
    Conversation { height: 1fr; padding: 0 1; scrollbar-size-vertical: 1; }
    Conversation > * { margin-bottom: 1; }
    """
    can_focus = False

    def on_mount(self) -> None:
        self.follow()

    @property
    def following(self) -> bool:
        """Whether new output scrolls into view (true at the bottom; scrolling up pauses it)."""
        return self._anchored and not self._anchor_released

    def follow(self) -> None:
        """Jump to the end and follow new output again (sending a message, Ctrl+End)."""
        self._anchor_released = False
        self.anchor()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self._anchor_released and new_value >= self.max_scroll_y:
            self._anchor_released = False  # back at the bottom: follow again

    def _scroll_to(self, x: float | None = None, y: float | None = None, **kwargs: Any) -> bool:
        # Textual releases the anchor on every scroll, even one that stays at the bottom (PageDown
        # there): following must resume whenever the scroll ends at the bottom.
        changed = super()._scroll_to(x, y, **kwargs)
        if self._anchor_released and y is not None and y >= self.max_scroll_y:
            self._anchor_released = False
        return changed

    def add(self, *widgets: Widget) -> None:
        self.mount_all(widgets)

    async def reset(self) -> None:
        await self.remove_children()


class MarkdownText(Vertical):
    """Markdown that can grow by deltas; renders on a timer, freezing finished blocks of long text."""

    DEFAULT_CSS = "MarkdownText { height: auto; } MarkdownText > Static { height: auto; }"

    def __init__(self, text: str = "", *, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self.text = text
        self._frozen_upto = 0
        self._live = Static("", classes="md-live")
        self._timer: Timer | None = None
        self._ready = False
        self.renders = 0
        """How often the live part was re-rendered (tests check the throttle)."""

    def compose(self) -> Any:
        yield self._live

    def on_mount(self) -> None:
        self._ready = True
        self.flush()

    def append(self, delta: str) -> None:
        self.text += delta
        if self._timer is None and self._ready:
            # A live tail that cannot be frozen (one huge code block) re-renders less often as it grows.
            live = len(self.text) - self._frozen_upto
            self._timer = self.set_timer(min(0.5, FLUSH_INTERVAL * max(1.0, live / FREEZE_AT)), self.flush)

    def set_text(self, text: str) -> None:
        """The whole text (the message's final content): what was frozen is kept only if it still matches."""
        if text != self.text or self.renders == 0:
            if not text.startswith(self.text[: self._frozen_upto]):
                for frozen in self.query(".md-frozen"):
                    frozen.remove()
                self._frozen_upto = 0
            self.text = text
            self.flush()

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if not self._ready:
            return
        tail = self.text[self._frozen_upto :]
        if len(tail) > FREEZE_AT:
            cut = markdown_split_point(tail)
            if cut > 0:
                self.mount(Static(markdown(tail[:cut]), classes="md-frozen"), before=self._live)
                self._frozen_upto += cut
                tail = tail[cut:]
        self._live.update(markdown(tail) if tail.strip() else "")
        self.renders += 1


def format_duration(seconds: float) -> str:
    """``0.4s``, ``12s``, ``3m 05s``."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m {rest:02d}s"


class RunningLine(Static):
    """``$ cmd  running… 3s`` while a shell command of the user's runs (replaced by its block after)."""

    DEFAULT_CSS = "RunningLine { padding: 0 1; background: $panel 40%; }"

    def __init__(self, label: str) -> None:
        super().__init__("")
        self.label = label
        self.started = time.monotonic()

    def on_mount(self) -> None:
        self._tick()
        self.set_interval(1.0, self._tick)

    def _tick(self) -> None:
        text = Text(self.label, style="bold")
        text.append(f"  running… {format_duration(time.monotonic() - self.started)}", style="dim")
        self.update(text)


class UserBlock(Static):
    DEFAULT_CSS = "UserBlock { background: $boost; padding: 0 1; }"

    def __init__(self, text: str) -> None:
        super().__init__(Text(text))
        self.text = text


class InfoBlock(Static):
    """A line or a few from caddie itself: command output, warnings, errors."""

    DEFAULT_CSS = """
    InfoBlock { color: $text-muted; }
    InfoBlock.-notice { color: $text-muted; text-style: dim; }
    InfoBlock.-warning { color: $text-warning; }
    InfoBlock.-error { color: $text-error; }
    """

    def __init__(self, content: RenderableType, level: str = "info") -> None:
        super().__init__(content, classes=f"-{level}")
        self.level = level


class StatusLine(Static):
    """A short confirmation of what the user just did ("Model: …"), dimmed; the next one replaces it when
    nothing came between them (Pi's ``showStatus``)."""

    DEFAULT_CSS = "StatusLine { color: $text-muted; text-style: dim; padding: 0 1; }"

    def __init__(self, message: str) -> None:
        super().__init__(Text(message))
        self.message = message

    def set_message(self, message: str) -> None:
        self.message = message
        self.update(Text(message))


class ExpandableBlock(Static):
    """Shared by everything Ctrl+O or Ctrl+T expands: tool calls, thinking, summaries."""

    group: ClassVar[str] = "tools"
    """``tools`` (Ctrl+O) or ``thinking`` (Ctrl+T)."""

    def __init__(self, expanded: bool = False, classes: str | None = None) -> None:
        super().__init__("", classes=classes)
        self.expanded = expanded
        self._ready = False

    def on_mount(self) -> None:
        self._ready = True
        self.redraw()

    def set_expanded(self, expanded: bool) -> None:
        if expanded != self.expanded:
            self.expanded = expanded
            self.redraw()

    def redraw(self) -> None:
        if self._ready:
            self.update(self.build())

    def build(self) -> RenderableType:
        raise NotImplementedError


class ThinkingBlock(ExpandableBlock):
    DEFAULT_CSS = "ThinkingBlock { color: $text-muted; text-style: italic; }"
    group = "thinking"

    def __init__(self, text: str = "", expanded: bool = False, label: str | None = None) -> None:
        super().__init__(expanded)
        self.text = text
        self.label = label
        """What the collapsed block says instead of "Thinking" (``ui.set_hidden_thinking_label``)."""
        self.streaming = False
        self._timer: Timer | None = None

    def append(self, delta: str) -> None:
        self.text += delta
        if self._timer is None and self._ready:
            self._timer = self.set_timer(FLUSH_INTERVAL, self._flush)

    def _flush(self) -> None:
        self._timer = None
        self.redraw()

    def build(self) -> RenderableType:
        lines = self.text.strip().count("\n") + 1 if self.text.strip() else 0
        if not self.expanded:
            if self.label is not None:
                return Text(f"▸ {self.label}  ctrl+t to expand")
            state = "Thinking…" if self.streaming else "Thinking"
            count = f" ({lines} line{'s' if lines != 1 else ''})" if lines else ""
            return Text(f"▸ {state}{count}  ctrl+t to expand")
        return Text(f"▾ Thinking\n{self.text.strip()}")


class ToolBlock(ExpandableBlock):
    """One tool call: a one-line summary, then the start (or for shell output the end) of its result."""

    DEFAULT_CSS = """
    ToolBlock { padding: 0 1; background: $panel 40%; }
    ToolBlock.-error { background: $error 15%; }
    """

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
        self._timer: Timer | None = None
        self.started: float | None = None
        """When the tool began running (monotonic); the bash block shows the time since, then the duration."""
        self.duration: float | None = None
        self._clock: Timer | None = None

    def set_args(self, args: Any) -> None:
        self.args = args
        self.redraw()

    def start(self, args: Any) -> None:
        self.status = "running"
        self.started = time.monotonic()
        if isinstance(args, dict) and args:
            self.args = args
        if self.tool_name == "bash" and self._ready:
            self._clock = self.set_interval(1.0, self.redraw)
        self.redraw()

    def progress(self, partial: ToolResult) -> None:
        """Streaming output (bash): redrawn at most ~15 times a second."""
        self.output = content_text(list(partial.content))
        if self._timer is None and self._ready:
            self._timer = self.set_timer(FLUSH_INTERVAL, self._flush)

    def _flush(self) -> None:
        self._timer = None
        self.redraw()

    def finish(self, content_output: str, details: Any, is_error: bool) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self._clock is not None:
            self._clock.stop()
            self._clock = None
        if self.started is not None and self.duration is None:
            self.duration = time.monotonic() - self.started
        self.status = "error" if is_error else "done"
        self.output = content_output
        self.details = details
        self.set_class(is_error, "-error")
        self.redraw()

    def build(self) -> RenderableType:
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
        body = self._body()
        return Group(head, body) if body is not None else head

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


class AssistantView(Vertical):
    """One assistant message: its thinking, text and tool-call blocks, built as the reply streams."""

    DEFAULT_CSS = """
    AssistantView { height: auto; }
    AssistantView > * { margin-bottom: 1; }
    AssistantView > *:last-child { margin-bottom: 0; }
    """

    def __init__(
        self,
        cwd: str | None,
        tools_expanded: bool = False,
        thinking_expanded: bool = False,
        message: AssistantMessage | None = None,
        *,
        hidden_thinking_label: str | None = None,
    ) -> None:
        super().__init__()
        self.cwd = cwd
        self.hidden_thinking_label = hidden_thinking_label
        self.tools_expanded = tools_expanded
        self.thinking_expanded = thinking_expanded
        self.blocks: dict[int, Widget] = {}
        self.tool_blocks: dict[str, ToolBlock] = {}
        self._initial = message
        # Built now, not at compose time: the app looks the tool blocks up by call id to attach the results
        # that follow in the history (otherwise each result would get a second, orphan block).
        self._initial_widgets: list[Widget] = []
        if message is not None:
            self._initial_widgets = self._blocks_for(message)
            error = self._error_line(message)
            if error is not None:
                self._initial_widgets.append(error)

    def compose(self) -> Any:
        yield from self._initial_widgets

    def _blocks_for(self, message: AssistantMessage) -> list[Widget]:
        made: list[Widget] = []
        for index, block in enumerate(message.content):
            widget = self._make(index, block)
            if widget is not None:
                made.append(widget)
        return made

    def _make(self, index: int, block: Any) -> Widget | None:
        # While a reply streams, a text or thinking block starts empty and grows by its deltas: the
        # provider's partial message may already hold deltas whose events are still on their way (it
        # parses a network chunk into several events at once), so its text is not the text so far.
        streaming = self._initial is None
        widget: Widget
        if isinstance(block, TextContent):
            if not block.text.strip() and not streaming:
                return None
            widget = MarkdownText("" if streaming else block.text, classes="assistant-text")
        elif isinstance(block, ThinkingContent):
            if not block.thinking.strip() and not streaming:
                return None
            widget = ThinkingBlock(
                "" if streaming else block.thinking, self.thinking_expanded, self.hidden_thinking_label
            )
        elif isinstance(block, ToolCall):
            tool = ToolBlock(block.id, block.name, block.arguments, self.cwd, self.tools_expanded)
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

    def _ensure(self, index: int, block: Any) -> Widget | None:
        widget = self.blocks.get(index)
        if widget is None:
            widget = self._make(index, block)
            if widget is not None:
                self.mount(widget)
        return widget

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
            self.mount(error)
        return list(self.tool_blocks.values())


class CustomBlock(Static):
    """A message an extension injected, shown with its type."""

    DEFAULT_CSS = """
    CustomBlock { border-left: thick $secondary; padding: 0 1; }
    """

    def __init__(self, message: CustomMessage) -> None:
        self.custom_type = message.custom_type
        self.text = content_text(message.content)
        title = Text(f"[{message.custom_type}]", style="bold")
        super().__init__(Group(title, markdown(self.text)))


class BashBlock(Static):
    """A shell command the user ran with ``!`` or ``!!``."""

    DEFAULT_CSS = "BashBlock { padding: 0 1; background: $panel 40%; }"

    def __init__(
        self, message: BashExecutionMessage, expanded: bool = False, duration: float | None = None
    ) -> None:
        self.message = message
        self.duration = duration
        super().__init__(self._build(expanded))

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
        self.update(self._build(expanded))


class SkillBlock(ExpandableBlock):
    """A ``/skill:name`` invocation: one line, the skill's text when tool output is expanded (as Pi)."""

    DEFAULT_CSS = "SkillBlock { border-left: thick $secondary; padding: 0 1; }"

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

    DEFAULT_CSS = "SummaryBlock { color: $text-muted; border-left: thick $accent; padding: 0 1; }"

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
