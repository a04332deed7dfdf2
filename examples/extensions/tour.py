"""A tour of the extension API: every capability, each used in a small, realistic way.

Load it with ``caddie -e examples/extensions/tour.py`` (or copy it to ``~/.caddie/agent/extensions/``).
What it does:
- adds a ``note`` tool (pydantic parameters, a ``prepare_arguments`` shim for an older argument shape) that keeps
  notes as ``custom`` entries in the session;
- adds ``/tour <what>`` to try the actions: ``label``, ``name <text>``, ``tools``, ``exec``, ``message``,
  ``steer``, ``user <text>``, ``ask``, ``pick``, ``thinking <level>``, ``usage``, ``compact``, ``stop``;
- blocks ``bash`` commands that delete the root directory (``tool_call``), tags bash results
  (``tool_result``), keeps ``tour:scratch`` messages out of the model's view (``context``), rewrites
  ``tour: …`` input to upper case (``input``), and adds one line to the system prompt
  (``before_agent_start``);
- counts every event it sees and shows the counts in the status bar;
- in the terminal UI: F2 shows the counts (a shortcut), and ``tour:info`` messages get their own look (a
  message renderer);
- ``/tour provider`` adds a provider for a local OpenAI-compatible server (``tour-local/<model>``), and
  ``/tour provider off`` removes it.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from pydantic import BaseModel, Field

from caddie.extensions.api import (
    EVENT_NAMES,
    AbortSignal,
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    CommandContext,
    ContextEvent,
    ContextResult,
    CustomMessage,
    ExtensionAPI,
    ExtensionContext,
    InputEvent,
    InputResult,
    MessageRenderOptions,
    TextContent,
    ToolCallEvent,
    ToolCallResult,
    ToolDefinition,
    ToolError,
    ToolResult,
    ToolResultEvent,
    ToolResultPatch,
)


class NoteParams(BaseModel):
    text: str = Field(description="What to remember.")
    tags: list[str] = Field(default_factory=list, description="Optional tags.")


def register(api: ExtensionAPI) -> None:
    counts: Counter[str] = Counter()

    # -- observing: one counter for every event ---------------------------------------------------
    def count(event: Any, ctx: ExtensionContext) -> None:
        counts[event.type] += 1

    for name in sorted(EVENT_NAMES):
        if name not in ("input", "before_agent_start", "context", "tool_call", "tool_result"):
            api.on(name, count)  # type: ignore[arg-type]

    async def on_start(event: Any, ctx: ExtensionContext) -> None:
        greeting = api.get_flag("tour-greeting")
        if greeting:
            ctx.ui.notify(str(greeting), "info")
        ctx.ui.set_status("tour", "tour ready")
        ctx.ui.set_widget("tour", ["Tour extension loaded: try /tour tools"], "belowEditor")

    api.on("session_start", on_start)

    def on_settled(event: Any, ctx: ExtensionContext) -> None:
        ctx.ui.set_status("tour", f"turns {counts['turn_end']}, tools {counts['tool_execution_end']}")
        api.publish("tour_counts", dict(counts))
        api.events.emit("tour:counts", dict(counts))

    api.on("agent_settled", on_settled)

    # -- changing things --------------------------------------------------------------------------
    def on_input(event: InputEvent, ctx: ExtensionContext) -> InputResult | None:
        counts["input"] += 1
        if event.text.startswith("tour: "):
            return InputResult("transform", event.text.removeprefix("tour: ").upper())
        return None

    api.on("input", on_input)

    def on_before_start(event: BeforeAgentStartEvent, ctx: ExtensionContext) -> BeforeAgentStartResult:
        counts["before_agent_start"] += 1
        extra = None
        if "brief" in event.prompt.lower():
            extra = CustomMessage("tour:brief", "Keep the answer to one sentence.", display=False)
        return BeforeAgentStartResult(
            message=extra, system_prompt=event.system_prompt + "\n\nTour extension active."
        )

    api.on("before_agent_start", on_before_start)

    def on_context(event: ContextEvent, ctx: ExtensionContext) -> ContextResult:
        counts["context"] += 1
        kept = [m for m in event.messages if getattr(m, "custom_type", None) != "tour:scratch"]
        return ContextResult(kept)

    api.on("context", on_context)

    def on_tool_call(event: ToolCallEvent, ctx: ExtensionContext) -> ToolCallResult | None:
        counts["tool_call"] += 1
        if event.tool_name == "bash" and "rm -rf /" in str(event.input.get("command", "")):
            return ToolCallResult(
                block=True, reason="The tour extension blocked a command that deletes everything."
            )
        return None

    api.on("tool_call", on_tool_call)

    def on_tool_result(event: ToolResultEvent, ctx: ExtensionContext) -> ToolResultPatch | None:
        counts["tool_result"] += 1
        if event.tool_name == "bash":
            return ToolResultPatch(content=[*event.content, TextContent("(checked by the tour extension)")])
        return None

    api.on("tool_result", on_tool_result)

    # -- a tool ------------------------------------------------------------------------------------
    async def note(
        call_id: str, params: NoteParams, signal: AbortSignal, on_update: Any, ctx: ExtensionContext
    ) -> ToolResult:
        if not params.text.strip():
            raise ToolError("A note needs some text.")
        on_update(ToolResult([TextContent("saving…")]))
        entry_id = api.append_entry("tour:note", {"text": params.text, "tags": params.tags, "call": call_id})
        notes = sum(1 for e in ctx.session.entries() if getattr(e, "custom_type", None) == "tour:note")
        return ToolResult([TextContent(f"Noted ({notes} so far).")], {"entryId": entry_id})

    def accept_legacy_shape(args: Any) -> Any:
        """Older sessions called the field ``note``; map it before validation."""
        if isinstance(args, dict) and "note" in args and "text" not in args:
            return {"text": args["note"], **{k: v for k, v in args.items() if k != "note"}}
        return args

    api.register_tool(
        ToolDefinition(
            name="note",
            label="Note",
            description="Remember a short note for later in this session.",
            parameters=NoteParams,
            execute=note,
            prompt_snippet="Remember a short note for later",
            prompt_guidelines=["Use note to keep track of decisions you will need later"],
            prepare_arguments=accept_legacy_shape,
        )
    )

    # -- a command ----------------------------------------------------------------------------------
    async def tour(args: str, ctx: CommandContext) -> None:
        what, _, rest = args.partition(" ")
        if what == "label":
            leaf = ctx.session.leaf_id
            if leaf:
                api.set_label(leaf, rest or "tour")
        elif what == "name":
            api.set_session_name(rest or "tour session")
            ctx.ui.notify(f"session name: {api.get_session_name()}")
        elif what == "tools":
            active = api.get_active_tools()
            every = [t.name for t in api.get_all_tools()]
            ctx.ui.notify(f"active: {', '.join(active)}; all: {', '.join(every)}")
            api.set_active_tools([*active, "ls"] if "ls" not in active else [t for t in active if t != "ls"])
        elif what == "commands":
            ctx.ui.notify(", ".join(sorted(c.name for c in api.get_commands())))
        elif what == "exec":
            result = await api.exec("echo", ["hello from exec"], timeout=10)
            ctx.ui.notify(f"exit {result.code}: {result.stdout.strip()}")
        elif what == "message":
            api.send_message(
                "tour:info", rest or "A note from the tour.", display=True, details={"from": "tour"}
            )
        elif what == "scratch":
            api.send_message("tour:scratch", "the model never sees this", display=True)
        elif what == "next":
            api.send_message("tour:next", "Delivered with the next prompt.", deliver_as="next_turn")
        elif what == "trigger":
            api.send_message("tour:trigger", rest or "Please say hello.", trigger_turn=True)
        elif what == "user":
            api.send_user_message(rest or "hello")
        elif what == "ask":
            if await ctx.ui.confirm("Tour", "Is this fun?"):
                ctx.ui.notify("glad you like it")
            choice = await ctx.ui.select("Pick one", ["red", "green"])
            typed = await ctx.ui.input("Your name", "name")
            edited = await ctx.ui.editor("Edit", "draft")
            ctx.ui.notify(json.dumps({"choice": choice, "typed": typed, "edited": edited}))
        elif what == "thinking":
            api.set_thinking_level(rest or "low")
            ctx.ui.notify(f"thinking: {api.get_thinking_level()}")
        elif what == "usage":
            usage = ctx.get_context_usage()
            pending = ctx.has_pending_messages()
            ctx.ui.notify(
                f"usage: {usage.tokens if usage else None}, idle: {ctx.is_idle()}, pending: {pending}"
            )
        elif what == "compact":
            ctx.compact(
                "Focus on the notes.",
                on_complete=lambda e: ctx.ui.notify("compacted"),
                on_error=lambda e: ctx.ui.notify(str(e), "warning"),
            )
        elif what == "stop":
            ctx.stop_after_turn()
            ctx.abort()
        elif what == "settings":
            ctx.ui.notify(json.dumps(ctx.settings().get("tour", {})))
        elif what == "prompt":
            ctx.ui.notify(ctx.get_system_prompt()[-40:])
        elif what == "exit":
            api.set_exit_code(int(rest or 0))
        elif what == "provider" and rest == "off":
            api.unregister_provider("tour-local")
            ctx.ui.notify("tour-local removed")
        elif what == "provider":
            api.register_provider(
                "tour-local",
                {
                    "baseUrl": rest or "http://127.0.0.1:8080/v1",
                    "api": "openai-completions",
                    "apiKey": "none",
                    "models": [{"id": "local-model", "contextWindow": 32_768, "maxTokens": 4096}],
                },
            )
            ctx.ui.notify("choose it with /model tour-local/local-model")
        else:
            ctx.ui.notify(
                "usage: /tour label|name|tools|commands|exec|message|scratch|next|trigger|user|ask|"
                "thinking|usage|compact|stop|settings|prompt|exit|provider",
                "warning",
            )

    api.register_command(
        "tour",
        tour,
        description="Try the extension API (see examples/extensions/tour.py)",
        get_argument_completions=lambda prefix: [
            w for w in ("label", "name", "tools", "exec") if w.startswith(prefix)
        ],
    )
    api.register_flag("tour-greeting", "A line the tour extension shows at start-up")

    # -- the terminal UI: a key, and a look for this extension's messages --------------------------------
    def show_counts(ctx: ExtensionContext) -> None:
        ctx.ui.notify(", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or "no events yet")

    api.register_shortcut("f2", show_counts, "show the tour's event counts")

    def render_info(message: CustomMessage, options: MessageRenderOptions) -> str:
        text = message.content if isinstance(message.content, str) else "(tour message)"
        details = f"  {json.dumps(message.details)}" if options.expanded and message.details else ""
        return f"ℹ tour: {text}{details}"

    api.register_message_renderer("tour:info", render_info)

    def on_ping(data: Any) -> None:
        counts["ping"] += 1

    api.events.on("tour:ping", on_ping)
