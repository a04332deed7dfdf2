"""Moving a session in and out as Pi 0.84.4's commands do: a JSONL export (``/export file.jsonl``), an import
(``/import file.jsonl``: the file is copied into this project's sessions and resumed) and ``/share`` (the
HTML export uploaded as a secret GitHub gist through the ``gh`` command)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from caddie.errors import UsageError
from caddie.session.entries import entry_to_json
from caddie.session.files import SessionFileError, json_line, load_file
from caddie.session.store import SessionStore, default_session_dir

GH_TIMEOUT_S = 120.0


class TransferError(UsageError):
    """An import, export or share that cannot be done; the message says what to do instead."""


def session_jsonl(store: SessionStore) -> bytes:
    """The session as its file holds it: the header line, then every entry (all branches), one per line."""
    return json_line(store.header.to_json()) + b"".join(json_line(entry_to_json(e)) for e in store.entries())


def export_jsonl(store: SessionStore, target: Path) -> Path:
    """Write the session (also an in-memory one) to ``target`` (folders created); returns its absolute path."""
    target = target.expanduser().absolute()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.part")
        partial.write_bytes(session_jsonl(store))
        partial.replace(target)
    except OSError as e:
        raise TransferError(f"Could not write {target}: {e.strerror or e}.") from None
    return target


def import_session(source: str, cwd: str, session_dir: str | Path | None = None) -> Path:
    """Check that ``source`` is a session file caddie (and Pi) can read, and copy it into this project's
    sessions folder (``session_dir``, else the default one), keeping its name; returns the copy, ready to be
    resumed. A file already there is resumed as it is."""
    file = Path(source).expanduser()
    file = file if file.is_absolute() else Path(cwd) / file
    if not file.is_file():
        raise TransferError(f"No session file at {file}. Usage: /import <path.jsonl>")
    try:
        load_file(file, repair=False)
    except SessionFileError as e:
        raise TransferError(f"Cannot import {file}: {e}") from None
    folder = Path(session_dir).expanduser() if session_dir else default_session_dir(str(Path(cwd).resolve()))
    target = folder / file.name
    if target.resolve() == file.resolve():
        return target
    if target.exists():
        raise TransferError(f"{target} exists already: resume it with /resume, or rename the file to import.")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, target)
    except OSError as e:
        raise TransferError(f"Could not copy {file} to {target}: {e.strerror or e}.") from None
    return target


async def share_file(path: Path, description: str) -> str:
    """Upload ``path`` as a secret gist with the GitHub CLI; returns the gist's address."""
    gh = shutil.which("gh")
    if gh is None:
        raise TransferError(
            "/share uploads a secret gist with the GitHub CLI, which is not installed: install gh and run "
            "gh auth login, or use /export to write the session to a file."
        )
    proc = await asyncio.create_subprocess_exec(
        gh,
        "gist",
        "create",
        "--desc",
        description,
        str(path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), GH_TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise TransferError(
            f"gh gist create did not finish in {GH_TIMEOUT_S:.0f} s; nothing was shared."
        ) from None
    if proc.returncode != 0:
        reason = err.decode(errors="replace").strip().splitlines()
        raise TransferError(
            f"gh gist create failed ({reason[-1] if reason else f'exit code {proc.returncode}'}); "
            "check gh auth status."
        )
    lines = out.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else ""
