"""``edit``: matching rules, error texts, line endings, BOM, details and the per-file mutation queue."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from caddie.tools.diff import diff_lines, display_diff, unified_patch
from caddie.tools.edit import create_edit_tool, normalize_for_fuzzy_match, prepare_edit_arguments
from caddie.tools.mutation_queue import file_mutation_lock
from caddie.tools.write import create_write_tool

from .conftest import run_tool

Run = Callable[..., Any]
CODE = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"


@pytest.fixture
def src(tmp_path: Path) -> Path:
    path = tmp_path / "f.py"
    path.write_text(CODE)
    return path


def _edits(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"oldText": old, "newText": new} for old, new in pairs]


def test_success_and_details(src: Path, run: Run) -> None:
    out = run(create_edit_tool(str(src.parent)), {"path": "f.py", "edits": _edits(("return 2", "return 20"))})
    assert out.text == "Successfully replaced 1 block(s) in f.py."
    assert src.read_text() == CODE.replace("return 2", "return 20")
    assert out.details == {
        "diff": "   ...\n 2     return 1\n 3 \n 4 \n 5 def g():\n-6     return 2\n+6     return 20",
        "patch": "--- f.py\n+++ f.py\n@@ -2,5 +2,5 @@\n     return 1\n \n \n def g():\n-    return 2\n+    return 20\n",
        "firstChangedLine": 6,
    }


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        (_edits(("nope", "x")), "Could not find the exact text in f.py. The old text must match exactly including all "
                                "whitespace and newlines."),
        (_edits(("def f", "x"), ("nope", "y")), "Could not find edits[1] in f.py. The oldText must match exactly "
                                                "including all whitespace and newlines."),
        (_edits(("return", "x")), "Found 2 occurrences of the text in f.py. The text must be unique. Please provide "
                                  "more context to make it unique."),
        (_edits(("def f", "x"), ("return", "y")), "Found 2 occurrences of edits[1] in f.py. Each oldText must be "
                                                  "unique. Please provide more context to make it unique."),
        (_edits(("", "x")), "oldText must not be empty in f.py."),
        (_edits(("def f", "x"), ("", "y")), "edits[1].oldText must not be empty in f.py."),
        (_edits(("def f():\n    return 1", "a"), ("return 1\n", "b")),
         "edits[0] and edits[1] overlap in f.py. Merge them into one edit or target disjoint regions."),
        (_edits(("return 1", "return 1")), "No changes made to f.py. The replacement produced identical content. "
                                           "This might indicate an issue with special characters or the text not "
                                           "existing as expected."),
        (_edits(("return 1", "return 1"), ("return 2", "return 2")),
         "No changes made to f.py. The replacements produced identical content."),
        ([], "Edit tool input is invalid. edits must contain at least one replacement."),
    ],
)  # fmt: skip
def test_errors(src: Path, run: Run, edits: list[dict[str, str]], message: str) -> None:
    assert run(create_edit_tool(str(src.parent)), {"path": "f.py", "edits": edits}).error == message
    assert src.read_text() == CODE


def test_missing_file(tmp_path: Path, run: Run) -> None:
    out = run(create_edit_tool(str(tmp_path)), {"path": "x.py", "edits": _edits(("a", "b"))})
    assert out.error == "Could not edit file: x.py. Error code: ENOENT."


def test_fuzzy_match_keeps_untouched_lines(tmp_path: Path, run: Run) -> None:
    path = tmp_path / "q.py"
    path.write_text("keep = \u2018x\u2019  \nname = \u201cHello\u201d   \nother = 1 \u2013 2\n")
    out = run(
        create_edit_tool(str(tmp_path)), {"path": "q.py", "edits": _edits(('name = "Hello"', 'name = "Hi"'))}
    )
    assert out.text == "Successfully replaced 1 block(s) in q.py."
    # Only the edited line is rewritten from the normalised view; the others keep their exact bytes.
    assert path.read_text() == 'keep = \u2018x\u2019  \nname = "Hi"\nother = 1 \u2013 2\n'


def test_crlf_and_bom_are_preserved(tmp_path: Path, run: Run) -> None:
    path = tmp_path / "w.txt"
    path.write_bytes("\ufeffone\r\ntwo\r\nthree\r\n".encode())
    out = run(create_edit_tool(str(tmp_path)), {"path": "w.txt", "edits": _edits(("two\nthree", "2\n3"))})
    assert out.text == "Successfully replaced 1 block(s) in w.txt."
    assert path.read_bytes() == "\ufeffone\r\n2\r\n3\r\n".encode()


def test_prepare_arguments_shapes() -> None:
    one = {"oldText": "a", "newText": "b"}
    assert prepare_edit_arguments({"path": "p", "edits": json.dumps([one])}) == {"path": "p", "edits": [one]}
    assert prepare_edit_arguments({"path": "p", "edits": json.dumps(one)}) == {"path": "p", "edits": [one]}
    assert prepare_edit_arguments({"path": "p", "edits": one}) == {"path": "p", "edits": [one]}
    assert prepare_edit_arguments({"path": "p", "oldText": "a", "newText": "b"}) == {
        "path": "p",
        "edits": [one],
    }
    two = {"oldText": "c", "newText": "d"}
    assert prepare_edit_arguments({"path": "p", "edits": [two], **one}) == {"path": "p", "edits": [two, one]}
    assert prepare_edit_arguments({"path": "p", "edits": "junk"}) == {"path": "p", "edits": "junk"}


def test_legacy_arguments_run(src: Path, run: Run) -> None:
    out = run(
        create_edit_tool(str(src.parent)), {"path": "f.py", "oldText": "return 1", "newText": "return 5"}
    )
    assert out.text == "Successfully replaced 1 block(s) in f.py."


def test_fuzzy_normalisation() -> None:
    assert normalize_for_fuzzy_match("\u201ca\u201d \u2014 \u2018b\u2019\u00a0 \nx\u3000") == "\"a\" - 'b'\nx"
    assert normalize_for_fuzzy_match("\ufb01") == "fi"  # NFKC


def test_parallel_edits_to_one_file_are_serialised(src: Path) -> None:
    async def go() -> list[str]:
        tool = create_edit_tool(str(src.parent))
        a = run_tool(tool, {"path": "f.py", "edits": _edits(("return 1", "return 10"))})
        b = run_tool(tool, {"path": str(src), "edits": _edits(("return 2", "return 20"))})
        return [o.text for o in await asyncio.gather(a, b)]

    assert asyncio.run(go()) == [
        "Successfully replaced 1 block(s) in f.py.",
        f"Successfully replaced 1 block(s) in {src}.",
    ]
    assert src.read_text() == CODE.replace("return 1", "return 10").replace("return 2", "return 20")


def test_mutation_lock_orders_writers(tmp_path: Path) -> None:
    order: list[str] = []

    async def hold(name: str, delay: float) -> None:
        async with file_mutation_lock(str(tmp_path / "x")):
            order.append(f"{name}+")
            await asyncio.sleep(delay)
            order.append(f"{name}-")

    async def go() -> None:
        write = create_write_tool(str(tmp_path))
        await asyncio.gather(hold("a", 0.02), hold("b", 0), run_tool(write, {"path": "y", "content": "free"}))

    asyncio.run(go())
    assert order == ["a+", "a-", "b+", "b-"]


def test_diff_helpers() -> None:
    changes = diff_lines("a\nb\nc\nb\nd\n", "a\nb\nd\nb\nc\n")
    assert [(c.added, c.removed, c.value) for c in changes] == [
        (False, False, "a\nb\n"),
        (False, True, "c\nb\n"),
        (False, False, "d\n"),
        (True, False, "b\nc\n"),
    ]
    assert unified_patch("a.txt", "l1\nl2\nl3\n", "l1\nX\nl3") == (
        "--- a.txt\n+++ a.txt\n@@ -1,3 +1,3 @@\n l1\n-l2\n-l3\n+X\n+l3\n\\ No newline at end of file\n"
    )
    text, first = display_diff(
        "".join(f"{i}\n" for i in range(20)), "".join(f"{i}\n" for i in range(20) if i != 10)
    )
    assert first == 11
    assert text.splitlines()[0] == "    ..." and "-11 10" in text


def test_edit_of_a_latin1_file_changes_only_the_edited_bytes(tmp_path: Path, run: Run) -> None:
    path = tmp_path / "legacy.txt"
    path.write_bytes("café = 1\nnaïve = 2\nrésumé = 3\n".encode("latin-1"))
    out = run(
        create_edit_tool(str(tmp_path)), {"path": "legacy.txt", "edits": [{"oldText": "2", "newText": "two"}]}
    )
    assert out.error is None, out.error
    assert path.read_bytes() == "café = 1\nnaïve = two\nrésumé = 3\n".encode("latin-1")
    assert "\ufffd" in out.details["diff"]  # shown readably, never a lone surrogate in the session


def test_edit_refuses_a_fifo_without_blocking(tmp_path: Path, run: Run) -> None:
    os.mkfifo(tmp_path / "pipe")
    out = run(create_edit_tool(str(tmp_path)), {"path": "pipe", "edits": [{"oldText": "a", "newText": "b"}]})
    assert out.error == "Could not edit file: pipe. It is a named pipe (FIFO), not a regular file."


def test_write_refuses_a_fifo_without_blocking(tmp_path: Path, run: Run) -> None:
    os.mkfifo(tmp_path / "pipe")
    out = run(create_write_tool(str(tmp_path)), {"path": "pipe", "content": "x"})
    assert out.error == "Could not write pipe: it is a named pipe (FIFO), not a regular file."
