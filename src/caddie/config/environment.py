"""The environment variables caddie reads for itself, and what it does with Pi's ``PI_*`` ones.

Pi 0.84.4 reads a handful of ``PI_*`` variables (docs/environment-variables.md in its package). Each has
a fate here, so that a Pi user's shell configuration never changes what caddie does without a word:

- **honoured**: caddie reads the Pi name as well as its ``CADDIE_`` twin (``PI_OFFLINE`` and
  ``CADDIE_OFFLINE``; ``PI_CACHE_RETENTION`` and ``CADDIE_CACHE_RETENTION``) — the same meaning.
- **twin**: the variable names one of Pi's own folders (``PI_CODING_AGENT_DIR``); caddie reads only its
  twin (``CADDIE_CODING_AGENT_DIR``) so it never writes into Pi's files, and says so once when only the
  Pi name is set.
- **moot**: caddie already behaves as the variable asks (``PI_SKIP_VERSION_CHECK``: caddie never checks).
- **refused**: the variable has no meaning in caddie; set, it gets one line saying what caddie does.

``pi_variable_notices`` turns the environment into those lines; ``docs/configuration.md`` lists them all.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Fate = Literal["honoured", "twin", "moot", "refused"]


@dataclass(frozen=True, slots=True)
class PiVariable:
    name: str
    fate: Fate
    twin: str | None
    """caddie's own name for it (``CADDIE_…``), where there is one."""
    note: str
    """What caddie does instead (for ``twin`` and ``refused``: the one line shown when it is set)."""
    only_when: str | None = None
    """``refused`` only for this value (lower-case): other values are what caddie does anyway."""
    chosen_by: tuple[str, ...] = ()
    """``twin``: caddie variables that show the user chose caddie's folder already (no line then)."""
    verdict: str = "is ignored"
    """``refused``: what the line says of the variable before the note (``is partly honoured``)."""


PI_VARIABLES: tuple[PiVariable, ...] = (
    PiVariable(
        "PI_CODING_AGENT_DIR",
        "twin",
        "CADDIE_CODING_AGENT_DIR",
        "caddie keeps its settings, models.json, auth.json and sessions in its own folder (from Pi's it reads "
        "only Pi's sessions for caddie acp and extensions/sandbox.json); set CADDIE_CODING_AGENT_DIR to move it",
        chosen_by=("CADDIE_DIR",),
    ),
    PiVariable(
        "PI_CODING_AGENT_SESSION_DIR",
        "twin",
        "CADDIE_CODING_AGENT_SESSION_DIR",
        "caddie stores sessions under its own folder; set CADDIE_CODING_AGENT_SESSION_DIR (or --session-dir) "
        "to move them",
    ),
    PiVariable(
        "PI_PACKAGE_DIR",
        "refused",
        None,
        "caddie is a Python package; it finds its own files, so there is no package folder to override",
    ),
    PiVariable("PI_OFFLINE", "honoured", "CADDIE_OFFLINE", "no network use at start-up"),
    PiVariable("PI_SKIP_VERSION_CHECK", "moot", None, "caddie never asks for its latest version"),
    PiVariable(
        "PI_TELEMETRY",
        "refused",
        None,
        "caddie sends no telemetry and no attribution headers; nothing is turned on",
        only_when="on",
    ),
    PiVariable(
        "PI_CACHE_RETENTION", "honoured", "CADDIE_CACHE_RETENTION", "long prompt caching where supported"
    ),
    PiVariable(
        "PI_SHARE_VIEWER_URL",
        "refused",
        None,
        "caddie has no share viewer site (export a session with /export or caddie --export instead)",
    ),
    PiVariable(
        "PI_HARDWARE_CURSOR",
        "refused",
        None,
        "caddie's terminal UI (Textual) draws its own cursor; the hardware cursor cannot be shown",
        only_when="on",
    ),
    PiVariable(
        "PI_HYPERLINKS",
        "refused",
        None,
        "caddie's terminal UI (Textual) detects hyperlink support itself; this override is not read",
    ),
    PiVariable(
        "PI_IMAGE_PROTOCOL",
        "refused",
        None,
        "caddie's terminal UI picks the image protocol from the terminal itself; this override is not read",
    ),
    PiVariable(
        "PI_TRUE_COLOR",
        "refused",
        None,
        "caddie's terminal UI (Textual) detects colour support itself (COLORTERM, NO_COLOR); this override "
        "is not read",
    ),
    PiVariable(
        "PI_TUI_ESC_TIMEOUT",
        "refused",
        None,
        "caddie's terminal UI (Textual) has its own Escape timing; this value is not read",
    ),
    PiVariable(
        "PI_OAUTH_CALLBACK_HOST",
        "refused",
        None,
        "caddie's login callback servers listen on 127.0.0.1 only, never on another interface",
    ),
    PiVariable(
        "PI_CODING_AGENT", "moot", None, "a marker Pi sets for its children; caddie sets CADDIE_CODING_AGENT"
    ),
    PiVariable(
        "PI_EXPERIMENTAL",
        "refused",
        None,
        "read, bash, edit and write prefer strict arguments, as in Pi (CADDIE_EXPERIMENTAL=1 is caddie's "
        "name); Pi's experimental first-run setup and footer marker are not built",
        only_when="on",
        verdict="is partly honoured",
    ),
    *(
        PiVariable(name, "refused", None, "a switch of Pi's own debugging or installer; caddie has none")
        for name in (
            "PI_DEBUG_REDRAW",
            "PI_TUI_DEBUG",
            "PI_TUI_WRITE_LOG",
            "PI_TIMING",
            "PI_STARTUP_BENCHMARK",
            "PI_INSTALLER_API_BASE",
            "PI_MANAGED_INSTALL_ROOT",
        )
    ),
    PiVariable(
        "PI_CLEAR_ON_SHRINK",
        "refused",
        None,
        "caddie's terminal UI redraws the whole screen; there is nothing to clear",
        only_when="on",
    ),
)
"""Every ``PI_*`` variable Pi 0.84.4 documents or reads for its own process (docs/environment-variables.md
and ``process.env`` in its dist/; not the ``PI_SESSION_ID``… variables it sets for commands: caddie sets
those too, see tools/bash.py)."""

