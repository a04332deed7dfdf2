"""Shape the system prompt from what caddie loaded (Pi's prompt-customizer example): guidance for the tools
that are actually active, the skills on offer, and a closing section kept after the user's own
``--append-system-prompt`` text — read from ``before_agent_start``'s ``system_prompt_options`` instead of
finding those things again."""

from __future__ import annotations

from caddie.extensions.api import (
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    ExtensionAPI,
    ExtensionContext,
    SystemPromptOptions,
)

GUIDANCE = {
    "read": [
        "• Use the `read` tool for file contents (supports text and images).",
        "  - For large files, use `offset` and `limit` to read in chunks.",
    ],
    "bash": [
        "• Execute commands with the `bash` tool. Use it for file operations like `ls`, `find`, `grep`."
    ],
    "edit": [
        "• Use the `edit` tool for precise text replacements in files. Match exact content including whitespace."
    ],
    "write": ["• Use the `write` tool to create new files or overwrite existing ones completely."],
}

EXTENSION_CONTEXT = """
## Extension-Added Context

This prompt includes tool guidance and skill information loaded dynamically.
If you have additional requirements, configure them via --append-system-prompt or project context files.
"""


def tool_guidance(options: SystemPromptOptions, prompt: str) -> str:
    parts = [
        line
        for name in ("read", "bash", "edit", "write")
        if name in options.selected_tools
        for line in GUIDANCE[name]
    ]
    if options.skills:
        parts += [
            f"\nAvailable skills: {', '.join(options.skills)}",
            "Use skill documentation for best practices on specific tools.",
        ]
    if not parts:
        return prompt
    return prompt + "\n\n## Tool Guidance\n\n" + "\n".join(parts) + "\n"


def closing_section(options: SystemPromptOptions) -> str:
    return (
        f"{options.append_system_prompt}\n\n{EXTENSION_CONTEXT}"
        if options.append_system_prompt
        else EXTENSION_CONTEXT
    )


def register(api: ExtensionAPI) -> None:
    def before(event: BeforeAgentStartEvent, ctx: ExtensionContext) -> BeforeAgentStartResult | None:
        options = event.system_prompt_options
        if options is None:
            return None
        return BeforeAgentStartResult(
            system_prompt=tool_guidance(options, event.system_prompt) + closing_section(options)
        )

    api.on("before_agent_start", before)
