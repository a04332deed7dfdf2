"""Byte-for-byte parity of caddie's built-in tools with Pi 0.84's, run side by side on the same files.

Needs Node >= 22.19 and the Pi package (``$CADDIE_PI_DIR``, default ``.cache/pi``); skipped otherwise, failed under ``CI=1``. Every
case is set up in its own directory, run through Pi's tools (``scripts/pi_tools_compare.mjs``, which mirrors
Pi's agent loop: prepareArguments, validateToolArguments, execute), reset, run through caddie's tools the way
caddie's loop runs them, and the text blocks the model would receive are compared exactly. Only the name of
bash's spill file may differ (``pi-bash-<id>.log`` vs ``caddie-bash-<id>.log``); its content must not.
File-changing cases also compare the resulting files; grep/find cases run a second time through caddie's
pure-Python fallback.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from caddie.ai.abort import AbortController
from caddie.tools import ToolArgumentError, ToolError, session_env, validate_arguments
from caddie.tools.bash import create_bash_tool
from caddie.tools.edit import create_edit_tool
from caddie.tools.find import create_find_tool, fd_supports_no_require_git, find_fd
from caddie.tools.grep import create_grep_tool
from caddie.tools.ls import create_ls_tool
from caddie.tools.read import create_read_tool
from caddie.tools.write import create_write_tool
from tests.interop.pi import PI_DIR, require_pi, skip_or_fail

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "pi_tools_compare.mjs"
SPILL = re.compile(r"/(?:pi|caddie)-bash-[0-9a-f]{16}\.log")
SESSION = {"id": "sess-123", "file": "/tmp/sessions/s.jsonl", "provider": "anthropic", "model": "claude-x"}

# --------------------------------------------------------------------------------------------------
# Cases


@dataclass
class Case:
    id: str
    tool: str
    args: Any
    files: Mapping[str, bytes | str | None] = field(default_factory=dict)
    """Relative path -> content (None = directory; ``->target`` strings starting with '->' are symlinks)."""
    git: bool = False
    ctx: dict[str, Any] | None = None
    abort_after_ms: int | None = None
    options: dict[str, str] = field(default_factory=dict)
    unordered: bool = False
    """rg/fd search in parallel: compare the result lines as a set (notices must still match)."""
    compare_files: bool = False
    fallback: bool = False
    """Also compare caddie's pure-Python grep/find with Pi."""
    compare_details: bool = False


def _png(width: int, height: int, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, "PNG")
    return out.getvalue()


def _image(fmt: str, width: int = 4, height: int = 3) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (10, 120, 200)).save(out, fmt)
    return out.getvalue()


def _lines(count: int, width: int = 0, prefix: str = "line") -> str:
    return "".join(f"{prefix} {i}{'x' * width}\n" for i in range(1, count + 1))


