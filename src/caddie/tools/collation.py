"""A sort key approximating ICU root collation, i.e. JavaScript's ``a.localeCompare(b)`` under en-US.

``ls`` sorts names the way Pi does (``a.toLowerCase().localeCompare(b.toLowerCase())``): punctuation and
symbols before digits before letters, whitespace first, control characters ignored, accents as a secondary
difference. ASCII is ordered exactly as ICU orders it; other letters fold to their base letter when they
have one and otherwise sort after the Latin letters by code point.
"""

from __future__ import annotations

import unicodedata

# ICU root order of the ASCII characters that carry a primary weight (after lower-casing).
_ASCII_ORDER = "\t\n\v\f\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz"
_PRIMARY = {ch: index + 1 for index, ch in enumerate(_ASCII_ORDER)}
_OTHER_BASE = 1000
_EXPANSIONS = {"ß": "ss", "æ": "ae", "œ": "oe", "ø": "o", "đ": "d", "ł": "l", "þ": "th", "ı": "i"}

CollationKey = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]


def collation_key(text: str) -> CollationKey:
    """Sort key: compare primary weights, then accents, then variants (stable sort keeps ties in order)."""
    primary: list[int] = []
    secondary: list[int] = []
    tertiary: list[int] = []
    for ch in unicodedata.normalize("NFD", text):
        weight = _PRIMARY.get(ch)
        if weight is not None:
            primary.append(weight)
            secondary.append(0)
            tertiary.append(0)
            continue
        category = unicodedata.category(ch)
        if category in ("Mn", "Me"):
            secondary.append(ord(ch))
            continue
        if category in ("Cc", "Cf"):
            continue  # completely ignorable
        expansion = _EXPANSIONS.get(ch)
        if expansion is not None:
            for sub in expansion:
                primary.append(_PRIMARY[sub])
                secondary.append(0)
                tertiary.append(1)
            continue
        if category == "Zs":
            primary.append(_PRIMARY[" "])
            secondary.append(0)
            tertiary.append(1)
            continue
        primary.append(_OTHER_BASE + ord(ch))
        secondary.append(0)
        tertiary.append(0)
    return tuple(primary), tuple(secondary), tuple(tertiary)


def locale_sorted(names: list[str]) -> list[str]:
    """``names`` ordered like Pi's ``ls``: case-insensitive ``localeCompare``, stable for ties."""
    return sorted(names, key=lambda name: collation_key(name.lower()))
