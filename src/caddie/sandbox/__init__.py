"""The sandbox for the commands the model chooses: modes, the OS backend, the file tools' path policy.

``--sandbox off|read-only|workspace-write`` and the settings ``sandbox`` block (also read from Pi's
``sandbox.json`` files) choose a ``SandboxMode``; ``open_sandbox`` builds the session's ``Sandbox``; every
place that starts a command for the model or the user (the ``bash`` tool, ``!cmd``, a goal's check,
``caddie batch`` setup and check, ``api.exec``) calls ``Sandbox.prepare``; the file tools ask
``Sandbox.file_guard``. docs/sandbox.md is the user's guide.
"""

from __future__ import annotations

from caddie.sandbox.backend import SandboxBackend, backend_for_platform
from caddie.sandbox.config import (
    ENV_INSIDE,
    ENV_MODE,
    MODES,
    NetworkRule,
    SandboxConfig,
    SandboxMode,
    choose_mode,
    load_config,
    read_config,
)
from caddie.sandbox.errors import SandboxConfigError, SandboxDenied, SandboxError, SandboxUnavailable
from caddie.sandbox.guard import FileGuard
from caddie.sandbox.policy import SandboxPolicy
from caddie.sandbox.sandbox import PreparedCommand, Sandbox, open_sandbox

__all__ = [
    "ENV_INSIDE",
    "ENV_MODE",
    "MODES",
    "FileGuard",
    "NetworkRule",
    "PreparedCommand",
    "Sandbox",
    "SandboxBackend",
    "SandboxConfig",
    "SandboxConfigError",
    "SandboxDenied",
    "SandboxError",
    "SandboxMode",
    "SandboxPolicy",
    "SandboxUnavailable",
    "backend_for_platform",
    "choose_mode",
    "load_config",
    "open_sandbox",
    "read_config",
]
