"""The seam between the sandbox and the operating system: one backend per mechanism.

A backend turns a ``SandboxPolicy`` into a way to start a command under it. Today there is one:
``BubblewrapBackend`` (Linux: namespaces, bind mounts, seccomp). macOS Seatbelt (``sandbox-exec`` with a
generated profile, as Codex and Claude Code ship) and Landlock (an in-kernel Linux policy applied by a small
launcher, no namespaces needed) would each be a class with these two methods; ``backend_for_platform`` picks
one. A backend that cannot run here says why in ``unavailable`` — caddie then refuses to start in that mode
rather than run commands unsandboxed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Protocol

from caddie.sandbox.bubblewrap import BubblewrapBackend, StandIns
from caddie.sandbox.errors import SandboxUnavailable
from caddie.sandbox.policy import SandboxPolicy
from caddie.sandbox.proxy import FilteringProxy
from caddie.sandbox.wrapped import WrappedCommand


class SandboxBackend(Protocol):
    name: str

    def unavailable(self) -> str | None:
        """Why commands cannot be sandboxed here, as a clause saying what to install or enable; None if they can."""
        ...

    def wrap(
        self,
        policy: SandboxPolicy,
        stand_ins: StandIns,
        argv: Sequence[str],
        cwd: str,
        proxy: FilteringProxy | None,
        standalone_dir: str | None = None,
    ) -> WrappedCommand:
        """``argv`` as a command that runs under ``policy`` in ``cwd``; connections go through ``proxy``
        (allow-list mode) or nowhere (network off) or anywhere (network on, ``proxy`` None). With
        ``standalone_dir`` the command line needs no inherited descriptors (``pass_fds`` stays empty): what
        it needs is kept in that directory, private to this caddie."""
        ...


class MissingBackend:
    """A platform caddie has no sandbox for yet: always unavailable, with the reason."""

    name = "none"

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def unavailable(self) -> str | None:
        return self.reason

    def wrap(
        self,
        policy: SandboxPolicy,
        stand_ins: StandIns,
        argv: Sequence[str],
        cwd: str,
        proxy: FilteringProxy | None,
        standalone_dir: str | None = None,
    ) -> WrappedCommand:
        raise SandboxUnavailable(self.reason)


def backend_for_platform(platform: str | None = None) -> SandboxBackend:
    platform = platform or sys.platform
    if platform.startswith("linux"):
        return BubblewrapBackend()
    if platform == "darwin":
        return MissingBackend(
            "caddie's macOS backend (Seatbelt) does not exist yet; only Linux (bubblewrap) does"
        )
    return MissingBackend(f"caddie has no sandbox backend for {platform} (only Linux, with bubblewrap)")
