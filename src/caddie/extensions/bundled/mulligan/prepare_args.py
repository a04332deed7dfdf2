"""The JSON-string shim for object-typed tool parameters, run before the host validates arguments.

Models sometimes send an object parameter as a JSON *string*
(``target: "{\\"by_tool_call_id\\": \\"call_1\\"}"``). For each listed key, a string that parses to a JSON
object replaces itself with that object; anything else (malformed JSON, arrays, scalars) is left for the
host's validation to report.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any


def prepare_object_args(keys: Sequence[str]) -> Callable[[Any], Any]:
    """A ``prepare_arguments`` hook decoding the given keys in place; returns the same object, never raises."""
    wanted = tuple(keys)

    def prepare(args: Any) -> Any:
        if not isinstance(args, dict):
            return args
        for key in wanted:
            value = args.get(key)
            if not isinstance(value, str):
                continue
            try:
                parsed = json.loads(value)
            except (ValueError, RecursionError):
                continue
            if isinstance(parsed, dict):
                args[key] = parsed
        return args

    return prepare
