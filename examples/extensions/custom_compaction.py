"""Compaction your way (Pi's custom-compaction example): instead of keeping the recent turns, summarise the
whole conversation (the part to summarise and the split turn's start) into one summary that replaces it.
The summary is written by the session's model through ``ctx.complete`` (its cost is counted like any
summary); when that fails, caddie's own compaction runs."""

from __future__ import annotations

from caddie.extensions.api import (
    CompactionSpec,
    ExtensionAPI,
    ExtensionContext,
    SessionBeforeCompactEvent,
    SessionBeforeCompactResult,
    TextContent,
    UserMessage,
    convert_to_llm,
    now_ms,
    serialize_conversation,
)

INSTRUCTIONS = """You are a conversation summarizer. Create a comprehensive summary of this conversation that captures:{previous}

1. The main goals and objectives discussed
2. Key decisions made and their rationale
3. Important code changes, file modifications, or technical details
4. Current state of any ongoing work
5. Any blockers, issues, or open questions
6. Next steps that were planned or suggested

Be thorough but concise. The summary will replace the ENTIRE conversation history, so include all information needed to continue the work effectively.

Format the summary as structured markdown with clear sections.

<conversation>
{conversation}
</conversation>"""


def register(api: ExtensionAPI) -> None:
    async def compact(
        event: SessionBeforeCompactEvent, ctx: ExtensionContext
    ) -> SessionBeforeCompactResult | None:
        ctx.ui.notify("Custom compaction extension triggered", "info")
        prep = event.preparation
        messages = [*prep.messages_to_summarize, *prep.turn_prefix_messages]
        if ctx.model is None:
            return None
        ctx.ui.notify(
            f"Custom compaction: summarizing {len(messages)} messages ({prep.tokens_before:,} tokens) "
            f"with {ctx.model.id}...",
            "info",
        )
        previous = (
            f"\n\nPrevious session summary for context:\n{prep.previous_summary}"
            if prep.previous_summary
            else ""
        )
        prompt = INSTRUCTIONS.format(
            previous=previous, conversation=serialize_conversation(convert_to_llm(messages))
        )
        reply = await ctx.complete(
            [UserMessage([TextContent(prompt)], now_ms())], max_tokens=8192, signal=event.signal
        )
        if reply.stop_reason in ("error", "aborted"):
            ctx.ui.notify(f"Compaction failed: {reply.error_message or reply.stop_reason}", "error")
            return None
        summary = reply.text()
        if not summary.strip():
            if not event.signal.aborted:
                ctx.ui.notify("Compaction summary was empty, using default compaction", "warning")
            return None
        return SessionBeforeCompactResult(
            compaction=CompactionSpec(
                summary, prep.first_kept_entry_id, prep.tokens_before, usage=reply.usage
            )
        )

    api.on("session_before_compact", compact)
