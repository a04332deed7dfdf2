"""The sandbox's errors: each message is one sentence a user (or the model) can act on."""

from __future__ import annotations

from caddie.errors import ConfigurationError, ToolError


class SandboxError(ConfigurationError):
    """The sandbox cannot be set up as asked; the message says what to do instead."""


class SandboxConfigError(SandboxError):
    """The sandbox configuration (settings, Pi's sandbox.json, ``--sandbox``) has a value that means nothing safe."""


class SandboxUnavailable(SandboxError):
    """The chosen mode cannot start on this machine (no bubblewrap, no user namespaces, no backend)."""


class SandboxDenied(ToolError):
    """A file tool's path is outside what the sandbox allows; the message is the model's tool result."""
