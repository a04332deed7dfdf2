"""Built-in commands that switch, fork, navigate, compact, describe, name, export or reload the session.

Imported in the start-up worker thread (startup.AFTER_FIRST_FRAME), with the session store and pickers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from rich.table import Table
from rich.text import Text

from caddie.ai.messages import UserMessage
from caddie.modes.interactive.conversation import user_text
from caddie.modes.interactive.host import Shell
from caddie.modes.interactive.render import (
    any_usage_estimated,
    format_cost,
    format_count,
    one_line,
    usage_totals,
)

if TYPE_CHECKING:
    from caddie.modes.theme_files import ExportColours
    from caddie.runtime.session import AgentSession
    from caddie.session.store import SessionStore, SessionSummary


BRANCH_SUMMARY_CHOICES = ("No summary", "Summarize", "Summarize with custom prompt")
"""Pi's answers to "Summarize branch?" when ``/tree`` leaves a branch."""


@contextmanager
def working_on(shell: Shell, message: str, shown: bool = True) -> Iterator[None]:
    """The working line says ``message`` meanwhile (when ``shown``): ``/tree`` summarizing the branch it leaves."""
    if not shown:
        yield
        return
    shell.working.set_message(message)
    shell.working.set_active(True)
    try:
        yield
    finally:
        shell.working.set_message(shell.ui.working_message)
        shell.working.set_active(shell.busy)