def build_cases() -> list[Case]:
    cases: list[Case] = []

    def add(case: Case) -> None:
        cases.append(case)

    small = {"a.txt": "alpha\nbeta\ngamma\n"}
    # ---- read -------------------------------------------------------------------------------------
    add(Case("read-small", "read", {"path": "a.txt"}, small, compare_details=True))
    add(Case("read-empty", "read", {"path": "e.txt"}, {"e.txt": ""}))
    add(Case("read-no-final-newline", "read", {"path": "n.txt"}, {"n.txt": "one\ntwo"}))
    add(Case("read-offset-limit", "read", {"path": "a.txt", "offset": 2, "limit": 1}, small))
    add(Case("read-offset-to-end", "read", {"path": "a.txt", "offset": 2, "limit": 100}, small))
    add(Case("read-offset-last-empty-line", "read", {"path": "a.txt", "offset": 4}, small))
    add(Case("read-offset-past-eof", "read", {"path": "a.txt", "offset": 5}, small))
    add(Case("read-offset-zero", "read", {"path": "a.txt", "offset": 0}, small))
    add(Case("read-offset-negative", "read", {"path": "a.txt", "offset": -3}, small))
    add(Case("read-offset-float", "read", {"path": "a.txt", "offset": 2.5, "limit": 1}, small))
    add(Case("read-limit-zero", "read", {"path": "a.txt", "limit": 0}, small))
    add(Case("read-offset-string", "read", {"path": "a.txt", "offset": "2"}, small))
    add(Case("read-offset-null", "read", {"path": "a.txt", "offset": None}, small))
    add(Case("read-extra-arg", "read", {"path": "a.txt", "bogus": True}, small))
    big = _lines(3000)
    add(Case("read-trunc-lines", "read", {"path": "big.txt"}, {"big.txt": big}, compare_details=True))
    add(Case("read-trunc-lines-offset", "read", {"path": "big.txt", "offset": 1500}, {"big.txt": big}))
    add(Case("read-limit-remaining", "read", {"path": "big.txt", "offset": 10, "limit": 5}, {"big.txt": big}))
    wide = _lines(1000, width=100)
    add(Case("read-trunc-bytes", "read", {"path": "w.txt"}, {"w.txt": wide}, compare_details=True))
    add(Case("read-trunc-bytes-offset", "read", {"path": "w.txt", "offset": 600}, {"w.txt": wide}))
    add(Case("read-trunc-bytes-limit", "read", {"path": "w.txt", "offset": 2, "limit": 900}, {"w.txt": wide}))
    long_line = "start\n" + "y" * 60_000 + "\nend\n"
    add(Case("read-long-first-line", "read", {"path": "l.txt"}, {"l.txt": "z" * 70_000 + "\nnext\n"}))
    add(Case("read-long-line-offset", "read", {"path": "l.txt", "offset": 2}, {"l.txt": long_line}))
    add(Case("read-long-line-before", "read", {"path": "l.txt"}, {"l.txt": long_line}))
    multibyte = "".join(f"é😀 line {i} ünïcödé\n" for i in range(3000))
    add(Case("read-multibyte-trunc", "read", {"path": "m.txt"}, {"m.txt": multibyte}))
    add(Case("read-crlf", "read", {"path": "c.txt"}, {"c.txt": "one\r\ntwo\r\nthree\r\n"}))
    add(
        Case(
            "read-invalid-utf8", "read", {"path": "bad.txt"}, {"bad.txt": b"ok \xff\xfe x \xe2\x82 y \xc3\n"}
        )
    )
    add(Case("read-missing", "read", {"path": "missing.txt"}))
    add(Case("read-directory", "read", {"path": "d"}, {"d": None}))
    add(Case("read-at-prefix", "read", {"path": "@a.txt"}, small))
    add(Case("read-unicode-space", "read", {"path": "a\u00a0b.txt"}, {"a b.txt": "spaced\n"}))
    add(Case("read-dotdot", "read", {"path": "sub/../a.txt"}, {**small, "sub": None}))
    add(Case("read-png", "read", {"path": "p.png"}, {"p.png": _png(3, 2)}))
    add(
        Case(
            "read-png-nonvision",
            "read",
            {"path": "p.png"},
            {"p.png": _png(3, 2)},
            ctx={"modelInput": ["text"]},
        )
    )
    add(
        Case(
            "read-png-vision",
            "read",
            {"path": "p.png"},
            {"p.png": _png(3, 2)},
            ctx={"modelInput": ["text", "image"]},
        )
    )
    add(Case("read-png-large", "read", {"path": "big.png"}, {"big.png": _png(3000, 1000)}))
    add(Case("read-png-tall", "read", {"path": "tall.png"}, {"tall.png": _png(500, 2500)}))
    add(Case("read-jpeg", "read", {"path": "x.jpg"}, {"x.jpg": _image("JPEG")}))
    add(Case("read-gif", "read", {"path": "x.gif"}, {"x.gif": _image("GIF")}))
    add(Case("read-webp", "read", {"path": "x.webp"}, {"x.webp": _image("WEBP")}))
    add(Case("read-bmp", "read", {"path": "x.bmp"}, {"x.bmp": _image("BMP")}))
    add(Case("read-image-wrong-ext", "read", {"path": "image.txt"}, {"image.txt": _png(2, 2)}))
    add(Case("read-limit-negative", "read", {"path": "a.txt", "limit": -1}, small))
    add(Case("read-offset-huge", "read", {"path": "a.txt", "offset": 1e300}, small))
    add(Case("read-trailing-slash", "read", {"path": "a.txt/"}, small))
    add(Case("read-exact-2000", "read", {"path": "x.txt"}, {"x.txt": _lines(2000)}))
    add(Case("read-exact-2000-no-newline", "read", {"path": "x.txt"}, {"x.txt": _lines(2000).rstrip("\n")}))
    add(Case("read-2001", "read", {"path": "x.txt"}, {"x.txt": _lines(2001).rstrip("\n")}))
    add(Case("read-exact-50k", "read", {"path": "x.txt"}, {"x.txt": "q" * 51199 + "\n"}))
    add(Case("read-50k-plus-one", "read", {"path": "x.txt"}, {"x.txt": "q" * 51200 + "\n"}))
    add(Case("read-invalid-missing-path", "read", {"offset": 1}))
    add(Case("read-invalid-types", "read", {"path": ["a"], "offset": "abc", "limit": {}}))
    add(Case("read-invalid-empty", "read", {}))

    # ---- bash -------------------------------------------------------------------------------------
    add(Case("bash-echo", "bash", {"command": "echo hello"}))
    add(Case("bash-stderr", "bash", {"command": "echo out; sleep 0.05; echo err >&2; sleep 0.05; echo out2"}))
    add(Case("bash-exit-code", "bash", {"command": "echo partial; exit 3"}))
    add(Case("bash-exit-no-output", "bash", {"command": "exit 2"}))
    add(Case("bash-no-output", "bash", {"command": "true"}))
    add(Case("bash-pwd", "bash", {"command": "pwd; ls"}, {"f1": "x", "f2": "y"}))
    add(Case("bash-trunc-lines", "bash", {"command": "seq 1 5000"}, compare_details=True))
    add(
        Case(
            "bash-trunc-bytes", "bash", {"command": "for i in $(seq 1 1000); do printf '%0100d\\n' $i; done"}
        )
    )
    add(Case("bash-trunc-exit", "bash", {"command": "seq 1 3000; exit 1"}))
    add(Case("bash-long-line", "bash", {"command": "head -c 70000 /dev/zero | tr '\\0' 'a'"}))
    add(Case("bash-long-line-newline", "bash", {"command": "head -c 70000 /dev/zero | tr '\\0' 'b'; echo"}))
    add(Case("bash-big-multibyte", "bash", {"command": 'for i in $(seq 1 3000); do echo "é😀 $i"; done'}))
    add(Case("bash-huge", "bash", {"command": "seq 1 200000"}))
    add(Case("bash-no-final-newline", "bash", {"command": "printf 'no newline'"}))
    add(Case("bash-only-newlines", "bash", {"command": "printf '\\n\\n\\n'"}))
    add(Case("bash-exact-2000", "bash", {"command": "seq 1 2000"}))
    add(Case("bash-2001", "bash", {"command": "seq 1 2001"}))
    add(Case("bash-exact-50k", "bash", {"command": "head -c 51199 /dev/zero | tr '\\0' q; echo"}))
    add(Case("bash-50k-plus-one", "bash", {"command": "head -c 51200 /dev/zero | tr '\\0' q; echo"}))
    add(Case("bash-yes", "bash", {"command": "yes | head -c 300000"}))
    add(Case("bash-timeout", "bash", {"command": "echo start; sleep 5", "timeout": 0.5}))
    add(Case("bash-timeout-int", "bash", {"command": "sleep 5", "timeout": 1}))
    add(Case("bash-timeout-invalid", "bash", {"command": "echo x", "timeout": -1}))
    add(Case("bash-timeout-zero", "bash", {"command": "echo x", "timeout": 0}))
    add(Case("bash-timeout-too-big", "bash", {"command": "echo x", "timeout": 3_000_000}))
    add(Case("bash-timeout-string", "bash", {"command": "echo x", "timeout": "2"}))
    add(Case("bash-abort", "bash", {"command": "echo x; sleep 5"}, abort_after_ms=400))
    add(Case("bash-killed-by-signal", "bash", {"command": "echo bye; kill -9 $$"}))
    add(Case("bash-background", "bash", {"command": "sleep 2 & echo done"}))
    add(Case("bash-invalid-utf8", "bash", {"command": "printf 'ok \\xff\\xfe x \\xe2\\x82 y\\n'"}))
    add(Case("bash-crlf", "bash", {"command": "printf 'a\\r\\nb\\r\\n'"}))
    add(Case("bash-session-env", "bash", {"command": 'echo "$PI_SESSION_ID|$PI_SESSION_FILE|$PI_PROVIDER|$PI_MODEL"'},
             ctx={"session": SESSION}))  # fmt: skip
    add(Case("bash-no-session-env", "bash", {"command": 'echo "[$PI_SESSION_ID][$PI_MODEL]"'}))
    add(Case("bash-prefix", "bash", {"command": "echo $FOO"}, options={"commandPrefix": "FOO=prefixed"}))
    add(Case("bash-shell-path", "bash", {"command": "echo $0"}, options={"shellPath": "/bin/sh"}))
    add(
        Case("bash-shell-missing", "bash", {"command": "echo x"}, options={"shellPath": "/nonexistent/shell"})
    )
    add(Case("bash-invalid-missing", "bash", {"timeout": 5}))
    add(Case("bash-invalid-type", "bash", {"command": {"x": 1}}))
    add(Case("bash-command-number", "bash", {"command": 42}))

    # ---- edit -------------------------------------------------------------------------------------
    code = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
    e = {"f.py": code}

    def edit(cid: str, args: Any, files: Mapping[str, bytes | str | None] | None = None) -> None:
        add(
            Case(
                cid,
                "edit",
                args,
                dict(e if files is None else files),
                compare_files=True,
                compare_details=True,
            )
        )

    edit("edit-single", {"path": "f.py", "edits": [{"oldText": "return 1", "newText": "return 10"}]})
    edit(
        "edit-multi",
        {"path": "f.py", "edits": [{"oldText": "return 1", "newText": "return 10"},
                                   {"oldText": "return 2", "newText": "return 20\n    # done"}]},
    )  # fmt: skip
    edit("edit-not-found", {"path": "f.py", "edits": [{"oldText": "return 3", "newText": "x"}]})
    edit(
        "edit-not-found-multi",
        {
            "path": "f.py",
            "edits": [{"oldText": "return 1", "newText": "x"}, {"oldText": "nope", "newText": "y"}],
        },
    )
    edit("edit-duplicate", {"path": "f.py", "edits": [{"oldText": "return", "newText": "yield"}]})
    edit(
        "edit-duplicate-multi",
        {
            "path": "f.py",
            "edits": [{"oldText": "def f", "newText": "def h"}, {"oldText": "    return", "newText": "x"}],
        },
    )
    edit("edit-empty-old", {"path": "f.py", "edits": [{"oldText": "", "newText": "x"}]})
    edit(
        "edit-empty-old-multi",
        {
            "path": "f.py",
            "edits": [{"oldText": "def f", "newText": "def h"}, {"oldText": "", "newText": "x"}],
        },
    )
    edit(
        "edit-overlap",
        {"path": "f.py", "edits": [{"oldText": "def f():\n    return 1", "newText": "a"},
                                   {"oldText": "return 1\n\n", "newText": "b"}]},
    )  # fmt: skip
    edit("edit-no-change", {"path": "f.py", "edits": [{"oldText": "return 1", "newText": "return 1"}]})
    edit(
        "edit-no-change-multi",
        {"path": "f.py", "edits": [{"oldText": "return 1", "newText": "return 1"},
                                   {"oldText": "return 2", "newText": "return 2"}]},
    )  # fmt: skip
    edit("edit-empty-edits", {"path": "f.py", "edits": []})
    edit("edit-legacy", {"path": "f.py", "oldText": "return 2", "newText": "return 22"})
    edit(
        "edit-stringified",
        {"path": "f.py", "edits": json.dumps([{"oldText": "return 1", "newText": "return 11"}])},
    )
    edit(
        "edit-stringified-object",
        {"path": "f.py", "edits": json.dumps({"oldText": "return 1", "newText": "r"})},
    )
    edit("edit-single-object", {"path": "f.py", "edits": {"oldText": "return 2", "newText": "return 9"}})
    edit("edit-bad-string", {"path": "f.py", "edits": "not json"})
    edit("edit-missing-file", {"path": "nope.py", "edits": [{"oldText": "a", "newText": "b"}]})
    edit("edit-directory", {"path": "d", "edits": [{"oldText": "a", "newText": "b"}]}, {"d": None})
    fuzzy = "title = \u201cHello\u201d  \nvalue = 1 \u2013 2\nother = 3\n"
    edit(
        "edit-fuzzy",
        {"path": "z.py", "edits": [{"oldText": 'title = "Hello"\nvalue = 1 - 2', "newText": 'title = "Hi"'}]},
        {"z.py": fuzzy},
    )
    edit(
        "edit-fuzzy-preserves-other-lines",
        {"path": "z.py", "edits": [{"oldText": "other = 3", "newText": "other = 4"},
                                   {"oldText": "value = 1 - 2", "newText": "value = 0"}]},
        {"z.py": "a = \u2018x\u2019   \n" + fuzzy},
    )  # fmt: skip
    edit(
        "edit-crlf",
        {"path": "w.txt", "edits": [{"oldText": "two\nthree", "newText": "2\n3\nthree-and-a-half"}]},
        {"w.txt": "one\r\ntwo\r\nthree\r\nfour\r\n"},
    )
    edit(
        "edit-bom",
        {"path": "b.txt", "edits": [{"oldText": "first", "newText": "1st"}]},
        {"b.txt": "\ufefffirst\nsecond\n"},
    )
    edit(
        "edit-bom-crlf",
        {"path": "b.txt", "edits": [{"oldText": "second", "newText": "2nd"}]},
        {"b.txt": "\ufefffirst\r\nsecond\r\n"},
    )
    edit(
        "edit-last-line-no-newline",
        {"path": "n.txt", "edits": [{"oldText": "end", "newText": "END\nmore"}]},
        {"n.txt": "start\nmiddle\nend"},
    )
    edit(
        "edit-long-file-context",
        {"path": "long.txt", "edits": [{"oldText": "line 50\n", "newText": "LINE 50\n"},
                                       {"oldText": "line 60\n", "newText": ""}]},
        {"long.txt": _lines(120)},
    )  # fmt: skip
    edit("edit-newtext-crlf", {"path": "f.py", "edits": [{"oldText": "return 1", "newText": "a\r\nb"}]})
    edit(
        "edit-old-mac",
        {"path": "m.txt", "edits": [{"oldText": "two", "newText": "2"}]},
        {"m.txt": "one\rtwo\rthree"},
    )
    edit(
        "edit-unicode-fuzzy-nfkc",
        {"path": "u.txt", "edits": [{"oldText": "fine", "newText": "good"}]},
        {"u.txt": "so \ufb01ne\nok\n"},
    )
    edit("edit-invalid-missing-new", {"path": "f.py", "edits": [{"oldText": "return 1"}]})
    edit("edit-invalid-types", {"path": 3, "edits": [{"oldText": 1, "newText": None}, "x"]})
    edit("edit-invalid-nothing", {})

    # ---- write ------------------------------------------------------------------------------------
    def write(cid: str, args: Any, files: Mapping[str, bytes | str | None] | None = None) -> None:
        add(Case(cid, "write", args, dict(files or {}), compare_files=True))

    write("write-new", {"path": "out.txt", "content": "hello\n"})
    write("write-nested", {"path": "a/b/c/out.txt", "content": "deep"})
    write("write-overwrite", {"path": "a.txt", "content": "new"}, small)
    write("write-unicode", {"path": "u.txt", "content": "h\u00e9llo \U0001f600 \u4e2d"})
    write("write-empty", {"path": "empty.txt", "content": ""})
    write("write-directory", {"path": "d", "content": "x"}, {"d": None})
    write("write-parent-is-file", {"path": "a.txt/x.txt", "content": "x"}, small)
    write("write-ancestor-is-file", {"path": "a.txt/y/x.txt", "content": "x"}, small)
    write("write-at-prefix", {"path": "@w.txt", "content": "at"})
    write("write-invalid-missing", {"path": "x.txt"})
    write("write-content-number", {"path": "num.txt", "content": 12.5})

    # ---- grep -------------------------------------------------------------------------------------
    tree: dict[str, bytes | str | None] = {
        "src/main.py": "import os\n\ndef main():\n    print('needle here')\n    return 0\n",
        "src/util.py": "# Needle in caps\nvalue = 'needle'\n",
        "docs/readme.md": "The needle is documented.\nNothing else.\n",
        ".hidden/secret.txt": "needle in hidden dir\n",
        "build/out.txt": "needle in ignored build output\n",
        "notes.txt": "no match here\n",
        ".gitignore": "build/\n*.log\n",
        "debug.log": "needle in a log\n",
    }

    def grep(cid: str, args: Any, files: Mapping[str, bytes | str | None] | None = None, **kw: Any) -> None:
        add(Case(cid, "grep", args, dict(tree if files is None else files), git=kw.pop("git", True),
                 fallback=kw.pop("fallback", True), **kw))  # fmt: skip

    grep("grep-basic", {"pattern": "needle"}, unordered=True)
    grep("grep-not-git", {"pattern": "needle"}, git=False, unordered=True)
    grep("grep-no-match", {"pattern": "haystack"})
    grep("grep-ignore-case", {"pattern": "NEEDLE", "ignoreCase": True}, unordered=True)
    grep("grep-literal", {"pattern": "print('needle", "literal": True})
    grep("grep-regex", {"pattern": "^def \\w+\\(\\)"})
    grep("grep-glob", {"pattern": "needle", "glob": "*.py"}, unordered=True)
    grep("grep-glob-ignored", {"pattern": "needle", "glob": "*.log"})
    grep("grep-glob-negated", {"pattern": "needle", "glob": "!*.py"}, unordered=True)
    grep("grep-path-dir", {"pattern": "needle", "path": "src"}, unordered=True)
    grep("grep-path-file", {"pattern": "needle", "path": "src/main.py"})
    grep("grep-context", {"pattern": "needle", "path": "src/main.py", "context": 1})
    grep("grep-context-edges", {"pattern": "Needle", "path": "src/util.py", "context": 3})
    many = {"many.txt": "".join(f"match {i}\n" for i in range(300))}
    grep("grep-limit", {"pattern": "match", "limit": 5}, many, git=False)
    grep("grep-default-limit", {"pattern": "match"}, many, git=False)
    grep("grep-limit-zero", {"pattern": "match", "limit": 0}, many, git=False)
    grep("grep-long-line", {"pattern": "needle"}, {"l.txt": "needle " + "x" * 700 + "\n"})
    grep("grep-long-line-unicode", {"pattern": "needle"}, {"l.txt": "needle " + "\u00e9" * 600 + "\n"})
    wide_lines = {"w.txt": "".join("w" * 300 + f" {i}\n" for i in range(400))}
    grep("grep-bytes-limit", {"pattern": "w", "limit": 1000}, wide_lines, git=False)
    grep("grep-crlf", {"pattern": "b", "path": "c.txt"}, {"c.txt": "a\r\nb\r\nc\r\n"})
    grep("grep-crlf-context", {"pattern": "b", "path": "c.txt", "context": 1}, {"c.txt": "a\r\nb\r\nc\r\n"})
    grep("grep-no-final-newline", {"pattern": "end", "path": "n.txt"}, {"n.txt": "start\nend"})
    grep(
        "grep-context-no-final-newline",
        {"pattern": "end", "path": "n.txt", "context": 2},
        {"n.txt": "start\nend"},
    )
    grep("grep-missing-path", {"pattern": "x", "path": "nowhere"})
    grep("grep-regex-error", {"pattern": "(unclosed"}, fallback=False)
    grep("grep-invalid", {"path": "src"})

    # ---- find -------------------------------------------------------------------------------------
    def find(cid: str, args: Any, files: Mapping[str, bytes | str | None] | None = None, **kw: Any) -> None:
        add(Case(cid, "find", args, dict(tree if files is None else files), git=kw.pop("git", True),
                 fallback=kw.pop("fallback", True), **kw))  # fmt: skip

    find("find-py", {"pattern": "*.py"}, unordered=True)
    find("find-txt-with-hidden", {"pattern": "*.txt"}, unordered=True)
    find("find-not-git", {"pattern": "*.txt"}, git=False, unordered=True)
    find("find-no-match", {"pattern": "*.rs"})
    find("find-full-path", {"pattern": "src/*.py"}, unordered=True)
    find("find-doublestar", {"pattern": "**/*.md"})
    find("find-dir", {"pattern": "docs"})
    find("find-path", {"pattern": "*", "path": "src"}, unordered=True)
    find("find-case-insensitive", {"pattern": "readme*"})
    find("find-limit", {"pattern": "*.py", "limit": 2}, unordered=True)
    find("find-missing-path", {"pattern": "*", "path": "nowhere"})
    find("find-invalid", {"path": "."})
    find("find-all", {"pattern": "**", "path": "src"}, unordered=True)
    find("find-hidden-dir", {"pattern": ".hidden"})
    find("find-braces", {"pattern": "*.{md,py}"}, unordered=True)

    # ---- ls ---------------------------------------------------------------------------------------
    names: dict[str, bytes | str | None] = {
        n: "x"
        for n in [
            "b.txt",
            "A.txt",
            "a.txt",
            "_under",
            "-dash",
            "10",
            "9",
            "Zeta",
            "zeta2",
            ".env",
            "a-b",
            "ab",
        ]
    }
    names.update({"dir": None, ".hidden": None, "Dir2": None, "link": "->dir", "dangling": "->nowhere"})
    add(Case("ls-sorted", "ls", {}, names))
    intl = ["\u00e9clair", "eclair", "Zebra", "\u00e4rger", "arm", "\u4e2d\u6587", "\u00f1u", "nube", "\u00df", "ss",
            "\u03a9mega", "\u0434\u043e\u043c", "caf\u00e9", "cafe", "Caf\u00e9", "\u00c9t\u00e9", "ete", "\u00e6ther", "aether",
            "\u00f8l", "ol", "\u0142\u00f3d\u017a", "lodz"]  # fmt: skip
    add(Case("ls-international", "ls", {}, {n: "" for n in intl}))
    add(Case("ls-path", "ls", {"path": "dir"}, {"dir/x": "1", "dir/y": None}))
    add(Case("ls-empty", "ls", {"path": "e"}, {"e": None}))
    add(Case("ls-limit", "ls", {"limit": 3}, names))
    add(Case("ls-many", "ls", {}, {f"f{i:04d}": "" for i in range(600)}))
    add(Case("ls-missing", "ls", {"path": "nope"}))
    add(Case("ls-not-dir", "ls", {"path": "a.txt"}, small))
    add(Case("ls-invalid", "ls", {"limit": "lots"}))
    add(Case("ls-limit-string", "ls", {"limit": "2"}, names))

    # ---- unknown tool ------------------------------------------------------------------------------
    add(Case("unknown-tool", "frobnicate", {"x": 1}))
    return cases


