"""The ``caddie`` command: dispatch to the subcommands and the main command, and user-facing errors.

    caddie [options] [prompt...]          interactive terminal UI (or print mode with -p)
    caddie -p "fix the failing test"      run to completion, print the answer
    caddie session list|show|tree         look at saved sessions
    caddie context [SESSION] [--json]     what the model would be sent next
    caddie export [SESSION] [-o FILE]     the session as one offline HTML page
    caddie checkpoints [SESSION] [--json] a session's file checkpoints (one before each prompt)
    caddie restore CHECKPOINT [SESSION]   put the files back as a checkpoint saved them
    caddie install|remove|list|update     packages (extensions, skills, prompt templates)
    caddie config                         list and switch extensions, skills, prompts, packages
    caddie demo [--no-tui]                a 30-second scripted tour (no key needed)
    caddie auth print-api-key|print-bearer-token|check   the credential caddie would send (Pi's ``pi auth``)

A usage mistake ends in one line on stderr and exit code 2; a bug ends in one line and exit code 70 with
the traceback in ~/.caddie/agent/crash.log. Never a traceback on the terminal.

The main command's parser and argument checks are in ``caddie.cli_args``, its run (session, modes) in
``caddie.cli_run``; both are imported only when needed, so ``caddie --version`` imports almost nothing.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from caddie import __version__

SUBCOMMANDS = ("session", "context", "export", "acp", "batch", "checkpoints", "restore")
MANAGE_COMMANDS = ("install", "remove", "uninstall", "list", "update", "config")


def _subcommand(argv: list[str]) -> int:
    from caddie.modes.inspect import run_subcommand

    return run_subcommand(argv)


def _asks_version(args: list[str]) -> bool:
    """``caddie [options] --version``: answered before anything is imported (argparse would print the same
    for ``--version`` anywhere among the main command's options)."""
    if args and args[0] in (*SUBCOMMANDS, *MANAGE_COMMANDS, "auth"):
        return False
    options = args[: args.index("--")] if "--" in args else args
    return "--version" in options or "-v" in options


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
    if argv is None:  # the process markers for what caddie starts, as Pi sets AI_AGENT=pi
        from caddie.config.environment import process_markers

        os.environ.update(process_markers())
    if _asks_version(args):
        print(f"caddie {__version__}")
        return 0
    args = _clean_arguments(args)
    code = _main(args)
    if argv is None and "caddie.cli_run" in sys.modules:  # only the main command's run closes a session
        from caddie import cli_run

        if cli_run.session_closed:
            _exit_promptly(code)
    return code


def _clean_arguments(argv: Sequence[str]) -> list[str]:
    """The arguments with lone surrogates (bytes that are not UTF-8) as U+FFFD, and stdout/stderr set to
    write any that still get through as U+FFFD instead of failing (docs/reliability.md, "Text")."""
    from caddie.untrusted.text import REPLACE_SURROGATES, clean_text

    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if (
            reconfigure is not None
            and (getattr(stream, "encoding", "") or "").lower().replace("-", "") == "utf8"
        ):
            reconfigure(errors=REPLACE_SURROGATES)
    return [clean_text(arg) for arg in argv]


def _main(args: list[str]) -> int:
    import asyncio

    from caddie.cli_args import CliError
    from caddie.errors import CaddieError

    try:
        if args and args[0] in (*SUBCOMMANDS, *MANAGE_COMMANDS, "auth", "demo"):
            _warn_untested_platform()  # the main command says it itself (a notice in the terminal UI)
        if args and args[0] == "acp":
            from caddie.modes.acp import main as acp_main

            return acp_main(args[1:])
        if args and args[0] == "demo":
            from caddie.modes.demo import run_demo

            return run_demo(args[1:])
        if args and args[0] in ("checkpoints", "restore"):
            from caddie.modes.checkpoints_cli import run as run_checkpoints

            return run_checkpoints(args)
        if args and args[0] == "auth":
            from caddie.modes.auth_command import run_auth_command

            return run_auth_command(args[1:])
        if args and args[0] == "batch":
            from caddie.modes.batch import run_batch_command

            return run_batch_command(args[1:])
        if args and args[0] in SUBCOMMANDS:
            return _subcommand(args)
        if args and args[0] in MANAGE_COMMANDS:
            from caddie.cli_args import check_package_sources, pi_manage_arguments
            from caddie.modes.manage import run_manage

            args, notices = pi_manage_arguments(args)  # Pi's forms (update --all, install -a …)
            notices += check_package_sources(args, os.getcwd())  # a Pi package folder
            for notice in notices:
                print(f"caddie: warning: {notice}", file=sys.stderr)
            return run_manage(args)
        from caddie.cli_run import run_main

        return asyncio.run(run_main(args))
    except CliError as e:
        print(f"caddie: {e}", file=sys.stderr)
        return 2
    except CaddieError as e:  # something the user can fix: its message says what
        print(f"caddie: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("caddie: interrupted; everything up to this point is saved", file=sys.stderr)
        return 130
    except asyncio.CancelledError:
        from caddie.cli_run import terminated_by

        if terminated_by is None:
            raise
        if terminated_by == signal.SIGINT:  # Ctrl+C in a headless run
            print("caddie: interrupted; everything up to this point is saved", file=sys.stderr)
            return 130
        name = signal.Signals(terminated_by).name
        print(f"caddie: stopped by {name}; everything up to this point is saved", file=sys.stderr)
        return 128 + terminated_by
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug: one line for the user, the traceback in a file for the report
        log = _write_crash_log(e)
        print(f"caddie: internal error: {type(e).__name__}: {e} (details in {log})", file=sys.stderr)
        return 70


def _warn_untested_platform() -> None:
    """One line on stderr on a system caddie is not tested on (Windows, Termux)."""
    from caddie.config.platforms import platform_notice

    notice = platform_notice()
    if notice:
        print(f"caddie: warning: {notice}", file=sys.stderr)


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
