"""``/checkpoints`` and ``/rewind`` as typed commands, for modes whose prompt box is plain text (ACP editors):
the parsing and the answer text, over the session API. The TUI has its own pickers (``/rewind`` there).

    /checkpoints                           the session's checkpoints, oldest first
    /rewind CHECKPOINT [both|files|conversation] [--force]
"""

from __future__ import annotations

from caddie.checkpoints.records import Checkpoint
from caddie.errors import UsageError
from caddie.runtime.session_api import Session

COMMANDS = {
    "checkpoints": "List the file checkpoints (one before each prompt)",
    "rewind": "Go back to a checkpoint: /rewind CHECKPOINT [both|files|conversation] [--force]",
}
SCOPES = {"both": (True, True), "files": (True, False), "conversation": (False, True)}


def is_checkpoint_command(text: str) -> bool:
    name = text[1:].split(maxsplit=1)[0] if text.startswith("/") and len(text) > 1 else ""
    return name in COMMANDS


def listing(found: list[Checkpoint]) -> str:
    if not found:
        return "No file checkpoints in this session yet (one is taken before each prompt)."
    lines = ["File checkpoints, oldest first (restore with /rewind CHECKPOINT [both|files|conversation]):"]
    for c in found:
        what = f"before restoring {c.restores[:12]}" if c.reason == "restore" and c.restores else c.prompt
        what = " ".join(what.split())
        what = what if len(what) <= 60 else what[:59] + "…"
        lines.append(
            f"- `{c.id[:12]}` {c.timestamp[:19].replace('T', ' ')} · {len(c.files)} file(s) · {what}"
        )
    return "\n".join(lines)


async def run_checkpoint_command(session: Session, text: str) -> str:
    """Carry out ``/checkpoints`` or ``/rewind …``; the answer for the user (a ``UsageError`` for a mistake)."""
    name, _, rest = text[1:].partition(" ")
    if name == "checkpoints":
        return listing(session.checkpoints.all())
    words = rest.split()
    force = "--force" in words
    words = [w for w in words if w != "--force"]
    if not words or len(words) > 2 or (len(words) == 2 and words[1] not in SCOPES):
        raise UsageError("Usage: /rewind CHECKPOINT [both|files|conversation] [--force] (see /checkpoints).")
    files, conversation = SCOPES[words[1] if len(words) == 2 else "both"]
    report = await session.checkpoints.restore(words[0], files=files, conversation=conversation, force=force)
    lines = [report.summary()] if report is not None else []
    if conversation:
        lines.append("The conversation continues from before that checkpoint's prompt.")
    return "\n".join(lines)
