"""The ``caddie`` command: argument parsing, mode selection and user-facing errors.

    caddie [options] [prompt...]          interactive terminal UI (or print mode with -p)
    caddie -p "fix the failing test"      run to completion, print the answer
    caddie session list|show|tree         look at saved sessions
    caddie context [SESSION] [--json]     what the model would be sent next
    caddie export [SESSION] [-o FILE]     the session as one offline HTML page
    caddie install|remove|list|update     packages (extensions, skills, prompt templates)
    caddie config                         list and switch extensions, skills, prompts, packages
    caddie demo [--no-tui]                a 30-second scripted tour (no key needed)

A usage mistake ends in one line on stderr and exit code 2; a bug ends in one line and exit code 70 with
the traceback in ~/.caddie/agent/crash.log. Never a traceback on the terminal.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from caddie import __version__

if TYPE_CHECKING:
    import asyncio

    from caddie.ai.messages import ImageContent
    from caddie.extensions.runner import Extension

SUBCOMMANDS = ("session", "context", "export", "acp", "batch")
MANAGE_COMMANDS = ("install", "remove", "uninstall", "list", "update", "config")
EPILOG = """\
sessions:
  Sessions are saved under ~/.caddie/agent/sessions/ (CADDIE_DIR moves the root).
  -c continues the latest one for this directory; --session FILE|ID opens a given one
  (an id prefix is enough: caddie session list shows the ids). Options: docs/cli.md.

configuration:
  ~/.caddie/agent/settings.json, merged with .caddie/settings.json of the project.
  Models: ANTHROPIC_API_KEY / OPENAI_API_KEY / ... or ~/.caddie/agent/models.json (Pi's format).

examples:
  caddie demo                             a 30-second scripted tour, no key needed
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
            f"{message}{self._suggestion(message)} "
            f"(see caddie {self.prog.split()[-1] + ' ' if ' ' in self.prog else ''}--help)"
        )

    def _suggestion(self, message: str) -> str:
        """For an unknown option: the closest one caddie has (difflib)."""
        if not message.startswith("unrecognized arguments: "):
            return ""
        options = [o for action in self._actions for o in action.option_strings if o.startswith("--")]
        for word in message.removeprefix("unrecognized arguments: ").split():
            if word.startswith("-"):
                given = word.partition("=")[0]
                swapped = [o for o in options if sorted(o) == sorted(given)]  # --modle → --model
                close = swapped or difflib.get_close_matches(given, options, n=1, cutoff=0.6)
                if close:
                    return f"; did you mean {close[0]}?"
        return ""


