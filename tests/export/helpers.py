"""Shared pieces of the export tests: a parsed page, session builders, and the real ``caddie export`` path."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from caddie.ai.messages import (
    AssistantMessage,
    BashExecutionMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from caddie.config.paths import agent_dir
from caddie.modes.inspect import run_subcommand
from caddie.session.store import SessionStore


def assistant(*blocks: TextContent | ToolCall) -> AssistantMessage:
    calls = any(isinstance(b, ToolCall) for b in blocks)
    return AssistantMessage(
        list(blocks), "faux", "faux", "faux-1", stop_reason="toolUse" if calls else "stop"
    )


def marker(kind: str, seq: int, **data: object) -> dict[str, object]:
    return {"schema": "pi-mulligan", "v": 1, "kind": kind, "seq": seq, "ts": 1_700_000_000_000 + seq, **data}


def write_settings(settings: dict[str, object]) -> None:
    target = agent_dir() / "settings.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(settings), encoding="utf-8")


def export(session_file: Path, out: Path) -> Path:
    """``caddie export SESSION -o OUT``, in process, as a user runs it (bundled extensions loaded)."""
    stdout = io.StringIO()
    assert run_subcommand(["export", str(session_file), "-o", str(out)], stdout) == 0
    assert stdout.getvalue().strip() == str(out)
    return out


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    nodes: list[str | Element] = field(default_factory=list)
    """Text and child elements, in document order."""

    @property
    def children(self) -> list[Element]:
        return [n for n in self.nodes if isinstance(n, Element)]

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def all_text(self) -> str:
        return "".join(n if isinstance(n, str) else n.all_text() for n in self.nodes)

    def walk(self) -> list[Element]:
        out = [self]
        for c in self.children:
            out.extend(c.walk())
        return out

    def find(self, tag: str | None = None, cls: str | None = None) -> list[Element]:
        return [x for x in self.walk() if (tag is None or x.tag == tag) and (cls is None or cls in x.classes)]


class Page(HTMLParser):
    """The page as a tree of elements (void elements closed at once)."""

    VOID = frozenset({"meta", "img", "br", "hr", "input", "link"})

    def __init__(self, html: str) -> None:
        super().__init__()
        self.html = html
        self.root = Element("#root", {})
        self.stack = [self.root]
        self.feed(html)

    @classmethod
    def of(cls, path: Path) -> Page:
        return cls(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].nodes.append(element)
        if tag not in self.VOID:
            self.stack.append(element)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].nodes.append(data)

    def all(self, tag: str | None = None, cls: str | None = None) -> list[Element]:
        return self.root.find(tag, cls)

    def article(self, entry_id: str) -> Element:
        [found] = [x for x in self.all("article") if x.attrs.get("id") == f"e-{entry_id}"]
        return found

    def marked(self) -> dict[str, str]:
        """Entry id → ``hidden``/``replaced`` for every article the page marks."""
        return {
            a.attrs["data-entry-id"]: a.attrs["data-visibility"]
            for a in self.all("article")
            if "data-visibility" in a.attrs
        }


LONG_SOURCE = "\n".join(f"def f{i}(x):\n    return x + {i}" for i in range(40))


@dataclass
class Ids:
    prompt: str
    wrong_call: str
    wrong_result: str
    source_call: str
    source_result: str
    rewind: str
    cancelled_rewind: str
    shrink: str
    metric: str
    edit_call: str
    bash_call: str
    bash_result: str
    answer: str
    shell: str


def open_session(store: SessionStore) -> Ids:
    """One branch, no compaction: a pinned rewind, a cancelled one, a pinned shrink, a turn metric, an edit,
    a bash run, a Markdown answer and a user shell command."""
    store.append_model_change("faux", "faux-1")
    prompt = store.append_message(UserMessage("Fix the **parser** in `parser.py`"))
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
            1,
            id="uuid-rewind",
            granularity="last_tool_call_group",
            excludeToolCallId="c2",
            note={
                "what_happened": "Read the wrong file.",
                "true_current_state": "-",
                "next": "Read parser.py",
            },
            hideEntryIds=[wrong_call, wrong_result],
        ),
    )
    cancelled_rewind = store.append_custom(
        "mulligan:rewind",
        marker("rewind", 2, id="uuid-gone", granularity="last_turn", hideEntryIds=[prompt]),
    )
    store.append_custom("mulligan:cancel", marker("cancel", 3, targetId="uuid-gone"))
    store.append_custom_message("mulligan:note", "Note to self: read parser.py", True, {"kind": "note"})
    source_call = store.append_message(assistant(ToolCall("c3", "read", {"path": "parser.py"})))
    source_result = store.append_message(ToolResultMessage("c3", "read", [TextContent(LONG_SOURCE)]))
    shrink = store.append_custom(
        "mulligan:shrink",
        marker(
            "shrink", 4, id="uuid-shrink", pinnedEntryId=source_result, replacement="parser.py: 40 functions"
        ),
    )
    metric = store.append_custom(
        "mulligan:turn-metric", marker("turn-metric", 5, deltaTokens=1234, bloatHit=False, turnIndex=1)
    )
    edit_call = store.append_message(
        assistant(
            ToolCall(
                "c4",
                "edit",
                {"path": "parser.py", "edits": [{"oldText": "return x + 1", "newText": "return x - 1"}]},
            )
        )
    )
    store.append_message(ToolResultMessage("c4", "edit", [TextContent("Successfully replaced 1 block(s).")]))
    bash_call = store.append_message(
        assistant(ToolCall("c5", "bash", {"command": "pytest -q tests/", "timeout": 60}))
    )
    bash_result = store.append_message(ToolResultMessage("c5", "bash", [TextContent("3 passed in 0.01s")]))
    answer = store.append_message(
        assistant(
            TextContent(
                "## Fixed\n\n- the sign in `f1`\n- tests pass\n\n```python\ndef f1(x):\n    return x - 1\n```\n"
            )
        )
    )
    shell = store.append_message(BashExecutionMessage("git status --short", " M parser.py\n", 0))
    store.append_label(answer, "milestone")
    return Ids(
        prompt,
        wrong_call,
        wrong_result,
        source_call,
        source_result,
        rewind,
        cancelled_rewind,
        shrink,
        metric,
        edit_call,
        bash_call,
        bash_result,
        answer,
        shell,
    )
