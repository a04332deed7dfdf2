"""The RPC reader: LF-only framing, CRLF, lines split across reads, the line limit, a last line without LF."""

from __future__ import annotations

import asyncio
import os
import threading

from caddie.modes.rpc import LineTooLong, _lines


async def read_all(chunks: list[bytes], limit: int) -> list[bytes | int]:
    read_fd, write_fd = os.pipe()

    def writer() -> None:
        for chunk in chunks:
            os.write(write_fd, chunk)
        os.close(write_fd)

    thread = threading.Thread(target=writer)
    thread.start()
    out: list[bytes | int] = []
    with os.fdopen(read_fd, "rb", buffering=0) as stdin:
        async for line in _lines(stdin, limit):
            out.append(line.size if isinstance(line, LineTooLong) else line)
    thread.join()
    return out


def test_lines_split_on_lf_only_across_reads_with_a_limit() -> None:
    separators = '{"m":"a\u2028b\u2029c"}'.encode()
    chunks = [
        b'{"a":1}\r\n{"b"',
        b":2}\n",
        separators + b"\n",
        b"x" * 50 + b"\n",
        b'{"after":true}\n',
        b"tail",
    ]
    lines = asyncio.run(read_all(chunks, limit=40))
    assert lines == [b'{"a":1}\r', b'{"b":2}', separators, 50, b'{"after":true}', b"tail"]


def test_an_over_long_line_spanning_many_reads_is_dropped_as_it_streams() -> None:
    chunks = [b"y" * 30 for _ in range(10)] + [b"\n", b"ok\n", b"z" * 100]
    assert asyncio.run(read_all(chunks, limit=64)) == [300, b"ok", 100]
