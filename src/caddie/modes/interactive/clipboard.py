"""The system clipboard, read for Ctrl+V (Pi's ``app.clipboard.pasteImage``): an image is saved to a file whose
path goes into the editor (the model reads it with the ``read`` tool, as in Pi), otherwise the text is pasted.

Read with the platform's tools, as subprocesses with a timeout: ``wl-paste`` on Wayland, ``xclip`` on X11,
``pbpaste`` (text) and ``osascript`` (images) on macOS. None of them: nothing to paste, said in one line.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp", "image/gif": "gif"}
TIMEOUT_S = 3.0


async def _run(*command: str) -> bytes | None:
    exe = shutil.which(command[0])
    if exe is None:
        return None
    try:
        proc = await asyncio.create_subprocess_exec(
            exe, *command[1:], stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        out, _ = await asyncio.wait_for(proc.communicate(), TIMEOUT_S)
    except (OSError, TimeoutError):
        return None
    return out if proc.returncode == 0 else None


def _wayland() -> bool:
    return bool(os.environ.get("WAYLAND_DISPLAY")) or os.environ.get("XDG_SESSION_TYPE") == "wayland"


def preferred_image_type(types: list[str]) -> str | None:
    """The clipboard type to read: PNG, JPEG, WebP, GIF in that order, else any image type."""
    bases = {t.split(";")[0].strip().lower(): t.strip() for t in types if t.strip()}
    for wanted in IMAGE_TYPES:
        if wanted in bases:
            return bases[wanted]
    return next((raw for base, raw in bases.items() if base.startswith("image/")), None)


async def read_image() -> tuple[bytes, str] | None:
    """The clipboard's image and its MIME type, or None."""
    if _wayland() and shutil.which("wl-paste"):
        listed = await _run("wl-paste", "--list-types")
        wanted = preferred_image_type(listed.decode(errors="replace").splitlines()) if listed else None
        data = await _run("wl-paste", "--no-newline", "--type", wanted) if wanted else None
        if data:
            return data, wanted or "image/png"
    if os.environ.get("DISPLAY") and shutil.which("xclip"):
        listed = await _run("xclip", "-selection", "clipboard", "-t", "TARGETS", "-o")
        wanted = preferred_image_type(listed.decode(errors="replace").splitlines()) if listed else None
        data = await _run("xclip", "-selection", "clipboard", "-t", wanted, "-o") if wanted else None
        if data:
            return data, wanted or "image/png"
    if sys.platform == "darwin" and shutil.which("osascript"):
        target = Path(tempfile.gettempdir()) / f"caddie-clipboard-{uuid.uuid4().hex}.png"
        script = (
            f'set f to open for access POSIX file "{target}" with write permission\n'
            "write (the clipboard as «class PNGf») to f\nclose access f"
        )
        if await _run("osascript", "-e", script) is not None and target.exists() and target.stat().st_size:
            data = target.read_bytes()
            target.unlink(missing_ok=True)
            return data, "image/png"
        target.unlink(missing_ok=True)
    return None


async def read_text() -> str | None:
    """The clipboard's text, or None."""
    for command in (
        ("wl-paste", "--no-newline") if _wayland() else None,
        ("xclip", "-selection", "clipboard", "-o") if os.environ.get("DISPLAY") else None,
        ("xsel", "--clipboard", "--output") if os.environ.get("DISPLAY") else None,
        ("pbpaste",) if sys.platform == "darwin" else None,
    ):
        if command is None:
            continue
        out = await _run(*command)
        if out:
            return out.decode("utf-8", errors="replace")
    return None


def save_image(data: bytes, mime: str, directory: str | None = None) -> Path:
    """Write a pasted image to a temporary file (``caddie-clipboard-<id>.png``) and return its path."""
    folder = Path(directory or tempfile.gettempdir())
    path = (
        folder
        / f"caddie-clipboard-{uuid.uuid4()}.{EXTENSIONS.get(mime.split(';')[0].strip().lower(), 'png')}"
    )
    path.write_bytes(data)
    return path
