"""Answer the model's questions in one go (Pi's qna example): ``/qna`` has the model pull the questions out
of its last answer as ``Q:`` / ``A:`` pairs and puts them in the editor for you to fill in."""

from __future__ import annotations

from caddie.extensions.api import (
    AssistantMessage,
    CommandContext,
    ExtensionAPI,
    MessageEntry,
    TextContent,
    UserMessage,
    now_ms,
)

SYSTEM_PROMPT = """You are a question extractor. Given text from a conversation, extract any questions that need answering and format them for the user to fill in.

Output format:
- List each question on its own line, prefixed with "Q: "
- After each question, add a blank line for the answer prefixed with "A: "
- If no questions are found, output "No questions found in the last message."

Example output:
Q: What is your preferred database?
A:

Q: Should we use TypeScript or JavaScript?
A:

Keep questions in the order they appeared. Be concise."""


def register(api: ExtensionAPI) -> None:
    async def qna(args: str, ctx: CommandContext) -> None:
        if ctx.mode != "tui":
            ctx.ui.notify("qna requires interactive mode", "error")
            return
        if ctx.model is None:
            ctx.ui.notify("No model selected", "error")
            return
        last: str | None = None
        for entry in reversed(ctx.session.branch()):
            message = entry.message if isinstance(entry, MessageEntry) else None
            if isinstance(message, AssistantMessage):
                if message.stop_reason != "stop":
                    ctx.ui.notify(f"Last assistant message incomplete ({message.stop_reason})", "error")
                    return
                if message.text():
                    last = message.text()
                    break
        if last is None:
            ctx.ui.notify("No assistant messages found", "error")
            return
        ctx.ui.set_working_message(f"Extracting questions using {ctx.model.id}...")
        try:
            reply = await ctx.complete([UserMessage([TextContent(last)], now_ms())], SYSTEM_PROMPT)
        finally:
            ctx.ui.set_working_message(None)
        if reply.stop_reason in ("aborted", "error"):
            ctx.ui.notify("Cancelled", "info")
            return
        ctx.ui.set_editor_text(reply.text())
        ctx.ui.notify("Questions loaded. Edit and submit when ready.", "info")

    api.register_command("qna", qna, "Extract questions from last assistant message into editor")
