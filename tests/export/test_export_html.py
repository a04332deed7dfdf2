"""``export_session_html``: one offline page of the whole session tree, checked by parsing it."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

from caddie.ai.messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from caddie.runtime.export_html import export_session_html
from caddie.session.store import SessionStore


def assistant(*blocks: TextContent | ToolCall) -> AssistantMessage:
    calls = any(isinstance(b, ToolCall) for b in blocks)
    return AssistantMessage(
        list(blocks), "faux", "faux", "faux-1", stop_reason="toolUse" if calls else "stop"
    )


def marker(kind: str, **data: object) -> dict[str, object]:
    return {"schema": "pi-mulligan", "v": 1, "kind": kind, **data}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    text: list[str] = field(default_factory=list)
    children: list[Element] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def all_text(self) -> str:
        return "".join(self.text) + "".join(c.all_text() for c in self.children)

    def walk(self) -> list[Element]:
        out = [self]
        for c in self.children:
            out.extend(c.walk())
        return out


class Tree(HTMLParser):
    """The page as a tree of elements (void elements closed at once)."""

    VOID = frozenset({"meta", "img", "br", "hr", "input", "link"})

    def __init__(self, html: str) -> None:
        super().__init__()
        self.root = Element("#root", {})
        self.stack = [self.root]
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(element)
        if tag not in self.VOID:
            self.stack.append(element)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].text.append(data)

    def all(self, tag: str | None = None, cls: str | None = None) -> list[Element]:
        return [
            e for e in self.root.walk() if (tag is None or e.tag == tag) and (cls is None or cls in e.classes)
        ]

    def article(self, entry_id: str) -> Element:
        [found] = [e for e in self.all("article") if e.attrs.get("id") == f"e-{entry_id}"]
        return found


@dataclass
class Ids:
    prompt: str
    wrong_call: str
    wrong_result: str
    config_result: str
    fixed: str
    rewind: str
    cancelled_rewind: str
    shrink: str
    compaction: str
    abandoned_prompt: str
    abandoned_reply: str
    summary: str
    active_reply: str


def build_session(store: SessionStore) -> Ids:
    """A session with mulligan markers, a compaction and two branches (the second one active)."""
    store.append_model_change("faux", "faux-1")
    prompt = store.append_message(UserMessage("Fix the parser"))
    wrong_call = store.append_message(
        assistant(TextContent("Looking."), ToolCall("c1", "read", {"path": "wrong.py"}))
    )
    wrong_result = store.append_message(ToolResultMessage("c1", "read", [TextContent("WRONG FILE CONTENT")]))
    store.append_message(
        assistant(ToolCall("c2", "mulligan_rewind", {"granularity": "last_tool_call_group"}))
    )
    store.append_message(ToolResultMessage("c2", "mulligan_rewind", [TextContent("Mulligan: rewound.")]))
    rewind = store.append_custom(
        "mulligan:rewind",
        marker(
            "rewind",
            id="uuid-rewind",
            granularity="last_tool_call_group",
            note={
                "what_happened": "Read the wrong file.",
                "true_current_state": "-",
                "next": "Read parser.py",
            },
            hideEntryIds=[wrong_call, wrong_result],
        ),
    )
    cancelled_rewind = store.append_custom(
        "mulligan:rewind", marker("rewind", id="uuid-gone", granularity="last_turn", hideEntryIds=[prompt])
    )
    store.append_custom("mulligan:cancel", marker("cancel", targetId="uuid-gone"))
    store.append_custom_message("mulligan:note", "Note to self: read parser.py", True, {"kind": "note"})
    store.append_message(assistant(ToolCall("c3", "read", {"path": "parser.py"})))
    config_result = store.append_message(ToolResultMessage("c3", "read", [TextContent("HUGE PARSER SOURCE")]))
    shrink = store.append_custom(
        "mulligan:shrink",
        marker("shrink", id="uuid-shrink", pinnedEntryId=config_result, replacement="parser.py: 3 functions"),
    )
    fixed = store.append_message(assistant(TextContent("Fixed the parser.")))
    store.append_label(fixed, "milestone")
    compaction = store.append_compaction(
        "## Goal\nFix the parser", fixed, 12_345, {"readFiles": ["parser.py"], "modifiedFiles": ["parser.py"]}
    )
    abandoned_prompt = store.append_message(UserMessage("Now add tests"))
    abandoned_reply = store.append_message(assistant(TextContent("Added tests.")))
    summary = store.branch_with_summary(
        compaction, "We tried adding tests.", {"readFiles": [], "modifiedFiles": []}
    )
    store.append_message(UserMessage("Instead, document it"))
    active_reply = store.append_message(assistant(TextContent("Documented.")))
    return Ids(
        prompt,
        wrong_call,
        wrong_result,
        config_result,
        fixed,
        rewind,
        cancelled_rewind,
        shrink,
        compaction,
        abandoned_prompt,
        abandoned_reply,
        summary,
        active_reply,
    )


@pytest.fixture
def exported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[SessionStore, Ids, Path, Tree]:
    monkeypatch.chdir(tmp_path)
    store = SessionStore.create(tmp_path, tmp_path / "sessions")
    ids = build_session(store)
    path = export_session_html(store)
    return store, ids, path, Tree(path.read_text(encoding="utf-8"))


def test_the_page_is_written_next_to_the_user_under_the_session_files_name(
    exported: tuple[SessionStore, Ids, Path, Tree], tmp_path: Path
) -> None:
    store, _, path, _ = exported
    assert store.path is not None
    assert path == tmp_path / f"{store.path.stem}.html"
    other = export_session_html(store, tmp_path / "out" / "mine.html")
    assert other.read_text(encoding="utf-8") == path.read_text(encoding="utf-8")


def test_every_entry_of_every_branch_is_on_the_page_with_the_active_path_marked(
    exported: tuple[SessionStore, Ids, Path, Tree],
) -> None:
    store, ids, _, page = exported
    articles = {a.attrs["data-entry-id"] for a in page.all("article")}
    assert articles == {e.id for e in store.entries()}
    on_path = {e.id for e in store.branch()}
    for a in page.all("article"):
        assert ("on-path" in a.classes) == (a.attrs["data-entry-id"] in on_path)
    assert "Documented." in page.article(ids.active_reply).all_text()
    sidebar_links = {a.attrs.get("data-target") for a in page.all("a") if "data-target" in a.attrs}
    assert sidebar_links == articles


def test_a_fork_shows_one_collapsible_block_per_branch_with_the_active_one_open(
    exported: tuple[SessionStore, Ids, Path, Tree],
) -> None:
    _, ids, _, page = exported
    [fork] = page.all("div", "fork")
    branches = [c for c in fork.children if c.tag == "details"]
    assert [b.attrs["data-branch-head"] for b in branches] == [ids.abandoned_prompt, ids.summary]
    assert ["open" in b.attrs for b in branches] == [False, True]
    abandoned = {a.attrs["data-entry-id"] for a in branches[0].walk() if a.tag == "article"}
    assert abandoned == {ids.abandoned_prompt, ids.abandoned_reply}
    assert "Added tests." in branches[0].all_text()


def test_messages_tool_calls_results_and_compactions_are_shown(
    exported: tuple[SessionStore, Ids, Path, Tree],
) -> None:
    _, ids, _, page = exported
    call = page.article(ids.wrong_call)
    [tool] = [e for e in call.walk() if "tool-call" in e.classes]
    assert tool.attrs["data-tool-call-id"] == "c1" and "wrong.py" in tool.all_text()
    results = page.all("details", "tool-result")
    assert len(results) == 3 and not any("open" in r.attrs for r in results)  # results start collapsed
    compaction = page.article(ids.compaction)
    text = compaction.all_text()
    assert "12,345" in text and "## Goal\nFix the parser" in text and "parser.py" in text
    assert any(a.attrs.get("href") == f"#e-{ids.fixed}" for a in compaction.walk() if a.tag == "a")
    assert "We tried adding tests." in page.article(ids.summary).all_text()
    assert "milestone" in page.article(ids.fixed).all_text()
    assert "Note to self: read parser.py" in page.root.all_text()


def test_what_mulligan_hid_or_shrank_is_shown_as_such(exported: tuple[SessionStore, Ids, Path, Tree]) -> None:
    _, ids, _, page = exported
    for hidden in (ids.wrong_call, ids.wrong_result):
        article = page.article(hidden)
        assert "mulligan-hidden" in article.classes and article.attrs["data-marker"] == ids.rewind
        assert "hidden from the model by mulligan" in article.all_text()
    prompt = page.article(ids.prompt)  # its rewind was cancelled
    assert "mulligan-hidden" not in prompt.classes
    assert "Cancelled by" in page.article(ids.cancelled_rewind).all_text()
    shrunk = page.article(ids.config_result)
    assert "mulligan-shrunk" in shrunk.classes and shrunk.attrs["data-marker"] == ids.shrink
    [replacement] = [e for e in shrunk.walk() if "replacement" in e.classes]
    assert replacement.all_text() == "parser.py: 3 functions"
    [original] = [e for e in shrunk.walk() if "original" in e.classes]
    assert "HUGE PARSER SOURCE" in original.all_text() and "open" not in original.attrs
    rewind = page.article(ids.rewind).all_text()
    assert "Read the wrong file." in rewind
    facts = page.all("dl", "facts")[0].children
    labels = [e.all_text() for e in facts]
    assert labels[labels.index("Hidden by mulligan") + 1] == "2"
    assert labels[labels.index("Shrunk by mulligan") + 1] == "1"


def test_the_page_is_self_contained_and_works_offline(exported: tuple[SessionStore, Ids, Path, Tree]) -> None:
    _, _, path, page = exported
    html = path.read_text(encoding="utf-8")
    assert page.all("link") == []
    for element in page.all():
        for attr in ("src", "href"):
            value = element.attrs.get(attr, "")
            assert not value.startswith(("http:", "https:", "//")), (element.tag, value)
    scripts = page.all("script")
    assert scripts and all("src" not in s.attrs for s in scripts)
    assert len(page.all("style")) == 1
    assert "@import" not in html and "url(" not in html


def test_an_in_memory_session_exports_under_its_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = SessionStore.in_memory(tmp_path)
    store.append_message(UserMessage("<script>alert(1)</script> & friends"))
    path = export_session_html(store)
    assert path == tmp_path / f"caddie-session-{store.session_id}.html"
    page = Tree(path.read_text(encoding="utf-8"))
    assert len(page.all("script")) == 1  # user text is escaped, never markup
    assert "<script>alert(1)</script> & friends" in page.article(store.entries()[0].id).all_text()
