"""The rules for data that comes from outside the process, each decided in one place (docs/reliability.md):
text with lone UTF-16 surrogates (``text``), JSON nested too deeply to handle (``json_input``), paths that
are not regular files (``files``), and control characters in text shown on a terminal (``text``).

This package is next to the bottom layer: everything in caddie may use it; it uses only ``caddie.errors``.
"""

from caddie.untrusted.files import NotRegularFileError, non_regular_kind, open_regular, read_regular
from caddie.untrusted.json_input import MAX_JSON_DEPTH, JsonInputError, deep_lines, loads, nesting_exceeds
from caddie.untrusted.text import REPLACE_SURROGATES, clean_strings, clean_text, for_terminal, utf8

__all__ = [
    "MAX_JSON_DEPTH",
    "REPLACE_SURROGATES",
    "JsonInputError",
    "NotRegularFileError",
    "clean_strings",
    "clean_text",
    "deep_lines",
    "for_terminal",
    "loads",
    "nesting_exceeds",
    "non_regular_kind",
    "open_regular",
    "read_regular",
    "utf8",
]
