"""Offline views of saved sessions: ``caddie session list|show|tree``, ``caddie context``, ``caddie export``.

None of them calls a model. ``context`` loads the session's extensions and runs their ``context`` handlers,
so it prints exactly what the next request would carry.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    convert_to_llm,
    message_to_json,
)
from caddie.errors import UsageError
from caddie.session.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionEntry,
    SessionInfoEntry,
    ThinkingLevelChangeEntry,
    entry_to_context_messages,
)
from caddie.session.store import (
    SessionFileError,
    SessionStore,
    SessionSummary,
    TreeNode,
    latest_session_file,
    list_sessions,
)
from caddie.session.store import _summarize_file as summarize_session_file
from caddie.untrusted import for_terminal

if TYPE_CHECKING:
    from caddie.runtime.factory import SessionBuild


class InspectError(UsageError):
    """A user mistake in a subcommand: one line, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise InspectError(f"{message} (see {self.prog} --help)")


def all_sessions(session_dir: str | None = None) -> list[SessionSummary]:
    """Every saved session: those of every project under the sessions folder (or in ``session_dir``)."""
    from caddie.config.paths import agent_dir

    root = Path(session_dir).expanduser() if session_dir else agent_dir() / "sessions"
    files = [*root.glob("*.jsonl"), *root.glob("*/*.jsonl")] if root.is_dir() else []
    rows = [r for r in (summarize_session_file(f) for f in files) if r is not None]
    rows.sort(key=lambda r: r.modified, reverse=True)
    return rows


def resolve_session(arg: str, cwd: str, session_dir: str | None = None) -> Path:
    """The session file named by ``arg``: a path (anything with a slash or ending in .jsonl), else a session
    id or a unique prefix of one, looked up among this directory's sessions first, then among all."""
    if "/" in arg or "\\" in arg or arg.endswith(".jsonl"):
        path = Path(arg).expanduser()
        return path if path.is_absolute() else Path(cwd) / path
    for pool in (list_sessions(cwd, session_dir), all_sessions(session_dir)):
        exact = [r for r in pool if r.id == arg]
        if exact:
            return exact[0].path
        matches = [r for r in pool if r.id.startswith(arg)] if arg else []
        if len(matches) == 1:
            return matches[0].path
        if len(matches) > 1:
            ids = ", ".join(r.id for r in matches[:5])
            raise InspectError(
                f"'{arg}' matches {len(matches)} sessions ({ids}); give more of the id (see: caddie session list)"
            )
    raise InspectError(f"No session found matching '{arg}' (see: caddie session list)")


def _open(path: str | None, cwd: str) -> SessionStore:
    if path is None:
        latest = latest_session_file(cwd)
        if latest is None:
            raise InspectError(
                "no sessions in this directory yet; name a session file (see: caddie session list)"
            )
        path = str(latest)
    p = resolve_session(path, cwd)
    if not p.exists():
        raise InspectError(f"no session file at {p} (see: caddie session list)")
    try:
        store = SessionStore.open(p, repair=False)  # looking must not change the file (nor lock it)
    except SessionFileError as e:
        raise InspectError(str(e)) from None
    except OSError as e:
        raise InspectError(f"cannot read {p}: {e.strerror or e}") from None
    for warning in store.warnings:  # what is wrong with the file, once, on stderr (stdout stays the view)
        print(f"caddie: warning: {for_terminal(warning)}", file=sys.stderr)
    return store


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB"):
        if n < 1024 or unit == "MB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


# --------------------------------------------------------------------------------------------------
# session list / show / tree