def _base_parser(add_help: bool) -> _Parser:
    p = _Parser(
        prog="caddie",
        description="A coding agent for the terminal, with a second shot (mulligan) and a finish line (goal).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=add_help,
        allow_abbrev=False,
    )
    p.add_argument(
        "messages",
        nargs="*",
        help="the prompt (several are sent one after another); @FILE attaches a file to the first "
        "(text inline, images as images)",
    )
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
        "--model",
        metavar="PROVIDER/ID[:LEVEL]",
        help="model to use, e.g. anthropic/claude-sonnet-4-5 or openai/gpt-5:high, faux/echo",
    )
    p.add_argument("--thinking", metavar="LEVEL", help="off, minimal, low, medium, high, xhigh, max")
    p.add_argument(
        "--models",
        metavar="PATTERNS",
        help="comma-separated models to cycle through with Ctrl+P (provider/id[:level], globs like "
        "anthropic/*); default: settings enabledModels",
    )
    p.add_argument("--api-key", metavar="KEY", help="API key for the chosen model's provider (over env vars)")
    p.add_argument(
        "--list-models",
        nargs="?",
        const="",
        default=None,
        metavar="SEARCH",
        help="list the models you can use (optionally those matching SEARCH) and exit",
    )
    p.add_argument(
        "--export",
        metavar="SESSION",
        help="write a session (file, id or id prefix) as HTML and exit; the first message names the output",
    )
    g = p.add_argument_group("session")
    g.add_argument(
        "-c", "--continue", dest="continue_", action="store_true", help="continue the latest session here"
    )
    g.add_argument("--session", metavar="FILE|ID", help="open this session (file, id or unique id prefix)")
    g.add_argument(
        "--session-id", metavar="ID", help="use this project's session with this id, or start one with it"
    )
    g.add_argument(
        "--fork", metavar="FILE|ID", help="copy this session (file, id or id prefix) into a new session"
    )
    g.add_argument("-n", "--name", metavar="NAME", help="the session's display name")
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
    e.add_argument(
        "-xt",
        "--exclude-tools",
        metavar="LIST",
        help="tools to disable, comma-separated (built-in or extension)",
    )
    r = p.add_argument_group("skills and prompt templates")
    r.add_argument(
        "--skill",
        action="append",
        default=[],
        metavar="PATH",
        help="load a skill file or folder (repeatable)",
    )
    r.add_argument("--no-skills", action="store_true", help="do not discover skills (--skill still loads)")
    r.add_argument(
        "--prompt-template",
        action="append",
        default=[],
        metavar="PATH",
        help="load a prompt template file or folder (repeatable)",
    )
    r.add_argument(
        "--no-prompt-templates",
        action="store_true",
        help="do not discover prompt templates (--prompt-template still loads)",
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
    global _session_closed
    import asyncio

    # Only what describes the session: a plain interactive start paints its first frame before the
    # agent, the tools and the extensions are imported (they load in the UI's worker thread).
    from caddie.runtime.request import SessionRequest, SetupError

    if TYPE_CHECKING:
        from caddie.extensions.api import Mode
        from caddie.runtime.factory import LoadedExtensions

    pre, unknown = _base_parser(add_help=False).parse_known_args(argv)
    cwd = _cwd()
    interactive = not (pre.print or pre.mode in ("json", "rpc") or pre.export or pre.list_models is not None)
    loaded: LoadedExtensions | None = None
    if unknown or not interactive:
        # Extensions' own options (--goal …) and --help need the extensions now. A plain interactive start
        # leaves them to the UI, which loads them in a worker thread after its first frame.
        from caddie.runtime.factory import load_extension_set

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
    specs = loaded.flag_specs() if loaded is not None else {}
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

    if args.list_models is not None:
        return _list_models(args.list_models, loaded.extensions if loaded else [])
    if args.export is not None:
        return await _export(args.export, args.messages, cwd)
    _check_goal_flags(flags, specs)
    _check_faux_model(args.model)

    mode = args.mode
    headless = args.print or mode in ("json", "rpc")
    ui_mode: Mode = "rpc" if mode == "rpc" else "json" if mode == "json" else "print" if args.print else "tui"
    prompts = [m for m in args.messages if not m.startswith("@")]
    file_args = [m[1:] for m in args.messages if m.startswith("@")]
    if headless and mode != "rpc":
        piped = _read_stdin()
        if piped is not None:
            prompts = [f"{prompts[0]}\n\n{piped}", *prompts[1:]] if prompts else [piped]
    images = None
    if file_args and mode != "rpc":
        file_text, images = _attachments(file_args, cwd)
        prompts = [file_text + (prompts[0] if prompts else ""), *prompts[1:]]
        if images and not headless:
            print(
                "caddie: warning: images given with @FILE are sent only in print mode (-p)", file=sys.stderr
            )

    session_choice = "new"
    if sum(bool(x) for x in (args.continue_, args.session, args.resume, args.no_session, args.fork)) > 1:
        raise CliError("choose one of -c/--continue, --session, --resume, --no-session, --fork")
    session_file = _resolve_session_arg(args.session, cwd, args.session_dir) if args.session else None
    fork_from = _resolve_session_arg(args.fork, cwd, args.session_dir) if args.fork else None
    if fork_from is not None and not Path(fork_from).exists():
        raise CliError(f"no session file at {fork_from} (see: caddie session list)")
    session_id = args.session_id
    if session_id is not None:
        if args.session or args.continue_ or args.resume or args.fork:
            raise CliError(
                "--session-id cannot be combined with --session, -c/--continue, --resume or --fork"
            )
        if not re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?", session_id):
            raise CliError(
                "--session-id must contain only letters, digits, '-', '_' and '.', and start and end with a "
                "letter or digit"
            )
        if not args.no_session:
            from caddie.session.store import list_sessions

            existing = next((r for r in list_sessions(cwd, args.session_dir) if r.id == session_id), None)
            if existing is not None:
                session_file, session_id = str(existing.path), None
            else:
                print(
                    f"caddie: warning: no session of this project has the id '{session_id}'; "
                    "starting a new session with that id",
                    file=sys.stderr,
                )
    if args.continue_:
        session_choice = "continue"
    elif session_file is not None:
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
        session_file=session_file,
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
        skill_paths=args.skill,
        no_skills=args.no_skills,
        prompt_paths=args.prompt_template,
        no_prompt_templates=args.no_prompt_templates,
        session_id=session_id,
        models=[m.strip() for m in args.models.split(",") if m.strip()] if args.models else None,
        api_key=args.api_key,
        name=args.name,
        exclude_tools=[t.strip() for t in args.exclude_tools.split(",") if t.strip()]
        if args.exclude_tools
        else [],
        fork_from=fork_from,
    )

    if not headless:
        from caddie.modes.interactive import run_interactive

        return await run_interactive(request, resume_picker=args.resume, initial_prompts=prompts)

    from caddie.runtime.factory import open_session

    try:
        build = await open_session(request)
    except SetupError as e:
        raise CliError(str(e)) from None
    _log_to_stderr()
    session = build.session
    # print/json: the store's findings go to stderr with the rest; rpc gets them as notice events at start
    found = session.take_store_warnings() if mode != "rpc" else []
    for warning in [*build.warnings, *found]:
        print(f"caddie: warning: {warning}", file=sys.stderr)
    reason = build.reason
    loop = asyncio.get_running_loop()
    main_task = asyncio.current_task()

    def terminate(signum: int) -> None:
        # SIGTERM / SIGHUP end the run like Ctrl+C does: the abort kills the tools' process groups at
        # once, and the cancellation runs the same shutdown (session settled, extensions told).
        global _terminated_by
        _terminated_by = signum
        session.abort()
        if main_task is not None:
            main_task.cancel()

    handled = [sig for sig in (signal.SIGTERM, signal.SIGHUP) if _add_signal_handler(loop, sig, terminate)]
    try:
        if mode == "rpc":
            from caddie.modes.rpc import run_rpc

            assert rpc_ui is not None
            return await run_rpc(
                session,
                rpc_ui,
                build.registry.find,
                lambda: session.start(reason),
                has_auth=build.has_auth or build.registry.has_auth,
                cli_extensions=args.extension,
                max_line_bytes=int(_env_number("CADDIE_RPC_MAX_LINE_BYTES", 64 * 1024 * 1024)),
                eof_grace_s=_env_number("CADDIE_RPC_EOF_GRACE_S", 5.0),
            )
        await session.start(reason)
        from caddie.modes.headless import run_headless

        if not prompts and session.is_idle and not session.has_background_work:
            raise CliError('no prompt given: caddie -p "your task", or pipe it: echo "your task" | caddie -p')
        return await run_headless(session, prompts, json_mode=mode == "json", images=images)
    finally:
        try:
            if mode == "rpc":  # EOF ends the process: a hung handler cannot keep it alive
                grace = _env_number("CADDIE_RPC_EOF_GRACE_S", 5.0)
                closing = asyncio.ensure_future(session.shutdown("quit", settle_timeout=grace))
                await asyncio.wait(
                    {closing}, timeout=2 * grace
                )  # not wait_for: that waits for a hung handler
                if not closing.done():
                    print("caddie: warning: the session did not shut down in time; exiting", file=sys.stderr)
                elif not closing.cancelled() and closing.exception() is not None:
                    raise closing.exception()  # type: ignore[misc]
                else:
                    _session_closed = True
                await _end_stragglers(min(2.0, grace))
            else:
                await session.shutdown("quit")
                _session_closed = True
        finally:
            for sig in handled:
                loop.remove_signal_handler(sig)


