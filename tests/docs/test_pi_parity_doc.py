"""docs/pi-parity.md, the Pi 0.84.4 comparison, holds together: one vocabulary, a counts table that
agrees with its rows, a reason linked for every "differs", a quoted line for every "refused", and links
that lead somewhere."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PARITY = DOCS / "pi-parity.md"
VERDICTS = ("same", "adds", "differs", "refused", "lacks")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def _rows() -> list[tuple[str, str, str, str, int]]:
    """(section, item, verdict, note, weight) for every row of the verdict tables; ``(N rows)`` in an item
    counts N."""
    section = ""
    rows = []
    for line in PARITY.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^##+ (\d+)([a-z]?)\. ", line)
        if heading:
            section = heading.group(1) + heading.group(2)
        if not section or not line.startswith("| "):
            continue
        cells = _cells(line)
        if len(cells) != 3 or cells[0] == "item" or set(cells[0]) <= {"-"}:
            continue
        weight = re.search(r"\((\d+) rows\)", cells[0])
        rows.append((section, cells[0], cells[1], cells[2], int(weight.group(1)) if weight else 1))
    return rows


def _counts_table() -> dict[str, dict[str, int]]:
    """The "now" side of each line of the counts table, by the section number it starts with."""
    text = PARITY.read_text(encoding="utf-8")
    table: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        cells = _cells(line) if line.startswith("| ") else []
        if len(cells) != 7 or not re.match(r"^(\*\*)?(\d+[a-z]?\.|all)", cells[0]):
            continue
        key = re.match(r"^(?:\*\*)?(\d+[a-z]?|all)", cells[0]).group(1)  # type: ignore[union-attr]
        now = [int(c.strip("*").split("→")[-1].strip().strip("*")) for c in cells[1:]]
        table[key] = dict(zip((*VERDICTS, "rows"), now, strict=True))
    return table


def test_every_row_uses_the_one_vocabulary() -> None:
    rows = _rows()
    assert len(rows) > 500
    assert [r[:3] for r in rows if r[2] not in VERDICTS] == []


def test_the_counts_table_agrees_with_the_rows() -> None:
    table = _counts_table()
    tally: dict[str, Counter[str]] = {}
    for section, _, verdict, _, weight in _rows():
        tally.setdefault(section.rstrip("abcdefg") if section[0] in "14567" else section, Counter())[
            verdict
        ] += weight
    assert set(table) == {*tally, "all"}
    total: Counter[str] = Counter()
    for key, counts in tally.items():
        total.update(counts)
        assert table[key] == {**{v: counts[v] for v in VERDICTS}, "rows": sum(counts.values())}, key
    assert table["all"] == {**{v: total[v] for v in VERDICTS}, "rows": sum(total.values())}


def test_every_differs_row_links_its_reason_and_every_refused_row_quotes_its_line() -> None:
    for section, item, verdict, note, _ in _rows():
        if verdict == "differs":
            assert re.search(r"\]\(|\]\[", note), f"{section} {item}: no reason linked"
        if verdict == "refused":
            assert "`" in note, f"{section} {item}: no line quoted"


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_slug(m.group(1)) for m in re.finditer(r"(?m)^#+ (.+)$", path.read_text(encoding="utf-8"))}


@pytest.mark.parametrize("doc", [PARITY])
def test_links_lead_to_a_file_and_heading_that_exist(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r"(?m)^\[[^\]]+\]: (\S+)$", text)
    assert targets
    for target in targets:
        if target.startswith(("http://", "https://")):
            continue
        name, _, anchor = target.partition("#")
        path = (doc.parent / name).resolve() if name else doc
        assert path.exists(), target
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), target


def test_the_settings_rows_match_what_caddie_does_with_each_pi_key() -> None:
    """Section 3 against ``caddie.config.settings_keys``: a refused key's row quotes the line caddie prints
    (its part after ``is ignored:``, the Textual preamble shortened to "…"), a used key's row says same."""
    from caddie.config.settings_keys import _TEXTUAL, KEYS

    rows = {}
    for section, item, verdict, note, _ in _rows():
        if section == "3":
            for key in re.findall(r"`([^`]+)`", item):
                rows[key] = (verdict, note)
    for spec in KEYS:
        if spec.key not in rows:
            continue  # a group's members (thinkingBudgets.*) share the group's row
        verdict, note = rows[spec.key]
        if spec.fate == "refused":
            assert verdict == "refused", spec.key
            assert spec.note in note or spec.note.replace(f"{_TEXTUAL} ", "… ") in note, spec.key
        else:
            assert verdict in (("same", "differs") if spec.pi else ("adds",)), spec.key


def test_every_pi_variable_caddie_refuses_is_named_in_a_refused_row() -> None:
    from caddie.config.environment import PI_VARIABLES

    named = {
        name
        for section, item, verdict, _, _ in _rows()
        if section == "1c" and verdict == "refused"
        for name in re.findall(r"`([A-Z_]+)`", item)
    }
    assert {v.name for v in PI_VARIABLES if v.fate in ("refused", "twin")} <= named


def test_the_tests_and_examples_the_rows_cite_exist() -> None:
    root = DOCS.parent
    cited = set(re.findall(r"`((?:tests|examples)/[\w/.-]+)`", PARITY.read_text(encoding="utf-8")))
    assert cited
    assert sorted(c for c in cited if not (root / c).exists()) == []
