"""The export's "what mulligan saved" section: tokens sent per request with and without mulligan, as an
inline SVG chart (no script, works offline), with the totals the footer shows."""

from __future__ import annotations

from html import escape

from caddie.extensions.bundled.mulligan.savings import SessionSavings, format_savings_status

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


def savings_section(savings: SessionSavings) -> str:
    """The section, or an empty string when mulligan changed no request of the branch."""
    series = savings.series
    if not savings.requests or not series:
        return ""
    top = max(max(w for _, _, w in series), 1)
    n = len(series)
    inner_w = WIDTH - PAD_LEFT - PAD_RIGHT
    inner_h = HEIGHT - PAD_TOP - PAD_BOTTOM

    def x(i: int) -> float:
        return PAD_LEFT + (inner_w * (i + 0.5) / n)

    def y(v: int) -> float:
        return PAD_TOP + inner_h * (1 - v / top)

    def line(values: list[int], colour: str, label: str) -> str:
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
        dots = "".join(
            f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="2.5" fill="{colour}">'
            f"<title>request {i + 1}: {v:,} tokens {label}</title></circle>"
            for i, v in enumerate(values)
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
    without = [w for _, _, w in series]
    with_ = [s for _, s, _ in series]
    svg = (
        f'<svg class="savings-chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" role="img" '
        f'aria-label="Message tokens sent per request, with and without mulligan">'
        f"{grid}{line(without, WITHOUT_COLOUR, 'without mulligan')}{line(with_, WITH_COLOUR, 'with mulligan')}"
        f'<text x="{PAD_LEFT + inner_w / 2:.0f}" y="{HEIGHT - 6}" text-anchor="middle" font-size="11">'
        f"request (1–{n})</text></svg>"
    )
    cost = savings.cost if savings.priced else None
    summary = (
        f"{escape(format_savings_status(savings.tokens, cost))}: {savings.tokens:,} message tokens not resent "
        f"over {len(savings.requests)} of {savings.requests_total} requests (net of mulligan's own notes and "
        f"calls: {savings.net_tokens:,})."
    )
    legend = (
        f'<span style="color:{WITH_COLOUR}">━ with mulligan (sent)</span> · '
        f'<span style="color:{WITHOUT_COLOUR}">━ without mulligan</span>'
    )
    return (
        '<section id="savings"><details open><summary>What mulligan saved</summary>'
        f'<p class="meta">{summary}</p>{svg}<p class="meta">{legend} — tokens of the messages of each '
        "request on this branch (characters / 4; system prompt and tool schemas not included).</p>"
        "</details></section>"
    )