class SessionCommands:
    """``/new /resume /tree /fork /clone /compact /session /name /export /import /share /trust /reload``."""

    def __init__(
        self,
        shell: Shell,
        reload_ui: Callable[[], list[str]],
        reload_themes: Callable[[AgentSession], Awaitable[None]],
        compaction_errors: Callable[[], int],
        export_colours: Callable[[], ExportColours | None] = lambda: None,
    ) -> None:
        self.shell = shell
        self.export_colours = export_colours
        """The theme in use's ``export`` colours (theme_book), for /export and /share."""
        self.reload_ui = reload_ui
        """Take in again what the UI reads from extensions and files (keys, shortcuts); the warnings."""
        self.reload_themes = reload_themes
        """Read the theme files again and apply the one in use (its warnings are shown)."""
        self.compaction_errors = compaction_errors
        """How many compaction errors the transcript has shown so far."""

    async def cmd_new(self, args: str) -> None:
        shell = self.shell
        session = shell.session
        assert session is not None
        if shell.require_idle("starting a new session"):
            if not await self.switching(session.new_session()):
                return
            await shell.render_session()
            shell.show_status("New session")

    async def cmd_resume(self, args: str) -> None:
        shell = self.shell
        session = shell.session
        assert session is not None
        if not shell.require_idle("switching sessions"):
            return
        path = await self.pick_session(session.cwd, session.store.session_file)
        if path is False:
            shell.show_info("No saved sessions yet.")
            return
        if path is None or path == session.store.session_file:
            return
        if not await self.switching(session.switch_session(str(path))):
            return
        await shell.render_session()
        shell.show_status(f"Resumed {session_title(session.store) or Path(str(path)).name}")

    async def switching(self, switch: Awaitable[bool]) -> bool:
        """Run a session switch (new, resume, fork); say why when it did not happen."""
        from caddie.errors import UsageError

        shell = self.shell
        try:
            done = await switch
        except UsageError as e:  # e.g. the chosen file is being written by another caddie
            shell.show_error(str(e))
            return False
        if not done:
            shell.show_info("An extension kept the current session (session_before_switch / _fork).")
        return done

    async def pick_session(self, cwd: str, current: str | None) -> str | Literal[False] | None:
        """The session file chosen in the picker; None when cancelled, False when there are none at all."""
        from caddie.modes.interactive.pickers import SessionPicker, all_sessions
        from caddie.session.store import list_sessions

        shell = self.shell
        session_dir = shell.startup.request.session_dir
        here = await asyncio.to_thread(list_sessions, cwd, session_dir)
        everywhere: list[SessionSummary] | None = None
        if not here:
            everywhere = await asyncio.to_thread(all_sessions, session_dir)
            if not everywhere:
                return False

        async def load_all() -> list[SessionSummary]:
            return (
                everywhere if everywhere is not None else await asyncio.to_thread(all_sessions, session_dir)
            )

        def rename_current(name: str) -> None:
            if shell.session is not None:
                shell.session.set_session_name(name)
                shell.refresh_footer()

        picker = SessionPicker(here, current, load_all, rename_current)
        if not here:
            picker.call_after_refresh(picker.action_toggle_scope)  # nothing here: show every project's
        chosen = await shell.ask(picker, None, None)
        return None if chosen is None else str(chosen)

    async def cmd_tree(self, args: str) -> None:
        """Pi's ``/tree``: pick an entry, say whether to summarize the branch left behind (with your own focus
        if you like), go there. Esc on the question (or during the summary) brings the tree back."""
        shell = self.shell
        session = shell.session
        assert session is not None
        if not shell.require_idle("moving in the tree"):
            return
        if not len(session.store):
            shell.show_info("The session is empty; there is nowhere to go yet.")
            return
        from caddie.errors import Aborted
        from caddie.modes.interactive.pickers import open_tree_picker
        from caddie.modes.interactive.rewind import offer_files, restore

        selected: str | None = None
        while True:
            picker = await open_tree_picker(session.store, session.set_label, selected)  # rows off the loop
            target = await shell.ask(picker, None, None)
            if target is None:
                return
            if target in picker.here_ids:
                shell.show_status("Already at this point")
                return
            selected = str(target)
            choice = await self.branch_summary_choice()
            if choice is None:  # Esc: back to the tree, on the same entry (as Pi)
                continue
            summarize, instructions = choice
            files = await offer_files(shell, selected)
            try:
                cancel = shell.keys.hint("app.interrupt")
                with working_on(shell, f"Summarizing branch... ({cancel} to cancel)", summarize):
                    moved = await session.navigate_tree(
                        selected, summarize=summarize, custom_instructions=instructions
                    )
            except Aborted:
                shell.show_status("Branch summarization cancelled")
                continue
            if not moved:
                shell.show_status("Navigation cancelled")
                return
            await shell.render_session()
            shell.show_status("Navigated to selected point")
            if files is not None:
                await restore(shell, files, files=True, conversation=False)
            return

    async def branch_summary_choice(self) -> tuple[bool, str | None] | None:
        """Pi's question on leaving a branch: (summarize, your focus instructions), or None for Esc. Settings
        ``branchSummary.skipPrompt`` skips it: no summary."""
        shell = self.shell
        session = shell.session
        assert session is not None
        if session.settings.get("branchSummary.skipPrompt", False):
            return False, None
        while True:
            answer = await shell.ui.select("Summarize branch?", list(BRANCH_SUMMARY_CHOICES))
            if answer is None:
                return None
            if answer != BRANCH_SUMMARY_CHOICES[2]:
                return answer == BRANCH_SUMMARY_CHOICES[1], None
            instructions = await shell.ui.editor("Custom summarization instructions")
            if instructions is not None:  # Esc in the editor: the question again
                return True, instructions

    async def cmd_fork(self, args: str) -> None:
        shell = self.shell
        session = shell.session
        assert session is not None
        if not shell.require_idle("forking"):
            return
        from caddie.modes.interactive.pickers import ForkPicker
        from caddie.session.entries import MessageEntry

        candidates = [
            (e.id, user_text(e.message))
            for e in session.store.branch()
            if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage)
        ]
        if not candidates:
            shell.show_info("There is no user message to fork from yet.")
            return
        entry_id = await shell.ask(ForkPicker(candidates), None, None)
        if entry_id is None:
            return
        text = dict(candidates)[str(entry_id)]
        from caddie.modes.interactive.rewind import offer_files, restore

        files = await offer_files(shell, str(entry_id))
        if not await self.switching(session.fork(str(entry_id))):
            return
        await shell.render_session()
        shell.editor.set_text(text)
        shell.show_status("Forked to new session")
        if files is not None:
            await restore(shell, files, files=True, conversation=False)

    async def cmd_rewind(self, args: str) -> None:
        """Claude Code's /rewind: the conversation, the files, or both, back to before an earlier prompt."""
        if not self.shell.require_idle("rewinding"):
            return
        from caddie.modes.interactive.rewind import run_rewind

        await run_rewind(self.shell)

    async def cmd_compact(self, args: str) -> None:
        """Like Pi's ``/compact``: stops a running turn first, then summarizes the older messages."""
        shell = self.shell
        session = shell.session
        assert session is not None
        from caddie.errors import Aborted

        shown = self.compaction_errors()
        try:
            await session.compact(args or None)
        except Aborted:  # an extension or Esc cancelled it
            return
        except Exception as e:  # CompactionError: the message says why (too small, already compacted...)
            if self.compaction_errors() == shown:  # not already shown from the event
                shell.show_error(str(e) or type(e).__name__)
            return
        await shell.render_session()

    async def cmd_session(self, args: str) -> None:
        shell = self.shell
        session = shell.session
        assert session is not None
        store = session.store
        from caddie.session.entries import MessageEntry

        entries = store.entries()
        messages = [e.message for e in entries if isinstance(e, MessageEntry)]
        inp, out, cr, cw, cost = usage_totals(messages)
        approx = "≈" if any_usage_estimated(messages) else ""
        usage = session.context_usage()
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column(overflow="fold")  # long paths wrap onto the next lines instead of being cut
        rows = [
            ("Session file", store.session_file or "(in memory, not saved)"),
            ("Session id", store.session_id),
            ("Name", store.session_name() or "-"),
            (
                "Model",
                f"{session.model.ref} • thinking {session.thinking_level}" if session.model else "none",
            ),
            ("Messages", f"{len(messages)} ({sum(isinstance(m, UserMessage) for m in messages)} from you)"),
            ("Entries", str(len(entries))),
            (
                "Tokens",
                f"↑{approx}{format_count(inp)} ↓{approx}{format_count(out)} cache read {format_count(cr)}"
                f" write {format_count(cw)}"
                + (" (≈: estimated, the server reported no usage)" if approx else ""),
            ),
            ("Cost", approx + format_cost(cost)),
        ]
        if usage is not None:
            pct = "unknown until the next reply" if usage.percent is None else f"{usage.percent:.1f}%"
            pct = f"≈{pct}" if usage.estimated and usage.percent is not None else pct
            rows.append(("Context", f"{pct} of {format_count(usage.context_window)}"))
        for key, value in rows:
            table.add_row(key, Text(value, overflow="fold"))
        shell.show_info(table)

    async def cmd_name(self, args: str) -> None:
        shell = self.shell
        session = shell.session
        assert session is not None
        name = args.strip()
        if not name:
            answer = await shell.ui.input("Session name", session.store.session_name() or "")
            if not answer or not answer.strip():
                return
            name = answer.strip()
        session.set_session_name(name)
        shell.refresh_footer()
        shell.show_status(f"Session name: {name}")

    async def cmd_export(self, args: str) -> None:
        shell = self.shell
        session = shell.session
        assert session is not None
        from caddie.modes.export_html import export_session

        store = session.store
        default = f"{store.path.stem if store.path else 'caddie-session-' + store.session_id}.html"
        target = Path(session.cwd) / Path(args or default).expanduser()  # relative to the project
        if target.suffix.lower() == ".jsonl":  # as Pi: the session file itself, every branch
            from caddie.modes.session_transfer import TransferError, export_jsonl

            try:
                path = export_jsonl(store, target)
            except TransferError as e:
                shell.show_error(str(e))
                return
        else:
            path = await export_session(store, session.extensions, target, colours=self.export_colours())
        shell.show_info(f"Exported the session to {path}")

    async def cmd_clone(self, args: str) -> None:
        """Pi's ``/clone``: the current branch, up to here, copied into a new session."""
        shell = self.shell
        session = shell.session
        assert session is not None
        leaf = session.store.leaf_id
        if leaf is None:
            shell.show_info("Nothing to clone yet.")
            return
        if not shell.require_idle("cloning") or not await self.switching(session.fork(leaf, position="at")):
            return
        await shell.render_session()
        shell.show_status("Cloned to new session")

    async def cmd_import(self, args: str) -> None:
        """Pi's ``/import <file.jsonl>``: copy a session file into this project's sessions and resume it."""
        shell = self.shell
        session = shell.session
        assert session is not None
        from caddie.modes.session_transfer import TransferError, import_session

        if not args.strip():
            shell.show_error("Usage: /import <path.jsonl>")
            return
        if not shell.require_idle("importing a session"):
            return
        folder = session.store.path.parent if session.store.path else None
        try:
            path = import_session(args.strip().strip("\"'"), session.cwd, folder)
        except TransferError as e:
            shell.show_error(str(e))
            return
        if await self.switching(session.switch_session(str(path))):
            await shell.render_session()
            shell.show_status(f"Session imported from {args.strip()}")

    async def cmd_share(self, args: str) -> None:
        """Pi's ``/share``: the HTML export uploaded as a secret GitHub gist (``gh``); prints its address."""
        shell = self.shell
        session = shell.session
        assert session is not None
        import tempfile

        from caddie.modes.export_html import export_session
        from caddie.modes.session_transfer import TransferError, share_file

        with tempfile.TemporaryDirectory(prefix="caddie-share-") as folder:
            page = await export_session(
                session.store,
                session.extensions,
                Path(folder) / "session.html",
                colours=self.export_colours(),
            )
            try:
                url = await share_file(Path(page), f"caddie session {session.store.session_id}")
            except TransferError as e:
                shell.show_error(str(e))
                return
        shell.show_info(f"Shared as a secret gist: {url}")

    async def cmd_trust(self, args: str) -> None:
        """Pi's ``/trust``: save a trust decision for this folder (``parent``: its parent folder; ``no``:
        distrust) in trust.json; it applies from the next start."""
        shell = self.shell
        session = shell.session
        assert session is not None
        from caddie.runtime.trust import remember_trust, trust_file

        word = args.strip().lower()
        if word not in ("", "yes", "parent", "no"):
            shell.show_error("Usage: /trust [parent|no]")
            return
        folder = Path(session.cwd).resolve()
        folder = folder.parent if word == "parent" else folder
        remember_trust(folder, word != "no")
        decision = "not trusted" if word == "no" else "trusted"
        shell.show_info(
            f"{folder} is {decision} from the next start (saved in {trust_file()}); restart caddie to apply it."
        )

    async def cmd_context(self, args: str) -> None:
        from caddie.modes.interactive.context_view import show_context

        await show_context(self.shell)

    async def cmd_reload(self, args: str) -> None:
        shell = self.shell
        session = shell.session
        assert session is not None
        if not shell.require_idle("reloading"):
            return
        await session.reload()  # ends with after_reload

    async def after_reload(self) -> None:
        """The end of every reload, ``/reload`` or an extension's ``ctx.reload()`` (the session's
        ``after_reload``): the UI's own files read again, then Pi's line."""
        shell = self.shell
        session = shell.session
        assert session is not None
        for error in [*session.state().load_errors, *self.reload_ui()]:
            shell.show_info(error, "warning")
        await self.reload_themes(session)
        shell.show_status("Reloaded keybindings, extensions, skills, prompts, themes, and context files")
        shell.refresh_footer()


def session_title(store: SessionStore) -> str | None:
    """How a session is called for people: its name, else its first message (one line)."""
    from caddie.session.entries import MessageEntry

    name = store.session_name()
    if name:
        return name
    for entry in store.entries():
        if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage):
            return one_line(user_text(entry.message), 60)
    return None
