"""The extension-UI sub-protocol of RPC mode: dialogs become ``extension_ui_request`` records the client
answers with ``extension_ui_response``; fire-and-forget calls (notify, status, widgets, title) are one-way."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from caddie.ai.abort import AbortSignal
from caddie.extensions.api import ComponentFactory, NotifyLevel, UnavailableUI, WidgetPlacement

Write = Callable[[dict[str, Any] | str], None]
"""Sends one record: a dict to encode, or a line already encoded (a tree too deep for ``json.dumps``)."""


def json_line_writer(stream: TextIO) -> Write:
    """A ``Write`` putting each record on ``stream`` as one compact JSON line, flushed at once."""

    def write(obj: dict[str, Any] | str) -> None:
        line = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        stream.write(line + "\n")
        stream.flush()

    return write


class RpcUI(UnavailableUI):
    """The extension UI over RPC: dialogs become requests the client answers; what needs a terminal
    (components, themes, the editor's keys) answers "unavailable" (``UnavailableUI``), as in Pi."""

    def __init__(self, write: Write) -> None:
        self._write = write
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._closed = False

    def _fire(self, method: str, **fields: Any) -> None:
        self._write(
            {
                "type": "extension_ui_request",
                "id": str(uuid.uuid4()),
                "method": method,
                **{k: v for k, v in fields.items() if v is not None},
            }
        )

    async def _ask(
        self, method: str, timeout: float | None, signal: AbortSignal | None = None, **fields: Any
    ) -> dict[str, Any] | None:
        if self._closed or (signal is not None and signal.aborted):
            return None
        request_id = str(uuid.uuid4())
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        payload: dict[str, Any] = {
            "type": "extension_ui_request",
            "id": request_id,
            "method": method,
            **{k: v for k, v in fields.items() if v is not None},
        }
        if timeout is not None:
            payload["timeout"] = int(timeout * 1000)
        self._write(payload)

        def cancel() -> None:  # the extension's signal dismisses the dialog
            if not future.done():
                future.set_result({"cancelled": True})

        stop = signal.add_listener(cancel) if signal is not None else None
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return None
        finally:
            self._pending.pop(request_id, None)
            if stop is not None:
                stop()

    def cancel_all(self) -> None:
        """stdin is gone: answer every open dialog "cancelled", and every later one at once."""
        self._closed = True
        for future in self._pending.values():
            if not future.done():
                future.set_result({"cancelled": True})

    def resolve(self, response: dict[str, Any]) -> bool:
        future = self._pending.get(str(response.get("id")))
        if future is None or future.done():
            return False
        future.set_result(response)
        return True

    def notify(self, message: str, level: NotifyLevel = "info") -> None:
        self._fire("notify", message=message, notifyType=level)

    def set_status(self, key: str, text: str | None) -> None:
        self._fire("setStatus", statusKey=key, statusText=text)

    def set_widget(
        self,
        key: str,
        lines: Sequence[str] | ComponentFactory | None,
        placement: WidgetPlacement = "aboveEditor",
    ) -> None:
        if lines is not None and callable(lines):
            return  # a component factory needs a terminal: ignored, as Pi's RPC mode does
        self._fire(
            "setWidget",
            widgetKey=key,
            widgetLines=list(lines) if lines is not None else None,
            widgetPlacement=placement,
        )

    def set_title(self, title: str) -> None:
        self._fire("setTitle", title=title)

    def set_editor_text(self, text: str) -> None:
        self._fire("set_editor_text", text=text)

    def get_editor_text(self) -> str:
        return ""  # the client owns the editor (Pi: always "")

    def set_working_message(self, message: str | None) -> None:
        pass

    async def confirm(
        self, title: str, message: str, timeout: float | None = None, *, signal: AbortSignal | None = None
    ) -> bool:
        answer = await self._ask("confirm", timeout, signal, title=title, message=message)
        return bool(answer and not answer.get("cancelled") and answer.get("confirmed") is True)

    async def select(
        self,
        title: str,
        options: Sequence[str],
        timeout: float | None = None,
        *,
        signal: AbortSignal | None = None,
    ) -> str | None:
        answer = await self._ask("select", timeout, signal, title=title, options=list(options))
        return _value(answer)

    async def input(
        self,
        title: str,
        placeholder: str | None = None,
        timeout: float | None = None,
        *,
        signal: AbortSignal | None = None,
    ) -> str | None:
        return _value(await self._ask("input", timeout, signal, title=title, placeholder=placeholder))

    async def editor(
        self, title: str, prefill: str | None = None, *, signal: AbortSignal | None = None
    ) -> str | None:
        return _value(await self._ask("editor", None, signal, title=title, prefill=prefill))


def _value(answer: dict[str, Any] | None) -> str | None:
    if not answer or answer.get("cancelled"):
        return None
    value = answer.get("value")
    return value if isinstance(value, str) else None
