"""File names for the editor: ``@`` fuzzy completion over the project and Tab path completion.

The project's files come from ``fd`` (or Debian's ``fdfind``) when it is on PATH — run as a subprocess, so
the event loop never waits for it — and otherwise from a Python walk that honours ``.gitignore`` (and
``.ignore``/``.fdignore``) in a worker thread. The list is cached for ``FileIndex.max_age`` seconds.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from pathlib import Path

USE_FD = True
"""Use fd when it is on PATH (tests turn it off to exercise the Python walk)."""
MAX_FILES = 50_000
MAX_SUGGESTIONS = 20


def find_fd() -> str | None:
    """The ``fd`` (or ``fdfind``) executable on PATH, or None. Blocking.

    The tools package is imported here, in the worker thread, not with the UI (before its first frame)."""
    from caddie.tools.find import find_fd as find_fd_on_path

    return find_fd_on_path()


def usable_fd(root: str) -> list[str] | None:
    """The fd command line prefix for ``root``, or None when fd is absent or cannot honour .gitignore here
    (fd before 8.7 lacks ``--no-require-git``, which a directory outside a git repository needs). Blocking."""
    from caddie.tools.find import fd_supports_no_require_git
    from caddie.tools.walk import find_git_root

    fd = find_fd()
    if fd is None:
        return None
    if fd_supports_no_require_git(fd):
        return [fd, "--no-require-git"]
    return [fd] if find_git_root(root) is not None else None


def walk_files(root: str, limit: int = MAX_FILES) -> list[str]:
    """Files and directories (ending in ``/``) under ``root``, relative, ignores applied; blocking."""
    from caddie.tools.walk import WalkOptions, walk

    found: list[str] = []
    for entry in walk(root, WalkOptions(tool_ignore_file=".fdignore", require_git=False)):
        rel = os.path.relpath(entry.path, root)
        if rel == ".git" or rel.startswith(".git" + os.sep):
            continue
        found.append(rel + "/" if entry.is_dir else rel)
        if len(found) >= limit:
            break
    return found


async def fd_files(fd: list[str], root: str, limit: int = MAX_FILES) -> list[str] | None:
    """The same list from fd; None when fd fails (the caller falls back to the walk)."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *fd, "--hidden", "--exclude", ".git", "--color", "never",
            "--max-results", str(limit), ".", root,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        out, _ = await proc.communicate()
    except OSError:
        return None
    if proc.returncode != 0:
        return None
    files = []
    prefix = root.rstrip("/") + "/"
    for line in out.decode("utf-8", "replace").splitlines():
        rel = line[len(prefix) :] if line.startswith(prefix) else line
        if rel.startswith("./"):
            rel = rel[2:]
        if rel:
            files.append(
                rel + "/" if os.path.isdir(os.path.join(root, rel)) and not rel.endswith("/") else rel
            )
    return files


class FileIndex:
    """The project's file list for ``@`` completion, refreshed when older than ``max_age`` seconds."""

    def __init__(self, root: str, *, use_fd: bool | None = None, max_age: float = 10.0) -> None:
        self.root = root
        self.use_fd = USE_FD if use_fd is None else use_fd
        self.max_age = max_age
        self._files: list[str] | None = None
        self._at = 0.0
        self._lock = asyncio.Lock()

    async def files(self) -> list[str]:
        async with self._lock:
            if self._files is None or time.monotonic() - self._at > self.max_age:
                fd = await asyncio.to_thread(usable_fd, self.root) if self.use_fd else None
                files = await fd_files(fd, self.root) if fd is not None else None
                if files is None:
                    files = await asyncio.to_thread(walk_files, self.root)
                self._files = sorted(files)
                self._at = time.monotonic()
            return self._files


NAME_MATCH = 100.0
"""Added to the score of a candidate whose file name alone holds the query: name matches come first."""


def fuzzy_score(query: str, candidate: str) -> float | None:
    """How well ``query`` matches ``candidate`` as a subsequence (higher is better); None: no match.

    A match inside the file name beats any match that needs the directories; then consecutive characters
    and characters at the start of a word (after ``/ _ - .``) score extra, and shorter paths win ties.
    """
    if not query:
        return 0.0
    low, q = candidate.lower(), query.lower()
    name_start = low.rstrip("/").rfind("/") + 1
    in_name = _subsequence_score(q, low, name_start)
    if in_name is not None:
        return NAME_MATCH + in_name - len(candidate) * 0.01
    in_path = _subsequence_score(q, low, 0)
    return None if in_path is None else in_path - len(candidate) * 0.01


def _subsequence_score(q: str, low: str, start: int) -> float | None:
    score = 0.0
    position = start - 1
    previous = -2
    for ch in q:
        found = low.find(ch, position + 1)
        if found < 0:
            return None
        score += 1.0
        if found == previous + 1:
            score += 2.0
        if found == 0 or low[found - 1] in "/_-. ":
            score += 1.5
        previous = position = found
    if q in low[start:]:
        score += 5.0
    return score


def fuzzy_filter(query: str, candidates: Sequence[str], limit: int = MAX_SUGGESTIONS) -> list[str]:
    scored = [(s, c) for c in candidates if (s := fuzzy_score(query, c)) is not None]
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    return [c for _, c in scored[:limit]]


def complete_path(token: str, cwd: str) -> list[str]:
    """Paths that ``token`` (as typed: relative, absolute or ``~/``) can be completed to, as typed.

    Directories end in ``/``; hidden entries are offered only when the typed name starts with a dot.
    """
    head, _, name = token.rpartition("/")
    directory = head + "/" if head or token.startswith("/") else ""
    base = Path(os.path.expanduser(directory or ".")) if directory.startswith("~") else Path(directory or ".")
    if not base.is_absolute():
        base = Path(cwd) / base
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    out = []
    for entry in entries:
        if not entry.name.startswith(name) or (entry.name.startswith(".") and not name.startswith(".")):
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        out.append(directory + entry.name + ("/" if is_dir else ""))
    return sorted(out)


def common_prefix(items: Sequence[str]) -> str:
    """The characters every item starts with (not path components: ``src/ca`` for ``src/caddie``, ``src/cat``)."""
    if not items:
        return ""
    first, last = min(items), max(items)
    size = 0
    while size < min(len(first), len(last)) and first[size] == last[size]:
        size += 1
    return first[:size]
