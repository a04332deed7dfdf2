"""YAML frontmatter of Markdown files (skills, prompt templates), read the way Pi reads it.

A file starting with ``---`` and containing a later line starting with ``---`` has a YAML block between the
two; the body is what follows, trimmed. Anything else is all body.
"""

from __future__ import annotations

from typing import Any

import yaml

from caddie.errors import ConfigurationError


class FrontmatterError(ConfigurationError, ValueError):
    """The frontmatter block is not valid YAML."""


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """``(yaml_text, body)``; ``yaml_text`` is None when the file has no frontmatter block."""
    normalized = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if not normalized.startswith("---"):
        return None, normalized
    end = normalized.find("\n---", 3)
    if end == -1:
        return None, normalized
    return normalized[4:end], normalized[end + 4 :].strip()


def parse_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """``(frontmatter, body)``; raises ``FrontmatterError`` when the YAML block does not parse."""
    block, body = split_frontmatter(text)
    if not block:
        return {}, body
    try:
        data = yaml.safe_load(block)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise FrontmatterError(f"invalid YAML frontmatter{where}: {problem}") from None
    return (data if isinstance(data, dict) else {}), body


def strip_frontmatter(text: str) -> str:
    return split_frontmatter(text)[1]
