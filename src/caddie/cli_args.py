"""The ``caddie`` command line: the parser of the main command, and the checks and readings of what it names
(the working directory, piped stdin, ``@FILE`` attachments, session arguments, the goal options).

A usage mistake raises ``CliError``: ``caddie.cli`` prints it as one line and exits with code 2.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from caddie import __version__
from caddie.errors import UsageError

if TYPE_CHECKING:
    from caddie.ai.messages import ImageContent

EPILOG = """\
sessions:
  Sessions are saved under ~/.caddie/agent/sessions/ (CADDIE_DIR moves the root).
  -c continues the latest one for this directory; --session FILE|ID opens a given one
  (an id prefix is enough: caddie session list shows the ids). Options: docs/cli.md.

configuration:
  ~/.caddie/agent/ (CADDIE_CODING_AGENT_DIR): settings.json, merged with a trusted project's
  .caddie/settings.json (-a trusts for one run); SYSTEM.md / APPEND_SYSTEM.md.
  Models: ANTHROPIC_API_KEY / OPENAI_API_KEY / ... or ~/.caddie/agent/models.json (Pi's format).
  Pi's flags, settings and PI_* variables, and what caddie does with each: docs/configuration.md.

examples:
  caddie demo                             a 30-second scripted tour, no key needed
  caddie                                  start the interactive UI
  caddie -p "why does test_parse fail?"   answer and exit
  git diff | caddie -p "review this"      prompt from stdin
  caddie -p --goal "make pytest pass" --goal-budget 200k --goal-check "pytest -q"
"""


class CliError(UsageError):
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


def base_parser(add_help: bool) -> _Parser:
    """The main command's options: Pi 0.84.4's, long and short (``-nc`` is an option of its own, never
    ``-n c``), and caddie's own. ``pi_argv`` must see the arguments first."""
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
        metavar="PATTERN[:LEVEL]",
        help="model to use: provider/id, an id, or part of one (sonnet), optionally with :level "
        "(openai/gpt-5:high); faux/echo needs no key",
    )
    p.add_argument(
        "--provider", metavar="NAME", help="the provider of --model (or write --model provider/id)"
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
    p.add_argument(
        "--offline",
        action="store_true",
        help="no network use at start-up (as CADDIE_OFFLINE=1 or Pi's PI_OFFLINE=1): no Ollama probe, no "
        "install of a project's missing packages",
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
    g.add_argument(
        "--session-dir",
        metavar="DIR",
        help="where session files live (default: CADDIE_CODING_AGENT_SESSION_DIR, settings sessionDir, "
        "else per project)",
    )
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
        "-ne",
        "--no-extensions",
        action="store_true",
        help="do not load discovered extensions (-e and the bundled ones still load)",
    )
    e.add_argument(
        "-a",
        "--approve",
        "--trust",
        dest="trust",
        action="store_const",
        const=True,
        default=None,
        help="trust this project's files for this run (.caddie/extensions, sensitive settings, SYSTEM.md)",
    )
    e.add_argument(
        "-na",
        "--no-approve",
        dest="trust",
        action="store_const",
        const=False,
        help="ignore this project's trust-requiring files for this run",
    )
    e.add_argument(
        "--sandbox",
        choices=["off", "read-only", "workspace-write"],
        metavar="MODE",
        help="where the model's commands run: off, read-only (nothing writable but a private temp dir) or "
        "workspace-write (the project writable, secrets unreadable, no network unless allowed); default: "
        'settings "sandbox", else off (workspace-write for headless --goal runs). See docs/sandbox.md',
    )
    e.add_argument(
        "-t",
        "--tools",
        metavar="LIST",
        help="allowlist of tools, comma-separated: built-in (read,bash,edit,write,grep,find,ls), from "
        "extensions, or MCP (mcp__SERVER__TOOL, mcp__SERVER__*); only these exist for the run",
    )
    e.add_argument(
        "-xt",
        "--exclude-tools",
        metavar="LIST",
        help="tools to disable, comma-separated (built-in, extension or MCP; globs allowed)",
    )
    e.add_argument(
        "-nt", "--no-tools", action="store_true", help="no tools at all, built-in or from extensions"
    )
    e.add_argument(
        "-nbt",
        "--no-builtin-tools",
        action="store_true",
        help="no built-in tools at start; tools from extensions stay on",
    )
    r = p.add_argument_group("skills, prompt templates and themes")
    r.add_argument(
        "--skill",
        action="append",
        default=[],
        metavar="PATH",
        help="load a skill file or folder (repeatable)",
    )
    r.add_argument(
        "-ns", "--no-skills", action="store_true", help="do not discover skills (--skill still loads)"
    )
    r.add_argument(
        "--prompt-template",
        action="append",
        default=[],
        metavar="PATH",
        help="load a prompt template file or folder (repeatable)",
    )
    r.add_argument(
        "-np",
        "--no-prompt-templates",
        action="store_true",
        help="do not discover prompt templates (--prompt-template still loads)",
    )
    r.add_argument(
        "--theme",
        action="append",
        default=[],
        metavar="PATH",
        help="load a theme file or folder (repeatable)",
    )
    r.add_argument("--use-theme", metavar="NAME", help="the theme for this run (over settings theme)")
    r.add_argument("--no-themes", action="store_true", help="do not discover themes (--theme still loads)")
    s = p.add_argument_group("prompt")
    s.add_argument(
        "--system-prompt",
        metavar="TEXT|FILE",
        help="replace the default system prompt (a file's contents when FILE exists; default: SYSTEM.md of "
        "the project's .caddie/ or ~/.caddie/agent/)",
    )
    s.add_argument(
        "--append-system-prompt",
        action="append",
        default=None,
        metavar="TEXT|FILE",
        help="add text (or a file's contents) to the system prompt (repeatable; default: APPEND_SYSTEM.md)",
    )
    s.add_argument("-nc", "--no-context-files", action="store_true", help="do not read AGENTS.md / CLAUDE.md")
    u = p.add_argument_group("terminal UI")
    u.add_argument(
        "--verbose",
        action="store_true",
        help="show the start-up header even when settings quietStartup is on",
    )
    u.add_argument(
        "--tui-mode",
        choices=["regular", "fullscreen"],
        help="accepted for Pi's sake: caddie's terminal UI is always full-screen",
    )
    p.add_argument("-v", "--version", action="version", version=f"caddie {__version__}")
    return p


def pi_argv(argv: list[str], parser: argparse.ArgumentParser, *, strict: bool = True) -> list[str]:
    """The arguments as Pi 0.84.4 reads them, for argparse: an option that takes a value takes the next
    argument whatever it looks like (``--append-system-prompt "-be terse"``), and a single-dash argument
    must be one of the options as written — ``-nc`` is "no context files", ``-nfoo`` is not ``-n foo``
    (``strict``: such an argument is a usage error, as Pi's "Unknown option")."""
    options = {o for action in parser._actions for o in action.option_strings}
    takes_value = {o for action in parser._actions if _takes_one(action) for o in action.option_strings}
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out += argv[i:]
            break
        if arg in takes_value and i + 1 < len(argv):
            out.append(f"{arg}={argv[i + 1]}")
            i += 2
            continue
        if (
            strict
            and arg.startswith("-")
            and not arg.startswith("--")
            and len(arg) > 1
            and arg not in options
        ):
            raise CliError(
                f"unknown option {arg}{_short_hint(arg, options, takes_value)} (see caddie --help)"
            )
        out.append(arg)
        i += 1
    return out


def _takes_one(action: argparse.Action) -> bool:
    """An option written with one value after it (``--model X``), not a switch or ``--list-models [S]``."""
    return not isinstance(
        action,
        argparse._StoreTrueAction
        | argparse._StoreConstAction
        | argparse._VersionAction
        | argparse._HelpAction
        | argparse._CountAction,
    ) and action.nargs in (None, 1)


def _short_hint(arg: str, options: set[str], takes_value: set[str]) -> str:
    """``-nfoo``: Pi's short options never take their value glued on; say how to write it."""
    head = arg.partition("=")[0]
    for length in (3, 2):
        if head[:length] in takes_value and head[:length] != arg:
            return f"; write {head[:length]} and its value apart: {head[:length]} {arg[length:].lstrip('=')}"
    shorts = sorted(o for o in options if not o.startswith("--"))
    close = difflib.get_close_matches(head, shorts, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def current_dir() -> str:
    try:
        return os.getcwd()
    except FileNotFoundError:
        raise CliError("the current directory no longer exists") from None


def read_stdin() -> str | None:
    if sys.stdin is None or sys.stdin.isatty():
        return None
    data = sys.stdin.buffer.read().decode("utf-8", "replace")  # a stray byte must not fail the run later
    return data if data.strip() else None


def resolve_session_arg(arg: str, cwd: str, session_dir: str | None) -> str:
    """A session named on the command line by file path, id or unique id prefix."""
    from caddie.modes.inspect import InspectError, resolve_session

    try:
        return str(resolve_session(arg, cwd, session_dir))
    except InspectError as e:
        raise CliError(str(e)) from None


def check_goal_flags(flags: dict[str, str | bool], specs: Mapping[str, object]) -> None:
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


def check_flag_values(flags: dict[str, str | bool], specs: Mapping[str, Any]) -> None:
    """Each extension option's own check (``register_flag(..., check=...)``): a value it cannot use exits 2
    with its sentence before anything runs."""
    for name, value in flags.items():
        check = getattr(specs.get(name), "check", None)
        if check is None or not isinstance(value, str):
            continue
        try:
            check(value)
        except (ValueError, UsageError) as e:
            raise CliError(f"--{name}: {e}") from None


def theme_for_terminal(value: str, env: Mapping[str, str]) -> tuple[str, str | None]:
    """Pi's ``--use-theme LIGHT/DARK`` (follow the terminal's appearance): (the theme, a line to show or
    None). caddie reads the background from ``COLORFGBG`` (``15;0``: light text on black); a terminal that
    does not set it gets the dark theme and one line saying so. A plain name is returned as it is."""
    light, slash, dark = value.partition("/")
    if not slash:
        return value, None
    background = env.get("COLORFGBG", "").rpartition(";")[2]
    if background.isdigit():
        return (light if int(background) in (7, 15) else dark), None
    return (
        dark,
        f"--use-theme {value}: caddie cannot tell the terminal's background (no COLORFGBG); using {dark}",
    )


SELF_UPDATE = "caddie does not update itself: upgrade it with `uv tool upgrade caddie-agent` (or `git pull` in a checkout)"


def pi_manage_arguments(argv: list[str]) -> tuple[list[str], list[str]]:
    """Pi 0.84.4's forms of ``install`` / ``remove`` / ``update`` as caddie's: (the arguments caddie's package
    commands take, one line for each form that does something else here). ``list`` / ``config`` ``-a`` / ``-na``
    are caddie's ``--trust`` / its default. ``update --self`` / ``update pi``
    (Pi updating itself) alone is refused (``CliError``); ``update --all`` updates the packages and says
    that caddie itself is not updated. ``-a`` / ``-na`` of ``install`` and ``remove`` change nothing:
    caddie's install reads no project files, except that ``-l -na`` is refused as Pi refuses it."""
    if not argv or argv[0] not in ("install", "remove", "uninstall", "update", "list", "config"):
        return argv, []
    command, rest = argv[0], argv[1:]
    if command in ("list", "config"):  # Pi's -a / -na: caddie's --trust / its default
        dropped = ("-na", "--no-approve")
        return [
            command,
            *("--trust" if a in ("-a", "--approve") else a for a in rest if a not in dropped),
        ], []
    out: list[str] = [command]
    notices: list[str] = []
    if command != "update":
        no_approve = any(a in ("-na", "--no-approve") for a in rest)
        if no_approve and any(a in ("-l", "--local") for a in rest):
            raise CliError(f"{command} -l changes the project's settings, which -na (--no-approve) ignores")
        out += [a for a in rest if a not in ("-a", "--approve", "-na", "--no-approve")]
        return out, notices
    self_asked = all_asked = False
    items = iter(rest)
    for arg in items:
        if arg in ("--self", "--force") or arg in ("self", "pi"):
            self_asked = True
        elif arg == "--all":
            all_asked = True
        elif arg in ("--extensions", "-na", "--no-approve"):
            continue  # caddie's update: the packages, the project's only with -a
        elif arg == "--extension":
            out.append(next(items, ""))
        elif arg.startswith("--extension="):
            out.append(arg.partition("=")[2])
        else:
            out.append(arg)
    if self_asked and not all_asked and len(out) == 1:
        raise CliError(f"{SELF_UPDATE}; caddie update updates the installed packages")
    if self_asked or all_asked:
        notices.append(f"{SELF_UPDATE}; updating the packages only")
    return out, notices


REGISTRY_SOURCES = ("npm:", "git:", "git@", "https://", "http://", "ssh://")
"""How Pi's ``-e`` names a package it installs for one run (npm, git, a URL)."""


def check_extension_sources(sources: list[str] | None, cwd: str) -> None:
    """``-e npm:…`` / ``-e git:…`` / ``-e https://…``: Pi installs such a package for this run only; caddie
    loads ``-e`` from a file or folder, so it refuses in one line (exit 2) before anything runs. So too for
    Pi's own extensions: a TypeScript or JavaScript file, a Pi package's folder."""
    from caddie.config.pi_folders import PI_EXTENSION_SUFFIXES, pi_package_problem

    for source in sources or ():
        path = Path(cwd) / Path(source).expanduser()
        if path.suffix in PI_EXTENSION_SUFFIXES and path.is_file():
            raise CliError(
                f"-e {source}: a TypeScript or JavaScript extension is Pi's; caddie runs Python extensions (a "
                "file or folder with register(api)): docs/extensions.md lists Python twins of Pi's examples"
            )
        problem = pi_package_problem(path) if path.is_dir() else None
        if problem is not None and not problem[0]:
            raise CliError(f"-e {source} {problem[1]}")
        if source.startswith(REGISTRY_SOURCES) and not (Path(cwd) / source).exists():
            kind = "an npm package (Pi's, JavaScript)" if source.startswith("npm:") else "a git repository"
            raise CliError(
                f"-e {source}: caddie does not install {kind} for one run; -e takes an extension file or "
                "folder. Install a package first (caddie install SOURCE: a PyPI name, git URL or path)."
            )


def check_faux_model(ref: str | None) -> None:
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


def attachments(paths: list[str], cwd: str) -> tuple[str, list[ImageContent]]:
    """``@FILE`` arguments as Pi reads them: text files inline in ``<file name="…">`` blocks, images as image
    content (resized like the read tool's), empty files skipped."""
    from caddie.ai.messages import ImageContent
    from caddie.tools.images import detect_image_mime_type, process_image
    from caddie.untrusted.files import non_regular_kind, read_regular

    text = ""
    images: list[ImageContent] = []
    for raw in paths:
        path = Path(raw).expanduser()
        path = (Path(cwd) / path).resolve() if not path.is_absolute() else path
        if not path.is_file():
            kind = non_regular_kind(path) or ("a folder" if path.is_dir() else None)
            if kind is None:
                raise CliError(f"file not found: {path} (attach files as @path/to/file)")
            raise CliError(f"{path}: it is {kind}, not a regular file (attach files as @path/to/file)")
        try:
            data = read_regular(path)  # never blocks, even if the path became a FIFO since the check
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


def check_package_sources(argv: list[str], cwd: str) -> list[str]:
    """``caddie install`` / ``update`` of a local folder that is a Pi package: refused in one line (exit 2)
    when it is only Pi's (TypeScript, ``package.json``); one line to print when it is a Python package too,
    saying its ``pi`` manifest (gallery fields included) is not read."""
    from caddie.config.pi_folders import pi_package_problem

    if not argv or argv[0] not in ("install", "update"):
        return []
    notices: list[str] = []
    for source in (a for a in argv[1:] if not a.startswith("-")):
        path = Path(cwd) / Path(source.removeprefix("file:")).expanduser()
        problem = pi_package_problem(path) if path.is_dir() else None
        if problem is None:
            continue
        installable, line = problem
        if not installable:
            raise CliError(f"{source} {line}")
        notices.append(f"{source}: {line}")
    return notices
