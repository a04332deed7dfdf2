"""Node's file-system error texts (``ENOENT: no such file or directory, open '/x'``), which Pi's tools pass
on to the model."""

from __future__ import annotations

import errno
import os

# libuv's uv_strerror texts, which Node puts in fs error messages.
_UV_DESCRIPTIONS: dict[str, str] = {
    "E2BIG": "argument list too long",
    "EACCES": "permission denied",
    "EAGAIN": "resource temporarily unavailable",
    "EBADF": "bad file descriptor",
    "EBUSY": "resource busy or locked",
    "EEXIST": "file already exists",
    "EFBIG": "file too large",
    "EINTR": "interrupted system call",
    "EINVAL": "invalid argument",
    "EIO": "i/o error",
    "EISDIR": "illegal operation on a directory",
    "ELOOP": "too many symbolic links encountered",
    "EMFILE": "too many open files",
    "ENAMETOOLONG": "name too long",
    "ENFILE": "file table overflow",
    "ENODEV": "no such device",
    "ENOENT": "no such file or directory",
    "ENOMEM": "not enough memory",
    "ENOSPC": "no space left on device",
    "ENOTDIR": "not a directory",
    "ENOTEMPTY": "directory not empty",
    "ENXIO": "no such device or address",
    "EPERM": "operation not permitted",
    "EROFS": "read-only file system",
    "ETXTBSY": "text file is busy",
    "EXDEV": "cross-device link not permitted",
}


def errno_code(error: OSError) -> str:
    """Node's ``error.code`` for an OS error (``ENOENT``...)."""
    if error.errno is None:
        return "EIO"
    return errno.errorcode.get(error.errno, f"E{error.errno}")


def node_fs_message(error: OSError, syscall: str, path: str | None = None) -> str:
    """The message Node gives a failed ``fs`` call, e.g. ``ENOENT: no such file or directory, open '/x'``."""
    return fs_error_text(errno_code(error), syscall, path)


def fs_error_text(code: str, syscall: str, path: str | None = None) -> str:
    """Node's ``fs`` error message for an error code (``EISDIR`` ...)."""
    description = _UV_DESCRIPTIONS.get(code)
    if description is None:
        number = getattr(errno, code, None)
        description = os.strerror(number).lower() if isinstance(number, int) else "unknown error"
    text = f"{code}: {description}, {syscall}"
    if path is not None:
        text += f" '{path}'"
    return text


def access_error(path: str, mode: int) -> str | None:
    """The error code ``fs.access(path, mode)`` fails with, or None when access is allowed."""
    if os.access(path, mode):
        return None
    try:
        os.stat(path)
    except OSError as exc:
        return errno_code(exc)
    return "EACCES"