_terminated_by: int | None = None
"""The signal (SIGTERM, SIGHUP) that ended a headless run, if one did."""
_session_closed = False
"""A headless run's session has shut down (extensions told, session file closed and unlocked)."""


def _add_signal_handler(
    loop: asyncio.AbstractEventLoop, sig: signal.Signals, handler: Callable[[int], None]
) -> bool:
    try:
        loop.add_signal_handler(sig, handler, int(sig))
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no such signal
        return False
    return True


def _env_number(name: str, default: float) -> float:
    """A numeric knob from the environment (RPC limits: ``CADDIE_RPC_MAX_LINE_BYTES``,
    ``CADDIE_RPC_EOF_GRACE_S``)."""
    value = os.environ.get(name)
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        raise CliError(f"{name} must be a number, not {value!r}") from None
    if not number > 0:
        raise CliError(f"{name} must be positive, not {value!r}")
    return number


async def _end_stragglers(grace_s: float = 2.0) -> None:
    """RPC after EOF: work that outlived the session (an abandoned extension handler that ignores
    cancellation) must not keep the process alive. It is cancelled; if it still runs, the process exits."""
    import asyncio

    current = asyncio.current_task()
    others = [t for t in asyncio.all_tasks() if t is not current]
    for task in others:
        task.cancel()
    if others:
        _done, pending = await asyncio.wait(others, timeout=grace_s)
        if pending:
            print(
                f"caddie: {len(pending)} abandoned task(s) still running at exit; exiting anyway",
                file=sys.stderr,
            )
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)


