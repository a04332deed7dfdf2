"""Adjust every ``bash`` command before it runs (Pi's bash-spawn-hook example): the model's commands run
after ``source ~/.profile`` (so your aliases and PATH apply) and see ``CADDIE_SPAWN_HOOK=1``. It replaces
the built-in ``bash`` with caddie's own tool built with a command prefix and extra environment."""

from __future__ import annotations

from caddie.extensions.api import ExtensionAPI, ExtensionContext, create_bash_tool

PREFIX = "[ -f ~/.profile ] && source ~/.profile >/dev/null 2>&1"


def register(api: ExtensionAPI) -> None:
    def on_start(event: object, ctx: ExtensionContext) -> None:
        api.register_tool(create_bash_tool(ctx.cwd, command_prefix=PREFIX, env={"CADDIE_SPAWN_HOOK": "1"}))

    api.on("session_start", on_start)
