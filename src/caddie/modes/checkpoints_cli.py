"""``caddie checkpoints`` and ``caddie restore``: a session's file checkpoints, listed and restored from the
shell (``caddie session delete`` / ``gc``, which collect them, are in ``session_gc``).

Restoring writes to the session (the checkpoint of the current files it takes first, and with
``--conversation`` where the conversation continues), so it takes the session file's lock: a session open
in a running caddie is refused (use ``/rewind`` there).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path
from typing import NoReturn, TextIO

from caddie.checkpoints.records import CHECKPOINT_TYPE, Checkpoint, checkpoints_of
from caddie.checkpoints.restore import RestoreReport
from caddie.checkpoints.service import CheckpointSettings, RestoreRefused, WorkspaceCheckpoints
from caddie.config.settings import load_settings
from caddie.modes.inspect import InspectError, resolve_session
from caddie.session.files import SessionLockedError
from caddie.session.store import SessionFileError, SessionStore


class CheckpointsCliError(InspectError):
    """A user mistake in ``caddie checkpoints`` / ``restore``: one line, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise CheckpointsCliError(f"{message} (see {self.prog} --help)")


SESSION_HELP = "session file, id or unique id prefix (default: the latest session here)"


def _session_path(arg: str | None, cwd: str) -> Path:
    from caddie.session.store import latest_session_file

    if arg is None:
        latest = latest_session_file(cwd)
        if latest is None:
            raise CheckpointsCliError(
                "no sessions in this directory yet; name one (see: caddie session list)"
            )
        return latest
    path = resolve_session(arg, cwd)
    if not path.exists():
        raise CheckpointsCliError(f"no session file at {path} (see: caddie session list)")
    return path


def _when(timestamp: str) -> str:
    try:
        moment = dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).astimezone()
    except ValueError:
        return timestamp
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _describe(c: Checkpoint) -> str:
    if c.reason == "restore":
        return f"(the files before restoring {c.restores[:12] if c.restores else '?'})"
    text = " ".join(c.prompt.split())
    return text if len(text) <= 60 else text[:59] + "…"


def cmd_checkpoints(session: str | None, as_json: bool, cwd: str, out: TextIO) -> int:
    path = _session_path(session, cwd)
    try:
        store = SessionStore.open(path, repair=False)
    except (SessionFileError, OSError) as e:
        raise CheckpointsCliError(str(e)) from None
    found = checkpoints_of(store.entries())
    if as_json:
        out.write(json.dumps([c.to_json() for c in found], ensure_ascii=False, indent=2) + "\n")
        return 0
    if not found:
        out.write(f"No file checkpoints in {path} yet (one is taken before each prompt).\n")
        return 0
    out.write(f"{'checkpoint':<12}  {'entry':<8}  {'taken':<19}  {'files':>5}  before\n")
    for c in found:
        out.write(
            f"{c.id[:12]:<12}  {c.entry_id:<8}  {_when(c.timestamp):<19}  {len(c.files):>5}  {_describe(c)}\n"
        )
    out.write("Restore one with: caddie restore CHECKPOINT  (files changed since the previous one: --json)\n")
    return 0


def cmd_restore(
    ref: str, session: str | None, *, conversation: bool, force: bool, as_json: bool, cwd: str, out: TextIO
) -> int:
    path = _session_path(session, cwd)
    try:
        store = SessionStore.open(path)
    except SessionLockedError as e:
        raise CheckpointsCliError(f"{e}. To restore while it runs, use /rewind in that caddie.") from None
    except (SessionFileError, OSError) as e:
        raise CheckpointsCliError(str(e)) from None
    try:
        settings = CheckpointSettings.from_settings(load_settings(store.cwd).get("checkpoints"))
        service = WorkspaceCheckpoints(store.cwd, store.session_id, settings)
        why = service.unavailable()
        if why is not None:
            raise CheckpointsCliError(why)
        target = service.target(store.entries(), ref)
        before = service.capture(
            service.last_on_branch(store.branch()), idle=True, reason="restore", restores=target.id
        )
        store.append_custom(CHECKPOINT_TYPE, before)
        report = service.restore_files(target, before, store.branch(), force=force)
        if conversation:
            store.move_leaf(target.entry_id)
            store.append_custom("checkpoint-rewind", {"to": target.id})
    except RestoreRefused as e:
        raise CheckpointsCliError(str(e)) from None
    finally:
        store.close()
    _report(report, as_json, out, conversation)
    return 0


def _report(report: RestoreReport, as_json: bool, out: TextIO, conversation: bool) -> None:
    if as_json:
        out.write(json.dumps({**report.to_json(), "conversation": conversation}, indent=2) + "\n")
        return
    out.write(report.summary() + "\n")
    if conversation:
        out.write("The conversation continues from before that checkpoint's prompt: caddie --resume.\n")


def run(argv: list[str], out: TextIO | None = None) -> int:
    """``caddie checkpoints …`` or ``caddie restore …``."""
    out = out or sys.stdout
    cwd = os.getcwd()
    command, rest = argv[0], argv[1:]
    try:
        if command == "checkpoints":
            p = _Parser(
                prog="caddie checkpoints",
                description="List a session's file checkpoints, oldest first. One is taken before each prompt "
                "(and each goal iteration) in a shadow git repository under ~/.caddie/agent/checkpoints; the "
                "project's own .git is never touched.",
            )
            p.add_argument("session", nargs="?", help=SESSION_HELP)
            p.add_argument(
                "--json", action="store_true", help="an array of {id, entryId, timestamp, reason, files, …}"
            )
            args = p.parse_args(rest)
            return cmd_checkpoints(args.session, args.json, cwd, out)
        p = _Parser(
            prog="caddie restore",
            description="Put the workspace's files back as a checkpoint saved them: changed files reverted, "
            "files created since removed, deleted files restored. A checkpoint of the current files is "
            "taken first, so the restore can be undone by restoring that one. Files edited by hand since "
            "the checkpoint are left alone and reported, unless --force.",
        )
        p.add_argument(
            "checkpoint", help="checkpoint id (or a unique prefix), or its entry id; see caddie checkpoints"
        )
        p.add_argument("session", nargs="?", help=SESSION_HELP)
        p.add_argument(
            "--conversation",
            action="store_true",
            help="also continue the conversation from before its prompt",
        )
        p.add_argument("--force", action="store_true", help="overwrite files edited by hand since, too")
        p.add_argument("--json", action="store_true", help="the report as JSON")
        args = p.parse_args(rest)
        return cmd_restore(
            args.checkpoint,
            args.session,
            conversation=args.conversation,
            force=args.force,
            as_json=args.json,
            cwd=cwd,
            out=out,
        )
    except CheckpointsCliError as e:
        print(f"caddie {command}: {e}", file=sys.stderr)
        return 2
