"""Decide whether to trust a project yourself (Pi's project-trust example). Put it in
``~/.caddie/agent/extensions/`` or load it with ``-e``: a project's own extensions cannot take part, they
load only after the decision. In a project with ``.caddie/`` code it asks (in the terminal UI) whether to
trust it and whether to remember that; headless it leaves the decision to ``--trust`` and saved answers."""

from __future__ import annotations

from caddie.extensions.api import ExtensionAPI, ExtensionContext, ProjectTrustEvent, ProjectTrustResult

CHOICES = [
    "Trust and remember",
    "Trust this session",
    "Do not trust this session",
    "Let the built-in prompt decide",
]


def register(api: ExtensionAPI) -> None:
    async def decide(event: ProjectTrustEvent, ctx: ExtensionContext) -> ProjectTrustResult:
        if not ctx.has_ui:
            return ProjectTrustResult("undecided")
        choice = await ctx.ui.select(f"Project trust for:\n{event.cwd}", CHOICES)
        if choice == "Trust and remember":
            return ProjectTrustResult("yes", remember=True)
        if choice == "Trust this session":
            return ProjectTrustResult("yes")
        if choice == "Do not trust this session":
            return ProjectTrustResult("no")
        return ProjectTrustResult("undecided")

    def loaded(event: object, ctx: ExtensionContext) -> None:
        ctx.ui.notify(f"project-trust example loaded after trust resolution in {ctx.cwd}", "info")

    api.on("project_trust", decide)  # its ctx is the small trust context (cwd, mode, has_ui, ui)
    api.on("session_start", loaded)
