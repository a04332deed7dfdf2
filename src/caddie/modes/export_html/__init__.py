"""``caddie export`` and ``/export``: a session as one self-contained HTML page a person wants to read.

- ``page.py``: the page (every entry of every branch, Markdown, highlighted code, edit diffs, tool arguments
  as fields, long results collapsed, extension state hidden until asked for, search, the raw JSONL);
- ``visibility.py``: what the model is sent of each entry, as the session's extensions answer it;
- ``blocks.py``: Markdown (markdown-it-py), code and diffs (Pygments), values as fields;
- ``assets.py``: the inline CSS and JS.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from caddie import untrusted
from caddie.ai import secrets
from caddie.extensions.api import EntryVisibility, Savings
from caddie.extensions.runner import ExtensionRunner
from caddie.modes.export_html.assets import theme_css
from caddie.modes.export_html.blocks import entry_title, token_rules
from caddie.modes.export_html.page import Renderer
from caddie.modes.export_html.savings_chart import savings_section
from caddie.modes.export_html.visibility import Visibility, collect_visibility
from caddie.modes.savings import ask_savings, model_finder
from caddie.session.entries import entry_to_json
from caddie.session.store import SessionStore

if TYPE_CHECKING:
    from caddie.modes.theme_files import ExportColours

__all__ = [
    "Visibility",
    "collect_visibility",
    "default_export_path",
    "entry_title",
    "export_session",
    "export_session_html",
    "render_session_html",
    "session_jsonl",
]


def _line(obj: object) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def session_jsonl(store: SessionStore, source_file: Path | None = None) -> bytes:
    """The session file's bytes as they are on disk; a session not written yet is serialised the same way."""
    for path in (source_file, store.path):
        if path is not None:
            try:
                return path.read_bytes()
            except OSError:
                continue
    return _line(store.header.to_json()) + b"".join(_line(entry_to_json(x)) for x in store.entries())


def default_export_path(store: SessionStore, source_file: Path | None = None) -> Path:
    """``<session file stem>.html`` in the current directory (``caddie-session-<id>.html`` without a file)."""
    source = source_file or store.path
    if source is not None:
        return Path.cwd() / f"{source.stem}.html"
    return Path.cwd() / f"caddie-session-{store.session_id}.html"


def render_session_html(
    store: SessionStore,
    visibility: Mapping[str, EntryVisibility] | None = None,
    source_file: Path | None = None,
    savings: Sequence[Savings] = (),
    colours: ExportColours | None = None,
) -> str:
    """The page for ``store``; ``visibility`` (from ``collect_visibility``) marks what the model is not sent;
    ``colours``, a theme's ``export`` section, the page's backgrounds (None: caddie's own)."""
    source = source_file or store.path
    jsonl = redacted_jsonl(session_jsonl(store, source_file))
    name = f"{source.stem}.jsonl" if source is not None else f"caddie-session-{store.session_id}.jsonl"
    label = str(source) if source is not None else "(not saved)"
    chart = "".join(savings_section(s) for s in savings)
    # A session written before its secrets were redacted on write still exports none (docs/reliability.md).
    renderer = Renderer(store, visibility or {}, jsonl, chart, theme_css(colours, token_rules))
    return secrets.redact_known(renderer.page(label, name))


def redacted_jsonl(data: bytes) -> bytes:
    """Session lines with every secret value caddie knows as ``[redacted]`` (lines without one unchanged)."""
    if not secrets.mentions_known(data.decode("utf-8", "replace")):
        return data
    out: list[bytes] = []
    for line in data.split(b"\n"):
        text = line.decode("utf-8", "replace")
        if secrets.mentions_known(text):
            try:
                text = json.dumps(
                    secrets.redact_json(untrusted.loads(text)), ensure_ascii=False, separators=(",", ":")
                )
            except ValueError:
                text = secrets.redact_known(text)
            line = untrusted.utf8(text)
        out.append(line)
    return b"\n".join(out)


def export_session_html(
    store: SessionStore,
    out_path: str | Path | None = None,
    visibility: Mapping[str, EntryVisibility] | None = None,
    source_file: Path | None = None,
    savings: Sequence[Savings] = (),
    colours: ExportColours | None = None,
) -> Path:
    """Write the page (default: ``default_export_path``) and return where."""
    target = Path(out_path).expanduser() if out_path is not None else default_export_path(store, source_file)
    target.parent.mkdir(parents=True, exist_ok=True)
    page = render_session_html(store, visibility, source_file, savings, colours)
    target.write_text(page, encoding="utf-8")
    return target


async def export_session(
    store: SessionStore,
    runner: ExtensionRunner,
    out_path: str | Path | None = None,
    source_file: Path | None = None,
    colours: ExportColours | None = None,
) -> Path:
    """Ask the running session's extensions what the model is sent and what they saved the bill, then write
    the page (in the theme's ``export`` colours when ``colours`` has them)."""
    visibility = await collect_visibility(store, runner)
    registry = None
    try:
        from caddie.models import ModelRegistry

        registry = ModelRegistry()
    except Exception:  # no usable catalogue (a broken models.json): the savings are shown without prices
        pass
    savings = await ask_savings(runner, store.branch(), model_finder(registry, None))
    return export_session_html(store, out_path, visibility, source_file, savings, colours)
