"""Change the system prompt from extension state (Pi's pirate example): ``/pirate`` toggles pirate mode;
while it is on, every run's system prompt asks for pirate speak."""

from __future__ import annotations

from caddie.extensions.api import (
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    CommandContext,
    ExtensionAPI,
    ExtensionContext,
)

PIRATE = """
IMPORTANT: You are now in PIRATE MODE. You must:
- Speak like a stereotypical pirate in all responses
- Use phrases like "Arrr!", "Ahoy!", "Shiver me timbers!", "Avast!", "Ye scurvy dog!"
- Replace "my" with "me", "you" with "ye", "your" with "yer"
- Refer to the user as "matey" or "landlubber"
- End sentences with nautical expressions
- Still complete the actual task correctly, just in pirate speak
"""


def register(api: ExtensionAPI) -> None:
    state = {"on": False}

    def toggle(args: str, ctx: CommandContext) -> None:
        state["on"] = not state["on"]
        ctx.ui.notify("Arrr! Pirate mode enabled!" if state["on"] else "Pirate mode disabled", "info")

    def before(event: BeforeAgentStartEvent, ctx: ExtensionContext) -> BeforeAgentStartResult | None:
        return BeforeAgentStartResult(system_prompt=event.system_prompt + PIRATE) if state["on"] else None

    api.register_command("pirate", toggle, "Toggle pirate mode (agent speaks like a pirate)")
    api.on("before_agent_start", before)
