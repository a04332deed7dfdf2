"""Invariants of the filter under random sessions and markers (hypothesis).

Sessions are built the way the extension meets them: user prompts, text replies, tool groups (calls followed
by their results), and rewinds/shrinks created mid-session by the same resolvers the tools use, each
followed by its own tool result and note. Markers are then applied to the final context.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from caddie.extensions.api import (
    AgentMessage,
    CustomMessage,
    CustomMessageEntry,
    ImageContent,
    MessageEntry,
    SessionEntry,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    Utf16TokenCounter,
    estimate_tokens_utf16,
    replace,
    utf16_message_chars,
)
from caddie.extensions.bundled.mulligan.markers import (
    NUDGE,
    MarkerIndex,
    RewindMarker,
    ShrinkMarker,
    read_markers,
)
from caddie.extensions.bundled.mulligan.nudges import estimate_agent_tokens
from caddie.extensions.bundled.mulligan.state import AgentTokenMemo
from caddie.extensions.bundled.mulligan.transforms import (
    BranchIndexer,
    branch_tail,
    filter_pipeline,
    partition_into_units,
    resolve_last_tool_call_group,
    resolve_last_turn,
    shrunk_message,
)
from tests.mulligan.fakehost import assistant, assistant_text, call, custom, result, user
from tests.mulligan.helpers import PROTECT, call_ids

# --------------------------------------------------------------------------------------------------
# Random sessions


@dataclass
class Scenario:
    messages: list[AgentMessage]
    branch: list[SessionEntry]
    rewinds: list[RewindMarker]
    shrinks: list[ShrinkMarker]


item = st.one_of(
    st.tuples(st.just("user"), st.integers(0, 9)),
    st.tuples(st.just("text"), st.integers(0, 9)),
    st.tuples(st.just("tools"), st.integers(1, 3)),
    st.tuples(st.just("rewind"), st.sampled_from(["last_tool_call_group", "last_turn"])),
    st.tuples(st.just("legacy"), st.sampled_from(["last_tool_call_group", "last_turn"])),
    st.tuples(st.just("shrink"), st.integers(0, 50)),
    st.tuples(st.just("live-shrink"), st.integers(0, 50)),
)


def build(plan: list[tuple[str, int | str]], *, legacy: bool = True) -> Scenario:
    messages: list[AgentMessage] = [user("task")]
    branch: list[SessionEntry] = [MessageEntry("e0", None, "t", messages[0])]
    rewinds: list[RewindMarker] = []
    shrinks: list[ShrinkMarker] = []
    counter = 0

    def add(msg: AgentMessage) -> None:
        entry_id = f"e{len(branch)}"
        if isinstance(msg, CustomMessage):
            branch.append(CustomMessageEntry(entry_id, None, "t", msg.custom_type, msg.content))
        else:
            branch.append(MessageEntry(entry_id, None, "t", msg))
        messages.append(msg)

    for kind, arg in plan:
        counter += 1
        own = f"own{counter}"
        if kind == "user":
            add(user(f"u{arg}"))
        elif kind == "text":
            add(assistant_text(f"text {arg}"))
        elif kind == "tools":
            ids = [f"c{counter}_{k}" for k in range(int(arg))]
            add(assistant(*[call(i, "read", path=f"{i}.ts") for i in ids]))
            for i in ids:
                add(result(i, f"output of {i}", "read"))
        elif kind in ("rewind", "legacy"):
            if kind == "legacy" and not legacy:
                continue
            add(assistant(call(own, "mulligan_rewind")))
            if arg == "last_tool_call_group":
                remove = list(
                    resolve_last_tool_call_group(partition_into_units(messages), messages, own) or ()
                )
            else:
                remove = resolve_last_turn(messages, own)
            hide = tuple(branch[i].id for i in remove) if kind == "rewind" else ()
            if not hide and not legacy:
                messages.pop()  # a rewind that pinned nothing falls back to the relative resolvers (legacy)
                branch.pop()
                continue
            rewinds.append(
                RewindMarker(counter, str(arg), own, hide, bool(hide), None, f"id{counter}", counter)
            )
            add(result(own, "rewound", "mulligan_rewind"))
            add(custom("mulligan:note", "note"))
        else:
            results = [i for i, m in enumerate(messages) if isinstance(m, ToolResultMessage)]
            if not results:
                continue
            target_index = results[int(arg) % len(results)]
            target = messages[target_index]
            assert isinstance(target, ToolResultMessage)
            pinned = branch[target_index].id if kind == "shrink" else None
            shrinks.append(
                ShrinkMarker(
                    {"by_tool_call_id": target.tool_call_id},
                    f"summary {counter}",
                    pinned,
                    counter,
                    f"s{counter}",
                )
            )
            add(assistant(call(own, "mulligan_shrink")))
            add(result(own, "shrunk", "mulligan_shrink"))
    return Scenario(messages, branch, rewinds, shrinks)


plans = st.lists(item, max_size=25)


def run(s: Scenario, messages: list[AgentMessage] | None = None) -> list[AgentMessage]:
    return filter_pipeline(
        s.messages if messages is None else messages, s.rewinds, s.shrinks, PROTECT, s.branch
    )


# --------------------------------------------------------------------------------------------------
# Properties of the filter


@given(plans)
def test_a_tool_call_is_never_separated_from_its_result(plan: list[tuple[str, int | str]]) -> None:
    s = build(plan)
    calls, results = call_ids(run(s))
    assert calls == results


@given(plans)
def test_filtering_is_deterministic(plan: list[tuple[str, int | str]]) -> None:
    s = build(plan)
    assert run(s) == run(s)


@given(plans)
def test_filtering_never_mutates_its_input(plan: list[tuple[str, int | str]]) -> None:
    s = build(plan)
    before = copy.deepcopy(s.messages)
    identities = [id(m) for m in s.messages]
    run(s)
    assert s.messages == before and [id(m) for m in s.messages] == identities


@given(plans)
def test_filtering_only_removes_or_substitutes_messages(plan: list[tuple[str, int | str]]) -> None:
    s = build(plan)
    out = run(s)
    assert len(out) <= len(s.messages)
    j = 0
    for msg in out:  # each output message is an input message, in order, or its shrunk copy
        while j < len(s.messages) and not (
            msg is s.messages[j]
            or (
                type(msg) is type(s.messages[j])
                and shrunk_message(s.messages[j], "") is not s.messages[j]
                and _same_but_content(msg, s.messages[j])
            )
        ):
            j += 1
        assert j < len(s.messages), f"{msg!r} is neither kept nor substituted"
        j += 1


def _same_but_content(a: AgentMessage, b: AgentMessage) -> bool:
    a2 = replace(a, content=b.content)  # type: ignore[union-attr]
    return a2 == b and isinstance(a.content, list) and len(a.content) == 1  # type: ignore[union-attr]


@given(plans)
def test_filtering_is_idempotent(plan: list[tuple[str, int | str]]) -> None:
    # Re-filtering a filtered view: pinned rewinds no longer align with the branch and do nothing more, live
    # shrinks re-apply the same text. (Unpinned rewinds — old markers, and new ones that hid nothing —
    # resolve relatively, "the latest group/turn", and may re-target on a second pass by design of the spec;
    # pinned shrinks cannot re-resolve on a view that lost messages, so they are taken live here.)
    s = build(plan, legacy=False)
    s.shrinks = [ShrinkMarker(sh.target, sh.replacement, None, sh.seq, sh.id) for sh in s.shrinks]
    once = run(s)
    assert run(s, once) == once


@given(plans)
def test_pinned_markers_resolve_the_same_with_an_incremental_index(plan: list[tuple[str, int | str]]) -> None:
    s = build(plan)
    indexer = BranchIndexer()
    for cut in range(0, len(s.branch) + 1, 3):
        indexer.tail(s.branch[:cut])
    tail = indexer.tail(s.branch)
    incremental = filter_pipeline(s.messages, s.rewinds, s.shrinks, PROTECT, s.branch, None, tail)
    assert incremental == filter_pipeline(
        s.messages, s.rewinds, s.shrinks, PROTECT, s.branch, None, branch_tail(s.branch)
    )


# --------------------------------------------------------------------------------------------------
# Supporting invariants: estimates and the incremental marker index

text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
block = st.one_of(
    st.builds(TextContent, text),
    st.builds(ThinkingContent, text),
    st.builds(ImageContent, st.text(alphabet="abcXYZ+/=", max_size=20), st.just("image/png")),
    st.builds(
        lambda i, n, a: ToolCall(i, n, a),
        st.sampled_from(["c1", "c2", "c3", ""]),
        st.sampled_from(["read", "bash", "ðŸ"]),
        st.dictionaries(
            st.sampled_from(["path", "command", "x"]),
            st.one_of(text, st.integers(), st.booleans()),
            max_size=2,
        ),
    ),
)
message = st.one_of(
    st.builds(lambda t: UserMessage(t, timestamp=1), text),
    st.builds(
        lambda bs: UserMessage([b for b in bs if isinstance(b, (TextContent, ImageContent))], timestamp=1),
        st.lists(block, max_size=3),
    ),
    st.builds(
        lambda bs: assistant(*[b for b in bs if isinstance(b, ToolCall)]) if bs else assistant_text("x"),
        st.lists(block, max_size=3),
    ),
)


def _number_calls(batch: list[AgentMessage], n: int) -> int:
    """Give each generated tool call (but those with id "") its own id, counting on from ``n``."""
    for msg in batch:
        content = getattr(msg, "content", [])
        for i, block in enumerate(content):
            if isinstance(block, ToolCall) and block.id:
                n += 1
                content[i] = replace(block, id=f"call-{n}")  # a message under construction
    return n


@settings(max_examples=60)
@given(st.lists(st.lists(message, max_size=6), min_size=1, max_size=4))
def test_the_hot_path_estimate_equals_the_plain_estimate(batches: list[list[AgentMessage]]) -> None:
    # Tool call ids identify calls (providers make them unique; results pair by them), so a call id seen
    # again always carries the same arguments. Give each generated call its own id ("" stays "").
    counter = Utf16TokenCounter()
    n = 0
    for batch in batches:
        n = _number_calls(batch, n)
    for batch in batches + batches:  # the memo must never change a result, fire after fire
        assert counter.estimate(batch) == estimate_tokens_utf16(batch)


metric = st.builds(
    lambda seq, delta: {"kind": "turn-metric", "seq": seq, "deltaTokens": delta, "ts": 1},
    st.one_of(st.integers(0, 5), st.just("x")),
    st.integers(0, 9000),
)


@given(st.lists(metric, max_size=12), st.integers(0, 12))
def test_the_incremental_marker_index_equals_a_fresh_read(metrics: list[dict[str, object]], cut: int) -> None:
    from caddie.extensions.api import CustomEntry

    entries: list[SessionEntry] = [
        CustomEntry(f"m{i}", None, "t", "mulligan:turn-metric", data) for i, data in enumerate(metrics)
    ]
    index = MarkerIndex()
    index.update(entries[:cut])
    incremental = index.update(entries).bundle()
    fresh = read_markers(entries)
    assert list(incremental.recent_metrics) == list(fresh.recent_metrics)
    seqs = [m.seq for m in fresh.recent_metrics]
    numbers = [s for s in seqs if s is not None]
    assert numbers == sorted(numbers, reverse=True) and seqs[len(numbers) :] == [None] * (
        len(seqs) - len(numbers)
    )


@settings(max_examples=60)
@given(
    st.lists(st.tuples(st.sampled_from(["grow", "edit", "drop"]), st.lists(message, max_size=4)), max_size=6)
)
def test_counting_only_the_new_tail_gives_the_full_count(steps: list[tuple[str, list[AgentMessage]]]) -> None:
    n_ids = 0  # call ids are unique in a session (see the test above): give each generated call its own
    for _, batch in steps:
        n_ids = _number_calls(batch, n_ids)
    counter = Utf16TokenCounter()
    view: list[AgentMessage] = []
    for n, (kind, batch) in enumerate(steps):
        if kind == "grow" or not view:
            view = [*copy.deepcopy(view), *batch]
        elif kind == "edit":
            view = copy.deepcopy(view)
            view[0] = user(f"edited {n} " * n)
        else:
            view = copy.deepcopy(view[1:])
        assert counter.chars_extending(view) == sum(utf16_message_chars(m) for m in view)


@settings(max_examples=60)
@given(
    st.lists(
        st.tuples(st.sampled_from(["grow", "copy", "edit", "drop", "nudge"]), st.lists(message, max_size=4)),
        max_size=8,
    )
)
def test_the_turn_end_memo_equals_the_plain_estimate(steps: list[tuple[str, list[AgentMessage]]]) -> None:
    memo = AgentTokenMemo()
    view: list[AgentMessage] = []
    for n, (kind, batch) in enumerate(steps):
        if kind == "grow" or not view:
            view = [*view, *batch]  # the same objects and new ones: the usual turn
        elif kind == "copy":
            view = [*copy.deepcopy(view), *batch]  # equal messages, other objects
        elif kind == "edit":
            view = [user(f"edited {n} " * n), *view[1:]]
        elif kind == "drop":
            view = view[1:]
        else:
            view = [*view, CustomMessage(NUDGE, "n" * n, False, {"ephemeral": True}, n)]
        assert memo.estimate(view) == estimate_agent_tokens(view)
        view = [m for m in view if not (isinstance(m, CustomMessage) and m.custom_type == NUDGE)]
