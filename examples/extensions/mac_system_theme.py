"""caddie's theme follows the system's dark or light appearance (Pi's mac-system-theme example): at the
session's start and then every 2 seconds it asks the system which appearance is on and switches between
the ``dark`` and ``light`` themes when it changes.

Pi's example asks macOS only (``osascript``). This twin asks macOS the same way and, off macOS, the GNOME
desktop (``gsettings get org.gnome.desktop.interface color-scheme``: ``'prefer-dark'`` is dark). Where
neither answers (another desktop, a server over SSH) it leaves the theme alone and says so once, rather
than forcing ``light`` as Pi's does when ``osascript`` is missing.

Load it with ``caddie -e examples/extensions/mac_system_theme.py``.
"""

from __future__ import annotations

import asyncio
import sys

from caddie.extensions.api import ExtensionAPI, ExtensionContext

POLL_SECONDS = 2.0
MAC_DARK_MODE = 'tell application "System Events" to tell appearance preferences to return dark mode'


def register(api: ExtensionAPI) -> None:
    polling: list[asyncio.Task[None]] = []

    async def system_is_dark() -> bool | None:
        """True or False as the system says; None when nothing answers."""
        if sys.platform == "darwin":
            result = await api.exec("osascript", ["-e", MAC_DARK_MODE], timeout=5)
            return result.stdout.strip() == "true" if result.code == 0 else None
        result = await api.exec(
            "gsettings", ["get", "org.gnome.desktop.interface", "color-scheme"], timeout=5
        )
        return "dark" in result.stdout if result.code == 0 else None

    async def follow(ctx: ExtensionContext, current: str) -> None:
        while True:
            await asyncio.sleep(POLL_SECONDS)
            dark = await system_is_dark()
            wanted = current if dark is None else "dark" if dark else "light"
            if wanted != current and ctx.ui.set_theme(wanted).success:
                current = wanted

    async def on_start(event: object, ctx: ExtensionContext) -> None:
        if not ctx.ui.supports("themes"):
            return
        dark = await system_is_dark()
        if dark is None:
            ctx.ui.notify(
                "mac-system-theme: the system's appearance is unknown here; the theme stays", "warning"
            )
            return
        current = "dark" if dark else "light"
        ctx.ui.set_theme(current)
        polling.append(asyncio.ensure_future(follow(ctx, current)))

    async def on_shutdown(event: object, ctx: ExtensionContext) -> None:
        while polling:
            polling.pop().cancel()

    api.on("session_start", on_start)
    api.on("session_shutdown", on_shutdown)