def cmd_list(cwd: str, out: TextIO) -> int:
    rows = list_sessions(cwd)
    if not rows:
        out.write(f"No sessions for {cwd} yet. Start one with: caddie\n")
        return 0
    out.write(f"{'last activity':<17} {'entries':>7} {'size':>9}  first prompt\n")
    for row in rows:
        when = dt.datetime.fromtimestamp(row.modified).strftime("%Y-%m-%d %H:%M")
        entries = row.entry_count
        title = row.name or row.first_message
        # stored text is shown, never obeyed: an escape sequence in a prompt cannot retitle the terminal
        out.write(for_terminal(f"{when:<17} {entries:>7} {_size(row.size):>9}  {_clip(title, 60)}\n"))
        out.write(for_terminal(f"{'':<17} {'':>7} {'':>9}  {row.id}  {row.path}\n"))
    return 0


def _blocks_text(content: str | list[object]) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for b in content:
        if isinstance(b, TextContent):
            parts.append(b.text)
        elif isinstance(b, ImageContent):
            parts.append(f"[image {b.mime_type}]")
    return "\n".join(parts)


def render_message(message: AgentMessage) -> str:
    """One message as readable text (``session show``, ``context``)."""
    if isinstance(message, UserMessage):
        return f"## user\n{_blocks_text(message.content)}"  # type: ignore[arg-type]
    if isinstance(message, AssistantMessage):
        lines = [f"## assistant ({message.provider}/{message.model}, {message.stop_reason})"]
        for b in message.content:
            if isinstance(b, ThinkingContent):
                lines.append(f"[thinking] {_clip(b.thinking, 200)}")
            elif isinstance(b, TextContent):
                lines.append(b.text)
            elif isinstance(b, ToolCall):
                lines.append(f"→ {b.name}({json.dumps(b.arguments, ensure_ascii=False)})  [{b.id}]")
        if message.error_message:
            lines.append(f"[error] {message.error_message}")
        return "\n".join(lines)
    if isinstance(message, ToolResultMessage):
        status = "error" if message.is_error else "ok"
        return f"## tool result: {message.tool_name} [{message.tool_call_id}] ({status})\n{_blocks_text(message.content)}"  # type: ignore[arg-type]
    if isinstance(message, CustomMessage):
        return f"## {message.custom_type}{'' if message.display else ' (hidden in the UI)'}\n{_blocks_text(message.content)}"  # type: ignore[arg-type]
    if isinstance(message, BashExecutionMessage):
        return f"## !{message.command} (exit {message.exit_code})\n{message.output}"
    if isinstance(message, CompactionSummaryMessage):
        return f"## compaction summary ({message.tokens_before} tokens before)\n{message.summary}"
    assert isinstance(message, BranchSummaryMessage)
    return f"## branch summary\n{message.summary}"


def cmd_show(path: str, cwd: str, out: TextIO) -> int:
    store = _open(path, cwd)
    name = store.session_name()
    out.write(
        for_terminal(
            f"# session {store.session_id}{f' — {name}' if name else ''}\n# file: {store.path}\n"
            f"# cwd: {store.cwd}\n\n"
        )
    )
    for entry in store.branch():  # the whole branch, compacted parts included: this is for people
        for message in entry_to_context_messages(entry):
            out.write(for_terminal(render_message(message) + "\n\n"))
    return 0


def describe_entry(entry: SessionEntry) -> str:
    if isinstance(entry, MessageEntry):
        m = entry.message
        if isinstance(m, UserMessage):
            return f'user: "{_clip(_blocks_text(m.content), 50)}"'  # type: ignore[arg-type]
        if isinstance(m, AssistantMessage):
            calls = [b.name for b in m.content if isinstance(b, ToolCall)]
            text = _clip(m.text(), 40)
            return (
                f"assistant: {text}"
                + (f" → {', '.join(calls)}" if calls else "")
                + (f" [{m.stop_reason}]" if m.stop_reason in ("error", "aborted") else "")
            )
        if isinstance(m, ToolResultMessage):
            return f"{m.tool_name} result{' (error)' if m.is_error else ''}"
        return m.role
    if isinstance(entry, CustomEntry):
        return f"[{entry.custom_type}]"
    if isinstance(entry, CustomMessageEntry):
        return f"{entry.custom_type}: {_clip(_blocks_text(entry.content), 40)}"  # type: ignore[arg-type]
    if isinstance(entry, CompactionEntry):
        return f"compaction ({entry.tokens_before} tokens before, kept from {entry.first_kept_entry_id})"
    if isinstance(entry, BranchSummaryEntry):
        return f"branch summary: {_clip(entry.summary, 40)}"
    if isinstance(entry, LabelEntry):
        return (
            f"label {entry.target_id} = {entry.label!r}"
            if entry.label
            else f"label {entry.target_id} cleared"
        )
    if isinstance(entry, ModelChangeEntry):
        return f"model → {entry.provider}/{entry.model_id}"
    if isinstance(entry, ThinkingLevelChangeEntry):
        return f"thinking → {entry.thinking_level}"
    if isinstance(entry, SessionInfoEntry):
        return f"name → {entry.name!r}"
    return entry.type


