"""A server's form (``elicitation/create``) as questions caddie can ask with its dialogs, and the answers
back as the form's content. Pure.

MCP forms are flat: each property is a string (with ``format``, length limits), number, integer, boolean,
or a choice (``enum``, ``oneOf`` of ``const``s, arrays of them for several choices).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from caddie.extensions.api import UsageError

Kind = Literal["text", "number", "integer", "boolean", "choice", "choices"]
YES, NO = "yes", "no"
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


@dataclass(frozen=True, slots=True)
class Question:
    key: str
    title: str
    kind: Kind
    required: bool
    options: tuple[tuple[str, Any], ...] = ()
    """For choices: (label shown, value sent)."""
    default: Any = None
    hint: str = ""
    schema: Mapping[str, Any] | None = None


def _choices(prop: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    if isinstance(prop.get("enum"), list):
        names = prop.get("enumNames") if isinstance(prop.get("enumNames"), list) else None
        return tuple(
            (str(names[i]) if names and i < len(names) else str(v), v) for i, v in enumerate(prop["enum"])
        )
    for key in ("oneOf", "anyOf"):
        if isinstance(prop.get(key), list):
            return tuple(
                (str(o.get("title", o.get("const"))), o.get("const"))
                for o in prop[key]
                if isinstance(o, Mapping) and "const" in o
            )
    return ()


def questions(schema: Mapping[str, Any]) -> list[Question]:
    """One question per property, in the schema's order."""
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return []
    required = set(schema.get("required") or [])
    out: list[Question] = []
    for key, prop in props.items():
        if not isinstance(prop, Mapping):
            continue
        title = str(prop.get("title") or key)
        hint = str(prop.get("description") or "")
        kind: Kind
        options: tuple[tuple[str, Any], ...] = ()
        if prop.get("type") == "array":
            raw_items = prop.get("items")
            items: Mapping[str, Any] = raw_items if isinstance(raw_items, Mapping) else {}
            kind, options = "choices", _choices(items)
        elif options := _choices(prop):
            kind = "choice"
        elif prop.get("type") in ("number", "integer", "boolean"):
            kind = prop["type"]
        else:
            kind = "text"
        out.append(Question(key, title, kind, key in required, options, prop.get("default"), hint, prop))
    return out


class BadAnswer(UsageError):
    """An answer that does not fit the question; the message says what would."""


def parse(question: Question, answer: str) -> Any:
    """A typed answer (text or number typed by the user, or the chosen label); raises ``BadAnswer``."""
    schema = question.schema or {}
    if question.kind == "boolean":
        return answer == YES
    if question.kind == "choice":
        for label, chosen in question.options:
            if label == answer:
                return chosen
        raise BadAnswer(f"choose one of: {', '.join(label for label, _ in question.options)}")
    if question.kind == "choices":
        labels = [a.strip() for a in answer.split(",") if a.strip()]
        values = dict(question.options)
        unknown = [a for a in labels if a not in values]
        if unknown:
            raise BadAnswer(f"unknown choice {unknown[0]!r}; choose from: {', '.join(values)}")
        return [values[a] for a in labels]
    if question.kind in ("number", "integer"):
        try:
            value: float | int = int(answer) if question.kind == "integer" else float(answer)
        except ValueError:
            raise BadAnswer(
                f"{question.title} must be {'a whole number' if question.kind == 'integer' else 'a number'}"
            ) from None
        if isinstance(value, float) and not math.isfinite(value):
            raise BadAnswer(f"{question.title} must be a finite number")
        low, high = schema.get("minimum"), schema.get("maximum")
        if isinstance(low, int | float) and value < low:
            raise BadAnswer(f"{question.title} must be at least {low}")
        if isinstance(high, int | float) and value > high:
            raise BadAnswer(f"{question.title} must be at most {high}")
        return value
    low, high = schema.get("minLength"), schema.get("maxLength")
    if isinstance(low, int) and len(answer) < low:
        raise BadAnswer(f"{question.title} needs at least {low} characters")
    if isinstance(high, int) and len(answer) > high:
        raise BadAnswer(f"{question.title} takes at most {high} characters")
    if schema.get("format") == "email" and not _EMAIL.match(answer):
        raise BadAnswer(f"{question.title} must be an email address")
    return answer


def prompt_title(server: str, message: str, question: Question, error: str | None = None) -> str:
    """The dialog title: who asks, what for, which field (and what was wrong with the last answer)."""
    need = "" if question.required else " (optional: leave empty to skip)"
    head = f"{server} asks: {message}".strip()
    field = f"{question.title}{need}" + (f" — {question.hint}" if question.hint else "")
    return f"{head}\n{field}" + (f"\n{error}" if error else "")


def placeholder(question: Question) -> str | None:
    if question.default is not None:
        return str(question.default)
    return None
