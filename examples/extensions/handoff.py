"""Hand the work over to a fresh session (Pi's handoff example): ``/handoff <goal>`` asks the model to
write a self-contained prompt from this conversation for that goal, lets you edit it, then starts a new
session (its parent is this one) with the prompt waiting in the editor. Lossless where compaction is not:
the old session stays as it was."""

from __future__ import annotations

from caddie.extensions.api import (
    AgentMessage,
    CommandContext,
    CompactionEntry,
    CompactionSummaryMessage,
    ExtensionAPI,
    MessageEntry,
    ReplacedSessionContext,
    SessionEntry,
    TextContent,
    UserMessage,
    convert_to_llm,
    now_ms,
    serialize_conversation,
)

SYSTEM_PROMPT = """You are a context transfer assistant. Given a conversation history and the user's goal for a new thread, generate a focused prompt that:

1. Summarizes relevant context from the conversation (decisions made, approaches taken, key findings)
2. Lists any relevant files that were discussed or modified
3. Clearly states the next task based on the user's goal
4. Is self-contained - the new thread should be able to proceed without the old conversation

Format your response as a prompt the user can send to start the new thread. Be concise but include all necessary context. Do not include any preamble like "Here's the prompt" - just output the prompt itself.

Example output format:
## Context
We've been working on X. Key decisions:
- Decision 1
- Decision 2

Files involved:
- path/to/file1.ts
- path/to/file2.ts

## Task
[Clear description of what to do next based on user's goal]"""


def handoff_messages(branch: list[SessionEntry]) -> list[AgentMessage]:
    """The branch as the model sees it: the latest compaction's summary, what it kept, and what followed."""
    last = max((i for i, e in enumerate(branch) if isinstance(e, CompactionEntry)), default=-1)
    if last >= 0:
        compaction = branch[last]
        assert isinstance(compaction, CompactionEntry)
        kept = next((i for i, e in enumerate(branch) if e.id == compaction.first_kept_entry_id), -1)
        branch = [compaction, *(branch[kept:last] if kept >= 0 else []), *branch[last + 1 :]]
    out: list[AgentMessage] = []
    for entry in branch:
        if isinstance(entry, MessageEntry):
            out.append(entry.message)
        elif isinstance(entry, CompactionEntry):
            out.append(CompactionSummaryMessage(entry.summary, entry.tokens_before, now_ms()))
    return out


def register(api: ExtensionAPI) -> None:
    async def handoff(args: str, ctx: CommandContext) -> None:
        if ctx.mode != "tui":
            ctx.ui.notify("handoff requires interactive mode", "error")
            return
        if ctx.model is None:
            ctx.ui.notify("No model selected", "error")
            return
        goal = args.strip()
        if not goal:
            ctx.ui.notify("Usage: /handoff <goal for new thread>", "error")
            return
        messages = handoff_messages(ctx.session.branch())
        if not messages:
            ctx.ui.notify("No conversation to hand off", "error")
            return
        ctx.ui.set_working_message("Generating handoff prompt...")
        try:
            conversation = serialize_conversation(convert_to_llm(messages))
            request = f"## Conversation History\n\n{conversation}\n\n## User's Goal for New Thread\n\n{goal}"
            reply = await ctx.complete([UserMessage([TextContent(request)], now_ms())], SYSTEM_PROMPT)
        finally:
            ctx.ui.set_working_message(None)
        if reply.stop_reason in ("aborted", "error"):
            ctx.ui.notify(
                "Cancelled" if reply.stop_reason == "aborted" else f"Handoff failed: {reply.error_message}",
                "info",
            )
            return
        edited = await ctx.ui.editor("Edit handoff prompt", reply.text())
        if edited is None:
            ctx.ui.notify("Cancelled", "info")
            return

        def ready(new: ReplacedSessionContext) -> None:
            new.ui.set_editor_text(edited)
            new.ui.notify("Handoff ready. Submit when ready.", "info")

        if not await ctx.new_session(ctx.session.session_file, with_session=ready):
            ctx.ui.notify("New session cancelled", "info")

    api.register_command("handoff", handoff, "Transfer context to a new focused session")
