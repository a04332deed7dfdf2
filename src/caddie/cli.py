"""The ``caddie`` command: argument parsing, mode selection and user-facing errors.

    caddie [options] [prompt...]          interactive terminal UI (or print mode with -p)
    caddie -p "fix the failing test"      run to completion, print the answer
    caddie session list|show|tree         look at saved sessions
    caddie context [SESSION] [--json]     what the model would be sent next
    caddie export [SESSION] [-o FILE]     the session as one offline HTML page

A usage mistake ends in one line on stderr and exit code 2; a bug ends in one line and exit code 70 with
the traceback in ~/.caddie/agent/crash.log. Never a traceback on the terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Sequence
from typing import Literal, NoReturn

from caddie import __version__

SUBCOMMANDS = ("session", "context", "export", "batch")
EPILOG = """\
sessions:
  Sessions are saved under ~/.caddie/agent/sessions/ (CADDIE_DIR moves the root).
  -c continues the latest one for this directory; --session FILE opens a given one.

configuration:
  ~/.caddie/agent/settings.json, merged with .caddie/settings.json of the project.
  Models: ANTHROPIC_API_KEY / OPENAI_API_KEY / ... or ~/.caddie/agent/models.json (Pi's format).

examples:
  caddie                                  start the interactive UI
  caddie -p "why does test_parse fail?"   answer and exit
  git diff | caddie -p "review this"      prompt from stdin
  caddie -p --goal "make pytest pass" --goal-budget 200k --goal-check "pytest -q"
"""


class CliError(Exception):
    """A usage mistake: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise CliError(
            f"{message} (see caddie {self.prog.split()[-1] + ' ' if ' ' in self.prog else ''}--help)"
        )


def _base_parser(add_help: bool) -> _Parser:
    p = _Parser(
        prog="caddie",
        description="A coding agent for the terminal, with a second shot (mulligan) and a finish line (goal).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=add_help,
        allow_abbrev=False,
    )
    p.add_argument("messages", nargs="*", help="the prompt (several are sent one after another)")
    p.add_argument(
        "-p", "--print", action="store_true", help="run the prompt to completion, print the answer, exit"
    )
    p.add_argument(
        "--mode",
        choices=["text", "json", "rpc"],
        default="text",
        help="text (default), json: one event per line, rpc: JSONL commands on stdin",
    )
    p.add_argument(
        "--model", metavar="PROVIDER/ID", help="model to use, e.g. anthropic/claude-sonnet-4-5, faux/echo"
    )
    p.add_argument("--thinking", metavar="LEVEL", help="off, minimal, low, medium, high, xhigh, max")
    g = p.add_argument_group("session")
    g.add_argument(
        "-c", "--continue", dest="continue_", action="store_true", help="continue the latest session here"
    )
    g.add_argument("--session", metavar="FILE", help="open this session file")
    g.add_argument("-r", "--resume", action="store_true", help="pick a session to resume (interactive)")
    g.add_argument("--no-session", action="store_true", help="keep the session in memory only")
    g.add_argument("--session-dir", metavar="DIR", help="where session files live (default: per project)")
    e = p.add_argument_group("extensions and tools")
    e.add_argument(
        "-e",
        "--extension",
        action="append",
        default=[],
        metavar="PATH",
        help="load an extension file or package (repeatable)",
    )
    e.add_argument(
        "--no-extensions",
        action="store_true",
        help="do not load discovered extensions (-e and the bundled ones still load)",
    )
    e.add_argument("--trust", action="store_true", help="trust this project: load .caddie/extensions")
    e.add_argument(
        "--tools",
        metavar="LIST",
        help="built-in tools to enable, comma-separated "
        "(read,bash,edit,write,grep,find,ls; default read,bash,edit,write)",
    )
    s = p.add_argument_group("prompt")
    s.add_argument("--system-prompt", metavar="TEXT", help="replace the default system prompt")
    s.add_argument("--append-system-prompt", metavar="TEXT", help="add text to the system prompt")
    s.add_argument("--no-context-files", action="store_true", help="do not read AGENTS.md / CLAUDE.md")
    p.add_argument("--version", action="version", version=f"caddie {__version__}")
    return p


def _cwd() -> str:
    try:
        return os.getcwd()
    except FileNotFoundError:
        raise CliError("the current directory no longer exists") from None


def _read_stdin() -> str | None:
    if sys.stdin is None or sys.stdin.isatty():
        return None
    data = sys.stdin.buffer.read().decode("utf-8", "replace")  # a stray byte must not fail the run later
    return data if data.strip() else None


async def _run_main(argv: list[str]) -> int:
    from caddie.extensions.api import Mode
    from caddie.runtime.factory import SessionRequest, SetupError, build_session, load_extension_set

    pre, _ = _base_parser(add_help=False).parse_known_args(argv)
    cwd = _cwd()
    try:
        loaded = await load_extension_set(
            cwd,
            extension_paths=pre.extension,
            no_extensions=pre.no_extensions,
            trust=True if pre.trust else None,
        )
    except SetupError as e:
        raise CliError(str(e)) from None
    parser = _base_parser(add_help=True)
    specs = loaded.flag_specs()
    if specs:
        group = parser.add_argument_group("options added by extensions")
        taken = {opt for action in parser._actions for opt in action.option_strings}
        for spec in specs.values():
            if f"--{spec.name}" in taken:
                print(
                    f"caddie: warning: extension {spec.source} wants --{spec.name}, which caddie already uses; "
                    "ignored",
                    file=sys.stderr,
                )
                continue
            if spec.kind == "boolean":
                group.add_argument(
                    f"--{spec.name}",
                    dest=f"flag__{spec.name}",
                    action="store_true",
                    default=None,
                    help=spec.description,
                )
            else:
                group.add_argument(
                    f"--{spec.name}", dest=f"flag__{spec.name}", metavar="VALUE", help=spec.description
                )
    args = parser.parse_args(argv)
    flags = {
        name.removeprefix("flag__").replace("_", "-"): value
        for name, value in vars(args).items()
        if name.startswith("flag__") and value is not None
    }
    for name in list(flags):
        if name not in specs:  # argparse turned dashes into underscores; map back to the registered name
            match = next((s for s in specs if s.replace("-", "_") == name.replace("-", "_")), None)
            if match:
                flags[match] = flags.pop(name)

    mode = args.mode
    headless = args.print or mode in ("json", "rpc")
    ui_mode: Mode = "rpc" if mode == "rpc" else "json" if mode == "json" else "print" if args.print else "tui"
    prompts = list(args.messages)
    if headless and mode != "rpc":
        piped = _read_stdin()
        if piped is not None:
            prompts = [f"{prompts[0]}\n\n{piped}", *prompts[1:]] if prompts else [piped]

    session_choice = "new"
    if sum(bool(x) for x in (args.continue_, args.session, args.resume, args.no_session)) > 1:
        raise CliError("choose one of -c/--continue, --session, --resume, --no-session")
    if args.continue_:
        session_choice = "continue"
    elif args.session:
        session_choice = "file"
    elif args.no_session:
        session_choice = "memory"
    elif args.resume and headless:
        raise CliError(
            "--resume shows a picker and needs the interactive mode; use --session FILE "
            "(list them with: caddie session list)"
        )

    ui = None
    rpc_ui = None
    if mode == "rpc":
        from caddie.modes.rpc import RpcUI

        rpc_ui = RpcUI(_stdout_json_writer())
        ui = rpc_ui
    tools = [t.strip() for t in args.tools.split(",") if t.strip()] if args.tools else None
    request = SessionRequest(
        cwd=cwd,
        mode=ui_mode,
        model=args.model,
        thinking=args.thinking,
        session=session_choice,  # type: ignore[arg-type]
        session_file=args.session,
        session_dir=args.session_dir,
        extension_paths=args.extension,
        no_extensions=args.no_extensions,
        trust=True if args.trust else None,
        tools=tools,
        system_prompt=args.system_prompt,
        append_system_prompt=args.append_system_prompt,
        no_context_files=args.no_context_files,
        require_model=headless and mode != "rpc",
        ui=ui,
        flags=flags,
        preloaded=loaded,
    )

    if not headless:
        from caddie.modes.interactive import run_interactive

        return await run_interactive(request, resume_picker=args.resume, initial_prompts=prompts)

    try:
        build = await build_session(request)
    except SetupError as e:
        raise CliError(str(e)) from None
    _log_to_stderr()
    for warning in build.warnings:
        print(f"caddie: warning: {warning}", file=sys.stderr)
    session = build.session
    from caddie.runtime.compaction import attach_compaction

    attach_compaction(session)
    reason: Literal["startup", "resume"] = (
        "resume" if session_choice in ("continue", "file") and len(session.store) else "startup"
    )
    try:
        if mode == "rpc":
            from caddie.modes.rpc import run_rpc

            assert rpc_ui is not None
            return await run_rpc(session, rpc_ui, build.registry.find, lambda: session.start(reason))
        await session.start(reason)
        from caddie.modes.headless import run_headless

        if not prompts and session.is_idle and not session._background:
            raise CliError('no prompt given: caddie -p "your task", or pipe it: echo "your task" | caddie -p')
        return await run_headless(session, prompts, json_mode=mode == "json")
    finally:
        await session.shutdown("quit")


def _log_to_stderr() -> None:
    """Headless modes: warnings from caddie and its extensions go to stderr, one line each."""
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("caddie: %(message)s"))
    handler.setLevel(logging.WARNING)
    logging.getLogger("caddie").addHandler(handler)


def _stdout_json_writer() -> Callable[[dict[str, object]], None]:
    import json

    def write(obj: dict[str, object]) -> None:
        sys.stdout.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    return write


def _subcommand(argv: list[str]) -> int:
    from caddie.modes.inspect import run_subcommand

    return run_subcommand(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args and args[0] == "batch":
            from caddie.modes.batch import run_batch_command

            return run_batch_command(args[1:])
        if args and args[0] in SUBCOMMANDS:
            return _subcommand(args)
        return asyncio.run(_run_main(args))
    except CliError as e:
        print(f"caddie: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("caddie: interrupted; everything up to this point is saved", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug: one line for the user, the traceback in a file for the report
        log = _write_crash_log(e)
        print(f"caddie: internal error: {type(e).__name__}: {e} (details in {log})", file=sys.stderr)
        return 70


def _write_crash_log(error: BaseException) -> str:
    import traceback

    from caddie.config.paths import agent_dir

    path = agent_dir() / "crash.log"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            f.write("".join(traceback.format_exception(error)) + "\n")
    except OSError:
        return "stderr"
    return str(path)


if __name__ == "__main__":
    raise SystemExit(main())
