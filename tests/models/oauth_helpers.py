"""A scripted user for the login flows: answers prompts, plays the browser, records what was shown."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

from caddie.ai.oauth.types import LoginEvent, LoginPrompt
from tests.support.fake_oauth import Browser


class ScriptedUser:
    """``LoginInteraction`` for tests. ``select``/``text`` answer those prompts; ``paste`` answers the
    manual-code prompt (else it waits until withdrawn); ``browser`` visits every announced authorization
    URL (in a worker thread: the loopback server runs on this event loop)."""

    def __init__(
        self,
        *,
        select: str | None = None,
        text: str = "",
        paste: str | None = None,
        browser: Browser | None = None,
    ) -> None:
        self.select = select
        self.text = text
        self.paste = paste
        self.browser = browser
        self.events: list[LoginEvent] = []
        self.prompts: list[LoginPrompt] = []
        self.visits: list[asyncio.Future[None]] = []

    def notify(self, event: LoginEvent) -> None:
        self.events.append(event)
        if event.kind == "auth_url" and self.browser is not None:
            loop = asyncio.get_running_loop()
            self.visits.append(loop.run_in_executor(None, self.browser.visit, event.url))

    async def prompt(self, prompt: LoginPrompt) -> str | None:
        self.prompts.append(prompt)
        if prompt.kind == "select":
            return self.select
        if prompt.kind in ("text", "secret"):
            return self.text
        if self.paste is not None:
            return self.paste
        await prompt.withdrawn.wait()
        return None

    @property
    def auth_url(self) -> str:
        return next(e.url for e in self.events if e.kind == "auth_url")

    def auth_query(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(urlsplit(self.auth_url).query).items()}

    @property
    def device(self) -> LoginEvent:
        return next(e for e in self.events if e.kind == "device_code")


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


def jwt(claims: dict[str, Any]) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part(claims)}.signature"


def codex_token(account: str = "acct-123", marker: str = "") -> str:
    return jwt({"https://api.openai.com/auth": {"chatgpt_account_id": account}, "n": marker})