def cmd_tree(path: str, cwd: str, out: TextIO) -> int:
    """One line per entry; a chain stays at one indent, each branch below a fork is indented and starts with ├."""
    store = _open(path, cwd)
    leaf = store.leaf_id
    on_branch = {e.id for e in store.branch()}
    roots = store.tree()
    stack: list[tuple[TreeNode, str, bool]] = [(n, "", len(roots) > 1) for n in reversed(roots)]
    while stack:  # iterative: long sessions are deep chains
        node, indent, starts_branch = stack.pop()
        entry = node.entry
        mark = "●" if entry.id == leaf else ("•" if entry.id in on_branch else "·")
        head = f"{indent[:-2]}├ " if starts_branch and indent else indent
        label = f"  [{node.label}]" if node.label else ""
        leaf_note = "  ← leaf" if entry.id == leaf else ""
        out.write(for_terminal(f"{head}{mark} {entry.id} {describe_entry(entry)}{label}{leaf_note}\n"))
        if len(node.children) == 1:
            stack.append((node.children[0], indent, False))
        else:
            for child in reversed(node.children):
                stack.append((child, indent + "  ", True))
    return 0


# --------------------------------------------------------------------------------------------------
# context


@contextlib.asynccontextmanager
async def _read_only_session(session_file: str, cwd: str) -> AsyncIterator[SessionBuild]:
    """The session file opened read-only with its extensions started (so they can say what the model is
    sent), shut down again afterwards."""
    from caddie.runtime.factory import SessionRequest, SetupError, open_session

    request = SessionRequest(
        cwd=cwd, mode="print", session="file", session_file=session_file, require_model=False, read_only=True
    )
    try:
        build = await open_session(request)
    except SetupError as e:
        raise InspectError(str(e)) from None
    await build.session.start("resume")
    try:
        yield build
    finally:
        await build.session.shutdown("quit")


async def _context_stats(path: str | None, cwd: str, as_json: bool, out: TextIO) -> int:
    """``caddie context --stats``: the next request's window by category (``/context``'s picture)."""
    from caddie.modes.context_stats import render_stats, stats_of_session

    store_path = str(_open(path, cwd).path)
    async with _read_only_session(store_path, cwd) as build:
        stats = await stats_of_session(build.session, build.registry)
        checkpoints = checkpoint_storage(build.session.store)
    if as_json:
        payload = {"sessionFile": store_path, **stats.to_json(), "checkpoints": checkpoints}
        out.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
        return 0
    color = out.isatty() and not os.environ.get("NO_COLOR")
    _print_rich(render_stats(stats, color), out, color)
    out.write(
        f"File checkpoints: {checkpoints['count']} in this session; the workspace's shadow repository "
        f"{checkpoints['repository']} holds {_size(int(str(checkpoints['bytes'])))}\n"
    )
    return 0


def checkpoint_storage(store: SessionStore) -> dict[str, object]:
    """How many file checkpoints the session holds, and the size of its workspace's shadow repository."""
    from caddie.checkpoints.records import checkpoints_of
    from caddie.checkpoints.shadow import ShadowRepo

    repo = ShadowRepo.for_cwd(store.cwd)
    size = repo.size_bytes() if repo.exists else 0
    count = len(checkpoints_of(store.entries()))
    return {"count": count, "repository": str(repo.git_dir), "bytes": size}


