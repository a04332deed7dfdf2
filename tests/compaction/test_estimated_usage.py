"""Automatic compaction sees a context whose server reports no usage: the estimate carries the system prompt
and tool definitions, which the messages alone (Pi's fallback without usage) leave out."""

from __future__ import annotations

import json
from pathlib import Path

from caddie.ai.messages import AssistantMessage
from caddie.runtime.factory import SessionRequest, open_session
from caddie.session.entries import CompactionEntry, MessageEntry
from tests.support import fake_llm as fl

BIG = "word " * 3_000  # 15,000 characters: ~3,750 tokens of messages


async def run_prompts(cwd: Path, home: Path, llm: fl.FakeLLM, window: int) -> list[object]:
    llm.write_models_json(home / "agent", contextWindow=window)
    (home / "agent" / "settings.json").write_text(
        json.dumps(
            {
                "disabledExtensions": ["mulligan", "goal"],
                "compaction": {"enabled": True, "reserveTokens": 1_000, "keepRecentTokens": 500},
            }
        )
    )
    build = await open_session(
        SessionRequest(cwd=str(cwd), mode="print", model="fake/fake-model", session="memory")
    )
    session = build.session
    await session.start()
    await session.prompt("hello")  # an earlier turn, for the compaction to summarise
    await session.wait_for_idle()
    await session.prompt(BIG)
    await session.wait_for_idle()
    await session.prompt("and now?")
    await session.wait_for_idle()
    entries = session.store.entries()
    await session.shutdown()
    return list(entries)


async def test_compaction_triggers_on_the_estimate_of_a_server_without_usage(
    tmp_path: Path, isolated_caddie_dir: Path
) -> None:
    with fl.FakeLLM(default_reply=fl.text("## Goal\nSummarised.", no_usage=True)) as llm:
        llm.push(fl.text("Hi.", no_usage=True), fl.text("Noted.", no_usage=True))
        # First learn what the system prompt and tools weigh, with a window nothing fills.
        entries = await run_prompts(tmp_path, isolated_caddie_dir, llm, 1_000_000)
        assert not [e for e in entries if isinstance(e, CompactionEntry)]
        first = [
            e.message
            for e in entries
            if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)
        ][1]  # the reply to BIG
        assert first.usage.estimated is True
        messages_only = len(BIG) // 4
        request = first.usage.input
        assert request > messages_only + 500  # the estimate counts the system prompt and tools too

        # A window whose threshold lies between the two: only the estimate crosses it.
        window = (messages_only + request) // 2 + 1_000
        llm.push(fl.text("Hi.", no_usage=True), fl.text("Noted.", no_usage=True))
        entries = await run_prompts(tmp_path, isolated_caddie_dir, llm, window)
    [compaction] = [e for e in entries if isinstance(e, CompactionEntry)]
    assert compaction.tokens_before >= request
