"""Values in models.json and auth.json that mean something else: ``!command``, ``$VAR``, ``${VAR}``.

``resolve_config_value`` turns one into the text it stands for; every value a command prints is registered
as a secret (it is a key or a header value) so no error text can show it.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping

from caddie.ai import secrets

__all__ = ["config_value_present", "resolve_config_value"]

_VAR = re.compile(r"\$\$|\$!|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_command_cache: dict[str, str | None] = {}
COMMAND_TIMEOUT_S = 15


def _interpolate(value: str, env: Mapping[str, str]) -> str | None:
    missing = False

    def sub(match: re.Match[str]) -> str:
        nonlocal missing
        token = match.group(0)
        if token == "$$":
            return "$"
        if token == "$!":
            return "!"
        name = match.group(1) or match.group(2)
        found = env.get(name)
        if not found:
            missing = True
            return ""
        return found

    result = _VAR.sub(sub, value)
    return None if missing else result


def _run_command(command: str) -> str | None:
    if command not in _command_cache:
        try:
            done = subprocess.run(
                command, shell=True, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
            )
            out = done.stdout.strip() if done.returncode == 0 else ""
            secrets.register(out)  # a command's output is a key or a header value: never show it
            _command_cache[command] = out or None
        except (OSError, subprocess.SubprocessError):
            _command_cache[command] = None
    return _command_cache[command]


def resolve_config_value(value: str, env: Mapping[str, str] | None = None) -> str | None:
    """The value models.json means: ``!cmd`` runs a shell command (stdout, cached per process),
    ``$VAR``/``${VAR}`` interpolate the environment (``$$`` and ``$!`` escape), a bare upper-case name of a
    set environment variable reads it (older Pi configs), anything else is literal. None when unresolved."""
    env = os.environ if env is None else env
    if value.startswith("!"):
        return _run_command(value[1:])
    if "$" in value:
        return _interpolate(value, env)
    if _ENV_NAME.match(value) and env.get(value):
        return env[value]
    return value


def config_value_present(value: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether ``value`` will resolve, without running commands (for availability checks)."""
    env = os.environ if env is None else env
    if value.startswith("!"):
        return True
    if "$" in value:
        return _interpolate(value, env) is not None
    return bool(value)
