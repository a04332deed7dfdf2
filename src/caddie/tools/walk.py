"""Directory walking for the pure-Python ``grep``/``find`` fallbacks: globs and ignore files like rg and fd.

Used only when ``rg``/``fd`` are not on PATH. It follows their defaults as Pi invokes them: hidden files
are included, symlinks are not followed, ``.gitignore`` (plus ``.git/info/exclude`` and the global excludes
file), ``.ignore`` and the tool's own ignore file (``.rgignore`` / ``.fdignore``) are honoured, deeper
ignore files win over shallower ones and the last matching line of a file wins.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

import pathspec

# --------------------------------------------------------------------------------------------------
# Globs


def glob_to_regex(pattern: str, *, braces: bool = True) -> str:
    """Translate a glob to a regex body: ``*`` and ``?`` stay within one path segment, ``**`` spans
    segments, ``[...]`` is a class, ``{a,b}`` alternatives (when ``braces``), ``\\`` escapes."""
    out: list[str] = []
    i = 0
    depth = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "*":
            if pattern.startswith("**", i):
                at_start = i == 0 or pattern[i - 1] == "/"
                after = i + 2
                if at_start and after < n and pattern[after] == "/":
                    out.append("(?:.*/)?")
                    i = after + 1
                    continue
                if at_start and after == n:
                    out.append(".*")
                    i = after
                    continue
                out.append("[^/]*")
                i = after
                continue
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = i + 1
            if end < n and pattern[end] in "!^":
                end += 1
            if end < n and pattern[end] == "]":
                end += 1
            while end < n and pattern[end] != "]":
                end += 1
            if end >= n:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end]
                negate = body[:1] in ("!", "^")
                if negate:
                    body = body[1:]
                body = body.replace("\\", "\\\\")
                out.append(f"[{'^' if negate else ''}{body}]")
                i = end
        elif ch == "{" and braces:
            depth += 1
            out.append("(?:")
        elif ch == "}" and braces and depth:
            depth -= 1
            out.append(")")
        elif ch == "," and braces and depth:
            out.append("|")
        elif ch == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


@lru_cache(maxsize=256)
def compile_glob(pattern: str, *, ignore_case: bool = False, braces: bool = True) -> re.Pattern[str]:
    return re.compile(f"^(?:{glob_to_regex(pattern, braces=braces)})$", re.IGNORECASE if ignore_case else 0)


# --------------------------------------------------------------------------------------------------
# Ignore files


@dataclass(slots=True)
class IgnoreFile:
    """The rules of one ignore file (gitignore syntax, matched by ``pathspec``); paths are matched relative
    to ``base``, its directory."""

    base: str
    spec: pathspec.GitIgnoreSpec

    @classmethod
    def parse(cls, base: str, text: str) -> IgnoreFile:
        return cls(base, pathspec.GitIgnoreSpec.from_lines(text.splitlines()))

    def decide(self, path: str, is_dir: bool) -> bool | None:
        """True = ignored, False = explicitly re-included, None = no rule matches (the last match wins)."""
        rel = os.path.relpath(path, self.base)
        if rel.startswith(".."):
            return None
        return self.spec.check_file(rel + "/" if is_dir else rel).include


def _read_ignore(base: str, name: str) -> IgnoreFile | None:
    try:
        with open(os.path.join(base, name), encoding="utf-8", errors="replace") as fh:
            return IgnoreFile.parse(base, fh.read())
    except OSError:
        return None


def find_git_root(path: str) -> str | None:
    current = path if os.path.isdir(path) else os.path.dirname(path)
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


@lru_cache(maxsize=8)
def _global_excludes_path() -> str | None:
    try:
        out = subprocess.run(
            ["git", "config", "--global", "--get", "core.excludesFile"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    if out:
        return os.path.expanduser(out)
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(xdg, "git", "ignore")


# --------------------------------------------------------------------------------------------------
# Walking


@dataclass(slots=True)
class WalkOptions:
    tool_ignore_file: str
    """``.rgignore`` or ``.fdignore``."""
    require_git: bool
    """Honour ``.gitignore`` only inside a git repository (rg's default; fd runs with --no-require-git)."""
    override_globs: list[str] = field(default_factory=list)
    """rg ``--glob`` values, matched relative to the search root; ``!`` negates."""


@dataclass(slots=True)
class Entry:
    path: str
    is_dir: bool
    is_symlink: bool


class _Layer:
    __slots__ = ("files", "git")

    def __init__(self, files: list[IgnoreFile], git: list[IgnoreFile]) -> None:
        self.files = files
        self.git = git


def _override_decision(root: str, path: str, is_dir: bool, globs: list[str]) -> bool | None:
    """True = include (whitelisted), False = exclude, None = globs say nothing."""
    if not globs:
        return None
    rel = os.path.relpath(path, root)
    has_positive = False
    for glob in reversed(globs):
        negated = glob.startswith("!")
        body = glob[1:] if negated else glob
        has_positive = has_positive or not negated
        anchored = "/" in body.rstrip("/")
        regex = compile_glob(body.lstrip("/") if anchored else "**/" + body)
        if regex.match(rel):
            return not negated
    if any(not g.startswith("!") for g in globs) and not is_dir:
        return False
    return None


def walk(root: str, options: WalkOptions) -> Iterator[Entry]:
    """Entries under ``root`` (not ``root`` itself), depth first, names in byte order, ignores applied."""
    git_root = find_git_root(root)
    use_git = git_root is not None or not options.require_git
    names = (options.tool_ignore_file, ".ignore")

    # Ignore files of the ancestors (from the repo root, or the filesystem root, down to ``root``).
    top = git_root or "/"
    ancestors: list[str] = []
    current = root
    while current != top:
        parent = os.path.dirname(current)
        if parent == current:
            break
        ancestors.append(parent)
        current = parent
    layers: list[_Layer] = []
    globals_: list[IgnoreFile] = []
    if use_git:
        excludes = _global_excludes_path()
        if excludes:
            parsed = _read_ignore(os.path.dirname(excludes), os.path.basename(excludes))
            if parsed is not None:
                globals_.append(IgnoreFile(git_root or root, parsed.spec))
        if git_root is not None:
            info = _read_ignore(os.path.join(git_root, ".git", "info"), "exclude")
            if info is not None:
                globals_.append(IgnoreFile(git_root, info.spec))
    for directory in reversed(ancestors):
        layers.append(_load_layer(directory, names, use_git))

    yield from _walk_dir(root, root, layers, globals_, options, names, use_git)


def _load_layer(directory: str, names: tuple[str, ...], use_git: bool) -> _Layer:
    files = [f for f in (_read_ignore(directory, n) for n in names) if f is not None]
    git = [f for f in [_read_ignore(directory, ".gitignore")] if f is not None] if use_git else []
    return _Layer(files, git)


def _ignored(path: str, is_dir: bool, layers: list[_Layer], globals_: list[IgnoreFile]) -> bool:
    for layer in reversed(layers):
        for ignore_file in (*layer.files, *layer.git):
            decision = ignore_file.decide(path, is_dir)
            if decision is not None:
                return decision
    for ignore_file in globals_:
        decision = ignore_file.decide(path, is_dir)
        if decision is not None:
            return decision
    return False


def _walk_dir(
    root: str,
    directory: str,
    layers: list[_Layer],
    globals_: list[IgnoreFile],
    options: WalkOptions,
    names: tuple[str, ...],
    use_git: bool,
) -> Iterator[Entry]:
    if directory != root and os.path.exists(os.path.join(directory, ".git")):
        # A nested repository: the outer repository's .gitignore rules stop here.
        layers = [_Layer(layer.files, []) for layer in layers]
        globals_ = []
    layers = [*layers, _load_layer(directory, names, use_git)]
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        path = os.path.join(directory, entry.name)
        try:
            is_symlink = entry.is_symlink()
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        override = _override_decision(root, path, is_dir, options.override_globs)
        if override is False:
            continue
        if override is None and _ignored(path, is_dir, layers, globals_):
            continue
        yield Entry(path, is_dir, is_symlink)
        if is_dir and not is_symlink:
            yield from _walk_dir(root, path, layers, globals_, options, names, use_git)
