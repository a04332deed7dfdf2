"""Prompt templates: Markdown files that expand into a prompt when typed as ``/name args`` (Pi's format).

``review.md`` is ``/review``. The optional frontmatter gives ``description`` (else the first non-empty
line, cut at 60 characters) and ``argument-hint``. The body takes Pi's placeholders: ``$1`` … ``$9``…,
``$@`` / ``$ARGUMENTS`` (all arguments), ``${1:-default}``, ``${@:-default}`` / ``${ARGUMENTS:-default}``,
``${@:N}`` (from the Nth on) and ``${@:N:L}`` (L of them). Arguments split like a shell's words, with
single or double quotes grouping.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from caddie.config.source_info import SourceInfo
from caddie.resources.frontmatter import FrontmatterError, parse_frontmatter

_PLACEHOLDER = re.compile(r"\$\{(\d+|ARGUMENTS|@):-([^}]*)\}|\$\{@:(\d+)(?::(\d+))?\}|\$(ARGUMENTS|@|\d+)")


@dataclass(slots=True)
class PromptTemplate:
    name: str
    description: str
    content: str
    file_path: str
    source: str = "path"
    """``user``, ``project``, ``cli``, ``settings``, ``package <source>`` or ``extension <name>``."""
    argument_hint: str | None = None
    source_info: SourceInfo | None = None
    """Pi's ``sourceInfo``, decided by discovery (None: a file loaded on its own)."""


def parse_command_args(text: str) -> list[str]:
    """Words separated by whitespace; ``"…"`` and ``'…'`` group (the quotes are dropped)."""
    args: list[str] = []
    current = ""
    quote: str | None = None
    for char in text:
        if quote:
            if char == quote:
                quote = None
            else:
                current += char
        elif char in ('"', "'"):
            quote = char
        elif char.isspace():
            if current:
                args.append(current)
                current = ""
        else:
            current += char
    if current:
        args.append(current)
    return args


def substitute_args(content: str, args: Sequence[str]) -> str:
    """Fill the placeholders in one pass (values are not themselves expanded again)."""
    everything = " ".join(args)

    def replace(m: re.Match[str]) -> str:
        default_target, default_value, slice_start, slice_length, simple = m.groups()
        if default_target:
            if default_target in ("@", "ARGUMENTS"):
                value: str | None = everything
            else:
                index = int(default_target) - 1
                value = args[index] if 0 <= index < len(args) else None
            return value if value else default_value
        if slice_start:
            start = max(int(slice_start) - 1, 0)
            if slice_length:
                return " ".join(args[start : start + int(slice_length)])
            return " ".join(args[start:])
        if simple in ("@", "ARGUMENTS"):
            return everything
        index = int(simple) - 1
        return args[index] if 0 <= index < len(args) else ""

    return _PLACEHOLDER.sub(replace, content)


def load_template_file(path: str | Path, source: str = "path") -> tuple[PromptTemplate | None, str | None]:
    """``(template, warning)``: an unreadable file or broken frontmatter warns and is skipped."""
    file_path = str(path)
    try:
        with open(file_path, encoding="utf-8") as f:
            raw = f.read()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else "it is not UTF-8 text"
        return None, f"prompt template {file_path} could not be read ({reason}); skipped"
    try:
        front, body = parse_frontmatter(raw)
    except FrontmatterError as e:
        return None, f"prompt template {file_path}: {e}; skipped"
    name = os.path.basename(file_path).removesuffix(".md")
    description = front.get("description")
    if not isinstance(description, str) or not description:
        description = ""
        first = next((line for line in body.split("\n") if line.strip()), None)
        if first is not None:
            description = first[:60] + ("..." if len(first) > 60 else "")
    hint = front.get("argument-hint")
    return (
        PromptTemplate(
            name=name,
            description=description,
            content=body,
            file_path=file_path,
            source=source,
            argument_hint=str(hint) if hint else None,
        ),
        None,
    )


def template_files(directory: str | Path) -> list[str]:
    """``*.md`` files directly in ``directory`` (not recursive), sorted; links followed, broken ones skipped."""
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return []
    out = []
    for entry in entries:
        try:
            is_file = entry.is_file()
        except OSError:
            continue
        if is_file and entry.name.endswith(".md"):
            out.append(entry.path)
    return out


def expand_prompt_template(text: str, templates: Iterable[PromptTemplate]) -> str:
    """``/name args`` → the template's body with the arguments filled in; any other text unchanged."""
    if not text.startswith("/"):
        return text
    m = re.match(r"/(\S+)(?:\s+([\s\S]*))?\Z", text)
    if m is None:
        return text
    template = next((t for t in templates if t.name == m.group(1)), None)
    if template is None:
        return text
    return substitute_args(template.content, parse_command_args(m.group(2) or ""))