def _resolve_session_arg(arg: str, cwd: str, session_dir: str | None) -> str:
    """A session named on the command line by file path, id or unique id prefix."""
    from caddie.modes.inspect import InspectError, resolve_session

    try:
        return str(resolve_session(arg, cwd, session_dir))
    except InspectError as e:
        raise CliError(str(e)) from None


def _check_goal_flags(flags: dict[str, str | bool], specs: Mapping[str, object]) -> None:
    """The goal options are checked before anything runs: a mistake exits 2 with nothing done."""
    if "goal" not in specs:
        return
    if ("goal-budget" in flags or "goal-check" in flags) and "goal" not in flags:
        raise CliError('--goal-budget and --goal-check need --goal "<objective>".')
    objective = flags.get("goal")
    if isinstance(objective, str) and not objective.strip():
        raise CliError(
            f'--goal "{objective}": the objective is empty; say what done looks like, e.g. '
            '--goal "make pytest -q pass".'
        )


def _check_faux_model(ref: str | None) -> None:
    if not ref or not ref.startswith("faux/"):
        return
    from caddie.runtime.factory import split_thinking

    model_id = split_thinking(ref)[0].partition("/")[2]
    if model_id != "echo" and not os.environ.get("CADDIE_FAUX_SCRIPT"):
        echo = (
            " (did you mean faux/echo?)" if difflib.get_close_matches(model_id, ["echo"], cutoff=0.6) else ""
        )
        raise CliError(
            f"--model {ref} plays a script, but CADDIE_FAUX_SCRIPT (the JSON file of its replies) is not "
            f"set{echo}: set it (see docs/providers.md), or use --model faux/echo"
        )


def _attachments(paths: list[str], cwd: str) -> tuple[str, list[ImageContent]]:
    """``@FILE`` arguments as Pi reads them: text files inline in ``<file name="…">`` blocks, images as image
    content (resized like the read tool's), empty files skipped."""
    from caddie.ai.messages import ImageContent
    from caddie.tools.images import detect_image_mime_type, process_image

    text = ""
    images: list[ImageContent] = []
    for raw in paths:
        path = Path(raw).expanduser()
        path = (Path(cwd) / path).resolve() if not path.is_absolute() else path
        if not path.is_file():
            raise CliError(f"file not found: {path} (attach files as @path/to/file)")
        try:
            data = path.read_bytes()
        except OSError as e:
            raise CliError(f"cannot read {path}: {e.strerror or e}") from None
        if not data:
            continue
        mime = detect_image_mime_type(data)
        if mime is not None:
            processed = process_image(data, mime)
            if not processed.ok:
                text += f'<file name="{path}">{processed.message}</file>\n'
                continue
            images.append(ImageContent(processed.data, processed.mime_type))
            text += f'<file name="{path}">{chr(10).join(processed.hints)}</file>\n'
            continue
        content = data.decode("utf-8", "replace").removeprefix("\ufeff")
        text += f'<file name="{path}">\n{content}\n</file>\n'
    return text, images


