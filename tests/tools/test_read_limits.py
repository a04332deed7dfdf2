"""``read`` never blocks on, or reads without bound from, what is not a regular file of sensible size.

Each case runs where a hang or a memory blow-up would show: FIFOs and devices are refused at once, a huge
(sparse) file is read in chunks, an abort ends a long read, and chunked reading gives exactly the text a
whole-file read gives.
"""

from __future__ import annotations

import asyncio
import os
import random
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from caddie.ai.abort import AbortController
from caddie.tools.files import iter_line_pieces
from caddie.tools.read import create_read_tool

from .conftest import run_tool

Run = Callable[..., Any]


def test_fifo_is_refused_without_blocking(tmp_path: Path, run: Run) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    out = run(create_read_tool(str(tmp_path)), {"path": "pipe"})
    assert out.error == (
        "Cannot read pipe: it is a named pipe (FIFO), not a regular file, and reading it could block or "
        "never end. Use bash to inspect it."
    )


def test_devices_are_refused(tmp_path: Path, run: Run) -> None:
    out = run(create_read_tool(str(tmp_path)), {"path": "/dev/zero"})
    assert out.error is not None and "it is a character device, not a regular file" in out.error


def test_directory_error_is_unchanged(tmp_path: Path, run: Run) -> None:
    (tmp_path / "d").mkdir()
    assert run(create_read_tool(str(tmp_path)), {"path": "d"}).error == (
        "EISDIR: illegal operation on a directory, read"
    )


def test_huge_sparse_file_is_read_in_bounded_memory(tmp_path: Path, run: Run) -> None:
    """A 1 GiB file (text head, then zeros): Python never holds more than a few chunks of it."""
    big = tmp_path / "big.log"
    with big.open("wb") as fh:
        fh.write(b"".join(f"line {i}\n".encode() for i in range(2000)))
        fh.truncate(1 << 30)
    tracemalloc.start()
    try:
        out = run(create_read_tool(str(tmp_path)), {"path": "big.log", "limit": 3})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.text.split("\n")[:3] == ["line 0", "line 1", "line 2"]
    assert out.text.endswith("[1998 more lines in file. Use offset=4 to continue.]")
    assert peak < 32 * 1024 * 1024, f"peak {peak / 1e6:.0f} MB of Python memory for a 1 GiB file"


def test_abort_ends_a_long_read(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with big.open("wb") as fh:
        fh.write(b"x\n" * 5000)
        fh.truncate(8 << 30)
    controller = AbortController()

    async def go() -> str | None:
        tool = create_read_tool(str(tmp_path))
        task = asyncio.create_task(run_tool(tool, {"path": "big.txt"}, signal=controller.signal))
        await asyncio.sleep(0.05)
        controller.abort()
        outcome = await asyncio.wait_for(task, timeout=30)
        return outcome.error

    assert asyncio.run(go()) == "Operation aborted"


@pytest.mark.parametrize("seed", range(30))
def test_chunked_lines_equal_whole_decode(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    alphabet = [b"a", b"\n", b"\xc3\xa9", b"\xe2\x82\xac", b"\xff", b"\xe2", b"\r", b"\xf0\x9f\x98\x80"]
    data = b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 300)))
    path = tmp_path / "f"
    path.write_bytes(data)
    with path.open("rb") as fh:
        lines: dict[int, str] = {}
        for piece in iter_line_pieces(fh, chunk_bytes=rng.randint(1, 7)):
            lines[piece.index] = lines.get(piece.index, "") + piece.text
    assert list(lines.values()) == data.decode("utf-8", "replace").split("\n")


@pytest.mark.parametrize("seed", range(40))
def test_chunked_read_equals_whole_file_semantics(seed: int, tmp_path: Path, run: Run) -> None:
    """7-byte chunks (lines split across many reads) give what one chunk gives; one chunk is Pi's whole-file
    read, which the Pi parity suite checks byte for byte."""
    from caddie.tools import files

    rng = random.Random(seed)
    lines = [
        ("é" if rng.random() < 0.2 else "a") * rng.choice([0, 1, 5, 40, 30000, 60000])
        for _ in range(rng.randint(1, 12))
    ]
    text = "\n".join(lines) + ("\n" if rng.random() < 0.5 else "")
    (tmp_path / "t.txt").write_text(text)
    offset = rng.choice([None, 1, 2, 3, 2.5])
    limit = rng.choice([None, 0, 1, 3, 100, -1, -2])
    args: dict[str, Any] = {"path": "t.txt"}
    if offset is not None:
        args["offset"] = offset
    if limit is not None:
        args["limit"] = limit
    old_chunk = files.CHUNK_BYTES
    whole = run(create_read_tool(str(tmp_path)), args)
    try:
        files.CHUNK_BYTES = 7  # many chunks, lines split across them
        chunked = run(create_read_tool(str(tmp_path)), args)
    finally:
        files.CHUNK_BYTES = old_chunk
    assert (chunked.error, chunked.result and chunked.text, chunked.result and chunked.details) == (
        whole.error,
        whole.result and whole.text,
        whole.result and whole.details,
    )
