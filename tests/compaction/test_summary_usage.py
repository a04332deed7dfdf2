"""``summary_usage``: every summariser call (compaction, branch summary), failed ones included, reaches the
extensions with what it cost — the public way for an extension (the goal budget) to see that spend."""

from __future__ import annotations

from pathlib import Path

import pytest

from caddie.ai.messages import Usage, UserMessage, text_of
from caddie.ai.providers.faux import faux_message
from caddie.extensions.api import SummaryUsageEvent
from caddie.runtime.auto_compaction import SummaryFailed
from caddie.session.entries import MessageEntry
from tests.compaction.harness import inline_extension, make_harness, reply


async def test_compaction_and_branch_summaries_report_their_usage(tmp_path: Path) -> None:
    seen: list[SummaryUsageEvent] = []
    ext = inline_extension(lambda api: api.on("summary_usage", lambda e, ctx: seen.append(e)))
    h = await make_harness(tmp_path, keep=1, extensions=[ext])
    h.script(reply("alpha answer"), reply("beta answer"))
    h.summarizer.append_responses(
        [
            faux_message("## Goal\nbranch", usage=Usage(input=700, output=70)),
            faux_message("", stop_reason="error", error_message="boom", usage=Usage(input=5, output=0)),
            faux_message("## Goal\ncompacted", usage=Usage(input=900, output=90)),
        ]
    )
    await h.prompt("alpha")
    await h.prompt("beta")
    store = h.session.store
    beta = next(
        e.id
        for e in store.entries()
        if isinstance(e, MessageEntry)
        and isinstance(e.message, UserMessage)
        and text_of(e.message.content) == "beta"
    )

    assert await h.session.navigate_tree(beta, summarize=True)
    with pytest.raises(SummaryFailed):
        await h.engine.compact()  # the summariser fails: still reported
    await h.engine.compact()

    assert [(e.kind, e.usage.input, e.usage.output, e.stop_reason) for e in seen] == [
        ("branch_summary", 700, 70, "stop"),
        ("compaction", 5, 0, "error"),
        ("compaction", 900, 90, "stop"),
    ]
    assert {(e.provider, e.model) for e in seen} == {("faux", "faux-1")}