def _print_rich(renderable: object, out: TextIO, color: bool) -> None:
    from rich.console import Console

    console = Console(file=out, force_terminal=color, no_color=not color, width=_width(out), highlight=False)
    console.print(renderable)


def _width(out: TextIO) -> int:
    try:
        return max(60, os.get_terminal_size(out.fileno()).columns) if out.isatty() else 100
    except (OSError, ValueError, AttributeError):
        return 100


def cmd_show_stats(path: str, cwd: str, out: TextIO) -> int:
    """``caddie session show --stats``: usage and cost totals, and what the extensions saved the bill."""
    return asyncio.run(_show_stats(path, cwd, out))


async def _show_stats(path: str, cwd: str, out: TextIO) -> int:
    from caddie.modes.savings import ask_savings, model_finder, savings_line

    store = _open(path, cwd)
    messages = [e.message for e in store.branch() if isinstance(e, MessageEntry)]
    replies = [m for m in messages if isinstance(m, AssistantMessage)]
    inp = sum(m.usage.input for m in replies)
    cache_read = sum(m.usage.cache_read for m in replies)
    cache_write = sum(m.usage.cache_write for m in replies)
    output = sum(m.usage.output for m in replies)
    cost = sum(m.usage.cost.total for m in replies)
    project = store.cwd if store.cwd and Path(store.cwd).is_dir() else cwd
    assert store.path is not None
    async with _read_only_session(str(store.path), project) as build:
        session = build.session
        reports = await ask_savings(
            session.extensions, session.store.branch(), model_finder(build.registry, session.model)
        )
    out.write(f"# session {store.session_id}\n# file: {store.path}\n")
    estimated = sum(1 for m in replies if m.usage.estimated)
    approx = "≈" if estimated else ""
    out.write(f"requests       {len(replies)}\n")
    out.write(
        f"input tokens   {approx}{inp:,} (+ cache read {cache_read:,}, cache write {cache_write:,}); "
        f"output {approx}{output:,}\n"
    )
    if estimated:
        out.write(
            f"               (≈: estimated for {estimated} of {len(replies)} replies: the server reported no usage)\n"
        )
    out.write(f"cost           {approx}${cost:.4f}\n")
    if not reports:
        out.write("saved          nothing reported (no loaded extension reports savings)\n")
    for report in reports:
        out.write(f"saved          {savings_line(report)}\n")
        if report.cost is None:
            out.write("               (no catalogue prices for this model, so no dollar figure)\n")
    return 0


async def _context(path: str | None, cwd: str, as_json: bool, out: TextIO) -> int:
    store_path = str(_open(path, cwd).path)
    async with _read_only_session(store_path, cwd) as build:
        session = build.session
        messages = await session.context_for_next_request()
        state = session.state()
    llm = convert_to_llm(messages)
    tools = [t.name for t in state.tools]
    if as_json:
        payload = {
            "sessionFile": store_path,
            "model": session.model.ref if session.model else None,
            "systemPrompt": state.system_prompt,
            "tools": tools,
            "messages": [message_to_json(m) for m in llm],
        }
        out.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
        return 0
    out.write(
        f"# what the model would be sent next ({len(llm)} messages; tools: {', '.join(tools) or 'none'})\n"
    )
    out.write(for_terminal(f"# session: {store_path}\n\n## system\n{state.system_prompt}\n\n"))
    for message in llm:
        out.write(for_terminal(render_message(message) + "\n\n"))
    return 0


