"""A desktop notification when caddie is done and waiting for you (Pi's notify example): when a run has
fully settled, the terminal is asked to notify — OSC 99 in Kitty, a toast in Windows Terminal (WSL), OSC 777
elsewhere (Ghostty, iTerm2, WezTerm, rxvt-unicode). Only in the terminal UI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping

from caddie.extensions.api import ExtensionAPI, ExtensionContext


def windows_toast_script(title: str, body: str) -> str:
    kind = "Windows.UI.Notifications"
    return "; ".join(
        [
            f"[{kind}.ToastNotificationManager, {kind}, ContentType = WindowsRuntime] > $null",
            f"$xml = [{kind}.ToastNotificationManager]::GetTemplateContent([{kind}.ToastTemplateType]::ToastText01)",
            f"$xml.GetElementsByTagName('text')[0].AppendChild($xml.CreateTextNode('{body}')) > $null",
            f"[{kind}.ToastNotificationManager]::CreateToastNotifier('{title}').Show([{kind}.ToastNotification]::new($xml))",
        ]
    )


def terminal_sequence(title: str, body: str, env: Mapping[str, str]) -> str | None:
    """The escape sequence that asks this terminal for a notification (None: Windows Terminal, a toast)."""
    if env.get("WT_SESSION"):
        return None
    if env.get("KITTY_WINDOW_ID"):
        return f"\x1b]99;i=1:d=0;{title}\x1b\\\x1b]99;i=1:p=body;{body}\x1b\\"
    return f"\x1b]777;notify;{title};{body}\x07"


def notify(title: str, body: str) -> None:
    sequence = terminal_sequence(title, body, os.environ)
    if sequence is None:
        subprocess.Popen(["powershell.exe", "-NoProfile", "-Command", windows_toast_script(title, body)])
        return
    terminal = sys.__stdout__
    if terminal is not None:
        terminal.write(sequence)
        terminal.flush()


def register(api: ExtensionAPI) -> None:
    def settled(event: object, ctx: ExtensionContext) -> None:
        if ctx.mode == "tui":
            notify("caddie", "Ready for input")

    api.on("agent_settled", settled)
