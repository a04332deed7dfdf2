"""What the sandbox allows, at a glance, and a guard for when there is none (Pi's sandbox example, on top of
caddie's own sandbox).

Pi's example wraps ``bash`` in Anthropic's sandbox-runtime and reads ``sandbox.json``; caddie sandboxes every
command itself (``--sandbox workspace-write``, settings ``sandbox``, and Pi's ``sandbox.json`` files carry
over: docs/sandbox.md). What is left for an extension is Pi's example's surface:

- at start the status shows ``🔒 Sandbox: N domains, M write paths`` (Pi's line) and a notice says so, or a
  warning says commands run unconfined;
- ``/sandbox`` lists the configuration (network, denied reads, writable paths, denied writes) as Pi's does;
- ``--require-sandbox`` refuses ``bash`` and ``!`` commands while the sandbox is off (where Pi's example
  has ``--no-sandbox`` to turn its own sandbox off, caddie's is turned off with ``--sandbox off``).
"""

from __future__ import annotations

from caddie.extensions.api import (
    BashResult,
    CommandContext,
    ExtensionAPI,
    ExtensionContext,
    ToolCallEvent,
    ToolCallResult,
    UserBashEvent,
    UserBashResult,
)

REFUSED = "The sandbox is off and --require-sandbox is set: start caddie with --sandbox workspace-write."


def _listed(items: tuple[str, ...] | list[str]) -> str:
    return ", ".join(items) or "(none)"


def configuration(ctx: ExtensionContext) -> list[str]:
    """Pi's ``/sandbox`` lines for caddie's active policy."""
    policy = ctx.sandbox.policy
    assert policy is not None
    network = policy.network
    allowed = {"off": ["(no network)"], "on": ["(any host)"]}.get(network.kind, list(network.allowed))
    return [
        "Sandbox Configuration:",
        "",
        f"Mode: {policy.mode} ({ctx.sandbox.backend_name})",
        "",
        "Network:",
        f"  Allowed: {_listed(allowed)}",
        f"  Denied: {_listed(network.denied)}",
        "",
        "Filesystem:",
        f"  Deny Read: {_listed(policy.deny_read)}",
        f"  Allow Write: {_listed(policy.writable)}",
        f"  Deny Write: {_listed(policy.deny_write)}",
    ]


def register(api: ExtensionAPI) -> None:
    api.register_flag(
        "require-sandbox", "Refuse bash and ! commands while caddie's sandbox is off", "boolean"
    )

    def required_but_off(ctx: ExtensionContext) -> bool:
        return api.get_flag("require-sandbox") is True and not ctx.sandbox.active

    def started(_event: object, ctx: ExtensionContext) -> None:
        policy = ctx.sandbox.policy
        if policy is None:
            level = "error" if required_but_off(ctx) else "warning"
            ctx.ui.notify(
                "Sandbox is off: commands run unconfined (--sandbox workspace-write confines them)", level
            )
            return
        domains = len(policy.network.allowed) if policy.network.kind == "allow-list" else 0
        ctx.ui.set_status("sandbox", f"🔒 Sandbox: {domains} domains, {len(policy.writable)} write paths")
        ctx.ui.notify("Sandbox initialized", "info")

    def guard_tool(event: ToolCallEvent, ctx: ExtensionContext) -> ToolCallResult | None:
        if event.tool_name == "bash" and required_but_off(ctx):
            return ToolCallResult(block=True, reason=REFUSED)
        return None

    def guard_user_bash(event: UserBashEvent, ctx: ExtensionContext) -> UserBashResult | None:
        if required_but_off(ctx):
            return UserBashResult(result=BashResult(REFUSED, 1))
        return None

    def show(args: str, ctx: CommandContext) -> None:
        if not ctx.sandbox.active:
            ctx.ui.notify("Sandbox is disabled", "info")
            return
        ctx.ui.notify("\n".join(configuration(ctx)), "info")

    api.on("session_start", started)
    api.on("tool_call", guard_tool)
    api.on("user_bash", guard_user_bash)
    api.register_command("sandbox", show, "Show sandbox configuration")
