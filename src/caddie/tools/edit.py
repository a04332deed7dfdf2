"""The ``edit`` tool: targeted exact-text replacements in one file, with Pi's fuzzy fallback.

Every ``edits[].oldText`` is matched against the original file (not after earlier edits), must be unique
and must not overlap another edit. When an exact match fails, matching retries on a normalised view
(NFKC, trailing whitespace stripped per line, smart quotes, Unicode dashes and spaces folded); then only
the lines an edit touches are rewritten from that view and every other line keeps its original bytes. A
UTF-8 BOM and the file's line ending style (LF or CRLF) are preserved.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from caddie.ai.abort import AbortSignal
from caddie.ai.messages import TextContent
from caddie.jscompat import js_trim_end, without_lone_surrogates
from caddie.sandbox import FileGuard
from caddie.tools.base import OnUpdate, ToolDefinition, ToolError, ToolResult
from caddie.tools.diff import display_diff, unified_patch
from caddie.tools.files import check_sandbox, open_for_write, open_regular_guarded
from caddie.tools.fs_errors import access_error, errno_code, node_fs_message
from caddie.tools.mutation_queue import file_mutation_lock
from caddie.tools.operations import EditOperations
from caddie.tools.paths import resolve_to_cwd
from caddie.untrusted import NotRegularFileError

EDIT_DESCRIPTION = (
    "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping "
    "region of the original file. If two changes affect the same block or nearby lines, merge them into one edit "
    "instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes."
)
EDIT_PROMPT_SNIPPET = (
    "Make precise file edits with exact text replacement, including multiple disjoint edits in one call"
)
EDIT_PROMPT_GUIDELINES = [
    "Use edit for precise changes (edits[].oldText must match exactly)",
    "When changing multiple separate locations in one file, use one edit call with multiple entries in edits[] "
    "instead of multiple edit calls",
    "Each edits[].oldText is matched against the original file, not after earlier edits are applied. Do not emit "
    "overlapping or nested edits. Merge nearby changes into one edit.",
    "Keep edits[].oldText as small as possible while still being unique in the file. Do not pad with large "
    "unchanged regions.",
]
EDIT_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["path", "edits"],
    "properties": {
        "path": {"type": "string", "description": "Path to the file to edit (relative or absolute)"},
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["oldText", "newText"],
                "properties": {
                    "oldText": {
                        "type": "string",
                        "description": "Exact text for one targeted replacement. It must be unique in the original "
                        "file and must not overlap with any other edits[].oldText in the same call.",
                    },
                    "newText": {"type": "string", "description": "Replacement text for this targeted edit."},
                },
            },
            "description": "One or more targeted replacements. Each edit is matched against the original file, not "
            "incrementally. Do not include overlapping or nested edits. If two changes touch the same block or "
            "nearby lines, merge them into one edit instead.",
        },
    },
}


# --------------------------------------------------------------------------------------------------
# Arguments


def _is_single_edit(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("oldText"), str)
        and isinstance(value.get("newText"), str)
    )


def prepare_edit_arguments(args: Any) -> Any:
    """Accept the shapes models actually send: ``edits`` as a JSON string or a single object, and the
    legacy top-level ``oldText``/``newText`` (folded into ``edits``). Mutates and returns ``args``."""
    if not isinstance(args, dict):
        return args
    edits = args.get("edits")
    if isinstance(edits, str):
        try:
            parsed = json.loads(edits)
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            args["edits"] = parsed
        elif _is_single_edit(parsed):
            args["edits"] = [parsed]
    elif _is_single_edit(edits):
        args["edits"] = [edits]
    if not isinstance(args.get("oldText"), str) or not isinstance(args.get("newText"), str):
        return args
    folded = list(args["edits"]) if isinstance(args.get("edits"), list) else []
    folded.append({"oldText": args["oldText"], "newText": args["newText"]})
    rest = {k: v for k, v in args.items() if k not in ("oldText", "newText")}
    rest["edits"] = folded
    return rest


# --------------------------------------------------------------------------------------------------
# Matching


def detect_line_ending(content: str) -> str:
    """``\\r\\n`` if the first line break is CRLF, else ``\\n``."""
    lf = content.find("\n")
    if lf == -1:
        return "\n"
    crlf = content.find("\r\n")
    if crlf == -1:
        return "\n"
    return "\r\n" if crlf < lf else "\n"


def normalize_to_lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def restore_line_endings(text: str, ending: str) -> str:
    return text.replace("\n", "\r\n") if ending == "\r\n" else text


_SINGLE_QUOTES = re.compile("[\u2018\u2019\u201a\u201b]")
_DOUBLE_QUOTES = re.compile("[\u201c\u201d\u201e\u201f]")
_DASHES = re.compile("[\u2010\u2011\u2012\u2013\u2014\u2015\u2212]")
_SPACES = re.compile("[\u00a0\u2002-\u200a\u202f\u205f\u3000]")


def normalize_for_fuzzy_match(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text)
    folded = "\n".join(js_trim_end(line) for line in folded.split("\n"))
    folded = _SINGLE_QUOTES.sub("'", folded)
    folded = _DOUBLE_QUOTES.sub('"', folded)
    folded = _DASHES.sub("-", folded)
    return _SPACES.sub(" ", folded)


@dataclass(slots=True)
class FuzzyMatch:
    found: bool
    index: int
    length: int
    used_fuzzy: bool


def fuzzy_find_text(content: str, old_text: str) -> FuzzyMatch:
    """Exact match first; else a match in normalised space (offsets refer to the normalised content)."""
    index = content.find(old_text)
    if index != -1:
        return FuzzyMatch(True, index, len(old_text), False)
    fuzzy_old = normalize_for_fuzzy_match(old_text)
    index = normalize_for_fuzzy_match(content).find(fuzzy_old)
    if index == -1:
        return FuzzyMatch(False, -1, 0, False)
    return FuzzyMatch(True, index, len(fuzzy_old), True)


def _count_occurrences(content: str, old_text: str) -> int:
    return normalize_for_fuzzy_match(content).count(normalize_for_fuzzy_match(old_text))


@dataclass(slots=True)
class _Replacement:
    edit_index: int
    start: int
    length: int
    new_text: str


def _not_found(path: str, index: int, total: int) -> ToolError:
    if total == 1:
        return ToolError(
            f"Could not find the exact text in {path}. The old text must match exactly including all whitespace "
            "and newlines."
        )
    return ToolError(
        f"Could not find edits[{index}] in {path}. The oldText must match exactly including all whitespace and "
        "newlines."
    )


def _duplicate(path: str, index: int, total: int, occurrences: int) -> ToolError:
    if total == 1:
        return ToolError(
            f"Found {occurrences} occurrences of the text in {path}. The text must be unique. Please provide more "
            "context to make it unique."
        )
    return ToolError(
        f"Found {occurrences} occurrences of edits[{index}] in {path}. Each oldText must be unique. Please provide "
        "more context to make it unique."
    )


def _empty_old_text(path: str, index: int, total: int) -> ToolError:
    if total == 1:
        return ToolError(f"oldText must not be empty in {path}.")
    return ToolError(f"edits[{index}].oldText must not be empty in {path}.")


def _no_change(path: str, total: int) -> ToolError:
    if total == 1:
        return ToolError(
            f"No changes made to {path}. The replacement produced identical content. This might indicate an issue "
            "with special characters or the text not existing as expected."
        )
    return ToolError(f"No changes made to {path}. The replacements produced identical content.")


def _apply(content: str, replacements: list[_Replacement], offset: int = 0) -> str:
    result = content
    for rep in reversed(replacements):
        at = rep.start - offset
        result = result[:at] + rep.new_text + result[at + rep.length :]
    return result


_LINE_WITH_ENDING = re.compile(r"[^\n]*\n|[^\n]+")


def _apply_preserving_unchanged_lines(original: str, base: str, replacements: list[_Replacement]) -> str:
    """Apply replacements matched in ``base`` (a normalised view of ``original``): the lines they touch come
    from ``base`` with the replacement applied, all other lines are copied from ``original``."""
    original_lines = _LINE_WITH_ENDING.findall(original)
    spans: list[tuple[int, int]] = []
    offset = 0
    for line in _LINE_WITH_ENDING.findall(base):
        spans.append((offset, offset + len(line)))
        offset += len(line)
    if len(original_lines) != len(spans):
        raise ToolError(
            "Cannot preserve unchanged lines because the base content has a different line count."
        )

    groups: list[tuple[int, int, list[_Replacement]]] = []  # (first line, end line exclusive, replacements)
    for rep in sorted(replacements, key=lambda r: r.start):
        rep_end = rep.start + rep.length
        first = next((i for i, (s, e) in enumerate(spans) if s <= rep.start < e), -1)
        if first == -1:
            raise ToolError("Replacement range is outside the base content.")
        last = first
        while last < len(spans) and spans[last][1] < rep_end:
            last += 1
        if last >= len(spans):
            raise ToolError("Replacement range is outside the base content.")
        if groups and first < groups[-1][1]:
            g_first, g_end, g_reps = groups[-1]
            groups[-1] = (g_first, max(g_end, last + 1), [*g_reps, rep])
        else:
            groups.append((first, last + 1, [rep]))

    out: list[str] = []
    line_index = 0
    for first, end, reps in groups:
        out.extend(original_lines[line_index:first])
        start_offset, end_offset = spans[first][0], spans[end - 1][1]
        out.append(_apply(base[start_offset:end_offset], reps, start_offset))
        line_index = end
    out.extend(original_lines[line_index:])
    return "".join(out)


def apply_edits_to_normalized_content(
    content: str, edits: list[dict[str, str]], path: str
) -> tuple[str, str]:
    """Apply ``edits`` to LF-normalised ``content``. Returns ``(base_content, new_content)``; raises
    ``ToolError`` with Pi's texts for empty, missing, duplicate or overlapping ``oldText`` and for no change."""
    normalized = [(normalize_to_lf(e["oldText"]), normalize_to_lf(e["newText"])) for e in edits]
    total = len(normalized)
    for index, (old_text, _) in enumerate(normalized):
        if not old_text:
            raise _empty_old_text(path, index, total)

    used_fuzzy = any(fuzzy_find_text(content, old_text).used_fuzzy for old_text, _ in normalized)
    base = normalize_for_fuzzy_match(content) if used_fuzzy else content

    matched: list[_Replacement] = []
    for index, (old_text, new_text) in enumerate(normalized):
        match = fuzzy_find_text(base, old_text)
        if not match.found:
            raise _not_found(path, index, total)
        occurrences = _count_occurrences(base, old_text)
        if occurrences > 1:
            raise _duplicate(path, index, total, occurrences)
        matched.append(_Replacement(index, match.index, match.length, new_text))

    matched.sort(key=lambda r: r.start)
    for prev, cur in itertools.pairwise(matched):
        if prev.start + prev.length > cur.start:
            raise ToolError(
                f"edits[{prev.edit_index}] and edits[{cur.edit_index}] overlap in {path}. Merge them into one edit "
                "or target disjoint regions."
            )

    new_content = (
        _apply_preserving_unchanged_lines(content, base, matched) if used_fuzzy else _apply(base, matched)
    )
    if new_content == content:
        raise _no_change(path, total)
    return content, new_content


