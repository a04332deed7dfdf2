"""The window's arithmetic without a session: categories, the provider-count calibration, entry attribution,
the grid."""

from __future__ import annotations

from collections.abc import Callable

from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    CustomMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from caddie.ai.model import Model, Tool
from caddie.extensions.api import EntryVisibility
from caddie.modes.context_stats import (
    ContextStats,
    apply_visibility,
    attribute_entries,
    compute_context_stats,
    grid_cells,
    render_stats,
)

TOOLS = [Tool("bash", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}})]
MODEL = Model(id="m", name="m", api="openai-completions", provider="p", context_window=10_000)


def conversation(api: str = "openai-completions") -> list[AgentMessage]:
    return [
        UserMessage("count the lines"),
        AssistantMessage(
            [ThinkingContent("t" * 40), ToolCall("c1", "bash", {"command": "wc -l x"})],
            api=api,
            provider="p",
            model="m",
            usage=Usage(input=500, output=10),
            stop_reason="toolUse",
        ),
        ToolResultMessage("c1", "bash", [TextContent("x" * 4000)], is_error=False),
    ]


def stats_of(
    messages: list[AgentMessage], changed_after: Callable[[str | None], bool] | None = None
) -> ContextStats:
    ids = [f"e{i}" for i in range(len(messages))]
    return compute_context_stats(
        system_prompt="s" * 400,
        tools=TOOLS,
        sent=messages,
        sent_entry_ids=ids,
        branch_messages=messages,
        entry_ids=ids,
        visibility={},
        model=MODEL,
        reserve_tokens=1000,
        changed_after=changed_after,
    )


def test_categories_and_the_provider_count() -> None:
    stats = stats_of(conversation())
    by_key = {c.key: c for c in stats.categories}
    assert by_key["system"].chars == 400 and by_key["thinking"].chars == 40
    assert by_key["tool:bash"].chars == 4000 and by_key["user"].chars == len("count the lines")
    assert by_key["assistant"].chars == len("bash") + len('{"command":"wc -l x"}')
    # the last request (system, tools, the prompt) was reported as 500 tokens: everything is scaled by the
    # ratio of that count to this view's estimate of the same request
    assert stats.basis == "reported" and stats.reported_tokens == 500
    before = (
        by_key["system"].estimated_tokens + by_key["tools"].estimated_tokens + by_key["user"].estimated_tokens
    )
    assert by_key["tool:bash"].tokens == round(1000 * 500 / before)
    assert sum(c.tokens for c in stats.window_categories()) == 10_000


def test_estimates_when_the_count_describes_another_view_or_no_provider() -> None:
    changed = stats_of(conversation(), changed_after=lambda entry_id: entry_id == "e1")
    assert changed.basis == "estimated" and "changed since the last request" in changed.basis_reason
    assert all(c.tokens == c.estimated_tokens for c in changed.categories)
    faux = stats_of(conversation(api="faux"))
    assert faux.basis == "estimated" and "faux" in faux.basis_reason
    fresh = stats_of([UserMessage("hi")])
    assert fresh.basis == "estimated" and fresh.reported_tokens is None


def test_entries_are_attributed_through_hides_shrinks_and_injections() -> None:
    branch = conversation()
    user, call, _result = branch
    summary = ToolResultMessage(
        "c1", "bash", [TextContent("<context-shrunk>\nfour thousand x\n</context-shrunk>")]
    )
    visibility = {"e2": EntryVisibility("replaced", "shrunk", replacement=summary)}
    ids = ["e0", "e1", "e2"]
    sent = apply_visibility(branch, ids, visibility)
    assert sent == [user, call, summary]
    nudge: AgentMessage = CustomMessage("mulligan:nudge", "Previous turn added ~1k tokens", display=False)
    assert attribute_entries([*sent, nudge], branch, ids, visibility) == ["e0", "e1", "e2", None]
    hidden = {"e1": EntryVisibility("hidden", "rewound"), "e2": EntryVisibility("hidden", "rewound")}
    assert apply_visibility(branch, ids, hidden) == [user]
    # a message re-rendered with another timestamp still finds its entry
    copy = UserMessage("count the lines", timestamp=1)
    assert attribute_entries([copy], [user], ["e0"], {}) == ["e0"]


def test_the_grid_has_one_cell_per_percent_and_shows_every_category() -> None:
    stats = stats_of(conversation())
    cells = grid_cells(stats)
    assert len(cells) == 100
    assert {c.key for c in stats.categories} <= {c.key for c in cells}
    assert render_stats(stats, color=False) is not None
