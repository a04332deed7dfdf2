"""The sandbox's path policy applied in caddie's own process, for the file tools (read, edit, write, grep,
find, ls): the same rules the OS backend gives ``bash``, so ``write`` is no way around them.

Paths are judged by where they really lead: symlinks are resolved (``/proc/self/root/…`` too, which is a
symlink to ``/``). Writes are made race-free: the parent directory is opened and checked by what it *is*
(``/proc/self/fd``), then the file is created or opened under it without following a symlink, and refused if
it has other hard links (a hard link in the workspace can name a file outside it). Reads check the opened
descriptor the same way, so swapping a symlink in between the check and the open does not help.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import BinaryIO

from caddie.sandbox.errors import SandboxDenied
from caddie.sandbox.policy import SandboxPolicy, inside


def opened_path(fd: int) -> str | None:
    """The real path of an open descriptor (Linux ``/proc/self/fd``), or None where that cannot be known."""
    try:
        path = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    return path if path.startswith("/") else None


class FileGuard:
    def __init__(self, policy: SandboxPolicy) -> None:
        self.policy = policy

    def read_problem(self, path: str) -> str | None:
        return self.policy.read_problem(os.path.realpath(path))

    def write_problem(self, path: str) -> str | None:
        real = os.path.realpath(path)
        problem = self.policy.write_problem(real)
        if problem is not None:
            return problem
        try:
            st = os.stat(real)
        except OSError:
            return None
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            return self.policy.hard_link_problem(path, st.st_nlink)
        return None

    def read_filter(self, root: str) -> Callable[[str], bool] | None:
        """For a search under ``root`` (grep, find): a test of each found path, or None when nothing under
        ``root`` is unreadable (the common case: no per-file work)."""
        real_root = os.path.realpath(root)
        if not any(inside(d, real_root) for d in self.policy.deny_read) and not inside("/proc", real_root):
            return None
        return lambda path: self.policy.read_problem(os.path.realpath(path)) is None

    def check_read(self, path: str) -> None:
        problem = self.read_problem(path)
        if problem is not None:
            raise SandboxDenied(problem)

    def check_write(self, path: str) -> None:
        problem = self.write_problem(path)
        if problem is not None:
            raise SandboxDenied(problem)

    def check_opened(self, fd: int, path: str) -> None:
        """After opening ``path`` for reading: the file actually opened must be readable too."""
        real = opened_path(fd)
        problem = self.policy.read_problem(real) if real is not None else self.read_problem(path)
        if problem is not None:
            raise SandboxDenied(problem)

    def open_write(self, path: str) -> BinaryIO:
        """``open(path, "wb")`` that cannot be steered outside the writable paths (``SandboxDenied``, or
        ``OSError`` as a plain open would raise)."""
        self.check_write(path)
        real = os.path.realpath(path)
        parent = os.open(os.path.dirname(real) or "/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            where = opened_path(parent)
            target = os.path.join(where, os.path.basename(real)) if where is not None else real
            problem = self.policy.write_problem(target)
            if problem is not None:
                raise SandboxDenied(problem)
            fd = os.open(
                os.path.basename(real),
                os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
                0o666,
                dir_fd=parent,
            )
        finally:
            os.close(parent)
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                raise SandboxDenied(self.policy.hard_link_problem(path, st.st_nlink))
            os.set_blocking(fd, True)
            os.ftruncate(fd, 0)
            return os.fdopen(fd, "wb")
        except BaseException:
            os.close(fd)
            raise
