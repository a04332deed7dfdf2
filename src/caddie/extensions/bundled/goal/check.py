"""Running a goal's check command: the user's shell, the session's directory, a timeout, the output's tail.

The check is a gate, not a test report: it answers with the exit code and at most the last 1,500 bytes of
combined stdout and stderr (failures are usually at the end). A timeout kills the whole process group and
counts as a failure. The check runs in the session's sandbox (``ctx.sandbox``) like the model's commands; when
the sandbox refused something, its note follows the output.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal as signals
from dataclasses import dataclass

from caddie.extensions.api import AbortSignal, Sandbox

CHECK_TIMEOUT_S = 300.0
CHECK_OUTPUT_BYTES = 1_500


@dataclass(frozen=True, slots=True)
class CheckResult:
    code: int | None
    """The exit code; None when the check timed out or was aborted."""
    output: str
    truncated: bool
    timed_out: bool = False
    aborted: bool = False

    @property
    def passed(self) -> bool:
        return self.code == 0


def output_tail(data: bytes, limit: int = CHECK_OUTPUT_BYTES) -> tuple[str, bool]:
    """The last ``limit`` bytes as text (never starting inside a UTF-8 character) and whether it was cut."""
    if len(data) <= limit:
        return data.decode("utf-8", "replace"), False
    tail = data[-limit:]
    start = 0
    while start < min(4, len(tail)) and tail[start] & 0xC0 == 0x80:
        start += 1
    return tail[start:].decode("utf-8", "replace"), True


def user_shell(configured: str | None = None) -> str:
    """``shellPath`` from settings, else ``$SHELL``, else ``/bin/sh``."""
    return configured or os.environ.get("SHELL") or "/bin/sh"


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signals.SIGKILL)


async def run_check(
    command: str,
    cwd: str,
    *,
    shell: str,
    timeout_s: float = CHECK_TIMEOUT_S,
    limit: int = CHECK_OUTPUT_BYTES,
    signal: AbortSignal | None = None,
    sandbox: Sandbox | None = None,
) -> CheckResult:
    prepared = (sandbox or Sandbox.off()).prepare([shell, "-c", command], cwd)
    try:
        proc = await asyncio.create_subprocess_exec(
            *prepared.argv,
            cwd=cwd,
            env=prepared.env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            pass_fds=prepared.pass_fds,
        )
    except OSError as e:
        prepared.close()
        return CheckResult(127, f"{shell}: {e.strerror or e}", False)

    aborted = False

    def on_abort() -> None:
        nonlocal aborted
        aborted = True
        _kill_group(proc.pid)

    remove = signal.add_listener(on_abort) if signal is not None else (lambda: None)
    chunks: list[bytes] = []

    async def collect() -> None:
        assert proc.stdout is not None
        while True:
            chunk = await proc.stdout.read(65_536)
            if not chunk:
                break
            chunks.append(chunk)
            if sum(len(c) for c in chunks) > 4 * limit:  # keep memory bounded: only the tail matters
                joined = b"".join(chunks)[-2 * limit :]
                chunks[:] = [joined]
        await proc.wait()

    timed_out = False
    try:
        await asyncio.wait_for(collect(), timeout_s)
    except TimeoutError:
        timed_out = True
        _kill_group(proc.pid)
        with contextlib.suppress(TimeoutError, ProcessLookupError):
            await asyncio.wait_for(proc.wait(), 5)
    except asyncio.CancelledError:
        _kill_group(proc.pid)
        raise
    finally:
        remove()
        prepared.close()
    data = b"".join(chunks)
    text, truncated = output_tail(data, limit)
    note = prepared.explain(text)
    if note:
        text = f"{text.rstrip()}\n{note}" if text.strip() else note
    if timed_out or aborted:
        return CheckResult(None, text, truncated, timed_out=timed_out, aborted=aborted)
    return CheckResult(proc.returncode, text, truncated)
