"""``read`` and ``write`` on real files."""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PIL import Image

from caddie.tools.paths import resolve_read_path, resolve_to_cwd
from caddie.tools.read import NON_VISION_IMAGE_NOTE, create_read_tool
from caddie.tools.write import create_write_tool

Run = Callable[..., Any]


def test_read_text_offsets_and_limits(tmp_path: Path, run: Run) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    read = create_read_tool(str(tmp_path))
    assert run(read, {"path": "a.txt"}).text == "one\ntwo\nthree\n"
    assert run(read, {"path": "a.txt", "offset": 2, "limit": 1}).text == (
        "two\n\n[2 more lines in file. Use offset=3 to continue.]"
    )
    out = run(read, {"path": "a.txt", "offset": 9})
    assert out.error == "Offset 9 is beyond end of file (4 lines total)"


def test_read_truncates_with_continuation_hint(tmp_path: Path, run: Run) -> None:
    (tmp_path / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 3001)))
    out = run(create_read_tool(str(tmp_path)), {"path": "big.txt"})
    assert out.text.endswith("line 2000\n\n[Showing lines 1-2000 of 3001. Use offset=2001 to continue.]")
    assert out.details["truncation"]["truncatedBy"] == "lines"

    (tmp_path / "wide.txt").write_text("".join("x" * 200 + "\n" for _ in range(400)))
    out = run(create_read_tool(str(tmp_path)), {"path": "wide.txt"})
    assert out.text.endswith("[Showing lines 1-254 of 401 (50.0KB limit). Use offset=255 to continue.]")


def test_read_long_single_line_hint(tmp_path: Path, run: Run) -> None:
    (tmp_path / "min.js").write_text("a" * 60_000 + "\n")
    out = run(create_read_tool(str(tmp_path)), {"path": "min.js"})
    assert (
        out.text == "[Line 1 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '1p' min.js | head -c 51200]"
    )


def test_read_errors(tmp_path: Path, run: Run) -> None:
    read = create_read_tool(str(tmp_path))
    assert run(read, {"path": "nope"}).error == f"ENOENT: no such file or directory, access '{tmp_path}/nope'"
    (tmp_path / "d").mkdir()
    assert run(read, {"path": "d"}).error == "EISDIR: illegal operation on a directory, read"
    (tmp_path / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02binary")
    error = run(read, {"path": "blob.bin"}).error
    assert error is not None and error.startswith("Cannot read blob.bin: it is a binary file")


def test_read_invalid_utf8_is_replaced_not_refused(tmp_path: Path, run: Run) -> None:
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9\n")
    assert run(create_read_tool(str(tmp_path)), {"path": "latin1.txt"}).text == "caf\ufffd\n"


def _png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (1, 2, 3)).save(out, "PNG")
    return out.getvalue()


def test_read_image_small_and_resized(tmp_path: Path, run: Run) -> None:
    (tmp_path / "s.png").write_bytes(_png(4, 4))
    (tmp_path / "l.png").write_bytes(_png(4000, 1000))
    read = create_read_tool(str(tmp_path))

    small = run(read, {"path": "s.png"})
    assert small.result.content[0].text == "Read image file [image/png]"
    image = small.result.content[1]
    assert image.mime_type == "image/png" and base64.b64decode(image.data) == _png(4, 4)

    large = run(read, {"path": "l.png"})
    assert large.result.content[0].text == (
        "Read image file [image/png]\n[Image: original 4000x1000, displayed at 2000x500. Multiply coordinates by 2.00 "
        "to map to original image.]"
    )
    resized = Image.open(io.BytesIO(base64.b64decode(large.result.content[1].data)))
    assert resized.size == (2000, 500)


def test_read_image_notes(tmp_path: Path, run: Run) -> None:
    out = io.BytesIO()
    Image.new("RGB", (3, 3)).save(out, "BMP")
    (tmp_path / "x.bmp").write_bytes(out.getvalue())
    model = type("Model", (), {"input": ["text"]})()
    ctx = type("Ctx", (), {"model": model})()
    result = run(create_read_tool(str(tmp_path)), {"path": "x.bmp"}, ctx=ctx)
    assert result.result.content[0].text == (
        f"Read image file [image/png]\n[Image converted from image/bmp to image/png.]\n{NON_VISION_IMAGE_NOTE}"
    )


def test_write_creates_dirs_and_counts_utf16_units(tmp_path: Path, run: Run) -> None:
    write = create_write_tool(str(tmp_path))
    out = run(write, {"path": "a/b/c.txt", "content": "h\u00e9 \U0001f600"})
    assert out.text == "Successfully wrote 5 bytes to a/b/c.txt"
    assert (tmp_path / "a/b/c.txt").read_bytes() == "h\u00e9 \U0001f600".encode()
    (tmp_path / "d").mkdir()
    assert run(write, {"path": "d", "content": "x"}).error == (
        f"EISDIR: illegal operation on a directory, open '{tmp_path}/d'"
    )
    (tmp_path / "f").write_text("x")
    assert (
        run(write, {"path": "f/x", "content": "x"}).error
        == f"EEXIST: file already exists, mkdir '{tmp_path}/f'"
    )


def test_paths(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    assert resolve_to_cwd("@src/x.py", "/repo") == "/repo/src/x.py"
    assert resolve_to_cwd("~/notes.md", "/repo") == "/home/someone/notes.md"
    assert resolve_to_cwd("~", "/repo") == "/home/someone"
    assert resolve_to_cwd("a\u00a0b", "/repo") == "/repo/a b"
    assert resolve_to_cwd("/abs/../x/", "/repo") == "/x"
    assert resolve_to_cwd("file:///tmp/a%20b", "/repo") == "/tmp/a b"
    shot = tmp_path / "Shot 10.00.00\u202fAM.png"
    shot.write_bytes(b"x")
    assert resolve_read_path("Shot 10.00.00 AM.png", str(tmp_path)) == str(shot)
    assert os.path.basename(resolve_read_path("missing.txt", str(tmp_path))) == "missing.txt"