CASES = build_cases()

# --------------------------------------------------------------------------------------------------
# Running


def _setup(root: Path, cases: list[Case]) -> None:
    if root.exists():
        shutil.rmtree(root)
    for case in cases:
        base = root / case.id
        base.mkdir(parents=True)
        if case.git:  # all rg/fd look for is a .git entry (a real `git init` per case is slow)
            (base / ".git").mkdir()
            (base / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        for rel, content in case.files.items():
            path = base / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if content is None:
                path.mkdir(exist_ok=True)
            elif isinstance(content, str) and content.startswith("->"):
                path.symlink_to(content[2:])
            else:
                path.write_bytes(content.encode() if isinstance(content, str) else content)


def _snapshot(base: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for path in sorted(base.rglob("*")):
        if ".git" in path.relative_to(base).parts:
            continue
        if path.is_file() and not path.is_symlink():
            files[str(path.relative_to(base))] = path.read_bytes()
    return files


def _spill_contents(text: str) -> list[bytes]:
    """The spill files a result names (read, then deleted so test runs leave no litter in /tmp)."""
    contents: list[bytes] = []
    for name in dict.fromkeys(re.findall(r"(/\S*(?:pi|caddie)-bash-[0-9a-f]{16}\.log)", text)):
        path = Path(name)
        if path.exists():
            contents.append(path.read_bytes())
            path.unlink()
    return contents


@dataclass
class Outcome:
    is_error: bool
    content: list[dict[str, Any]]
    details: Any
    files: dict[str, bytes]
    spills: list[bytes]


def _run_pi(root: Path, cases: list[Case]) -> dict[str, Outcome]:
    calls = []
    for case in cases:
        call: dict[str, Any] = {
            "id": case.id,
            "cwd": str(root / case.id),
            "tool": case.tool,
            "args": case.args,
        }
        if case.ctx:
            call["ctx"] = case.ctx
        if case.abort_after_ms is not None:
            call["abortAfterMs"] = case.abort_after_ms
        if case.options:
            call["options"] = case.options
        calls.append(call)
    node = require_pi()
    env = {**os.environ, "PI_OFFLINE": "1"}  # never let Pi try to download rg/fd
    proc = subprocess.run(
        [node, str(SCRIPT)],
        env=env,
        input=json.dumps({"piDir": str(PI_DIR), "calls": calls}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    outcomes: dict[str, Outcome] = {}
    for case, res in zip(cases, results, strict=True):
        text = "\n".join(c.get("text", "") for c in res["content"])
        outcomes[case.id] = Outcome(
            res["isError"], res["content"], res["details"], _snapshot(root / case.id), _spill_contents(text)
        )
    return outcomes


def _caddie_tool(case: Case, cwd: str, fallback: bool) -> Any:
    factories: dict[str, Callable[[], Any]] = {
        "read": lambda: create_read_tool(cwd),
        "bash": lambda: create_bash_tool(
            cwd,
            shell_path=case.options.get("shellPath"),
            command_prefix=case.options.get("commandPrefix"),
            env=session_env(
                session_id=SESSION["id"],
                session_file=SESSION["file"],
                provider=SESSION["provider"],
                model=SESSION["model"],
            )
            if case.ctx and "session" in case.ctx
            else None,
        ),
        "edit": lambda: create_edit_tool(cwd),
        "write": lambda: create_write_tool(cwd),
        "grep": lambda: create_grep_tool(cwd, use_rg=not fallback),
        "find": lambda: create_find_tool(cwd, use_fd=not fallback),
        "ls": lambda: create_ls_tool(cwd),
    }
    factory = factories.get(case.tool)
    return factory() if factory else None


class _Ctx:
    def __init__(self, model_input: list[str] | None) -> None:
        self.model = type("M", (), {"input": model_input})() if model_input is not None else None


async def _run_caddie_case(root: Path, case: Case, fallback: bool) -> Outcome:
    cwd = str(root / case.id)
    tool = _caddie_tool(case, cwd, fallback)
    ctrl = AbortController()
    loop = asyncio.get_running_loop()
    if case.abort_after_ms is not None:
        loop.call_later(case.abort_after_ms / 1000, ctrl.abort)
    ctx = _Ctx(case.ctx.get("modelInput")) if case.ctx and "modelInput" in case.ctx else None
    if tool is None:
        content: list[dict[str, Any]] = [{"type": "text", "text": f"Tool {case.tool} not found"}]
        return Outcome(True, content, {}, _snapshot(Path(cwd)), [])
    try:
        args = validate_arguments(tool, case.args)
        result = await tool.execute(case.id, args, ctrl.signal, lambda _: None, ctx)
        content = [
            {"type": "text", "text": c.text}
            if c.type == "text"
            else {"type": "image", "mimeType": c.mime_type}
            for c in result.content
        ]
        is_error, details = False, result.details
    except (ToolArgumentError, ToolError) as exc:
        content, is_error, details = [{"type": "text", "text": str(exc)}], True, {}
    text = "\n".join(c.get("text", "") for c in content)
    return Outcome(is_error, content, details, _snapshot(Path(cwd)), _spill_contents(text))


def _run_caddie(root: Path, cases: list[Case], fallback: bool = False) -> dict[str, Outcome]:
    async def run_all() -> dict[str, Outcome]:
        return {case.id: await _run_caddie_case(root, case, fallback) for case in cases}

    return asyncio.run(run_all())


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Outcome]]:
    require_pi()
    root = tmp_path_factory.mktemp("parity") / "cases"
    _setup(root, CASES)
    pi = _run_pi(root, CASES)
    _setup(root, CASES)
    caddie = _run_caddie(root, CASES)
    fallback_cases = [c for c in CASES if c.fallback]
    _setup(root, fallback_cases)
    fallback = _run_caddie(root, fallback_cases, fallback=True)
    return {"pi": pi, "caddie": caddie, "fallback": fallback}


# --------------------------------------------------------------------------------------------------
# Comparing


def _normalize(value: Any) -> Any:
    if isinstance(value, str):
        return SPILL.sub("/<spill>.log", value)
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalize(v) for v in value]
    return value


def _texts(outcome: Outcome, unordered: bool) -> Any:
    blocks = [_normalize(c) for c in outcome.content]
    if not unordered:
        return blocks
    text = blocks[0].get("text", "") if blocks else ""
    body, sep, notice = text.partition("\n\n[")
    return sorted(body.split("\n")), sep + notice


def _compare(case: Case, pi: Outcome, mine: Outcome, *, details: bool) -> None:
    assert mine.is_error == pi.is_error, (mine.content, pi.content)
    assert _texts(mine, case.unordered) == _texts(pi, case.unordered)
    assert mine.spills == pi.spills
    if case.compare_files:
        assert mine.files == pi.files
    if details and case.compare_details and not pi.is_error:
        assert _normalize(mine.details) == _normalize(pi.details)


def _skip_without_search_tools(case: Case) -> None:
    if case.tool == "grep" and shutil.which("rg") is None:
        skip_or_fail("rg not on PATH: Pi's grep would need to download it")
    if case.tool == "find":
        fd = find_fd()
        if fd is None:
            skip_or_fail("fd not on PATH: Pi's find would need to download it")
        if not case.git and not fd_supports_no_require_git(fd):
            pytest.skip("this fd predates --no-require-git, so Pi's find fails outside git repositories")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_matches_pi(case: Case, outcomes: dict[str, dict[str, Outcome]]) -> None:
    _skip_without_search_tools(case)
    _compare(case, outcomes["pi"][case.id], outcomes["caddie"][case.id], details=True)


FALLBACK_CASES = [c for c in CASES if c.fallback]


@pytest.mark.parametrize("case", FALLBACK_CASES, ids=[c.id for c in FALLBACK_CASES])
def test_python_fallback_matches_pi(case: Case, outcomes: dict[str, dict[str, Outcome]]) -> None:
    _skip_without_search_tools(case)
    _compare(case, outcomes["pi"][case.id], outcomes["fallback"][case.id], details=False)


# --------------------------------------------------------------------------------------------------
# Argument validation against custom schemas (written with TypeBox builders on Pi's side)

RICH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name", "count"],
    "properties": {
        "name": {"type": "string", "minLength": 2, "maxLength": 8},
        "count": {"type": "integer", "minimum": 0, "maximum": 10},
        "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "flag": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
        "mode": {"anyOf": [{"type": "string", "const": "fast"}, {"type": "string", "const": "slow"}]},
        "level": {"anyOf": [{"type": "number", "const": 1}, {"type": "number", "const": 2}]},
        "strict": {"type": "boolean", "const": True},
        "nested": {
            "type": "object",
            "required": ["x"],
            "properties": {"x": {"type": "number"}, "y": {"type": "string", "pattern": "^[a-z]+$"}},
        },
        "choice": {"type": "string", "enum": ["red", "green"]},
        "either": {"anyOf": [{"type": "string"}, {"type": "number"}]},
        "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id"],
                "properties": {"id": {"type": "integer"}, "label": {"type": "string"}},
            },
        },
    },
}
CLOSED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["a"],
    "properties": {"a": {"type": "string"}, "b": {"type": "number"}},
    "additionalProperties": False,
}
SHAPES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["shape"],
    "properties": {
        "shape": {
            "anyOf": [
                {"type": "object", "required": ["radius"], "properties": {"radius": {"type": "number"}}},
                {
                    "type": "object",
                    "required": ["w", "h"],
                    "properties": {"w": {"type": "number"}, "h": {"type": "number"}},
                },
            ]
        }
    },
}

