"""A real project for checkpoint tests: a git repository with history, a staged change, a stash, a branch,
a hook and an ignored file — and a fingerprint of its ``.git`` to prove it is never touched."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ENV
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def fingerprint(project: Path) -> dict[str, object]:
    """HEAD, index, stash, refs, and the bytes of every file under .git."""
    files = {}
    for path in sorted((project / ".git").rglob("*")):
        if path.is_file():
            files[str(path.relative_to(project))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return {
        "head": git(project, "rev-parse", "HEAD"),
        "staged": git(project, "diff", "--cached", "--name-status"),
        "stash": git(project, "stash", "list"),
        "refs": git(project, "for-each-ref"),
        "files": files,
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "app.py").write_text("print('v1')\n")
    (root / "lib").mkdir()
    (root / "lib" / "util.py").write_text("X = 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first")
    (root / "app.py").write_text("print('stashed')\n")
    git(root, "stash", "-q")
    git(root, "branch", "feature")
    (root / "lib" / "util.py").write_text("X = 2\n")
    git(root, "add", "lib/util.py")  # a staged change the index must keep
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path / 'hook-ran'}\n")
    hook.chmod(0o755)
    (root / "build").mkdir()
    (root / "build" / "out.bin").write_text("ignored output\n")
    (root / "run.log").write_text("ignored log\n")
    return root
