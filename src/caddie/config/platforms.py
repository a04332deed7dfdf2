"""Where caddie is built and tested — Linux and macOS — and the one line it prints when started anywhere
else (Windows, Termux on Android), saying what to expect there.

Pi 0.84.4 documents Windows (Git Bash, a ``powershell`` tool) and Termux setups; caddie has neither tested,
so instead of failing later without a word it says so once at start (docs/configuration.md, "Where caddie
runs")."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

TESTED_ON = "caddie is built and tested on Linux and macOS only"

WINDOWS = (
    f"{TESTED_ON}; on Windows it is untested and parts will fail: the bash tool needs Git Bash (name its "
    'bash.exe in settings "shellPath"), and there is no powershell tool, --sandbox or image paste. Run '
    "caddie inside WSL to get the tested Linux behaviour"
)
TERMUX = (
    f"{TESTED_ON}; on Termux (Android) it is untested: image paste needs wl-paste or xclip, which Termux "
    "lacks, and --sandbox needs bubblewrap's user namespaces, which Android does not give apps"
)


def is_windows(platform: str) -> bool:
    """Native Windows, or the POSIX layers on it (Cygwin, MSYS2), which caddie has not been tested on."""
    return platform in ("win32", "cygwin", "msys")


def is_termux(platform: str, env: Mapping[str, str]) -> bool:
    return platform == "android" or "TERMUX_VERSION" in env or "com.termux" in env.get("PREFIX", "")


def platform_notice(platform: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """The line for a system caddie is not tested on (None on Linux and macOS)."""
    platform = sys.platform if platform is None else platform
    env = os.environ if env is None else env
    if is_windows(platform):
        return WINDOWS
    if is_termux(platform, env):
        return TERMUX
    return None
