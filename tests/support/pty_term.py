"""A tiny terminal for benchmarks: run a program on a pseudo-terminal, record its output with timestamps,
answer the queries a real terminal answers (background colour, device attributes, cursor position), type
into it and wait for text to show up."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path

ANSI = re.compile(
    rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[PX^_].*?\x1b\\|\x1b[@-Z\\-_]"
)
_REPLIES = (
    (b"\x1b]11;?", b"\x1b]11;rgb:1e1e/1e1e/1e1e\x1b\\"),  # background colour: dark
    (b"\x1b]10;?", b"\x1b]10;rgb:dddd/dddd/dddd\x1b\\"),
    (b"\x1b[c", b"\x1b[?62;22c"),  # primary device attributes
    (b"\x1b[6n", b"\x1b[1;1R"),  # cursor position
    (b"\x1b[?u", b"\x1b[?0u"),  # kitty keyboard protocol: supported, no flags
)


class PtyProgram:
    def __init__(
        self,
        cmd: list[str],
        env: dict[str, str],
        cwd: str,
        cols: int = 100,
        rows: int = 30,
        stderr: int | None = None,
    ) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            cmd, stdin=slave, stdout=slave, stderr=slave if stderr is None else stderr, env={**env, "TERM": "xterm-256color"}, cwd=cwd,
            start_new_session=True,
        )  # fmt: skip
        os.close(slave)
        self.fd = master
        self.raw = bytearray()
        self.chunks: list[tuple[float, bytes]] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                return
            if not data:
                return
            now = time.perf_counter()
            with self._lock:
                self.raw += data
                self.chunks.append((now, data))
            for query, answer in _REPLIES:
                if query in data:
                    try:
                        os.write(self.fd, answer)
                    except OSError:
                        pass

    def text_since(self, offset: int) -> str:
        with self._lock:
            return ANSI.sub(b"", bytes(self.raw[offset:])).decode("utf-8", "replace")

    @property
    def size(self) -> int:
        with self._lock:
            return len(self.raw)

    def send(self, data: str | bytes) -> None:
        os.write(self.fd, data.encode() if isinstance(data, str) else data)

    def wait_for(self, condition: Callable[[str], bool], offset: int = 0, timeout: float = 60.0) -> float:
        """Seconds from now until ``condition`` holds for the output after ``offset`` (plain text)."""
        start = time.perf_counter()
        while not condition(self.text_since(offset)):
            if time.perf_counter() - start > timeout:
                raise TimeoutError(f"timed out; the output ends with: {self.text_since(offset)[-500:]!r}")
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"the program exited ({self.proc.returncode}): {self.text_since(0)[-1500:]!r}"
                )
            time.sleep(0.001)
        return time.perf_counter() - start

    def rss_mb(self) -> float:
        """Resident memory of the program and its children (MB)."""
        total = 0
        pids = [self.proc.pid]
        while pids:
            pid = pids.pop()
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
                pids += [int(c) for c in children]
            except OSError:
                continue
        return total / 1024

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        try:
            os.close(self.fd)
        except OSError:
            pass
