"""The export page's structure, checked by parsing it: what a reader gets for each kind of entry."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from caddie.ai.messages import TextContent, ToolCall, ToolResultMessage, UserMessage
from caddie.modes.export_html import export_session_html, render_session_html
from caddie.session.store import SessionStore
from tests.export.helpers import Ids, Page, assistant, export, open_session


@pytest.fixture
def exported(tmp_path: Path) -> tuple[SessionStore, Ids, Page]:
    store = SessionStore.create(tmp_path, tmp_path / "sessions")
    ids = open_session(store)
    assert store.path is not None
    return store, ids, Page.of(export(store.path, tmp_path / "page.html"))


def test_default_location_and_an_in_memory_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = SessionStore.create(tmp_path, tmp_path / "sessions")
    open_session(store)
    assert store.path is not None
    assert export_session_html(store) == tmp_path / f"{store.path.stem}.html"
    memory = SessionStore.in_memory(tmp_path)
    memory.append_message(UserMessage("<script>alert(1)</script> & friends"))
    path = export_session_html(memory)
    assert path == tmp_path / f"caddie-session-{memory.session_id}.html"
    page = Page.of(path)
    assert len(page.all("script")) == 1  # the text is escaped, never markup
    assert "<script>alert(1)</script> & friends" in page.article(memory.entries()[0].id).all_text()


def test_markdown_is_rendered_with_highlighted_code(exported: tuple[SessionStore, Ids, Page]) -> None:
    _, ids, page = exported
    answer = page.article(ids.answer)
    [heading] = answer.find("h2")
    assert heading.all_text() == "Fixed"
    [items] = answer.find("ul")
    assert [li.all_text() for li in items.find("li")] == ["the sign in f1", "tests pass"]
    [block] = answer.find("pre", "hl")
    assert block.attrs["data-lang"] == "python"
    tokens = [s for s in block.walk() if s.tag == "span" and s.attrs.get("class")]
    assert {"k", "nf"} <= {c for s in tokens for c in s.classes}  # `def` keyword, function name
    assert "def f1(x):\n    return x - 1" in block.all_text()
    prompt = page.article(ids.prompt)
    assert [s.all_text() for s in prompt.find("strong")] == ["parser"]
    assert [c.all_text() for c in prompt.find("code")] == ["parser.py"]
    assert ".hl .k" in page.html  # the token colours are in the page's stylesheet


def test_markdown_never_becomes_markup_or_a_fetch(tmp_path: Path) -> None:
    store = SessionStore.in_memory(tmp_path)
    reply = store.append_message(
        assistant(
            TextContent(
                '<img src=x onerror="alert(1)"> ![diagram](https://example.com/d.png) [js](javascript:alert(1))'
            )
        )
    )
    page = Page(render_session_html(store))
    article = page.article(reply)
    assert article.find("img") == []
    [link, *rest] = [a for a in article.find("a") if "image-link" in a.classes]
    assert rest == [] and link.attrs["href"] == "https://example.com/d.png"
    assert "[image: diagram]" in link.all_text()
    assert not any(a.attrs.get("href", "").startswith("javascript:") for a in article.find("a"))
    assert '<img src=x onerror="alert(1)">' in article.all_text()


def test_an_edit_call_is_shown_as_a_diff(exported: tuple[SessionStore, Ids, Page]) -> None:
    _, ids, page = exported
    call = page.article(ids.edit_call)
    [head] = call.find("div", "tool-head")
    assert head.all_text() == "edit parser.py"
    [diff] = call.find("pre", "diff")
    lines = {s.attrs["class"]: s.all_text() for s in diff.find("span")}
    assert lines["d-del"] == "-return x + 1" and lines["d-add"] == "+return x - 1"
    assert "oldText" not in call.all_text()  # no raw arguments


def test_an_edit_diff_comes_from_the_results_patch_when_there_is_one(tmp_path: Path) -> None:
    store = SessionStore.in_memory(tmp_path)
    call = store.append_message(
        assistant(
            ToolCall("e1", "edit", {"path": "a.py", "edits": [{"oldText": "x = 1", "newText": "x = 2"}]})
        )
    )
    patch = "--- a.py\n+++ a.py\n@@ -7,3 +7,3 @@\n a = 0\n-x = 1\n+x = 2\n b = 3"
    store.append_message(
        ToolResultMessage("e1", "edit", [TextContent("ok")], details={"diff": "", "patch": patch})
    )
    [diff] = Page(render_session_html(store)).article(call).find("pre", "diff")
    spans = [(s.attrs["class"], s.all_text()) for s in diff.find("span")]
    assert ("d-hunk", "@@ -7,3 +7,3 @@") in spans and ("d-ctx", " a = 0") in spans


def test_tool_arguments_are_readable_fields(exported: tuple[SessionStore, Ids, Page]) -> None:
    _, ids, page = exported
    bash = page.article(ids.bash_call)
    [command] = bash.find("pre", "command")
    assert command.all_text() == "pytest -q tests/" and command.attrs["data-lang"] == "bash"
    [fields] = bash.find("dl", "fields")
    assert [
        (dt.all_text(), dd.all_text()) for dt, dd in zip(fields.find("dt"), fields.find("dd"), strict=True)
    ] == [("timeout", "60")]
    assert '"command"' not in bash.all_text() and "{" not in bash.all_text()
    read = page.article(ids.source_call)
    assert read.find("div", "tool-head")[0].all_text() == "read parser.py"


def test_nested_arguments_become_nested_fields(tmp_path: Path) -> None:
    store = SessionStore.in_memory(tmp_path)
    reply = store.append_message(
        assistant(
            ToolCall(
                "t1", "deploy", {"target": "prod", "flags": {"dry": True, "retries": 2}, "hosts": ["a", "b"]}
            )
        )
    )
    article = Page(render_session_html(store)).article(reply)
    [outer, inner] = article.find("dl", "fields")
    assert [dt.all_text() for dt in outer.children if dt.tag == "dt"] == ["target", "flags", "hosts"]
    assert [dt.all_text() for dt in inner.find("dt")] == ["dry", "retries"]
    assert [li.all_text() for li in article.find("li")] == ["a", "b"]


def test_long_results_are_collapsed_and_short_ones_shown(exported: tuple[SessionStore, Ids, Page]) -> None:
    _, ids, page = exported
    short = page.article(ids.bash_result)
    assert short.find("details") == [] and "3 passed in 0.01s" in short.all_text()
    [original] = page.article(ids.source_result).find("details", "original")
    [long] = original.find("details", "long")
    assert "open" not in long.attrs and "open" not in original.attrs
    assert long.find("summary")[0].all_text() == "Result of read · 80 lines"
    [code] = long.find("pre", "hl")
    assert code.attrs["data-lang"] == "python"  # highlighted by the file name that was read


def test_extension_state_entries_are_marked_and_a_toggle_shows_them(
    exported: tuple[SessionStore, Ids, Page],
) -> None:
    store, ids, page = exported
    custom = {e.id for e in store.entries() if e.type == "custom"}
    assert ids.metric in custom and ids.rewind in custom
    marked = {a.attrs["data-entry-id"] for a in page.all("article", "bookkeeping")}
    assert marked == custom
    assert {li.attrs["data-entry-id"] for li in page.all("li", "bookkeeping")} == custom
    [toggle] = [i for i in page.all("input") if i.attrs.get("id") == "show-bookkeeping"]
    assert "checked" not in toggle.attrs
    assert "body:not(.show-bookkeeping) .bookkeeping{display:none}" in page.html
    metric = page.article(ids.metric)
    assert ("deltaTokens", "1234") in [
        (dt.all_text(), dd.all_text()) for dt, dd in zip(metric.find("dt"), metric.find("dd"), strict=True)
    ]


def test_the_raw_jsonl_is_downloadable_from_the_page(exported: tuple[SessionStore, Ids, Page]) -> None:
    store, _, page = exported
    assert store.path is not None
    [link] = [a for a in page.all("a") if a.attrs.get("id") == "download-jsonl"]
    assert link.attrs["download"] == f"{store.path.stem}.jsonl"
    prefix = "data:application/x-ndjson;base64,"
    assert link.attrs["href"].startswith(prefix)
    assert base64.b64decode(link.attrs["href"][len(prefix) :]) == store.path.read_bytes()


def test_a_session_not_written_yet_is_serialised_for_the_download(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path, tmp_path / "sessions")
    store.append_message(UserMessage("only a prompt so far"))
    assert store.path is not None and not store.path.exists()  # written at the first answer, as in Pi
    page = Page(render_session_html(store))
    [link] = [a for a in page.all("a") if a.attrs.get("id") == "download-jsonl"]
    jsonl = base64.b64decode(link.attrs["href"].split(",", 1)[1]).decode()
    lines = jsonl.splitlines()
    assert len(lines) == 2 and '"type":"session"' in lines[0] and "only a prompt so far" in lines[1]


def test_a_search_box_and_the_page_is_self_contained(exported: tuple[SessionStore, Ids, Page]) -> None:
    _, _, page = exported
    assert [i.attrs.get("type") for i in page.all("input") if i.attrs.get("id") == "search"] == ["search"]
    assert page.all("link") == []
    for element in page.all():
        value = element.attrs.get("src", "")
        assert not value.startswith(("http:", "https:", "//")), (element.tag, value)
    scripts = page.all("script")
    assert len(scripts) == 1 and "src" not in scripts[0].attrs
    assert len(page.all("style")) == 1
    assert "@import" not in page.html and "url(" not in page.html