# --------------------------------------------------------------------------------------------------
# Tool


def _edit_dicts(edits: Any) -> list[dict[str, str]]:
    result: list[dict[str, str]] = []
    for e in edits:
        if isinstance(e, dict):
            old, new = e["oldText"], e["newText"]
        else:
            old, new = e.oldText, e.newText
        # The model's text cannot hold lone surrogates on disk (JS turns them into U+FFFD); keeping them
        # out also leaves the file's own undecodable bytes as the only surrogates in play.
        result.append({"oldText": without_lone_surrogates(old), "newText": without_lone_surrogates(new)})
    return result


def create_edit_tool(
    cwd: str, *, operations: EditOperations | None = None, guard: FileGuard | None = None
) -> ToolDefinition:
    """The ``edit`` tool for ``cwd``. ``operations``: where files are read and written (None: this
    machine's disk; see ``caddie.tools.operations``); ``guard``: the sandbox's path policy (None: no
    sandbox)."""

    async def execute(
        tool_call_id: str, params: dict[str, Any], signal: AbortSignal, on_update: OnUpdate | None, ctx: Any
    ) -> ToolResult:
        path: str = params["path"]
        raw_edits = params.get("edits")
        if not isinstance(raw_edits, list) or not raw_edits:
            raise ToolError("Edit tool input is invalid. edits must contain at least one replacement.")
        edits = _edit_dicts(raw_edits)
        absolute = resolve_to_cwd(path, cwd)

        def check_abort() -> None:
            if signal is not None and signal.aborted:
                raise ToolError("Operation aborted")

        async with file_mutation_lock(absolute):
            check_abort()
            check_sandbox(guard, absolute, write=True)  # refused writes include refused reads
            if operations is None:
                code = access_error(absolute, os.R_OK | os.W_OK)
            else:
                try:
                    await operations.access(absolute)
                    code = None
                except OSError as exc:
                    code = errno_code(exc)
            if code is not None:
                check_abort()
                raise ToolError(f"Could not edit file: {path}. Error code: {code}.")
            check_abort()
            try:
                # Bytes that are not UTF-8 (a Latin-1 file) ride through as lone surrogates and are
                # written back as they were: only the edited text changes on disk.
                if operations is not None:
                    raw = (await operations.read_file(absolute)).decode("utf-8", "surrogateescape")
                else:
                    with open_regular_guarded(absolute, guard) as fh:
                        raw = fh.read().decode("utf-8", "surrogateescape")
            except NotRegularFileError as exc:
                raise ToolError(
                    f"Could not edit file: {path}. It is {exc.kind}, not a regular file."
                ) from exc
            except OSError as exc:
                raise ToolError(node_fs_message(exc, "read")) from exc
            check_abort()

            bom = "\ufeff" if raw.startswith("\ufeff") else ""
            content = raw[len(bom) :]
            ending = detect_line_ending(content)
            base, new_content = apply_edits_to_normalized_content(normalize_to_lf(content), edits, path)
            check_abort()
            try:
                text = bom + restore_line_endings(new_content, ending)
                if operations is not None:  # text, as Pi's EditOperations take it
                    await operations.write_file(absolute, without_lone_surrogates(text))
                else:
                    with open_for_write(absolute, guard) as out:
                        out.write(text.encode("utf-8", "surrogateescape"))
            except OSError as exc:
                raise ToolError(node_fs_message(exc, "open", absolute)) from exc
            check_abort()

        base, new_content = without_lone_surrogates(base), without_lone_surrogates(new_content)
        diff, first_changed = display_diff(base, new_content)
        details: dict[str, Any] = {"diff": diff, "patch": unified_patch(path, base, new_content)}
        if first_changed is not None:
            details["firstChangedLine"] = first_changed
        return ToolResult([TextContent(f"Successfully replaced {len(edits)} block(s) in {path}.")], details)

    return ToolDefinition(
        name="edit",
        label="edit",
        description=EDIT_DESCRIPTION,
        parameters=EDIT_PARAMETERS,
        execute=execute,
        prompt_snippet=EDIT_PROMPT_SNIPPET,
        prompt_guidelines=list(EDIT_PROMPT_GUIDELINES),
        prepare_arguments=prepare_edit_arguments,
    )
