"""The main command's run: the command line parsed with the extensions' own options, the session opened,
and the chosen mode run (interactive, print, json or rpc), plus ``--list-models`` and ``--export``.

Called by ``caddie.cli`` (which turns ``CliError`` and crashes into one line). Heavy parts are imported
where they are used, so that an interactive start paints its first frame before the runtime is loaded.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from caddie.cli_args import (
    CliError,
    attachments,
    base_parser,
    check_extension_sources,
    check_faux_model,
    check_flag_values,
    check_goal_flags,
    current_dir,
    pi_argv,
    read_stdin,
    resolve_session_arg,
    theme_for_terminal,
)
from caddie.config.platforms import platform_notice
from caddie.config.settings import RUN_ONLY

if TYPE_CHECKING:
    import asyncio

    from caddie.extensions.runner import Extension


async def run_main(argv: list[str]) -> int:
    global session_closed
    import asyncio

    # Only what describes the session: a plain interactive start paints its first frame before the
    # agent, the tools and the extensions are imported (they load in the UI's worker thread).
    from caddie.runtime.request import SessionRequest, SetupError

    if TYPE_CHECKING:
        from caddie.extensions.api import Mode
        from caddie.runtime.request import LoadedExtensions

    pre_parser = base_parser(add_help=False)
    pre, unknown = pre_parser.parse_known_args(pi_argv(argv, pre_parser, strict=False))
    cwd = current_dir()
    check_extension_sources(pre.extension, cwd)
    if pre.offline:
        os.environ["CADDIE_OFFLINE"] = "1"  # and so for what caddie starts, as Pi sets PI_OFFLINE
    interactive = not (pre.print or pre.mode in ("json", "rpc") or pre.export or pre.list_models is not None)
    loaded: LoadedExtensions | None = None
    if unknown or not interactive:
        # Extensions' own options (--goal …) and --help need the extensions now. A plain interactive start
        # leaves them to the UI, which loads them in a worker thread after its first frame.
        from caddie.runtime.factory import load_extension_set
        from caddie.runtime.ui import HeadlessUI

        try:
            loaded = await load_extension_set(
                cwd,
                extension_paths=pre.extension,
                no_extensions=pre.no_extensions,
                trust=pre.trust,
                # project_trust handlers see the mode; headless, as Pi, no dialogs and notices on stderr
                trust_mode="rpc" if pre.mode == "rpc" else "json" if pre.mode == "json" else "print",
                trust_ui=HeadlessUI(lambda message, _level: print(message, file=sys.stderr)),
            )
        except SetupError as e:
            raise CliError(str(e)) from None
    parser = base_parser(add_help=True)
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
    args = parser.parse_intermixed_args(pi_argv(argv, parser))
    untested = platform_notice()  # Windows, Termux: one line saying what to expect there
    if untested and not interactive:
        print(f"caddie: warning: {untested}", file=sys.stderr)
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
    check_goal_flags(flags, specs)
    check_flag_values(flags, specs)
    check_faux_model(args.model)

    mode = args.mode
    headless = args.print or mode in ("json", "rpc")
    ui_mode: Mode = "rpc" if mode == "rpc" else "json" if mode == "json" else "print" if args.print else "tui"
    prompts = [m for m in args.messages if not m.startswith("@")]
    file_args = [m[1:] for m in args.messages if m.startswith("@")]
    if headless and mode != "rpc":
        piped = read_stdin()
        if piped is not None:
            prompts = [f"{prompts[0]}\n\n{piped}", *prompts[1:]] if prompts else [piped]
    images = None
    notices: list[
        str
    ] = []  # the command line's one-line refusals: stderr when headless, else the UI's notices
    if untested and interactive:
        notices.append(untested)
    if file_args and mode != "rpc":
        file_text, images = attachments(file_args, cwd)
        prompts = [file_text + (prompts[0] if prompts else ""), *prompts[1:]]
        if images and not headless:
            notices.append("images given with @FILE are sent only in print mode (-p)")

    session_choice = "new"
    if sum(bool(x) for x in (args.continue_, args.session, args.resume, args.no_session, args.fork)) > 1:
        raise CliError("choose one of -c/--continue, --session, --resume, --no-session, --fork")
    session_file = resolve_session_arg(args.session, cwd, args.session_dir) if args.session else None
    fork_from = resolve_session_arg(args.fork, cwd, args.session_dir) if args.fork else None
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
        from caddie.modes.rpc.ui import json_line_writer

        rpc_ui = RpcUI(json_line_writer(sys.stdout))
        ui = rpc_ui
    tools = [t.strip() for t in args.tools.split(",") if t.strip()] if args.tools is not None else None
    if args.tui_mode == "regular":
        notices.append(
            "--tui-mode regular is ignored: caddie's terminal UI is always a full-screen Textual app"
        )
    overrides = run_overrides(args, cwd, notices)
    if headless:
        for notice in notices:
            print(f"caddie: warning: {notice}", file=sys.stderr)
    request = SessionRequest(
        cwd=cwd,
        mode=ui_mode,
        model=args.model,
        provider=args.provider,
        thinking=args.thinking,
        session=session_choice,  # type: ignore[arg-type]
        session_file=session_file,
        session_dir=args.session_dir,
        extension_paths=args.extension,
        no_extensions=args.no_extensions,
        trust=args.trust,
        tools=tools,
        no_tools="all" if args.no_tools else "builtin" if args.no_builtin_tools else None,
        system_prompt=args.system_prompt,
        append_system_prompt=args.append_system_prompt,
        settings_overrides=overrides,
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
        sandbox=args.sandbox,
        sandbox_default="workspace-write" if headless and "goal" in flags else "off",
        notices=[] if headless else notices,
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
    found = build.take_store_warnings() if mode != "rpc" else []
    for warning in [*build.warnings, *found]:
        print(f"caddie: warning: {warning}", file=sys.stderr)
    loop = asyncio.get_running_loop()
    main_task = asyncio.current_task()

    def terminate(signum: int) -> None:
        # SIGTERM / SIGHUP end the run like Ctrl+C does: the abort kills the tools' process groups at
        # once, and the cancellation runs the same shutdown (session settled, extensions told).
        global terminated_by
        terminated_by = signum
        session.abort()
        if main_task is not None:
            main_task.cancel()

    handled = [sig for sig in (signal.SIGTERM, signal.SIGHUP) if _add_signal_handler(loop, sig, terminate)]
    previous_sigint = _on_ctrl_c(loop, terminate)
    try:
        if mode == "rpc":
            from caddie.modes.rpc import run_rpc

            assert rpc_ui is not None
            return await run_rpc(
                session,
                rpc_ui,
                build.registry.find,
                lambda: session.start("startup"),
                has_auth=build.has_auth or build.registry.has_auth,
                max_line_bytes=int(_env_number("CADDIE_RPC_MAX_LINE_BYTES", 64 * 1024 * 1024)),
                eof_grace_s=_env_number("CADDIE_RPC_EOF_GRACE_S", 5.0),
            )
        await session.start("startup")
        from caddie.modes.headless import run_headless

        state = session.state()
        if not prompts and not state.is_streaming and not state.background_work:
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
                    session_closed = True
                await _end_stragglers(min(2.0, grace))
            else:
                await session.shutdown("quit")
                session_closed = True
        finally:
            for sig in handled:
                loop.remove_signal_handler(sig)
            if previous_sigint is not None:
                signal.signal(signal.SIGINT, previous_sigint)


def run_overrides(args: Any, cwd: str, notices: list[str] | None = None) -> dict[str, Any]:
    """Settings for this run only, from options Pi applies the same way: ``--use-theme`` (the theme),
    ``--theme PATH`` (more theme files, after settings ``themes``), ``--no-themes`` (only those),
    ``--verbose`` (the start-up header even with ``quietStartup``). A line for the user goes to ``notices``
    (else to stderr)."""
    overrides: dict[str, Any] = {}
    if args.use_theme:
        theme, notice = theme_for_terminal(args.use_theme, os.environ)
        overrides["theme"] = theme
        if notice and notices is not None:
            notices.append(notice)
        elif notice:
            print(f"caddie: warning: {notice}", file=sys.stderr)
    run: dict[str, Any] = {}  # not settings keys: what only this command line asks (RUN_ONLY)
    if args.theme:
        run["themes"] = [str((Path(cwd) / Path(p).expanduser()).resolve()) for p in args.theme]
    if args.no_themes:
        run["noThemes"] = True
    if run:
        overrides[RUN_ONLY] = run
    if args.verbose:
        overrides["quietStartup"] = False
    return overrides


terminated_by: int | None = None
"""The signal (SIGTERM, SIGHUP) that ended a headless run, if one did."""
session_closed = False
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


CTRL_C_GRACE_S = 1.5
"""How long a headless run may take to end cleanly after Ctrl+C before the process exits anyway."""
INTERRUPTED = "caddie: interrupted; everything up to this point is saved"


def _on_ctrl_c(loop: asyncio.AbstractEventLoop, terminate: Callable[[int], None]) -> Any:
    """Headless modes: one Ctrl+C ends the process within 2 s, whatever an extension does.

    The handler is a plain ``signal.signal`` handler, so it runs even while an extension handler blocks
    the event loop (``time.sleep(3600)`` is woken by the signal and the handler runs before it sleeps
    on). It starts the usual clean ending (the run aborted, the tools' process groups killed, the session
    shut down) for when the loop is free, and a watchdog that ends the process ``CTRL_C_GRACE_S`` later if
    that has not happened by then: it kills the process groups of caddie's children (the tools'
    commands) and exits 130. Nothing written is lost: the session file only ever holds whole lines. A
    second Ctrl+C exits at once. Returns the handler it replaced (None when it could not be installed)."""
    import threading

    pressed: list[float] = []

    def on_signal(signum: int, frame: object) -> None:
        if pressed:
            _exit_now(130, INTERRUPTED)
        pressed.append(1.0)
        loop.call_soon_threadsafe(terminate, int(signal.SIGINT))
        watchdog = threading.Timer(CTRL_C_GRACE_S, _exit_now, (130, INTERRUPTED))
        watchdog.daemon = True
        watchdog.start()

    try:
        return signal.signal(signal.SIGINT, on_signal)
    except ValueError:  # not the main thread
        return None


def _exit_now(code: int, line: str) -> None:
    """End the process at once: the tools' process groups killed, ``line`` on stderr, output flushed."""
    _kill_child_groups()
    for stream, text in ((sys.stderr, line + "\n"), (sys.stdout, "")):
        try:
            stream.write(text)
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            pass
    os._exit(code)


def _kill_child_groups() -> None:
    """SIGKILL the process group of every child of this process (each tool command leads its own)."""
    me = str(os.getpid())
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
                parent = fh.read().rsplit(")", 1)[-1].split()[1]
        except (OSError, IndexError):
            continue
        if parent == me:
            try:
                os.killpg(int(pid), signal.SIGKILL)
            except OSError:
                with contextlib.suppress(OSError):
                    os.kill(int(pid), signal.SIGKILL)


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


def _list_models(search: str, extensions: list[Extension]) -> int:
    """``--list-models [SEARCH]``: the usable models as Pi prints them (provider, model, context, …),
    with the providers extensions register."""
    from caddie.extensions.providers import ExtensionProviders
    from caddie.models import ModelRegistry

    registry = ModelRegistry()
    for warning in [*registry.warnings, *ExtensionProviders(registry).attach(extensions)]:
        print(f"caddie: warning: {warning}", file=sys.stderr)
    registry.discover_local()  # the models local servers serve, with their context sizes
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

    path = Path(resolve_session_arg(arg, cwd, None))
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