KEYWORDS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tuple": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "items": {"type": "boolean"}},
        "uniq": {"type": "array", "uniqueItems": True},
        "mult": {"type": "number", "multipleOf": 0.5},
        "props": {"type": "object", "minProperties": 1, "maxProperties": 2, "propertyNames": {"pattern": "^[a-z]+$"}},
        "pats": {"type": "object", "patternProperties": {"^x": {"type": "number"}}, "additionalProperties": {"type": "string"}},
        "one": {"oneOf": [{"type": "number", "minimum": 0}, {"type": "number", "maximum": 10}]},
        "all": {"allOf": [{"type": "string", "minLength": 2}, {"type": "string", "pattern": "^a"}]},
        "neg": {"not": {"type": "string"}},
        "has": {"type": "array", "contains": {"type": "number"}},
        "multi": {"type": ["string", "null"]},
    },
}  # fmt: skip

VALIDATION_ARGS: list[tuple[str, dict[str, Any], Any]] = [
    ("valid", RICH_SCHEMA, {"name": "abc", "count": 3}),
    ("valid-full", RICH_SCHEMA, {"name": "abc", "count": 3, "ratio": 0.5, "flag": False, "tags": ["x"],
                                 "mode": "fast", "level": 2, "strict": True, "nested": {"x": 1, "y": "ab"},
                                 "choice": "red", "either": 4, "maybe": None, "items": [{"id": 1}]}),
    ("missing-all", RICH_SCHEMA, {}),
    ("missing-one", RICH_SCHEMA, {"count": 1}),
    ("coerce-strings", RICH_SCHEMA, {"name": 12345, "count": "7", "ratio": "0.25", "flag": "true"}),
    ("coerce-bools", RICH_SCHEMA, {"name": True, "count": True, "flag": 1}),
    ("coerce-flag-zero", RICH_SCHEMA, {"name": "ab", "count": 0, "flag": "0"}),
    ("coerce-flag-yes", RICH_SCHEMA, {"name": "ab", "count": 0, "flag": "yes"}),
    ("integer-float", RICH_SCHEMA, {"name": "abc", "count": 2.5}),
    ("integer-float-string", RICH_SCHEMA, {"name": "abc", "count": "2.5"}),
    ("integer-whole-float", RICH_SCHEMA, {"name": "abc", "count": 4.0}),
    ("number-garbage", RICH_SCHEMA, {"name": "abc", "count": "lots", "ratio": "nope"}),
    ("number-blank", RICH_SCHEMA, {"name": "abc", "count": "", "ratio": "  "}),
    ("number-hex", RICH_SCHEMA, {"name": "abc", "count": "0x8"}),
    ("bounds", RICH_SCHEMA, {"name": "a", "count": 11, "ratio": 1}),
    ("bounds-low", RICH_SCHEMA, {"name": "waytoolongname", "count": -1, "ratio": 0}),
    ("nulls-required", RICH_SCHEMA, {"name": None, "count": None}),
    ("nulls-optional", RICH_SCHEMA, {"name": "abc", "count": 1, "ratio": None, "tags": None, "maybe": None}),
    ("array-scalar", RICH_SCHEMA, {"name": "abc", "count": 1, "tags": "solo"}),
    ("array-empty", RICH_SCHEMA, {"name": "abc", "count": 1, "tags": []}),
    ("array-long", RICH_SCHEMA, {"name": "abc", "count": 1, "tags": ["a", "b", "c", "d"]}),
    ("array-item-types", RICH_SCHEMA, {"name": "abc", "count": 1, "tags": [1, True, None, {"a": 1}, ["x"]]}),
    ("literal-wrong", RICH_SCHEMA, {"name": "abc", "count": 1, "mode": "medium"}),
    ("literal-number-string", RICH_SCHEMA, {"name": "abc", "count": 1, "level": "2"}),
    ("literal-bool-string", RICH_SCHEMA, {"name": "abc", "count": 1, "strict": "true"}),
    ("literal-bool-false", RICH_SCHEMA, {"name": "abc", "count": 1, "strict": False}),
    ("enum-wrong", RICH_SCHEMA, {"name": "abc", "count": 1, "choice": "blue"}),
    ("enum-number", RICH_SCHEMA, {"name": "abc", "count": 1, "choice": 3}),
    ("either-bool", RICH_SCHEMA, {"name": "abc", "count": 1, "either": True}),
    ("either-object", RICH_SCHEMA, {"name": "abc", "count": 1, "either": {"x": 1}}),
    ("maybe-number", RICH_SCHEMA, {"name": "abc", "count": 1, "maybe": 5}),
    ("nested-missing", RICH_SCHEMA, {"name": "abc", "count": 1, "nested": {}}),
    ("nested-wrong", RICH_SCHEMA, {"name": "abc", "count": 1, "nested": {"x": "one", "y": "ABC"}}),
    ("nested-scalar", RICH_SCHEMA, {"name": "abc", "count": 1, "nested": "x"}),
    ("items-bad", RICH_SCHEMA, {"name": "abc", "count": 1, "items": [{"id": "1"}, {}, {"id": 1.5}, 7, {"id": 2, "label": 3}]}),
    ("many-errors", RICH_SCHEMA, {"name": [], "count": {}, "ratio": [], "flag": {}, "tags": {}, "mode": [],
                                  "nested": [], "choice": [], "either": [], "items": {}}),
    ("unicode-length", RICH_SCHEMA, {"name": "e\u0301\u0301", "count": 1}),
    ("emoji-length", RICH_SCHEMA, {"name": "\U0001f468\u200d\U0001f469\u200d\U0001f467", "count": 1}),
    ("received-format", RICH_SCHEMA, {"2": "two", "b": 1e21, "a": 1e-7, "10": 0.1 + 0.2, "c": -0.0, "d": 5.0,
                                      "e": "quote\" back\\ tab\t nl\n \u0001 \u2028 \U0001f600", "f": [], "g": {}}),
    ("closed-extra", CLOSED_SCHEMA, {"a": "x", "zz": 1, "b": 2, "aa": None}),
    ("closed-extra-only", CLOSED_SCHEMA, {"q": 1}),
    ("closed-valid", CLOSED_SCHEMA, {"a": "x", "b": "3"}),
    ("shapes-circle", SHAPES_SCHEMA, {"shape": {"radius": "2"}}),
    ("shapes-rect", SHAPES_SCHEMA, {"shape": {"w": 1, "h": 2}}),
    ("shapes-bad", SHAPES_SCHEMA, {"shape": {"w": 1}}),
    ("shapes-scalar", SHAPES_SCHEMA, {"shape": 3}),
    ("shapes-missing", SHAPES_SCHEMA, {}),
    ("kw-valid", KEYWORDS_SCHEMA, {"tuple": ["a", 1, True], "uniq": [1, 2], "mult": 1.5, "props": {"a": 1},
                                   "pats": {"x1": 2, "y": "s"}, "one": -1, "all": "ab", "neg": 1, "has": ["a", 2],
                                   "multi": None}),
    ("kw-tuple", KEYWORDS_SCHEMA, {"tuple": [1, "x", "y", False]}),
    ("kw-unique", KEYWORDS_SCHEMA, {"uniq": [1, 1.0, {"a": 1}, {"a": 1}, True, "1"]}),
    ("kw-multiple", KEYWORDS_SCHEMA, {"mult": 0.3}),
    ("kw-props-empty", KEYWORDS_SCHEMA, {"props": {}}),
    ("kw-props-many", KEYWORDS_SCHEMA, {"props": {"a": 1, "B": 2, "c": 3, "10": 4}}),
    ("kw-patterns", KEYWORDS_SCHEMA, {"pats": {"x1": "s", "y": 2, "10": 3, "2": True, "x0": 1}}),
    ("kw-one-both", KEYWORDS_SCHEMA, {"one": 5}),
    ("kw-one-none", KEYWORDS_SCHEMA, {"one": "s"}),
    ("kw-all", KEYWORDS_SCHEMA, {"all": "b"}),
    ("kw-not", KEYWORDS_SCHEMA, {"neg": "s"}),
    ("kw-contains", KEYWORDS_SCHEMA, {"has": ["a"]}),
    ("kw-contains-empty", KEYWORDS_SCHEMA, {"has": []}),
    ("kw-type-list", KEYWORDS_SCHEMA, {"multi": 3}),
    ("kw-type-list-bad", KEYWORDS_SCHEMA, {"multi": []}),
]  # fmt: skip