TRUTHY = ("1", "true", "yes")


def _truthy(value: str | None) -> bool:
    return bool(value) and str(value).strip().lower() in TRUTHY


def offline(env: Mapping[str, str] | None = None) -> bool:
    """``--offline`` / ``CADDIE_OFFLINE`` / ``PI_OFFLINE`` (1, true or yes): no network use at start-up
    (the Ollama probe, installing a trusted project's missing packages)."""
    env = os.environ if env is None else env
    return _truthy(env.get("CADDIE_OFFLINE")) or _truthy(env.get("PI_OFFLINE"))


def cache_retention(env: Mapping[str, str] | None = None) -> Literal["short", "long"]:
    """``CADDIE_CACHE_RETENTION=long`` (or Pi's ``PI_CACHE_RETENTION``): 1 h Anthropic / 24 h OpenAI prompt
    caching where the provider offers it; else the providers' short default."""
    env = os.environ if env is None else env
    value = env.get("CADDIE_CACHE_RETENTION") or env.get("PI_CACHE_RETENTION")
    return "long" if value == "long" else "short"


def experimental(env: Mapping[str, str] | None = None) -> bool:
    """``CADDIE_EXPERIMENTAL=1`` (or Pi's ``PI_EXPERIMENTAL=1``): the built-in read, bash, edit and write
    tools ask for strict arguments where the provider can (Pi's experimental tool sampling)."""
    env = os.environ if env is None else env
    return env.get("CADDIE_EXPERIMENTAL") == "1" or env.get("PI_EXPERIMENTAL") == "1"


def session_dir_from_env(env: Mapping[str, str] | None = None) -> str | None:
    """``CADDIE_CODING_AGENT_SESSION_DIR`` (Pi's ``PI_CODING_AGENT_SESSION_DIR``): where sessions are kept,
    below ``--session-dir`` and above settings ``sessionDir``."""
    env = os.environ if env is None else env
    value = env.get("CADDIE_CODING_AGENT_SESSION_DIR")
    return os.path.expanduser(value) if value else None


def pi_variable_notices(env: Mapping[str, str] | None = None) -> list[str]:
    """One line per ``PI_*`` variable set in ``env`` that caddie does not honour as Pi would."""
    env = os.environ if env is None else env
    lines: list[str] = []
    for var in PI_VARIABLES:
        value = env.get(var.name)
        if not value:
            continue
        if var.fate == "twin" and var.twin and not any(env.get(v) for v in (var.twin, *var.chosen_by)):
            lines.append(f"{var.name} is set: it is Pi's; {var.note}")
        elif var.fate == "refused":
            if var.only_when == "on" and not _truthy(value):
                continue
            lines.append(f"{var.name}={value} {var.verdict}: {var.note}")
    return lines


def process_markers() -> dict[str, str]:
    """What caddie sets in its own environment for the processes it starts (as Pi sets ``AI_AGENT=pi`` and
    ``PI_CODING_AGENT=true``): ``AI_AGENT=caddie`` and ``CADDIE_CODING_AGENT=true``."""
    return {"AI_AGENT": "caddie", "CADDIE_CODING_AGENT": "true"}


__all__ = [
    "PI_VARIABLES",
    "PiVariable",
    "cache_retention",
    "offline",
    "pi_variable_notices",
    "process_markers",
    "session_dir_from_env",
]
