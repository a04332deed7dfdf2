"""What a sandbox mode allows, as data, and the pure decisions over it: may this path be read, written?

One ``SandboxPolicy`` serves both enforcers: the OS backend turns it into mounts (``bubblewrap.py``) and the
file tools ask it in-process (``guard.py``), so a model meets the same rules through ``bash`` and through
``write``. Paths given to the deciding functions are real paths (symlinks resolved by the caller). The texts
here are what the model reads when something is refused: they say it was the sandbox, which mode, and what
is allowed instead, so it can adapt rather than retry.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from caddie.sandbox.config import NetworkRule, SandboxMode

DEFAULT_DENY_READ = (
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.netrc",
    "~/.git-credentials",
    "~/.config/git/credentials",
    "~/.config/gh",
    "~/.docker/config.json",
    "~/.kube",
    "~/.config/gcloud",
    "~/.azure",
    "~/.pypirc",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
)
"""Credential stores no command needs to read; caddie's and Pi's auth.json are added where they live."""

PROTECTED_IN_WRITABLE = (".git", ".caddie", ".pi")
"""Inside a writable path these stay read-only: what they hold runs later outside the sandbox. ``.git`` whole,
as Codex keeps it: hooks and ``core.*`` commands in its config are the obvious part, but a writable ``.git``
also allows a ``commondir`` file that points git at another config, or renaming ``.git`` away to plant a new
one; caddie's and Pi's project settings and extensions likewise."""

_OWN_PROCESS = re.compile(r"^/proc/(?:self|thread-self|\d+)(?:/|$)")


def inside(path: str, root: str) -> bool:
    """``path`` is ``root`` or below it (both absolute and normalised)."""
    if root == "/":
        return path.startswith("/")
    return path == root or path.startswith(root + "/")


def _home() -> str:
    return os.environ.get("HOME") or os.path.expanduser("~")


def tilde(path: str) -> str:
    """``/home/me/x`` as ``~/x`` for messages."""
    home = _home().rstrip("/")
    return "~" + path[len(home) :] if home and inside(path, home) else path


_GLOB = re.compile(r"[*?\[]")


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """An active sandbox mode (never ``off``) for one workspace."""

    mode: SandboxMode
    workspace: str
    temp_dir: str
    """The private temporary directory ($TMPDIR inside), writable in every mode."""
    writable: tuple[str, ...]
    protected: tuple[str, ...] = ()
    deny_read: tuple[str, ...] = ()
    deny_write: tuple[str, ...] = ()
    network: NetworkRule = field(default_factory=NetworkRule)
    allow_unix_sockets: bool = False

    # ---------------------------------------------------------------------------------------------
    # Decisions

    def denied_root(self, path: str) -> str | None:
        """The denyRead path ``path`` lies in, if any."""
        return next((root for root in self.deny_read if inside(path, root)), None)

    def read_problem(self, path: str) -> str | None:
        """Why ``path`` (a real path) may not be read, or None."""
        root = self.denied_root(path)
        if root is not None:
            return (
                f"{self.blocked}: {tilde(path)} is not readable ({tilde(root)} is protected from commands and "
                "tools). Work without it, or ask the user."
            )
        if _OWN_PROCESS.match(path):
            return f"{self.blocked}: {path} is caddie's own process information, which is not readable."
        return None

    def write_problem(self, path: str) -> str | None:
        """Why ``path`` (a real path) may not be written, or None."""
        if self.denied_root(path) is not None:
            return self.read_problem(path)
        if not any(inside(path, root) for root in self.writable):
            if self.mode == "read-only":
                return (
                    f"{self.blocked}: nothing may be written in this mode except under $TMPDIR "
                    f"({self.temp_dir}); {tilde(path)} was not written."
                )
            return (
                f"{self.blocked}: {tilde(path)} is outside the writable paths ({self.writable_text()}). "
                f"Write inside the project, or use $TMPDIR ({self.temp_dir}) for scratch files."
            )
        guarded = next((p for p in self.protected if inside(path, p)), None)
        if guarded is not None:
            return (
                f"{self.blocked}: {tilde(path)} is read-only ({tilde(guarded)} holds configuration that runs "
                "outside the sandbox)."
            )
        pattern = self.deny_write_match(path)
        if pattern is not None:
            return f"{self.blocked}: {tilde(path)} matches the denyWrite pattern {pattern!r}."
        return None

    def deny_write_match(self, path: str) -> str | None:
        for pattern in self.deny_write:
            if pattern.startswith("/"):
                if inside(path, pattern) or (_GLOB.search(pattern) and fnmatch.fnmatchcase(path, pattern)):
                    return pattern
            elif fnmatch.fnmatchcase(os.path.basename(path), pattern):
                return pattern
        return None

    def hard_link_problem(self, path: str, links: int) -> str:
        return (
            f"{self.blocked}: {tilde(path)} has {links} hard links; writing it could change a file outside "
            "the writable paths. Write a new file instead."
        )

    # ---------------------------------------------------------------------------------------------
    # Texts

    @property
    def blocked(self) -> str:
        return f"Blocked by the sandbox ({self.mode})"

    def writable_text(self) -> str:
        shown = [tilde(p) for p in self.writable if p != self.temp_dir]
        return ", ".join([*shown, "$TMPDIR"])

    def summary(self) -> str:
        """``workspace-write, network off`` — for the footer, ``get_state`` and notes."""
        return f"{self.mode}, {self.network.describe()}"

    def guideline(self) -> str:
        network = {
            "off": "there is no network",
            "on": "the network is open",
            "allow-list": f"only {', '.join(self.network.allowed)} are reachable (through $HTTPS_PROXY)",
        }[self.network.kind]
        where = (
            "in the project (not its .git) and $TMPDIR" if self.mode == "workspace-write" else "in $TMPDIR"
        )
        return (
            f"Commands run in a sandbox ({self.mode}): they can write only {where}; credentials such as ~/.ssh "
            f"are unreadable; {network}."
        )

    def explain(self, output: str, refused_hosts: Iterable[str] = ()) -> str | None:
        """A note for command output that shows the sandbox's hand (a read-only file system, a protected path
        denied, no network, a host not allowed), or None when nothing in it points at the sandbox."""
        reasons: list[str] = []
        if "Read-only file system" in output:
            reasons.append(
                f"only {self.writable_text()} are writable"
                if self.mode != "read-only"
                else "only $TMPDIR is writable"
            )
        if "Permission denied" in output and any(
            tilde(root) in output or root in output or os.path.basename(root) in output
            for root in self.deny_read
        ):
            reasons.append(f"{', '.join(tilde(r) for r in self.deny_read[:4])}… are not readable")
        hosts = sorted(set(refused_hosts))
        if hosts:
            reasons.append(f"network access to {', '.join(hosts)} was refused (not in the allow-list)")
        elif self.network.kind != "on" and any(marker in output for marker in _NETWORK_ERRORS):
            closed = self.network.kind == "off" or not self.network.allowed
            reasons.append(
                "there is no network (localhost is the sandbox's own)"
                if closed
                else f"only {', '.join(self.network.allowed)} are reachable, through the proxy in $HTTPS_PROXY"
            )
        if "Operation not permitted" in output:
            reasons.append(
                "ptrace is not available"
                if self.allow_unix_sockets
                else "ptrace and Unix-domain sockets are not available"
            )
        if not reasons:
            return None
        return f"[{self.blocked}: {'; '.join(reasons)}. Work within these limits or ask the user; retrying will not help.]"


_NETWORK_ERRORS = (
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "No address associated with hostname",
    "getaddrinfo",
    "ENOTFOUND",
    "EAI_AGAIN",
    "Network is unreachable",
    "Failed to establish a new connection",
    "Connection refused",  # in a network namespace of its own, a host's local services are not there
    "ECONNREFUSED",  # Node's names for the same (npm, yarn)
    "ENETUNREACH",
)
