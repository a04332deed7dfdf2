"""Session events to widgets: the transcript as it streams, and redrawn from the session (start, /resume, /tree…).

``Transcript`` owns the conversation's contents: one widget per message (user, assistant with its
thinking, text and tool calls, shell commands, summaries, extension messages), tool results attached to
their calls, the working line and the queued messages while the agent works, and the token totals the
footer shows. It is called inside the agent loop for every event: each call only touches the widgets of
the message being written.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from rich.text import Text

from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    ToolResultMessage,
    UserMessage,
)
from caddie.modes.interactive.conversation import (
    AssistantView,
    BashBlock,
    Conversation,
    ImageBlock,
    InfoBlock,
    Loaded,
    MarkdownTransform,
    SkillBlock,
    StartupHeader,
    SummaryBlock,
    ToolBlock,
    UserBlock,
    summary_block,
    user_text,
)
from caddie.modes.interactive.footer import PendingMessages, WorkingLine
from caddie.modes.interactive.host import ViewOptions
from caddie.modes.interactive.render import any_usage_estimated, skill_invocation, usage_totals
from caddie.modes.interactive.transcript_view import Block

if TYPE_CHECKING:
    from caddie.extensions.api import NotifyLevel
    from caddie.extensions.extension import MarkdownTransformContext
    from caddie.modes.interactive.extension_hooks import ExtensionHooks
    from caddie.modes.interactive.keymap import Keybindings
    from caddie.modes.interactive.ui import TextualUI
    from caddie.runtime.session import AgentSession
    from caddie.runtime.session_events import CompactionEndEvent, SessionEvent
    from caddie.session.entries import SessionEntry


Usage = tuple[int, int, int, int, float]
"""Input, output, cache-read and cache-write tokens, and dollars."""


class TranscriptHost(Protocol):
    """What the transcript needs from the app."""

    session: AgentSession | None
    view: ViewOptions
    ui: TextualUI
    """The working line's text an extension set (``ui.working_message``)."""
    hooks: ExtensionHooks
    """How an extension's message is drawn (its renderer, or the default look)."""

    @property
    def busy(self) -> bool: ...

    def show_error(self, message: str) -> None: ...

    def show_notice(self, message: str, level: NotifyLevel) -> None: ...

    def refresh_footer(self) -> None: ...


@dataclass
class TranscriptWidgets:
    conversation: Conversation
    working: WorkingLine
    pending: PendingMessages


def window_start(messages: Sequence[AgentMessage], limit: int) -> int:
    """Where a window of about ``limit`` messages at the end begins: at a message of the user's, so that it
    never opens on tool results whose calls are left out (the first user message in the last ``limit``,
    else the last one before them)."""
    start = max(0, len(messages) - limit)
    for index in range(start, len(messages)):
        if isinstance(messages[index], UserMessage):
            return index
    for index in range(start - 1, -1, -1):
        if isinstance(messages[index], UserMessage):
            return index
    return start


def cache_hit_rate(message: AssistantMessage) -> float | None:
    """Percent of the prompt of ``message`` read from the cache (None when it reports no prompt tokens)."""
    usage = message.usage
    prompt = usage.input + usage.cache_read + usage.cache_write
    return usage.cache_read / prompt * 100 if prompt > 0 else None


def loaded_resources(session: AgentSession, theme_paths: dict[str, str]) -> Loaded:
    """The sections of the startup header for ``session`` (the custom themes' files in ``theme_paths``)."""
    from caddie.modes.interactive.render import short_path

    context = [short_path(path, session.cwd) for path in session.state().context_files]
    commands = session.commands(every_skill=True)
    skills = sorted((c for c in commands if c.kind == "skill"), key=lambda c: c.name)
    prompts = sorted((c for c in commands if c.kind == "prompt"), key=lambda c: c.name)
    extensions = [e for e in session.extensions.extensions if not e.path.startswith("<")]
    sections = [
        ("Context", context, context),
        (
            "Skills",
            [s.name.removeprefix("skill:") for s in skills],
            [short_path(s.path, session.cwd) for s in skills],
        ),
        ("Prompts", [f"/{p.name}" for p in prompts], [short_path(p.path, session.cwd) for p in prompts]),
        ("Extensions", [e.name for e in extensions], [short_path(e.path, session.cwd) for e in extensions]),
        (
            "Themes",
            sorted(theme_paths),
            [short_path(theme_paths[n], session.cwd) for n in sorted(theme_paths)],
        ),
    ]
    return Loaded(tuple((name, tuple(short), tuple(long)) for name, short, long in sections if short))


