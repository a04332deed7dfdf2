"""``caddie acp``: caddie as an Agent Client Protocol agent (JSON-RPC over stdio) for editors.

Zed, JetBrains IDEs, Neovim (CodeCompanion, avante) and Emacs (agent-shell) start ``caddie acp`` and talk
to it on stdin/stdout through the official ``agent-client-protocol`` SDK. See docs/editors.md.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence

from caddie.errors import UsageError

USAGE = "caddie acp [--model PROVIDER/ID] [--thinking LEVEL] [--mode ask|auto] [options]"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(f"{message} (see caddie acp --help)")


class _UsageError(UsageError):
    pass


def _parser() -> _Parser:
    p = _Parser(
        prog="caddie acp",
        description="Serve the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, Neovim, "
        "Emacs). Sessions are ordinary caddie sessions: caddie -c continues them in the terminal.",
        allow_abbrev=False,
    )
    p.add_argument(
        "--model", metavar="PROVIDER/ID", help="model for new sessions (default: settings / API keys)"
    )
    p.add_argument("--thinking", metavar="LEVEL", help="off, minimal, low, medium, high, xhigh, max")
    p.add_argument(
        "--mode",
        choices=["ask", "auto"],
        default="ask",
        help="ask: ask before bash, edit and write (default); auto: never ask",
    )
    p.add_argument("-e", "--extension", action="append", default=[], metavar="PATH", help="load an extension")
    p.add_argument("--no-extensions", action="store_true", help="do not load discovered extensions")
    p.add_argument("--trust", action="store_true", help="trust the project: load .caddie/extensions")
    p.add_argument("--tools", metavar="LIST", help="built-in tools to enable, comma-separated")
    p.add_argument("--session-dir", metavar="DIR", help="where session files live (default: per project)")
    p.add_argument("--no-context-files", action="store_true", help="do not read AGENTS.md / CLAUDE.md")
    p.add_argument(
        "--sandbox",
        choices=["off", "read-only", "workspace-write"],
        metavar="MODE",
        help='where the model\'s commands run (default: settings "sandbox", else off); combines with '
        "--mode: the editor still asks where it asks. See docs/sandbox.md",
    )
    return p


def main(argv: Sequence[str]) -> int:
    from caddie.modes.acp.live import AcpOptions

    try:
        args = _parser().parse_args(list(argv))
    except _UsageError as e:
        print(f"caddie: {e}", file=sys.stderr)
        return 2
    options = AcpOptions(
        model=args.model,
        thinking=args.thinking,
        extension_paths=list(args.extension),
        no_extensions=args.no_extensions,
        trust=True if args.trust else None,
        tools=[t.strip() for t in args.tools.split(",") if t.strip()] if args.tools else None,
        session_dir=args.session_dir,
        no_context_files=args.no_context_files,
        mode=args.mode,
        sandbox=args.sandbox,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("caddie: %(message)s"))
    handler.setLevel(logging.WARNING)
    logging.getLogger("caddie").addHandler(handler)
    try:
        return asyncio.run(serve(options))
    except KeyboardInterrupt:
        return 130


async def serve(options: object) -> int:
    """Answer ACP on stdin/stdout until stdin ends; then close every session (their files are complete)."""
    from acp.core import AgentSideConnection

    from caddie.modes.acp.live import AcpOptions
    from caddie.modes.acp.server import CaddieAgent
    from caddie.modes.acp.transport import StdioTransport, claim_stdout, stdin_lines

    assert isinstance(options, AcpOptions)
    out = claim_stdout()
    agent = CaddieAgent(options)
    transport = StdioTransport(await stdin_lines(), out, on_eof=agent.cancel_all)
    conn = AgentSideConnection(agent, transport, listening=False)  # type: ignore[arg-type]
    try:
        await conn.listen()
    finally:
        await agent.shutdown()
        await conn.close()
    return 0