@pytest.fixture(scope="module")
def validation_outcomes() -> dict[str, tuple[bool, str]]:
    calls = [
        {"id": cid, "validate": {"name": "custom_tool", "schema": schema, "args": args}}
        for cid, schema, args in VALIDATION_ARGS
    ]
    node = require_pi()
    proc = subprocess.run(
        [node, str(SCRIPT)],
        input=json.dumps({"piDir": str(PI_DIR), "calls": calls}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return {r["id"]: (r["isError"], r["content"][0]["text"]) for r in json.loads(proc.stdout)}


@pytest.mark.parametrize(("cid", "schema", "args"), VALIDATION_ARGS, ids=[v[0] for v in VALIDATION_ARGS])
def test_validation_matches_pi(
    cid: str, schema: dict[str, Any], args: Any, validation_outcomes: dict[str, tuple[bool, str]]
) -> None:
    from caddie.jscompat import json_stringify
    from caddie.tools.base import ToolDefinition, ToolResult

    async def never(*_: Any) -> ToolResult:
        raise AssertionError

    tool = ToolDefinition(name="custom_tool", description="", parameters=schema, execute=never)
    pi_error, pi_text = validation_outcomes[cid]
    try:
        value = validate_arguments(tool, copy_json(args))
        mine_error, mine_text = False, json_stringify(value)
    except ToolArgumentError as exc:
        mine_error, mine_text = True, str(exc)
    assert (mine_error, mine_text) == (pi_error, pi_text)


def copy_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


# --------------------------------------------------------------------------------------------------
# Definitions: names, descriptions, schemas, prompt snippets and guidelines


def test_definitions_match_pi(tmp_path: Path) -> None:
    from caddie.tools import ALL_TOOL_NAMES, create_builtin_tools

    node = require_pi()
    proc = subprocess.run(
        [node, str(SCRIPT)],
        input=json.dumps({"piDir": str(PI_DIR), "definitions": True}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    pi = json.loads(proc.stdout)
    mine = create_builtin_tools(str(tmp_path))
    assert sorted(mine) == sorted(n for n in pi if n != "powershell") == sorted(ALL_TOOL_NAMES)
    for name, tool in mine.items():
        expected = pi[name]
        actual = {
            "name": tool.name,
            "label": tool.label,
            "description": tool.description,
            "parameters": tool.json_schema(),
            "promptSnippet": tool.prompt_snippet,
            "promptGuidelines": tool.prompt_guidelines,
            "hasPrepareArguments": tool.prepare_arguments is not None,
            "executionMode": tool.execution_mode,
        }
        assert actual == expected, name
        # Same key order too: providers receive the schema as serialised JSON.
        assert json.dumps(actual["parameters"]) == json.dumps(expected["parameters"]), name
