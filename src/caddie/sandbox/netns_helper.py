"""Run inside a network-less sandbox (allow-list mode): open the proxy port there, hand it to caddie, exec.

``python -I -S netns_helper.py FD PORT -- ARGV…``: binds 127.0.0.1:PORT in the sandbox's own network
namespace, sends that listening socket over the inherited Unix socket FD (``SCM_RIGHTS``) to caddie's
filtering proxy — which from then on accepts the sandbox's connections itself — closes both, and execs ARGV.
Nothing of it stays running. It imports only built-in modules, so it starts in a few milliseconds and needs
nothing but the interpreter; it creates no Unix socket (the seccomp filter refuses those).
"""

import _socket
import posix
import sys


def main(argv: list[str]) -> None:
    control_fd, port = int(argv[1]), int(argv[2])
    command = argv[4:]
    control = _socket.socket(fileno=control_fd)
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    fd_bytes = listener.fileno().to_bytes(4, sys.byteorder)
    control.sendmsg([b"L"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fd_bytes)])
    control.close()
    listener.close()
    program = command[0]
    if "/" in program:
        posix.execv(program, command)
    error: OSError = FileNotFoundError(2, "No such file or directory", program)
    for directory in posix.environ.get(b"PATH", b"/usr/bin:/bin").split(b":"):
        try:
            posix.execv(directory.decode() + "/" + program, command)
        except OSError as e:
            error = e
    sys.stderr.write(f"{program}: {error.strerror}\n")
    posix._exit(127)


if __name__ == "__main__":
    main(sys.argv)
