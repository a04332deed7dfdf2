"""The seccomp filter every sandboxed command runs under: a classic-BPF program, built here without libseccomp.

It refuses (``EPERM``) what would reach past the mounts and namespaces: ``ptrace`` and
``process_vm_readv``/``writev`` (another process's memory), ``socket(AF_UNIX, …)`` (a Unix socket left
visible on the read-only filesystem — an ssh-agent, the Docker daemon, a tmux server — would be a way
out; ``socketpair`` stays allowed), ``bpf``, ``perf_event_open``, ``userfaultfd`` and the kernel keyring;
``io_uring`` answers ``ENOSYS`` (it could open sockets past this filter; libraries fall back to plain calls).
Another architecture's system calls (32-bit ``int 0x80``, x32) kill the process.
bubblewrap loads the program (``--seccomp FD``) after setting ``no_new_privs``.
"""

from __future__ import annotations

import errno
import platform
import struct
from dataclasses import dataclass

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_ALLOW = 0x7FFF0000
_KILL_PROCESS = 0x80000000
_ERRNO = 0x00050000
_OFFSET_NR = 0
_OFFSET_ARCH = 4
_OFFSET_ARG0 = 16  # the low 32 bits of args[0] on a little-endian machine
AF_UNIX = 1
X32_SYSCALL_BIT = 0x40000000


@dataclass(frozen=True, slots=True)
class SyscallTable:
    audit_arch: int
    socket: int
    refused: dict[str, int]
    unavailable: dict[str, int]
    x32_bit: bool


TABLES = {
    "x86_64": SyscallTable(
        audit_arch=0xC000003E,
        socket=41,
        refused={
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "bpf": 321,
            "perf_event_open": 298,
            "userfaultfd": 323,
            "add_key": 248,
            "request_key": 249,
            "keyctl": 250,
        },
        unavailable={"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427},
        x32_bit=True,
    ),
    "aarch64": SyscallTable(
        audit_arch=0xC00000B7,
        socket=198,
        refused={
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "bpf": 280,
            "perf_event_open": 241,
            "userfaultfd": 282,
            "add_key": 217,
            "request_key": 218,
            "keyctl": 219,
        },
        unavailable={"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427},
        x32_bit=False,
    ),
}
TABLES["arm64"] = TABLES["aarch64"]
TABLES["amd64"] = TABLES["x86_64"]


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def filter_program(machine: str | None = None, *, allow_unix_sockets: bool = False) -> bytes:
    """The BPF program (``struct sock_filter[]``) for ``machine`` (default: this one).

    ``KeyError`` when there is no table for the machine (the backend then refuses to start)."""
    table = TABLES[(machine or platform.machine()).lower()]
    refuse = _ERRNO | errno.EPERM
    missing = _ERRNO | errno.ENOSYS
    rules: list[tuple[int, int]] = [(nr, refuse) for nr in table.refused.values()]
    rules += [(nr, missing) for nr in table.unavailable.values()]
    body: list[bytes] = [
        _insn(_LD_W_ABS, _OFFSET_ARCH),
        _insn(_JEQ_K, table.audit_arch, jt=1, jf=0),
        _insn(_RET_K, _KILL_PROCESS),
        _insn(_LD_W_ABS, _OFFSET_NR),
    ]
    if table.x32_bit:
        body += [_insn(_JGE_K, X32_SYSCALL_BIT, jt=0, jf=1), _insn(_RET_K, _KILL_PROCESS)]
    for nr, action in rules:
        body += [_insn(_JEQ_K, nr, jt=0, jf=1), _insn(_RET_K, action)]
    if not allow_unix_sockets:
        # socket(AF_UNIX, ...): the domain is the first argument
        body += [
            _insn(_JEQ_K, table.socket, jt=0, jf=3),
            _insn(_LD_W_ABS, _OFFSET_ARG0),
            _insn(_JEQ_K, AF_UNIX, jt=0, jf=1),
            _insn(_RET_K, refuse),
        ]
    body.append(_insn(_RET_K, _ALLOW))
    return b"".join(body)


def supported(machine: str | None = None) -> bool:
    return (machine or platform.machine()).lower() in TABLES
