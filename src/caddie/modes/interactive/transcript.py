"""Session events to widgets: the transcript as it streams, and redrawn from the session (start, /resume, /tree…)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual.widget import Widget

from caddie import __version__
from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ToolResultMessage,
    UserMessage,
)
from caddie.modes.interactive.base import AppBase
from caddie.modes.interactive.conversation import (
    AssistantView,
    BashBlock,
    InfoBlock,
    SkillBlock,
    SummaryBlock,
    ToolBlock,
    UserBlock,
    summary_block,
    user_text,
)
from caddie.modes.interactive.editor import History
from caddie.modes.interactive.render import content_text, skill_invocation, usage_totals

if TYPE_CHECKING:
    from caddie.runtime.session_events import CompactionEndEvent, SessionEvent

HISTORY_LIMIT = 200
"""Messages rendered when a session opens; older ones stay reachable through /tree."""


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


def typed_text(message: UserMessage) -> str:
    """What the user typed for a message: ``/skill:name args`` for a skill invocation (prompt history)."""
    text = user_text(message)
    skill = skill_invocation(text)
    if skill is None:
        return text
    return f"/skill:{skill.name}" + (f" {skill.user_text}" if skill.user_text else "")


class TranscriptApp(AppBase):
    """Draws the session: see the module docstring."""

    def _header(self) -> InfoBlock:
        text = Text()
        text.append(f"caddie {__version__}", style="bold")
        session = self.session
        if session is not None:
            names = [e.name for e in session.runner.extensions]
            if names:
                text.append("  extensions: " + ", ".join(names), style="dim")
        text.append(
            "\nenter send · esc stop · ctrl+c twice quit · / commands · !cmd shell · @ files · /hotkeys",
            style="dim",
        )
        return InfoBlock(text)

    async def render_session(self) -> None:
        """Redraw the transcript from the session's current branch (after start, /new, /resume, /tree…)."""
        session = self.session
        assert session is not None
        self._streaming = None
        self._tools = {}
        await self.conversation.reset()
        widgets: list[Widget] = [self._header()]
        messages = session.messages
        if len(messages) > HISTORY_LIMIT:
            start = window_start(messages, HISTORY_LIMIT)
            widgets.append(InfoBlock(Text(f"… {start} earlier messages (see /tree)")))
            messages = messages[start:]
        for message in messages:
            widgets.extend(self._widgets_for(message))
        widgets.extend(self._early_notices)
        self._early_notices = []
        await self.conversation.mount_all(widgets)
        self._rendered = True
        self.conversation.follow()
        from caddie.session.entries import MessageEntry

        entries = session.store.entries()
        all_messages = [e.message for e in entries if isinstance(e, MessageEntry)]
        self._usage = usage_totals(all_messages)
        self.editor.prompt_history = History(
            [typed_text(m) for m in all_messages if isinstance(m, UserMessage)]
        )
        self.pending.show([], [])
        self._refresh_footer()

    def _assistant_view(self, message: AssistantMessage | None = None) -> AssistantView:
        view = AssistantView(
            self.session.cwd if self.session else None, self.tools_expanded, self.thinking_expanded, message
        )
        if message is not None:
            self._tools.update(view.tool_blocks)
        return view

    def _widgets_for(self, message: AgentMessage) -> list[Widget]:
        if isinstance(message, UserMessage):
            text = user_text(message)
            skill = skill_invocation(text)
            if skill is None:
                return [UserBlock(text)]
            shown: list[Widget] = [SkillBlock(skill, self.tools_expanded)]
            return [*shown, UserBlock(skill.user_text)] if skill.user_text else shown
        widget = self._widget_for(message)
        return [] if widget is None else [widget]

    def _widget_for(self, message: AgentMessage) -> Widget | None:
        if isinstance(message, AssistantMessage):
            return self._assistant_view(message)
        if isinstance(message, ToolResultMessage):
            text = content_text(message.content)
            existing = self._tools.get(message.tool_call_id)
            if existing is not None:
                existing.finish(text, message.details, message.is_error)
                return None
            orphan = ToolBlock(message.tool_call_id, message.tool_name, {}, None, self.tools_expanded)
            orphan.finish(text, message.details, message.is_error)
            return orphan
        if isinstance(message, CustomMessage):
            from caddie.modes.interactive.extension_hooks import custom_message_widget

            return custom_message_widget(self, message, self.tools_expanded) if message.display else None
        if isinstance(message, BashExecutionMessage):
            started = self._user_bash_started
            duration = time.monotonic() - started if started is not None else None
            return BashBlock(message, self.tools_expanded, duration)
        if isinstance(message, CompactionSummaryMessage | BranchSummaryMessage):
            return summary_block(message, self.tools_expanded)
        return None

    def _on_event(self, event: SessionEvent) -> None:
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
            ExtensionErrorEvent,
            NoticeEvent,
            QueueUpdateEvent,
        )

        if isinstance(event, MessageUpdateEvent):
            if self._streaming is not None:
                created = self._streaming.apply(event.assistant_message_event)
                if created is not None:
                    self._tools[created.call_id] = created
        elif isinstance(event, MessageStartEvent):
            self._message_start(event.message)
        elif isinstance(event, MessageEndEvent):
            self._message_end(event.message)
        elif isinstance(event, ToolExecutionStartEvent):
            if (block := self._tools.get(event.tool_call_id)) is not None:
                block.start(event.args)
        elif isinstance(event, ToolExecutionUpdateEvent):
            if (block := self._tools.get(event.tool_call_id)) is not None:
                block.progress(event.partial_result)
        elif isinstance(event, ToolExecutionEndEvent):
            if (block := self._tools.get(event.tool_call_id)) is not None:
                result = event.result
                block.finish(content_text(list(result.content)), result.details, event.is_error)
        elif isinstance(event, AgentStartEvent):
            self.working.set_active(True)
        elif isinstance(event, AgentSettledEvent):
            self.working.set_active(False)
            self._refresh_footer()
        elif isinstance(event, QueueUpdateEvent):
            self.pending.show(event.steering, event.follow_up)
        elif isinstance(event, AutoRetryStartEvent):
            self.working.set_message(
                f"Retrying ({event.attempt}/{event.max_attempts}) in {event.delay_ms / 1000:.0f}s: "
                f"{event.error_message}"
            )
        elif isinstance(event, AutoRetryEndEvent):
            self.working.set_message(self.ui.working_message)
            if not event.success:
                self.show_error(f"Gave up after {event.attempt} retries: {event.final_error or 'error'}")
        elif isinstance(event, CompactionStartEvent):
            self.working.set_active(True)
            self.working.set_message(f"Compacting the context ({event.reason})…")
        elif isinstance(event, CompactionEndEvent):
            self._compaction_end(event)
        elif isinstance(event, ExtensionErrorEvent):
            self.show_error(f"Extension {event.extension_path} failed in {event.event}: {event.error}")
        elif isinstance(event, NoticeEvent):
            self.show_notice(event.message, event.level)

    def _message_start(self, message: AgentMessage) -> None:
        if isinstance(message, AssistantMessage):
            self._streaming = self._assistant_view()
            self.conversation.add(self._streaming)
        elif not isinstance(message, ToolResultMessage):
            self.conversation.add(*self._widgets_for(message))

    def _compaction_end(self, event: CompactionEndEvent) -> None:
        self.working.set_message(self.ui.working_message)
        self.working.set_active(self.busy)
        if event.error_message:
            self._compaction_error_shown = True
            message = event.error_message
            self.show_error(
                message
                if message.startswith(("Compaction", "Auto-", "Context"))
                else f"Compaction failed: {message}"
            )
        elif event.aborted:
            self.show_info("Compaction aborted.", "warning")
        elif event.result is not None:
            tokens = getattr(event.result, "tokens_before", None)
            summary = getattr(event.result, "summary", "")
            title = f"⟲ Context compacted ({event.reason}" + (
                f", {tokens:,} tokens before)" if isinstance(tokens, int) else ")"
            )
            self.conversation.add(SummaryBlock(title, str(summary), self.tools_expanded))
        self._refresh_footer()

    def _message_end(self, message: AgentMessage) -> None:
        if isinstance(message, AssistantMessage):
            view = self._streaming
            if view is None:
                view = self._assistant_view(message)
                self.conversation.add(view)
            else:
                for block in view.finish(message):
                    self._tools[block.call_id] = block
            self._streaming = None
            self._add_usage(message)
            self._refresh_footer()
        elif isinstance(message, ToolResultMessage):
            pending = self._tools.get(message.tool_call_id)
            if pending is not None and pending.status not in ("done", "error"):
                pending.finish(content_text(message.content), message.details, message.is_error)
            self._add_usage(message)

    def _add_usage(self, message: AssistantMessage | ToolResultMessage) -> None:
        usage = message.usage
        if usage is None:
            return
        inp, out, cr, cw, cost = self._usage
        self._usage = (
            inp + usage.input,
            out + usage.output,
            cr + usage.cache_read,
            cw + usage.cache_write,
            cost + usage.cost.total,
        )
