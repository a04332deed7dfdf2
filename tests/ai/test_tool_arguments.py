"""Tool-call arguments as streamed by the real SDKs against the fake server: the two slips models make
inside JSON strings (a raw newline or tab, a backslash that starts no escape) are mended as Pi mends them,
so the call runs; a call cut off mid-object still never runs (``arguments_error``)."""

from __future__ import annotations

import pytest

from caddie.ai.messages import ToolCall
from caddie.ai.providers.anthropic_messages import PROVIDER as ANTHROPIC
from caddie.ai.providers.blocks import final_arguments, parse_partial_json, repair_json
from caddie.ai.providers.openai_completions import PROVIDER as COMPLETIONS
from tests.ai.helpers import READ_TOOL, anthropic_model, context, openai_model, run
from tests.support import fake_llm as fl
from tests.support.fake_llm import FakeLLM

SLIPPED = '{"path": "notes\tv2.txt", "content": "line one\nline two", "pattern": "\\d+\\.py"}'
MENDED = {"path": "notes\tv2.txt", "content": "line one\nline two", "pattern": "\\d+\\.py"}


def test_repair_escapes_control_characters_and_keeps_stray_backslashes() -> None:
    assert repair_json('{"a": "x\ny"}') == '{"a": "x\\ny"}'
    assert repair_json('{"a": "\\d"}') == '{"a": "\\\\d"}'
    assert repair_json('{"a": "ok \\n \\u00e9 \\""}') == '{"a": "ok \\n \\u00e9 \\""}'
    assert repair_json('{"a": "\x01"}') == '{"a": "\\u0001"}'
    assert repair_json('{"a":\n 1}') == '{"a":\n 1}'  # whitespace between tokens is JSON already
    assert final_arguments(SLIPPED) == (MENDED, None)
    assert parse_partial_json(SLIPPED[:45]) == {"path": "notes\tv2.txt", "content": "line one"}


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_a_slipped_call_is_mended_and_a_cut_off_one_is_refused(llm: FakeLLM, api: str) -> None:
    provider, model = (
        (ANTHROPIC, anthropic_model(llm)) if api == "anthropic" else (COMPLETIONS, openai_model(llm))
    )
    llm.push(
        fl.Reply(tool_calls=[fl.ToolCallSpec("read", SLIPPED, "call_1")], chunk_size=7),
        fl.Reply(tool_calls=[fl.ToolCallSpec("read", '{"path": "notes.txt", "lim', "call_2")]),
    )
    mended = (await run(provider, model, context(tools=[READ_TOOL]))).message
    call = mended.content[-1]
    assert isinstance(call, ToolCall) and call.arguments == MENDED and call.arguments_error is None
    cut = (await run(provider, model, context(tools=[READ_TOOL]))).message
    call = cut.content[-1]
    assert isinstance(call, ToolCall) and call.arguments == {"path": "notes.txt"}
    assert call.arguments_error is not None
