"""Summarise the conversation for later (Pi's summarize example): ``/summarize`` asks the session's model
for a structured summary of this branch (goals, decisions, progress, open questions, next steps) and shows
it. Nothing is added to the conversation."""

from __future__ import annotations

import json

from caddie.extensions.api import (
    AssistantMessage,
    CommandContext,
    ExtensionAPI,
    MessageEntry,
    SessionEntry,
    TextContent,
    ToolCall,
    UserMessage,
    now_ms,
    text_of,
)


def conversation_text(entries: list[SessionEntry]) -> str:
    sections = []
    for entry in entries:
        message = entry.message if isinstance(entry, MessageEntry) else None
        if isinstance(message, UserMessage):
            text = text_of(message.content).strip()
            lines = [f"User: {text}"] if text else []
        elif isinstance(message, AssistantMessage):
            text = message.text().strip()
            lines = [f"Assistant: {text}"] if text else []
            lines += [
                f"Tool {b.name} was called with args {json.dumps(b.arguments)}"
                for b in message.content
                if isinstance(b, ToolCall)
            ]
        else:
            continue
        if lines:
            sections.append("\n".join(lines))
    return "\n\n".join(sections)


def summary_prompt(conversation: str) -> str:
    return "\n".join(
        [
            "Summarize this conversation so I can resume it later.",
            "Include goals, key decisions, progress, open questions, and next steps.",
            "Keep it concise and structured with headings.",
            "",
            "<conversation>",
            conversation,
            "</conversation>",
        ]
    )


def register(api: ExtensionAPI) -> None:
    async def summarize(args: str, ctx: CommandContext) -> None:
        conversation = conversation_text(ctx.session.branch())
        if not conversation.strip():
            if ctx.has_ui:
                ctx.ui.notify("No conversation text found", "warning")
            return
        if ctx.model is None:
            ctx.ui.notify("No model selected", "warning")
            return
        if ctx.has_ui:
            ctx.ui.notify("Preparing summary...", "info")
        reply = await ctx.complete([UserMessage([TextContent(summary_prompt(conversation))], now_ms())])
        if reply.stop_reason in ("error", "aborted"):
            ctx.ui.notify(f"Summary failed: {reply.error_message or reply.stop_reason}", "error")
            return
        if ctx.mode == "tui":
            await ctx.ui.editor("Conversation Summary", reply.text())  # shown to read (and copy); not sent

    api.register_command("summarize", summarize, "Summarize the current conversation")
