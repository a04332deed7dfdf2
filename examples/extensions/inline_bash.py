"""Run ``!{command}`` inside a prompt and put its output there (Pi's inline-bash example):
``What changed on !{git branch --show-current}?`` reaches the model with the branch name in place. A line
that starts with ``!`` (not ``!{``) stays caddie's own shell command."""

from __future__ import annotations

import re

from caddie.extensions.api import ExtensionAPI, ExtensionContext, InputEvent, InputResult

PATTERN = re.compile(r"!\{([^}]+)\}")
TIMEOUT_S = 30.0


def register(api: ExtensionAPI) -> None:
    async def expand(event: InputEvent, ctx: ExtensionContext) -> InputResult:
        text = event.text
        stripped = text.lstrip()
        if stripped.startswith("!") and not stripped.startswith("!{"):
            return InputResult("continue")
        commands = PATTERN.findall(text)
        if not commands:
            return InputResult("continue")
        result = text
        summary: list[str] = []
        for command in commands:
            run = await api.exec("bash", ["-c", command], timeout=TIMEOUT_S, cwd=ctx.cwd)
            output = (run.stdout or run.stderr or "").strip()
            status = f" (exit code {run.code})" if run.code != 0 and run.stderr else ""
            result = result.replace("!{" + command + "}", output, 1)
            preview = output if len(output) <= 50 else output[:50] + "..."
            summary.append(f'!{{{command}}}{status} -> "{preview}"')
        if ctx.has_ui:
            ctx.ui.notify(f"Expanded {len(summary)} inline command(s):\n" + "\n".join(summary), "info")
        return InputResult("transform", result, event.images)

    api.on("input", expand)
