"""The window as a picture (Rich): a grid coloured by category, the table, the largest items, what the
extensions withhold and saved — shared by ``/context`` and ``caddie context --stats``."""

from __future__ import annotations

from typing import Any

from caddie.modes.context_stats.count import TOP_ITEMS, Category, ContextStats
from caddie.modes.savings import savings_line

GRID_COLUMNS = 25
GRID_ROWS = 4
GLYPHS = {
    "system": "S",
    "tools": "T",
    "user": "U",
    "assistant": "A",
    "thinking": "K",
    "extension": "E",
    "summary": "C",
    "branch": "B",
    "reserve": "r",
    "free": ".",
}


def glyph(key: str, color: bool) -> str:
    """A grid cell: a coloured square (free space a dot), or without colour a letter per category."""
    if color:
        return "·" if key == "free" else "□" if key == "reserve" else "■"
    return "R" if key.startswith("tool:") else GLYPHS.get(key, "?")


def grid_cells(stats: ContextStats, cells: int = GRID_COLUMNS * GRID_ROWS) -> list[Category]:
    """One category per cell, in proportion (largest remainders), the window's order: sent first, then the
    reserve and free space; at least one cell for every sent category that holds anything."""
    cats = stats.window_categories()
    total = stats.context_window if stats.context_window > 0 else sum(c.tokens for c in cats)
    if total <= 0:
        return []
    shares = [c.tokens * cells / total for c in cats]
    counts = [int(s) for s in shares]
    for i, c in enumerate(cats):
        if c.key not in ("free", "reserve") and c.tokens > 0 and counts[i] == 0:
            counts[i] = 1
    while sum(counts) > cells:
        i = max(range(len(cats)), key=lambda j: (cats[j].key == "free", counts[j]))
        counts[i] -= 1
    order = sorted(range(len(cats)), key=lambda j: -(shares[j] - int(shares[j])))
    k = 0
    while sum(counts) < cells and order:
        counts[order[k % len(order)]] += 1
        k += 1
    out: list[Category] = []
    for c, n in zip(cats, counts, strict=True):
        out.extend([c] * n)
    return out


def render_stats(stats: ContextStats, color: bool = True) -> Any:
    """The window as a coloured grid (one cell ≈ 1% of the window), the categories with tokens and %, the
    largest items, and what the extensions withhold and saved."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    window = stats.context_window
    parts: list[Any] = []
    basis = (
        f"provider-reported: the last request was {stats.reported_tokens:,} tokens; categories scaled to it"
        if stats.basis == "reported" and stats.reported_tokens is not None
        else f"estimated (characters / 4): {stats.basis_reason or 'no provider-reported usage'}"
    )
    head = Text()
    head.append("Context window", style="bold")
    if stats.model:
        head.append(f"  {stats.model}")
    approx = "≈" if stats.basis == "estimated" else ""
    used = f"  {approx}{stats.used_tokens:,} tokens"
    if window > 0:
        used += f" of {window:,} ({stats.used_tokens / window:.0%})"
    head.append(used)
    parts.append(head)
    parts.append(Text(f"tokens: {basis}", style="dim"))

    cells = grid_cells(stats)
    grid = Text()
    for row in range(GRID_ROWS):
        for col in range(GRID_COLUMNS):
            i = row * GRID_COLUMNS + col
            if i < len(cells):
                grid.append(glyph(cells[i].key, color) + " ", style=cells[i].colour if color else "")
        grid.append("\n")
    parts.append(grid)

    table = Table(box=None, padding=(0, 1), show_header=True, header_style="bold")
    table.add_column("")
    table.add_column("category")
    table.add_column("tokens", justify="right")
    table.add_column("%", justify="right")
    denominator = window if window > 0 else max(1, stats.used_tokens)
    for c in stats.window_categories():
        table.add_row(
            Text(glyph(c.key, color), style=c.colour if color else ""),
            c.label,
            f"{c.tokens:,}",
            f"{c.tokens / denominator:.1%}",
        )
    parts.append(table)

    if stats.items:
        top = Table(box=None, padding=(0, 1), show_header=True, header_style="bold", title_justify="left")
        top.add_column(f"largest {len(stats.items)}", no_wrap=True, min_width=10)
        top.add_column("tokens", justify="right", no_wrap=True, min_width=6)
        top.add_column("what", overflow="ellipsis", no_wrap=True, max_width=72)
        for item in stats.items:
            ref = item.entry_id or "(injected)"
            what = item.title + (f"  [toolCallId {item.tool_call_id}]" if item.tool_call_id else "")
            top.add_row(ref, f"{round(item.tokens * _scale(stats)):,}", what)
        parts.append(Text(""))
        parts.append(top)
        if any(item.entry_id is None for item in stats.items):
            parts.append(
                Text(
                    "(injected): added by an extension to this request only, not in the session", style="dim"
                )
            )

    parts.append(Text(""))
    mull = Text()
    mull.append("extensions", style="bold")
    if stats.withheld:
        hidden = [w for w in stats.withheld if w.state == "hidden"]
        shrunk = [w for w in stats.withheld if w.state == "replaced"]
        mull.append(
            f"  withhold {len(hidden)} hidden and {len(shrunk)} shrunk entries "
            f"(~{sum(w.saved_tokens for w in stats.withheld):,} tokens not sent)"
        )
        parts.append(mull)
        for w in sorted(stats.withheld, key=lambda w: -w.saved_tokens)[:TOP_ITEMS]:
            now = f" → {w.sent_tokens:,}" if w.state == "replaced" else ""
            parts.append(Text(f"  {w.entry_id}  {w.original_tokens:,}{now} tok  {w.reason}", style="dim"))
        if len(stats.withheld) > TOP_ITEMS:
            parts.append(Text(f"  … and {len(stats.withheld) - TOP_ITEMS} more", style="dim"))
    else:
        mull.append("  hide and shrink nothing on this branch")
        parts.append(mull)
    for s in stats.savings:
        parts.append(Text(f"  saved so far: {savings_line(s)}"))
    for note in stats.notes:
        parts.append(Text(note, style="dim"))
    return Group(*parts)


def _scale(stats: ContextStats) -> float:
    return stats.used_tokens / stats.estimated_tokens if stats.estimated_tokens else 1.0
