"""What a server asks of the user — an elicitation (a form, or a page to open) and a sampling request —
asked through ``ctx.ui`` dialogs, which every mode with a user answers (the terminal UI, RPC's extension UI
requests, ACP's permission requests). Without a user interface the request is refused with the reason."""

from __future__ import annotations

import asyncio
from typing import Any

from caddie.extensions.api import ExtensionContext
from caddie.extensions.bundled.mcp import elicitation
from caddie.extensions.bundled.mcp.connection import Refused
from caddie.extensions.bundled.mcp.oauth import open_in_browser
from caddie.extensions.bundled.mcp.sampling import sampling_reply, sampling_request

NO_UI = "caddie is running without a user interface (print or json mode), so it cannot ask the user"
ATTEMPTS = 5
"""How often one field is asked again after an answer that does not fit it."""
_CANCEL = object()
_SKIP = object()


async def elicit(ctx: ExtensionContext | None, server: str, params: dict[str, Any]) -> dict[str, Any]:
    """An ``elicitation/create``: the ``ElicitResult`` (accept with the form's content, decline, cancel)."""
    if ctx is None or not ctx.has_ui:
        raise Refused(f"{NO_UI} (elicitation from {server} refused)")
    message = str(params.get("message", ""))
    if params.get("mode") == "url":
        url = str(params.get("url", ""))
        if not await ctx.ui.confirm(f"{server} asks you to open a page", f"{message}\n\n{url}\n\nOpen it?"):
            return {"action": "decline"}
        await asyncio.to_thread(open_in_browser, url)
        return {"action": "accept"}
    content: dict[str, Any] = {}
    for question in elicitation.questions(params.get("requestedSchema") or {}):
        answer = await ask(ctx, server, message, question)
        if answer is _CANCEL:
            return {"action": "cancel"}
        if answer is not _SKIP:
            content[question.key] = answer
    return {"action": "accept", "content": content}


async def ask(ctx: ExtensionContext, server: str, message: str, q: elicitation.Question) -> Any:
    """One field: a list for choices and yes/no, a line of text otherwise (an empty line keeps the default
    or skips an optional field); an answer that does not fit is asked again with the reason."""
    error: str | None = None
    for _ in range(ATTEMPTS):
        title = elicitation.prompt_title(server, message, q, error)
        if q.kind == "boolean":
            raw = await ctx.ui.select(title, [elicitation.YES, elicitation.NO])
        elif q.kind == "choice":
            raw = await ctx.ui.select(title, [label for label, _ in q.options])
        else:
            hint = ", ".join(label for label, _ in q.options) if q.kind == "choices" else None
            raw = await ctx.ui.input(title, hint or elicitation.placeholder(q))
        if raw is None:
            return _CANCEL
        if raw == "" and q.kind in ("text", "number", "integer", "choices"):
            if q.default is not None:
                return q.default
            if not q.required:
                return _SKIP
            error = f"{q.title} is required"
            continue
        try:
            return elicitation.parse(q, raw)
        except elicitation.BadAnswer as e:
            error = str(e)
    return _CANCEL


async def sample(ctx: ExtensionContext | None, server: str, params: dict[str, Any]) -> dict[str, Any]:
    """A ``sampling/createMessage``, shown to the user and, once approved, sent to the session's model."""
    if ctx is None or not ctx.has_ui:
        raise Refused(f"{NO_UI} to approve a sampling request from {server}")
    request = sampling_request(params)
    model = ctx.model
    target = f"{model.provider}/{model.id}" if model is not None else "the model"
    if not await ctx.ui.confirm(
        f"{server} asks the model (sampling)", f"{request.preview}\n\nSend this to {target}?"
    ):
        raise Refused("the user declined the sampling request")
    try:
        reply = await ctx.complete(request.messages, request.system_prompt, request.max_tokens)
    except RuntimeError as e:
        raise Refused(str(e)) from None
    if reply.stop_reason in ("error", "aborted"):
        raise Refused(f"the model request failed: {reply.error_message or reply.stop_reason}")
    return sampling_reply(reply)
