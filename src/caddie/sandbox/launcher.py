"""Start a sandboxed command that inherited no descriptors from caddie (``Sandbox.prepare_standalone``).

``python -I -S launcher.py SECCOMP_FILE SOCKET TOKEN -- ARGV…`` runs outside the sandbox, just before it:
it opens the seccomp program (a file in the sandbox's private directory) as descriptor 3 and, in allow-list
mode (``SOCKET`` and ``TOKEN`` not ``-``), connects to the proxy's Unix socket (``@name``: an abstract one),
sends the token and makes that connection descriptor 4 — then execs ARGV (bubblewrap, whose command line
names 3 and 4). So a program that starts processes its own way (the MCP SDK's stdio client) can start a
sandboxed one from a plain command line. It imports only built-in modules and stays no longer than the exec.
"""

import _socket
import fcntl
import os
import sys

SECCOMP_FD = 3
CONTROL_FD = 4


def _place(fds: list[int], targets: list[int]) -> None:
    """Move ``fds`` to ``targets`` (inheritable), whatever numbers they had: out of the way first."""
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in fds]
    for fd in fds:
        os.close(fd)
    for fd, target in zip(high, targets, strict=True):
        os.dup2(fd, target, inheritable=True)
        os.close(fd)


def main(argv: list[str]) -> None:
    seccomp_file, socket_path, token = argv[1:4]
    command = argv[5:]
    fds = [os.open(seccomp_file, os.O_RDONLY | os.O_CLOEXEC)]
    if socket_path != "-":
        control = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        control.connect("\0" + socket_path[1:] if socket_path.startswith("@") else socket_path)
        control.sendall(token.encode("ascii") + b"\n")
        fds.append(control.detach())
    _place(fds, [SECCOMP_FD, CONTROL_FD][: len(fds)])
    os.execv(command[0], command)


if __name__ == "__main__":
    try:
        main(sys.argv)
    except OSError as e:
        sys.stderr.write(f"caddie sandbox: cannot start the command: {e}\n")
        os._exit(126)