async def export_session_file(path: str | None, cwd: str, output: str | None) -> Path:
    """Load the session's extensions (read-only) so they can say what the model is sent, then write the page."""
    from caddie.modes.export_html import default_export_path, export_session
    from caddie.modes.theme_files import settings_export_colours

    source = _open(path, cwd).path
    assert source is not None
    async with _read_only_session(str(source), cwd) as build:
        session = build.session
        target = Path(output).expanduser() if output else default_export_path(session.store, source)
        try:
            colours = await asyncio.to_thread(settings_export_colours, session)  # the settings' theme's
            return await export_session(session.store, session.extensions, target, source, colours)
        except OSError as e:
            raise InspectError(f"cannot write {target}: {e.strerror or e}") from None


# --------------------------------------------------------------------------------------------------
# entry point


def run_subcommand(argv: list[str], out: TextIO | None = None) -> int:
    out = out or sys.stdout
    cwd = os.getcwd()
    command, rest = argv[0], argv[1:]
    try:
        if command == "session":
            p = _Parser(prog="caddie session", description="Look at the saved sessions of this directory.")
            sub = p.add_subparsers(dest="what", required=True, parser_class=_Parser)
            sub.add_parser("list", help="sessions of this directory, newest first")
            show = sub.add_parser("show", help="the current branch of a session as readable text")
            show.add_argument(
                "file", nargs="?", help="session file, id or unique id prefix (default: the latest here)"
            )
            show.add_argument(
                "--stats",
                action="store_true",
                help="usage and cost totals, and what the extensions saved the bill (mulligan: net of its own costs)",
            )
            tree = sub.add_parser("tree", help="the entry tree with labels; the leaf is marked")
            tree.add_argument(
                "file", nargs="?", help="session file, id or unique id prefix (default: the latest here)"
            )
            delete = sub.add_parser("delete", help="delete a session file and collect its file checkpoints")
            delete.add_argument("file", help="session file, id or unique id prefix")
            sub.add_parser("gc", help="collect the file checkpoints no session names any more")
            args = p.parse_args(rest)
            if args.what == "list":
                return cmd_list(cwd, out)
            if args.what in ("delete", "gc"):
                from caddie.errors import UsageError as _Usage
                from caddie.modes.session_gc import cmd_delete, cmd_gc

                try:
                    if args.what == "gc":
                        return cmd_gc(out)
                    path = resolve_session(args.file, cwd)
                    if not path.exists():
                        raise InspectError(f"no session file at {path} (see: caddie session list)")
                    return cmd_delete(path, out)
                except InspectError:
                    raise
                except _Usage as e:
                    raise InspectError(str(e)) from None
            if args.what == "show":
                if args.stats:
                    return cmd_show_stats(args.file, cwd, out)
                return cmd_show(args.file, cwd, out)
            return cmd_tree(args.file, cwd, out)
        if command == "context":
            p = _Parser(
                prog="caddie context",
                description="Print the exact messages the model would be sent next "
                "(after every extension's context handler), without calling a model.",
            )
            p.add_argument(
                "session", nargs="?", help="session file, id or unique id prefix (default: the latest here)"
            )
            p.add_argument("--json", action="store_true", help="machine-readable output")
            p.add_argument(
                "--stats",
                action="store_true",
                help="the window by category (tokens and %%), the largest items, what mulligan withholds",
            )
            args = p.parse_args(rest)
            if args.stats:
                return asyncio.run(_context_stats(args.session, cwd, args.json, out))
            return asyncio.run(_context(args.session, cwd, args.json, out))
        if command == "export":
            p = _Parser(
                prog="caddie export", description="Write a session as one self-contained, offline HTML page."
            )
            p.add_argument(
                "session", nargs="?", help="session file, id or unique id prefix (default: the latest here)"
            )
            p.add_argument(
                "-o", "--output", metavar="FILE", help="where to write (default: <session>.html here)"
            )
            args = p.parse_args(rest)
            target = asyncio.run(export_session_file(args.session, cwd, args.output))
            out.write(f"{target}\n")
            return 0
    except InspectError as e:
        print(f"caddie {command}: {e}", file=sys.stderr)
        return 2
    raise InspectError(f"unknown command {command}")
