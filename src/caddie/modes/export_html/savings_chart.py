"""The export's "what … saved" section, one per extension that reports savings: input tokens sent per request
with and without it, as an inline SVG chart (no script, works offline), with the totals the footer shows."""

from __future__ import annotations

from html import escape

from caddie.extensions.api import Savings

WIDTH = 720
HEIGHT = 220
PAD_LEFT = 56
PAD_BOTTOM = 28
PAD_TOP = 12
PAD_RIGHT = 12
WITH_COLOUR = "#4f81bd"
WITHOUT_COLOUR = "#c0504d"


def _k(n: float) -> str:
    return f"{n / 1000:.0f}k" if n >= 10_000 else f"{n / 1000:.1f}k" if n >= 1000 else f"{n:.0f}"


def savings_section(savings: Savings) -> str:
    """The section for one extension's report, or an empty string when it has no request to chart."""
    series = savings.series
    if not series:
        return ""
    name = escape(savings.source)
    top = max(max(max(s, w or 0) for _, s, w in series), 1)
    n = len(series)
    inner_w = WIDTH - PAD_LEFT - PAD_RIGHT
    inner_h = HEIGHT - PAD_TOP - PAD_BOTTOM

    def x(i: int) -> float:
        return PAD_LEFT + (inner_w * (i + 0.5) / n)

    def y(v: int) -> float:
        return PAD_TOP + inner_h * (1 - v / top)

    def line(values: list[int | None], colour: str, label: str) -> str:
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values) if v is not None)
        dots = "".join(
            f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="2.5" fill="{colour}">'
            f"<title>request {i + 1}: {v:,} tokens {label}</title></circle>"
            for i, v in enumerate(values)
            if v is not None
        )
        return f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}"/>{dots}'

    grid = ""
    for frac in (0, 0.5, 1):
        v = top * frac
        gy = y(int(v))
        grid += (
            f'<line x1="{PAD_LEFT}" x2="{WIDTH - PAD_RIGHT}" y1="{gy:.1f}" y2="{gy:.1f}" stroke="#8884"/>'
            f'<text x="{PAD_LEFT - 6}" y="{gy + 4:.1f}" text-anchor="end" font-size="11">{_k(v)}</text>'
        )
    without: list[int | None] = [w for _, _, w in series]
    with_: list[int | None] = [s for _, s, _ in series]
    svg = (
        f'<svg class="savings-chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" role="img" '
        f'aria-label="Input tokens sent per request, with and without {name}">'
        f"{grid}{line(without, WITHOUT_COLOUR, f'without {name}')}{line(with_, WITH_COLOUR, f'with {name}')}"
        f'<text x="{PAD_LEFT + inner_w / 2:.0f}" y="{HEIGHT - 6}" text-anchor="middle" font-size="11">'
        f"request (1–{n})</text></svg>"
    )
    summary = escape(savings.status or f"{savings.source} {savings.tokens:,} tok")
    if savings.details:
        summary += f" — {escape(savings.details)}"
    legend = (
        f'<span style="color:{WITH_COLOUR}">━ with {name} (sent)</span> · '
        f'<span style="color:{WITHOUT_COLOUR}">━ without {name}</span>'
    )
    return (
        f'<section id="savings-{name}" class="savings"><details open><summary>What {name} saved</summary>'
        f'<p class="meta">{summary}</p>{svg}<p class="meta">{legend} — estimated input tokens of each request '
        "on this branch (characters / 4; the system prompt and the other tools, the same in both, not "
        "included; a request made only for it has no counterpart).</p></details></section>"
    )
