"""The command that starts caddie the way this process was started: for hints a user copies, such as the
resume command printed on exit (``caddie``, ``uv run caddie``, ``python -m caddie`` or a full path)."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path


def launch_command(
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    executable: str | None = None,
) -> str:
    """How to start caddie again from the same shell (the arguments default to this process's)."""
    argv = sys.argv if argv is None else argv
    environ = os.environ if environ is None else environ
    executable = sys.executable if executable is None else executable
    if environ.get("UV_RUN_RECURSION_DEPTH"):  # `uv run caddie`: the command is not on PATH
        return "uv run caddie"
    program = argv[0] if argv else ""
    name = Path(program).name
    if name in ("__main__.py", "-m", "-c") or not program:  # python -m caddie
        python = executable
        on_path = shutil.which(Path(executable).name, path=environ.get("PATH"))
        if on_path is not None and _same_file(on_path, executable):
            python = Path(executable).name
        return f"{shlex.quote(python)} -m caddie"
    on_path = shutil.which("caddie", path=environ.get("PATH"))
    if on_path is not None and _same_file(on_path, program):
        return "caddie"
    return shlex.quote(str(Path(program).resolve())) if os.sep in program else "caddie"


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
