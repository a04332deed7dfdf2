"""The sandbox's errors: each message is one sentence a user can act on."""

from __future__ import annotations


class SandboxError(Exception):
    """The sandbox cannot do what was asked; the message says what to do instead."""


class SandboxConfigError(SandboxError):
    """The sandbox configuration (settings, Pi's sandbox.json, ``--sandbox``) has a value that means nothing safe."""


class SandboxUnavailable(SandboxError):
    """The chosen mode cannot start on this machine (no bubblewrap, no user namespaces, no backend)."""