def header_block(keys: Keybindings, loaded: Loaded | None = None, quiet: bool = False) -> Block:
    """The first block of the transcript: version, the main keys, and what was loaded (Ctrl+O: the files);
    settings ``quietStartup`` leaves only the first line, as in Pi."""
    return StartupHeader(keys, loaded, quiet)


def typed_text(message: UserMessage) -> str:
    """What the user typed for a message: ``/skill:name args`` for a skill invocation (prompt history)."""
    text = user_text(message)
    skill = skill_invocation(text)
    if skill is None:
        return text
    return f"/skill:{skill.name}" + (f" {skill.user_text}" if skill.user_text else "")


class Transcript:
    """See the module docstring."""

    def __init__(self, widgets: TranscriptWidgets, host: TranscriptHost, header: Callable[[], Block]) -> None:
        self.widgets = widgets
        self.conversation = widgets.conversation
        self.host = host
        self.header = header
        self.streaming: AssistantView | None = None
        self.tools: dict[str, ToolBlock] = {}
        self.usage: Usage = (0, 0, 0, 0, 0.0)
        self.usage_estimated = False
        """Some of ``usage`` is caddie's estimate (a server reported none): the footer shows "≈"."""
        self.cache_hit: float | None = None
        """Percent of the latest reply's prompt read from the cache."""
        self.rendered = False
        """The transcript was drawn from the session at least once (notices before that wait)."""
        self.user_bash_started: float | None = None
        self.compaction_errors = 0
        """Compaction errors shown so far (``/compact`` shows its own only when the event did not)."""
        self._early: list[Block] = []
        self._renderers: dict[str, tuple[Any, Any, str]] | None = None
        """Tools with renderers of their own, looked up once per drawing of the session."""
        self.entries_drawn: set[str] = set()
        """The ids of the ``custom`` entries drawn since the session was last drawn (each is drawn once)."""

    # -- drawing the whole session -------------------------------------------------------------------
    async def render(self, session: AgentSession) -> None:
        """Redraw from the session's current branch (after start, /new, /resume, /tree…)."""
        self.streaming = None
        self.tools = {}
        self._renderers = None
        self.entries_drawn = set()
        await self.conversation.reset()
        self.conversation.markdown_transform = self._markdown_transform(session)
        widgets: list[Block] = [self.header()]
        entries = self._entry_widgets(session)
        for index, message in enumerate(session.messages):  # the whole conversation: the view draws only
            widgets.extend(entries.pop(index, ()))  # what is on screen
            widgets.extend(self.widgets_for(message))
        for rest in entries.values():
            widgets.extend(rest)
        widgets.extend(self._early)
        self._early = []
        self.conversation.add(*widgets)
        self.rendered = True
        self.conversation.follow()
        self.usage, self.cache_hit, self.usage_estimated = self._totals(session)
        self.widgets.pending.show([], [])

    def _entry_widgets(self, session: AgentSession) -> dict[int, list[Block]]:
        """The ``custom`` entries of the branch an extension draws (``api.register_entry_renderer``), by the
        index of the context message they come before (Pi draws the compaction-aware branch the same way)."""
        if not any(ext.entry_renderers for ext in session.extensions.extensions):
            return {}
        from caddie.session.entries import entry_to_context_messages

        placed: dict[int, list[Block]] = {}
        position = 0
        for entry in session.store.context_entries():
            block = self.entry_widget(entry)
            if block is not None:
                placed.setdefault(position, []).append(block)
                self.entries_drawn.add(entry.id)
            else:
                position += len(entry_to_context_messages(entry))
        return placed

    def entry_widget(self, entry: SessionEntry) -> Block | None:
        return self.host.hooks.entry_widget(entry, self.host.view.tools_expanded, lambda: self.host.ui.theme)

    def _entry_appended(self, entry: SessionEntry) -> None:
        """A ``custom`` entry appended now: drawn at the end, or before the answer still streaming (Pi). Before
        the first drawing (or once drawn from the session) it is left to the drawing."""
        if not self.rendered or entry.id in self.entries_drawn:
            return
        block = self.entry_widget(entry)
        if block is None:
            return
        self.entries_drawn.add(entry.id)
        streaming = self.streaming
        first = None if streaming is None else next(iter(streaming.blocks.values()), None)
        if first is not None and first.view is self.conversation:
            index = self.conversation.blocks.index(first)
            self.conversation.insert(index, [block])
        else:
            self.add(block)

    @staticmethod
    def _totals(session: AgentSession) -> tuple[Usage, float | None, bool]:
        from caddie.session.entries import MessageEntry

        messages = [e.message for e in session.store.entries() if isinstance(e, MessageEntry)]
        last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
        hit = cache_hit_rate(last) if last is not None else None
        return usage_totals(messages), hit, any_usage_estimated(messages)

    def add(self, *widgets: Block) -> None:
        """Blocks of caddie's own (notices, command output); kept until the first drawing, then added."""
        if self.rendered:
            self.conversation.add(*widgets)
        else:
            self._early.extend(widgets)

    def widgets_for(self, message: AgentMessage) -> list[Block]:
        if isinstance(message, UserMessage):
            text = user_text(message)
            skill = skill_invocation(text)
            if skill is None:
                return [UserBlock(text), *self.images_of(message.content)]
            shown: list[Block] = [SkillBlock(skill, self.host.view.tools_expanded)]
            return [*shown, UserBlock(skill.user_text)] if skill.user_text else shown
        widget = self._widget_for(message)
        if isinstance(widget, list):
            return widget
        return [] if widget is None else [widget]

    def _widget_for(self, message: AgentMessage) -> Block | list[Block] | None:
        view = self.host.view
        if isinstance(message, AssistantMessage):
            return self._assistant_view(message).initial_blocks
        if isinstance(message, ToolResultMessage):
            existing = self.tools.get(message.tool_call_id)
            if existing is not None:
                existing.finish(message.content, message.details, message.is_error)
                images = self.images_of(message.content)
                if images and existing.view is not None:  # live: right after the call's block
                    existing.view.insert_after(existing, images)
                    return None
                return images or None
            orphan = ToolBlock(message.tool_call_id, message.tool_name, {}, None, view.tools_expanded)
            orphan.finish(message.content, message.details, message.is_error)
            return orphan
        if isinstance(message, CustomMessage):
            return (
                self.host.hooks.message_widget(message, self.host.view.tools_expanded)
                if message.display
                else None
            )
        if isinstance(message, BashExecutionMessage):
            started = self.user_bash_started
            duration = time.monotonic() - started if started is not None else None
            return BashBlock(message, view.tools_expanded, duration)
        if isinstance(message, CompactionSummaryMessage | BranchSummaryMessage):
            return summary_block(message, view.tools_expanded)
        return None

    def _markdown_transform(self, session: AgentSession) -> MarkdownTransform:
        """The extensions' markdown transformers as one function (the session's extensions as they are at
        each call: /reload may change them); a failing one is reported once per extension."""
        reported: set[str] = set()

        def failed(source: str, error: Exception) -> None:
            if source not in reported:
                reported.add(source)
                message = (
                    f"Extension {source}: its markdown transformer failed ({type(error).__name__}: {error}); "
                    "it is skipped"
                )
                self.conversation.call_later(self.host.show_notice, message, "error")  # not while drawing

        def transform(text: str, context: MarkdownTransformContext) -> str:
            runner = session.extensions
            return (
                runner.transform_markdown(text, context, failed)
                if runner.has_markdown_transformers()
                else text
            )

        return transform

    def _tool_renderers(self, block: ToolBlock) -> None:
        """The tool's own ``render_call``/``render_result``, when its definition has them."""
        session = self.host.session
        if session is None:
            return
        if self._renderers is None:
            self._renderers = {
                t.name: (t.render_call, t.render_result, t.render_shell)
                for t in session.state().tools
                if t.render_call is not None or t.render_result is not None
            }
        found = self._renderers.get(block.tool_name)
        if found is not None:
            block.use_renderers(*found, self.host.ui.theme)
            block.show_images = self.host.view.image_kind != "off"

    def images_of(self, content: object) -> list[Block]:
        """An ``ImageBlock`` for each image of a message's content."""
        if not isinstance(content, list):
            return []
        view = self.host.view
        return [
            ImageBlock(c, view.image_kind, view.image_width) for c in content if isinstance(c, ImageContent)
        ]

    def _assistant_view(self, message: AssistantMessage | None = None) -> AssistantView:
        session = self.host.session
        view = self.host.view
        widget = AssistantView(
            session.cwd if session else None,
            view.tools_expanded,
            view.thinking_expanded,
            message,
            hidden_thinking_label=view.hidden_thinking_label,
            decorate=self._tool_renderers,
        )
        widget.view = self.conversation
        if message is not None:
            self.tools.update(widget.tool_blocks)
        return widget

    # -- moving in the transcript ------------------------------------------------------------------
    def act(self, binding_id: str) -> None:
        """A transcript key (``tui.altScreen.*``)."""
        conversation = self.conversation
        page = max(1, conversation.scrollable_content_region.height - 1)
        steps = {
            "tui.altScreen.pageUp": -page, "tui.altScreen.pageDown": page,
            "tui.altScreen.halfPageUp": -(page // 2 or 1), "tui.altScreen.halfPageDown": page // 2 or 1,
            "tui.altScreen.lineUp": -1, "tui.altScreen.lineDown": 1,
        }  # fmt: skip
        if binding_id in steps:
            conversation.scroll_relative(y=steps[binding_id], animate=False)
        elif binding_id == "tui.altScreen.top":
            conversation.scroll_home(animate=False)
        elif binding_id == "tui.altScreen.bottom":
            conversation.follow()
        elif binding_id in ("tui.altScreen.previousPrompt", "tui.altScreen.nextPrompt"):
            self._jump_to_prompt(-1 if binding_id == "tui.altScreen.previousPrompt" else 1)

    def _jump_to_prompt(self, direction: int) -> None:
        """Scroll the previous (next) message of the user's to the top of the screen."""
        conversation = self.conversation
        users = [i for i, b in enumerate(conversation.blocks) if isinstance(b, UserBlock)]
        if not users:
            return
        top_line = int(conversation.scroll_y)
        top = conversation.index_at(top_line)
        at_start = conversation._offsets[top] >= top_line
        if direction < 0:
            earlier = [i for i in users if i < top or (i == top and not at_start)]
            target = earlier[-1] if earlier else None
        else:
            later = [i for i in users if i > top]
            target = later[0] if later else None
        if target is not None:
            conversation.scroll_to_block(conversation.blocks[target])

    # -- events as they happen -----------------------------------------------------------------------
    def on_event(self, event: SessionEvent) -> None:
        """Every session event, as it happens (called inside the agent loop: keep it cheap)."""
        # Imported with the session, in the start-up worker thread: here only looked up.
        from caddie.agent.events import (
            AgentStartEvent,
            MessageEndEvent,
            MessageStartEvent,
            MessageUpdateEvent,
            ToolExecutionEndEvent,
            ToolExecutionStartEvent,
            ToolExecutionUpdateEvent,
        )
        from caddie.runtime.session_events import (
            AgentSettledEvent,
            AutoRetryEndEvent,
            AutoRetryStartEvent,
            CompactionEndEvent,
            CompactionStartEvent,
            EntryAppendedEvent,
            ExtensionErrorEvent,
            NoticeEvent,
            QueueUpdateEvent,
        )

        working = self.widgets.working
        if isinstance(event, MessageUpdateEvent):
            if self.streaming is not None:
                created = self.streaming.apply(event.assistant_message_event)
                if created is not None:
                    self.tools[created.call_id] = created
        elif isinstance(event, MessageStartEvent):
            self._message_start(event.message)
        elif isinstance(event, MessageEndEvent):
            self._message_end(event.message)
        elif isinstance(event, ToolExecutionStartEvent):
            if (block := self.tools.get(event.tool_call_id)) is not None:
                block.start(event.args)
        elif isinstance(event, ToolExecutionUpdateEvent):
            if (block := self.tools.get(event.tool_call_id)) is not None:
                block.progress(event.partial_result)
        elif isinstance(event, ToolExecutionEndEvent):
            if (block := self.tools.get(event.tool_call_id)) is not None:
                result = event.result
                block.finish(list(result.content), result.details, event.is_error)
        elif isinstance(event, AgentStartEvent):
            working.set_active(True)
        elif isinstance(event, AgentSettledEvent):
            working.set_active(False)
            self.host.refresh_footer()
        elif isinstance(event, QueueUpdateEvent):
            self.widgets.pending.show(event.steering, event.follow_up)
        elif isinstance(event, AutoRetryStartEvent):
            working.set_message(
                f"Retrying ({event.attempt}/{event.max_attempts}) in {event.delay_ms / 1000:.0f}s: "
                f"{event.error_message}"
            )
        elif isinstance(event, AutoRetryEndEvent):
            working.set_message(self.host.ui.working_message)
            if not event.success:
                self.host.show_error(f"Gave up after {event.attempt} retries: {event.final_error or 'error'}")
        elif isinstance(event, CompactionStartEvent):
            working.set_active(True)
            working.set_message(f"Compacting the context ({event.reason})…")
        elif isinstance(event, CompactionEndEvent):
            self._compaction_end(event)
        elif isinstance(event, ExtensionErrorEvent):
            self.host.show_error(f"Extension {event.extension_path} failed in {event.event}: {event.error}")
        elif isinstance(event, NoticeEvent):
            self.host.show_notice(event.message, event.level)
        elif isinstance(event, EntryAppendedEvent):
            self._entry_appended(event.entry)

    def _message_start(self, message: AgentMessage) -> None:
        if isinstance(message, AssistantMessage):
            self.streaming = self._assistant_view()
        elif not isinstance(message, ToolResultMessage):
            self.conversation.add(*self.widgets_for(message))

    def _message_end(self, message: AgentMessage) -> None:
        if isinstance(message, AssistantMessage):
            view = self.streaming
            if view is None:
                view = self._assistant_view(message)
                self.conversation.add(*view.initial_blocks)
            else:
                for block in view.finish(message):
                    self.tools[block.call_id] = block
            self.streaming = None
            self._add_usage(message)
            self.cache_hit = cache_hit_rate(message)
            self.host.refresh_footer()
            from caddie.modes.headless import answer_note  # cut at the output limit, or empty

            if (note := answer_note(message)) is not None:
                self.host.show_notice(note[:1].upper() + note[1:], "warning")
        elif isinstance(message, ToolResultMessage):
            pending = self.tools.get(message.tool_call_id)
            if pending is not None and pending.status not in ("done", "error"):
                pending.finish(message.content, message.details, message.is_error)
            images = self.images_of(message.content)
            if images and pending is not None and pending.view is not None:
                pending.view.insert_after(pending, images)
            self._add_usage(message)

    def _compaction_end(self, event: CompactionEndEvent) -> None:
        working = self.widgets.working
        working.set_message(self.host.ui.working_message)
        working.set_active(self.host.busy)
        if event.error_message:
            self.compaction_errors += 1
            message = event.error_message
            self.host.show_error(
                message
                if message.startswith(("Compaction", "Auto-", "Context"))
                else f"Compaction failed: {message}"
            )
        elif event.aborted:
            self.conversation.add(InfoBlock(Text("Compaction aborted."), "warning"))
        elif event.result is not None:
            tokens = getattr(event.result, "tokens_before", None)
            summary = getattr(event.result, "summary", "")
            title = f"⟲ Context compacted ({event.reason}" + (
                f", {tokens:,} tokens before)" if isinstance(tokens, int) else ")"
            )
            self.conversation.add(SummaryBlock(title, str(summary), self.host.view.tools_expanded))
        self.host.refresh_footer()

    def _add_usage(self, message: AssistantMessage | ToolResultMessage) -> None:
        usage = message.usage
        if usage is None:
            return
        self.usage_estimated = self.usage_estimated or usage.estimated is True
        inp, out, cr, cw, cost = self.usage
        self.usage = (
            inp + usage.input,
            out + usage.output,
            cr + usage.cache_read,
            cw + usage.cache_write,
            cost + usage.cost.total,
        )
