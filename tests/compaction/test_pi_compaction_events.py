"""Pi's ``session_compact_failed`` and ``session_before_tree`` in a live session with scripted faux models:
when they fire, what they carry, and what a ``session_before_tree`` answer does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from caddie.ai.messages import UserMessage, text_of
from caddie.extensions.api import (
    ExtensionAPI,
    SessionBeforeCompactResult,
    SessionBeforeTreeEvent,
    SessionBeforeTreeResult,
    SessionCompactFailedEvent,
    SessionTreeEvent,
    TreeSummary,
)
from caddie.runtime.auto_compaction import SummaryFailed
from caddie.session.entries import BranchSummaryEntry, MessageEntry
from tests.compaction.harness import inline_extension, make_harness, reply


async def test_compact_failed_fires_for_a_cancel_and_for_a_failure_with_pis_fields(tmp_path: Path) -> None:
    failed: list[SessionCompactFailedEvent] = []
    mode = {"cancel": True}

    def register(api: ExtensionAPI) -> None:
        def before(event: Any, ctx: Any) -> SessionBeforeCompactResult | None:
            return SessionBeforeCompactResult(cancel=True) if mode["cancel"] else None

        api.on("session_before_compact", before)
        api.on("session_compact_failed", lambda event, ctx: failed.append(event))

    h = await make_harness(tmp_path, keep=50, extensions=[inline_extension(register)])
    h.script(reply("one " + "o" * 400), reply("two " + "t" * 400))
    await h.prompt("first")
    await h.prompt("second")

    assert await h.engine.compact(None) is None
    assert [(e.reason, e.aborted, e.will_retry, e.from_extension, e.error_message) for e in failed] == [
        ("manual", True, False, False, None)
    ]

    mode["cancel"] = False
    h.summarizer.set_responses([reply(stop_reason="error", error_message="summariser down")])
    with pytest.raises(SummaryFailed):
        await h.engine.compact(None)
    last = failed[-1]
    assert (last.reason, last.aborted, last.from_extension) == ("manual", False, False)
    assert last.error_message is not None and last.error_message.startswith("Compaction failed: ")
    assert last.error_message == h.ends()[-1].error_message


async def test_a_successful_compaction_fires_no_failure(tmp_path: Path) -> None:
    failed: list[Any] = []
    ext = inline_extension(lambda api: api.on("session_compact_failed", lambda e, ctx: failed.append(e)))
    h = await make_harness(tmp_path, keep=50, extensions=[ext])
    h.script(reply("one " + "o" * 400), reply("two " + "t" * 400))
    h.summaries("## Goal\nfine", "## Prefix\nfine")
    await h.prompt("first")
    await h.prompt("second")
    assert await h.engine.compact(None) is not None
    assert failed == []


async def _two_branches(tmp_path: Path, register: Any) -> Any:
    h = await make_harness(tmp_path, keep=20_000, extensions=[inline_extension(register)])
    h.script(reply("alpha answer"), reply("beta answer"))
    await h.prompt("alpha")
    await h.prompt("beta")
    return h


def _beta(h: Any) -> str:
    return next(
        e.id
        for e in h.session.store.entries()
        if isinstance(e, MessageEntry)
        and isinstance(e.message, UserMessage)
        and text_of(e.message.content) == "beta"
    )


async def test_session_before_tree_sees_the_preparation_and_may_cancel(tmp_path: Path) -> None:
    seen: list[SessionBeforeTreeEvent] = []
    trees: list[SessionTreeEvent] = []

    def register(api: ExtensionAPI) -> None:
        def before(event: SessionBeforeTreeEvent, ctx: Any) -> SessionBeforeTreeResult:
            seen.append(event)
            return SessionBeforeTreeResult(cancel=True)

        api.on("session_before_tree", before)
        api.on("session_tree", lambda e, ctx: trees.append(e))

    h = await _two_branches(tmp_path, register)
    old_leaf = h.session.store.leaf_id
    beta = _beta(h)
    assert await h.session.navigate_tree(beta, summarize=True) is False
    assert h.session.store.leaf_id == old_leaf and trees == [] and h.summary_requests == []
    prep = seen[0].preparation
    assert (prep.target_id, prep.old_leaf_id, prep.user_wants_summary) == (beta, old_leaf, True)
    assert [e.id for e in prep.entries_to_summarize] == [old_leaf]  # the answer to beta is left behind
    assert prep.common_ancestor_id == beta
    assert not seen[0].signal.aborted


async def test_a_summary_from_session_before_tree_is_used_without_asking_the_model(tmp_path: Path) -> None:
    trees: list[SessionTreeEvent] = []

    def register(api: ExtensionAPI) -> None:
        api.on(
            "session_before_tree",
            lambda e, ctx: SessionBeforeTreeResult(
                summary=TreeSummary("MY SUMMARY", {"k": 1}), label="tried"
            ),
        )
        api.on("session_tree", lambda e, ctx: trees.append(e))

    h = await _two_branches(tmp_path, register)
    assert await h.session.navigate_tree(_beta(h), summarize=True)
    leaf = next(e for e in h.session.store.branch() if isinstance(e, BranchSummaryEntry))
    assert leaf.summary == "MY SUMMARY" and leaf.details == {"k": 1}
    assert leaf.from_hook is True
    assert h.session.store.get_label(leaf.id) == "tried"
    assert h.summary_requests == []
    assert trees[-1].from_extension is True and trees[-1].summary_entry is not None


async def test_instructions_from_session_before_tree_reach_the_summariser(tmp_path: Path) -> None:
    trees: list[SessionTreeEvent] = []

    def register(api: ExtensionAPI) -> None:
        api.on(
            "session_before_tree",
            lambda e, ctx: SessionBeforeTreeResult(
                custom_instructions="ONLY THE BUGS", replace_instructions=True
            ),
        )
        api.on("session_tree", lambda e, ctx: trees.append(e))

    h = await _two_branches(tmp_path, register)
    h.summaries("## Goal\nbugs")
    assert await h.session.navigate_tree(_beta(h), summarize=True)
    assert h.summary_prompt().endswith("ONLY THE BUGS")
    assert trees[-1].from_extension is False


async def test_without_summary_the_label_goes_on_the_target_and_from_extension_is_none(
    tmp_path: Path,
) -> None:
    trees: list[SessionTreeEvent] = []

    def register(api: ExtensionAPI) -> None:
        api.on("session_before_tree", lambda e, ctx: SessionBeforeTreeResult(label="checkpoint"))
        api.on("session_tree", lambda e, ctx: trees.append(e))

    h = await _two_branches(tmp_path, register)
    beta = _beta(h)
    assert await h.session.navigate_tree(beta)
    assert h.session.store.get_label(beta) == "checkpoint"
    assert trees[-1].from_extension is None and trees[-1].summary_entry is None
