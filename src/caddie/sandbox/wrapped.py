"""What a backend turns a command into: the program line to start, the descriptors it must inherit, cleanup."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(slots=True)
class WrappedCommand:
    argv: list[str]
    pass_fds: list[int] = field(default_factory=list)
    """Descriptors the started process must inherit (``pass_fds``); closed by ``closers`` afterwards."""
    closers: list[Callable[[], None]] = field(default_factory=list)
    """Run once the process has ended (or failed to start), in order."""
    channel: int | None = None
    """The proxy channel this command's connections arrive on (allow-list mode)."""
    proxy_url: str | None = None
    """The proxy's address as the command sees it (allow-list mode)."""