def _list_models(search: str, extensions: list[Extension]) -> int:
    """``--list-models [SEARCH]``: the usable models as Pi prints them (provider, model, context, …),
    with the providers extensions register."""
    from caddie.extensions.providers import ExtensionProviders
    from caddie.models import ModelRegistry

    registry = ModelRegistry()
    for warning in [*registry.warnings, *ExtensionProviders(registry).attach(extensions)]:
        print(f"caddie: warning: {warning}", file=sys.stderr)
    models = registry.available()
    if not models:
        print(registry.no_model_text())
        return 0
    if search:
        models = [m for m in models if _fuzzy(search, f"{m.provider} {m.id}")]
        if not models:
            print(f'No models matching "{search}"')
            return 0
    models.sort(key=lambda m: (m.provider, m.id))
    rows = [("provider", "model", "context", "max-out", "thinking", "images")]
    rows += [
        (
            m.provider,
            m.id,
            _tokens(m.context_window),
            _tokens(m.max_tokens),
            "yes" if m.reasoning else "no",
            "yes" if "image" in m.input else "no",
        )
        for m in models
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
    return 0


def _tokens(count: int) -> str:
    for size, unit in ((1_000_000, "M"), (1_000, "K")):
        if count >= size:
            value = count / size
            return f"{value:.0f}{unit}" if value == int(value) else f"{value:.1f}{unit}"
    return str(count)


def _fuzzy(query: str, text: str) -> bool:
    """Every word of ``query`` appears in ``text`` in order, letters possibly apart (case-insensitive)."""
    haystack = text.lower()
    for word in query.lower().split():
        at = 0
        for ch in word:
            at = haystack.find(ch, at) + 1
            if at == 0:
                return False
    return True


async def _export(arg: str, messages: list[str], cwd: str) -> int:
    """``--export SESSION [OUTPUT]``: the session as one HTML page (as ``caddie export``), then exit."""
    from caddie.modes.inspect import InspectError, export_session_file

    path = Path(_resolve_session_arg(arg, cwd, None))
    if not path.exists():
        raise CliError(f"no session file at {path} (see: caddie session list)")
    try:
        target = await export_session_file(str(path), cwd, messages[0] if messages else None)
    except InspectError as e:
        raise CliError(str(e)) from None
    print(f"Exported to: {target}")
    return 0


def _log_to_stderr() -> None:
    """Headless modes: warnings from caddie and its extensions go to stderr, one line each."""
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("caddie: %(message)s"))
    handler.setLevel(logging.WARNING)
    logging.getLogger("caddie").addHandler(handler)


def _stdout_json_writer() -> Callable[[dict[str, Any] | str], None]:
    import json

    def write(obj: dict[str, Any] | str) -> None:
        line = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    return write


def _subcommand(argv: list[str]) -> int:
    from caddie.modes.inspect import run_subcommand

    return run_subcommand(argv)


def _asks_version(args: list[str]) -> bool:
    """``caddie [options] --version``: answered before anything is imported (argparse would print the same
    for ``--version`` anywhere among the main command's options)."""
    if args and args[0] in (*SUBCOMMANDS, *MANAGE_COMMANDS):
        return False
    return "--version" in (args[: args.index("--")] if "--" in args else args)


def _exit_promptly(code: int) -> NoReturn:
    """End the process once a headless run is over (its output written, its session closed) without the
    interpreter's teardown of every loaded module, which takes ~0.2 s once an SDK is imported. What that
    teardown does that matters happens first, in the same order: threading's exit hooks and the wait for
    non-daemon threads, the ``atexit`` handlers (logging's flush among them), flushing stdout and stderr."""
    import atexit
    import threading

    shutdown: Callable[[], None] | None = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            pass
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``caddie`` command. Called without ``argv`` (the console script, ``python -m caddie``), a headless
    run ends the process itself as soon as its session is closed (see ``_exit_promptly``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if _asks_version(args):
        print(f"caddie {__version__}")
        return 0
    code = _main(args)
    if argv is None and _session_closed:
        _exit_promptly(code)
    return code


def _main(args: list[str]) -> int:
    import asyncio

    try:
        if args and args[0] == "acp":
            from caddie.modes.acp import main as acp_main

            return acp_main(args[1:])
        if args and args[0] == "demo":
            from caddie.modes.demo import run_demo

            return run_demo(args[1:])
        if args and args[0] == "batch":
            from caddie.modes.batch import run_batch_command

            return run_batch_command(args[1:])
        if args and args[0] in SUBCOMMANDS:
            return _subcommand(args)
        if args and args[0] in MANAGE_COMMANDS:
            from caddie.modes.manage import run_manage

            return run_manage(args)
        return asyncio.run(_run_main(args))
    except CliError as e:
        print(f"caddie: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("caddie: interrupted; everything up to this point is saved", file=sys.stderr)
        return 130
    except asyncio.CancelledError:
        if _terminated_by is None:
            raise
        name = signal.Signals(_terminated_by).name
        print(f"caddie: stopped by {name}; everything up to this point is saved", file=sys.stderr)
        return 128 + _terminated_by
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
