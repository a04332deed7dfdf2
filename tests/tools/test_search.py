"""``grep``, ``find`` and ``ls`` on real trees; grep/find through both rg/fd (when present) and pure Python."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from caddie.tools.collation import locale_sorted
from caddie.tools.find import create_find_tool, find_fd
from caddie.tools.grep import create_grep_tool, find_rg
from caddie.tools.ls import create_ls_tool
from caddie.tools.walk import IgnoreFile, WalkOptions, compile_glob, walk
from tests.interop.pi import skip_or_fail

Run = Callable[..., Any]
BACKENDS = [pytest.param(False, id="python"), pytest.param(True, id="native")]


def _native(use_native: bool, finder: Callable[[], str | None]) -> None:
    if use_native and finder() is None:
        skip_or_fail("native tool (rg / fd) not on PATH")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    files = {
        "src/app.py": "import os\n\ndef main():\n    return 'needle'\n",
        "src/lib/util.py": "NEEDLE = 1\n",
        "docs/guide.md": "find the needle\n",
        ".config/settings.txt": "needle hidden\n",
        "build/gen.py": "needle generated\n",
        "keep.log": "needle kept\n",
        "drop.log": "needle dropped\n",
        "bin.dat": "needle\0binary\n",
        ".gitignore": "build/\n*.log\n!keep.log\n",
    }
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def _lines(text: str) -> list[str]:
    body = text.split("\n\n[", 1)[0]
    return sorted(line for line in body.split("\n") if not line.startswith(".git/"))


@pytest.mark.parametrize("native", BACKENDS)
def test_grep_respects_gitignore_and_includes_hidden(tree: Path, run: Run, native: bool) -> None:
    _native(native, find_rg)
    out = run(create_grep_tool(str(tree), use_rg=native), {"pattern": "needle"})
    assert _lines(out.text) == [
        ".config/settings.txt:1: needle hidden",
        "docs/guide.md:1: find the needle",
        "keep.log:1: needle kept",
        "src/app.py:4:     return 'needle'",
    ]


@pytest.mark.parametrize("native", BACKENDS)
def test_grep_options(tree: Path, run: Run, native: bool) -> None:
    _native(native, find_rg)
    grep = create_grep_tool(str(tree), use_rg=native)
    assert run(grep, {"pattern": "NEEDLE", "path": "src"}).text == "lib/util.py:1: NEEDLE = 1"
    assert _lines(run(grep, {"pattern": "needle", "ignoreCase": True, "glob": "*.py"}).text) == [
        "src/app.py:4:     return 'needle'",
        "src/lib/util.py:1: NEEDLE = 1",
    ]
    assert run(grep, {"pattern": "((needle", "literal": True}).text == "No matches found"
    assert run(grep, {"pattern": "main", "path": "src/app.py", "context": 1}).text == (
        "app.py-2- \napp.py:3: def main():\napp.py-4-     return 'needle'"
    )
    assert run(grep, {"pattern": "x", "path": "nope"}).error == f"Path not found: {tree / 'nope'}"


@pytest.mark.parametrize("native", BACKENDS)
def test_grep_limits(tmp_path: Path, run: Run, native: bool) -> None:
    _native(native, find_rg)
    (tmp_path / "m.txt").write_text("".join(f"hit {i}\n" for i in range(150)) + "hit " + "y" * 600 + "\n")
    grep = create_grep_tool(str(tmp_path), use_rg=native)
    out = run(grep, {"pattern": "hit", "limit": 3})
    assert (
        out.text
        == "m.txt:1: hit 0\nm.txt:2: hit 1\nm.txt:3: hit 2\n\n[3 matches limit reached. Use limit=6 for more, or refine pattern]"
    )
    assert out.details == {"matchLimitReached": 3}
    out = run(grep, {"pattern": "hit", "limit": 200})
    assert out.text.endswith(
        "y... [truncated]\n\n[Some lines truncated to 500 chars. Use read tool to see full lines]"
    )


@pytest.mark.parametrize("native", BACKENDS)
def test_find(tree: Path, run: Run, native: bool) -> None:
    _native(native, find_fd)
    find = create_find_tool(str(tree), use_fd=native)
    assert _lines(run(find, {"pattern": "*.py"}).text) == ["src/app.py", "src/lib/util.py"]
    assert _lines(run(find, {"pattern": "src/**/*.py"}).text) == ["src/app.py", "src/lib/util.py"]
    assert (
        run(find, {"pattern": "*.LOG"}).text == "No files found matching pattern"
    )  # uppercase: case-sensitive
    assert run(find, {"pattern": "*.log"}).text == "keep.log"  # lowercase: insensitive; drop.log ignored
    assert run(find, {"pattern": "lib"}).text == "src/lib/"
    assert run(find, {"pattern": "*.rs"}).text == "No files found matching pattern"
    out = run(find, {"pattern": "*.py", "limit": 1})
    assert out.text.endswith("\n\n[1 results limit reached. Use limit=2 for more, or refine pattern]")


def test_find_missing_dir_python(tmp_path: Path, run: Run) -> None:
    out = run(create_find_tool(str(tmp_path), use_fd=False), {"pattern": "*", "path": "nope"})
    assert out.error == (
        f"[fd error]: Search path '{tmp_path / 'nope'}' is not a directory.\n[fd error]: No valid search paths given."
    )


def test_ls(tmp_path: Path, run: Run) -> None:
    for name in ["b.txt", "A.txt", "a.txt", "_x", "10", "9", ".env"]:
        (tmp_path / name).write_text("")
    (tmp_path / "Dir").mkdir()
    (tmp_path / "link").symlink_to("Dir")
    (tmp_path / "dangling").symlink_to("nowhere")
    ls = create_ls_tool(str(tmp_path))
    assert run(ls, {}).text == "_x\n.env\n10\n9\nA.txt\na.txt\nb.txt\nDir/\nlink/"
    assert run(ls, {"limit": 2}).text == "_x\n.env\n\n[2 entries limit reached. Use limit=4 for more]"
    (tmp_path / "empty").mkdir()
    assert run(ls, {"path": "empty"}).text == "(empty directory)"
    assert run(ls, {"path": "nope"}).error == f"Path not found: {tmp_path / 'nope'}"
    assert run(ls, {"path": "a.txt"}).error == f"Not a directory: {tmp_path / 'a.txt'}"


def test_collation_orders_like_icu() -> None:
    names = ["b", "B", "a-b", "ab", "a_b", "a.b", "a b", "é", "e", "f", "10", "9", "~x", "$y", "Z"]
    # What Node gives for names.sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase())):
    assert locale_sorted(names) == [
        "~x",
        "$y",
        "10",
        "9",
        "a b",
        "a_b",
        "a-b",
        "a.b",
        "ab",
        "b",
        "B",
        "e",
        "é",
        "f",
        "Z",
    ]


def test_globs() -> None:
    assert compile_glob("*.py").match("a.py") and not compile_glob("*.py").match("d/a.py")
    assert compile_glob("**/*.py").match("a.py") and compile_glob("**/*.py").match("d/e/a.py")
    assert compile_glob("src/**").match("src/x/y") and compile_glob("*.{md,txt}").match("r.txt")
    assert compile_glob("[!a]?").match("bc") and not compile_glob("[!a]?").match("ac")


def test_gitignore_rules(tmp_path: Path) -> None:
    rules = IgnoreFile.parse(str(tmp_path), "*.log\n!keep.log\n/top.txt\nbuild/\n# c\n\\#hash\n")
    assert rules.decide(str(tmp_path / "x.log"), False) is True
    assert rules.decide(str(tmp_path / "keep.log"), False) is False
    assert rules.decide(str(tmp_path / "top.txt"), False) is True
    assert rules.decide(str(tmp_path / "d/top.txt"), False) is None
    assert rules.decide(str(tmp_path / "build"), True) is True
    assert rules.decide(str(tmp_path / "build"), False) is None
    assert rules.decide(str(tmp_path / "#hash"), False) is True


def test_walk_outside_git_honours_ignore_files_only_for_fd(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("skip.txt\n")
    (tmp_path / ".ignore").write_text("also.txt\n")
    for name in ("skip.txt", "also.txt", "keep.txt"):
        (tmp_path / name).write_text("")
    rg = {Path(e.path).name for e in walk(str(tmp_path), WalkOptions(".rgignore", require_git=True))}
    fd = {Path(e.path).name for e in walk(str(tmp_path), WalkOptions(".fdignore", require_git=False))}
    assert rg == {".gitignore", ".ignore", "skip.txt", "keep.txt"}
    assert fd == {".gitignore", ".ignore", "keep.txt"}
