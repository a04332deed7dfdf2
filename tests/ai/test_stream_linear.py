"""Stream assembly is linear for every provider: proven by counting work, not by timing it.

While a reply streams, each delta event carries the partial message. Whenever a block's text (or a tool
call's previewed arguments) is a *new* object, the provider built it from the whole buffer so far — a copy
of the text, a parse of the argument JSON. The tests add up the size of every such rebuild: with per-delta
re-concatenation (``block.text += piece``) or per-delta re-parsing that sum grows with the square of the
reply; here it must stay within a constant factor of the reply's size (plus a fixed allowance for the
first few kilobytes, which are kept exact on every delta).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from caddie.ai.messages import TextContent, ThinkingContent, ToolCall
from caddie.ai.model import Context, Model, StreamOptions
from caddie.ai.providers.blocks import EXACT_PREVIEW_BELOW
from caddie.ai.providers.faux import FauxProvider, faux_message, faux_model, faux_thinking, faux_tool_call
from caddie.ai.stream import ApiProvider, get_api
from caddie.ai.stream_events import TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent, final_message
from tests.ai.helpers import READ_TOOL, TEST_KEY, anthropic_model, context, openai_model
from tests.support import fake_llm as fl

FACTOR = 10
"""Rebuilt characters allowed per character streamed (the geometric refresh needs at most 9)."""
ALLOWANCE = EXACT_PREVIEW_BELOW * EXACT_PREVIEW_BELOW
"""Small buffers are rebuilt on every delta: at most this many characters in all, whatever the reply."""


@dataclass
class Work:
    streamed: int = 0
    rebuilt: int = 0
    deltas: int = 0


class _Watcher:
    """Adds up the size of every rebuilt text / argument preview seen on delta events."""

    def __init__(self) -> None:
        self.text = Work()
        self.args = Work()
        self._last: dict[tuple[int, str], Any] = {}  # holds the previous object, so ids are not reused
        self._raw: dict[int, int] = {}

    def see(self, event: Any) -> None:
        if isinstance(event, TextDeltaEvent | ThinkingDeltaEvent):
            block = event.partial.content[event.content_index]
            assert isinstance(block, TextContent | ThinkingContent)
            value = block.text if isinstance(block, TextContent) else block.thinking
            self._count(self.text, (event.content_index, "text"), value, len(value), len(event.delta))
        elif isinstance(event, ToolCallDeltaEvent):
            block = event.partial.content[event.content_index]
            assert isinstance(block, ToolCall)
            raw = self._raw.get(event.content_index, 0) + len(event.delta)
            self._raw[event.content_index] = raw
            self._count(self.args, (event.content_index, "args"), block.arguments, raw, len(event.delta))

    def _count(self, work: Work, key: tuple[int, str], value: Any, size: int, delta: int) -> None:
        work.streamed += delta
        work.deltas += 1
        if key not in self._last or self._last[key] is not value:
            work.rebuilt += size
        self._last[key] = value


async def _watch(provider: ApiProvider, model: Model, ctx: Context) -> tuple[_Watcher, Any]:
    watcher = _Watcher()
    last: Any = None
    async for event in provider.stream(model, ctx, StreamOptions(api_key=TEST_KEY)):
        watcher.see(event)
        last = event
    final = final_message(last)
    assert final is not None and final.stop_reason in ("stop", "toolUse"), final and final.error_message
    return watcher, final


def _linear(work: Work) -> None:
    assert work.deltas > 100, "the reply must arrive in many deltas for the count to mean anything"
    assert work.rebuilt <= FACTOR * work.streamed + ALLOWANCE, (
        f"{work.rebuilt:,} characters rebuilt for {work.streamed:,} streamed in {work.deltas:,} deltas"
    )


def _body(size: int) -> str:
    line = 'line "quoted" {braced} [listed], with a \\ backslash and ünïcode\n'
    return (line * (size // len(line) + 1))[:size]


SIZES = [256 * 1024, 1024 * 1024]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_sdk_providers_assemble_text_thinking_and_arguments_in_linear_work(
    llm: fl.FakeLLM, api: str, size: int
) -> None:
    body = _body(size)
    llm.push(
        fl.Reply(
            thinking=body[: size // 4],
            text=body,
            tool_calls=[fl.ToolCallSpec("read", {"path": "a.py", "content": body})],
            chunk_size=1021,
        )
    )
    model = openai_model(llm) if api == "openai" else anthropic_model(llm)
    provider = get_api(model.api)
    assert provider is not None
    watcher, final = await _watch(provider, model, context(tools=[READ_TOOL]))

    _linear(watcher.text)
    _linear(watcher.args)
    thinking, text, call = final.content
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == body[: size // 4]
    assert isinstance(text, TextContent) and text.text == body
    assert isinstance(call, ToolCall) and call.arguments == {"path": "a.py", "content": body}


@pytest.mark.parametrize("size", SIZES)
async def test_the_faux_provider_assembles_in_linear_work(size: int) -> None:
    body = _body(size)
    faux = FauxProvider(chunk_chars=509)
    faux.set_responses(
        [
            faux_message(
                [faux_thinking(body[:1000]), TextContent(body), faux_tool_call("read", {"path": body})]
            )
        ]
    )
    watcher, final = await _watch(faux, faux_model(), context())
    _linear(watcher.text)
    assert isinstance(final.content[1], TextContent) and final.content[1].text == body
    assert final.content[2].arguments == {"path": body}


async def test_partial_text_stays_exact_while_small_and_close_behind_when_large(llm: fl.FakeLLM) -> None:
    """What an extension reading ``event.message`` mid-stream sees: every character of a short reply, and
    never less than 8/9 of a long one; the final message is always exact."""
    body = _body(EXACT_PREVIEW_BELOW * 20)
    llm.push(fl.text(body, chunk_size=97))
    provider = get_api("openai-completions")
    assert provider is not None
    seen = 0
    async for event in provider.stream(openai_model(llm), context(), StreamOptions(api_key=TEST_KEY)):
        if isinstance(event, TextDeltaEvent):
            seen += len(event.delta)
            text = event.partial.content[event.content_index]
            assert isinstance(text, TextContent) and body.startswith(text.text)
            if seen <= EXACT_PREVIEW_BELOW:
                assert len(text.text) == seen
            else:
                assert len(text.text) * 9 >= seen * 8
        final = final_message(event)
    assert final is not None and final.text() == body
    assert json.dumps(final.text()) == json.dumps(body)
