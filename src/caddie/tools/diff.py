"""Line diffs for ``edit`` details: the change list, a unified patch and Pi's numbered display diff.

The change list comes from a Myers O(ND) search that explores diagonals in the same order as the
``diff`` npm package Pi uses, so ties resolve the same way and the output matches Pi's ``details``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(slots=True)
class Change:
    """A run of ``count`` tokens that were kept, added or removed; ``value`` is their text."""

    count: int
    added: bool
    removed: bool
    value: str = ""


@dataclass(slots=True)
class _Component:
    count: int
    added: bool
    removed: bool
    previous: _Component | None


@dataclass(slots=True)
class _Path:
    old_pos: int
    last: _Component | None


def tokenize_lines(text: str) -> list[str]:
    """Lines with their line endings; a last line without a newline is its own (different) token."""
    parts = re.split(r"(\n|\r\n)", text)
    if not parts[-1]:
        parts.pop()
    tokens: list[str] = []
    for index, part in enumerate(parts):
        if index % 2:
            tokens[-1] += part
        else:
            tokens.append(part)
    return [t for t in tokens if t]


def diff_lines(old: str, new: str) -> list[Change]:
    return _diff_tokens(tokenize_lines(old), tokenize_lines(new))


def _diff_tokens(old: list[str], new: list[str]) -> list[Change]:
    old_len, new_len = len(old), len(new)

    def extend(path: _Path, diagonal: int) -> int:
        old_pos = path.old_pos
        new_pos = old_pos - diagonal
        common = 0
        while new_pos + 1 < new_len and old_pos + 1 < old_len and old[old_pos + 1] == new[new_pos + 1]:
            new_pos += 1
            old_pos += 1
            common += 1
        if common:
            path.last = _Component(common, False, False, path.last)
        path.old_pos = old_pos
        return new_pos

    def step(path: _Path, added: bool, removed: bool, old_inc: int) -> _Path:
        last = path.last
        if last is not None and last.added == added and last.removed == removed:
            return _Path(path.old_pos + old_inc, _Component(last.count + 1, added, removed, last.previous))
        return _Path(path.old_pos + old_inc, _Component(1, added, removed, last))

    best: dict[int, _Path | None] = {0: _Path(-1, None)}
    start = best[0]
    assert start is not None
    new_pos = extend(start, 0)
    if start.old_pos + 1 >= old_len and new_pos + 1 >= new_len:
        return _build(start.last, old, new)

    min_diag, max_diag = -(10**18), 10**18
    edit_length = 1
    while edit_length <= old_len + new_len:
        diagonal = max(min_diag, -edit_length)
        while diagonal <= min(max_diag, edit_length):
            remove_path = best.get(diagonal - 1)
            add_path = best.get(diagonal + 1)
            if remove_path is not None:
                best[diagonal - 1] = None
            can_add = False
            if add_path is not None:
                add_new_pos = add_path.old_pos - diagonal
                can_add = 0 <= add_new_pos < new_len
            can_remove = remove_path is not None and remove_path.old_pos + 1 < old_len
            if not can_add and not can_remove:
                best[diagonal] = None
                diagonal += 2
                continue
            if not can_remove or (can_add and remove_path is not None and add_path is not None
                                  and remove_path.old_pos < add_path.old_pos):  # fmt: skip
                assert add_path is not None
                path = step(add_path, True, False, 0)
            else:
                assert remove_path is not None
                path = step(remove_path, False, True, 1)
            new_pos = extend(path, diagonal)
            if path.old_pos + 1 >= old_len and new_pos + 1 >= new_len:
                return _build(path.last, old, new)
            best[diagonal] = path
            if path.old_pos + 1 >= old_len:
                max_diag = min(max_diag, diagonal - 1)
            if new_pos + 1 >= new_len:
                min_diag = max(min_diag, diagonal + 1)
            diagonal += 2
        edit_length += 1
    raise AssertionError(
        "diff search ended without a path"
    )  # unreachable: old_len + new_len edits always suffice


def _build(last: _Component | None, old: list[str], new: list[str]) -> list[Change]:
    components: list[_Component] = []
    while last is not None:
        components.append(last)
        last = last.previous
    components.reverse()
    changes: list[Change] = []
    old_pos = new_pos = 0
    for comp in components:
        if comp.removed:
            value = "".join(old[old_pos : old_pos + comp.count])
            old_pos += comp.count
        else:
            value = "".join(new[new_pos : new_pos + comp.count])
            new_pos += comp.count
            if not comp.added:
                old_pos += comp.count
        changes.append(Change(comp.count, comp.added, comp.removed, value))
    return changes


def _split_patch_lines(text: str) -> list[str]:
    lines = [line + "\n" for line in text.split("\n")]
    if text.endswith("\n"):
        lines.pop()
    else:
        lines[-1] = lines[-1][:-1]
    return lines


def unified_patch(path: str, old: str, new: str, context: int = 4) -> str:
    """A unified diff with ``--- path`` / ``+++ path`` headers (the ``details.patch`` of ``edit``)."""
    changes: list[tuple[Change | None, list[str]]] = [
        (c, _split_patch_lines(c.value)) for c in diff_lines(old, new)
    ]
    changes.append((None, []))
    hunks: list[tuple[int, int, int, int, list[str]]] = []
    old_start = new_start = 0
    current: list[str] = []
    old_line = new_line = 1
    for index, (change, lines) in enumerate(changes):
        if change is not None and (change.added or change.removed):
            if not old_start:
                old_start, new_start = old_line, new_line
                if index > 0:
                    prev_lines = changes[index - 1][1]
                    current = [" " + line for line in prev_lines[-context:]] if context > 0 else []
                    old_start -= len(current)
                    new_start -= len(current)
            current.extend(("+" if change.added else "-") + line for line in lines)
            if change.added:
                new_line += len(lines)
            else:
                old_line += len(lines)
        else:
            if old_start:
                if len(lines) <= context * 2 and index < len(changes) - 2:
                    current.extend(" " + line for line in lines)
                else:
                    size = min(len(lines), context)
                    current.extend(" " + line for line in lines[:size])
                    hunks.append(
                        (
                            old_start,
                            old_line - old_start + size,
                            new_start,
                            new_line - new_start + size,
                            current,
                        )
                    )
                    old_start = new_start = 0
                    current = []
            old_line += len(lines)
            new_line += len(lines)

    out = [f"--- {path}", f"+++ {path}"]
    for o_start, o_lines, n_start, n_lines, hunk_lines in hunks:
        out.append(f"@@ -{o_start - 1 if o_lines == 0 else o_start},{o_lines} "
                   f"+{n_start - 1 if n_lines == 0 else n_start},{n_lines} @@")  # fmt: skip
        for line in hunk_lines:
            if line.endswith("\n"):
                out.append(line[:-1])
            else:
                out.append(line)
                out.append("\\ No newline at end of file")
    return "\n".join(out) + "\n"


def display_diff(old: str, new: str, context: int = 4) -> tuple[str, int | None]:
    """Pi's numbered diff (``+12 added``, ``-12 removed``, `` 12 context``, ``...``) and the first changed
    line number in the new file."""
    parts = diff_lines(old, new)
    width = len(str(max(len(old.split("\n")), len(new.split("\n")))))
    pad = " " * width
    output: list[str] = []
    old_no = new_no = 1
    last_was_change = False
    first_changed: int | None = None

    for index, part in enumerate(parts):
        raw = part.value.split("\n")
        if raw[-1] == "":
            raw.pop()
        if part.added or part.removed:
            if first_changed is None:
                first_changed = new_no
            for line in raw:
                if part.added:
                    output.append(f"+{str(new_no).rjust(width)} {line}")
                    new_no += 1
                else:
                    output.append(f"-{str(old_no).rjust(width)} {line}")
                    old_no += 1
            last_was_change = True
            continue

        next_is_change = index < len(parts) - 1 and (parts[index + 1].added or parts[index + 1].removed)

        def show(lines: list[str]) -> None:
            nonlocal old_no, new_no
            for line in lines:
                output.append(f" {str(old_no).rjust(width)} {line}")
                old_no += 1
                new_no += 1

        def skip(count: int) -> None:
            nonlocal old_no, new_no
            output.append(f" {pad} ...")
            old_no += count
            new_no += count

        if last_was_change and next_is_change:
            if len(raw) <= context * 2:
                show(raw)
            else:
                show(raw[:context])
                skip(len(raw) - 2 * context)
                show(raw[len(raw) - context :])
        elif last_was_change:
            show(raw[:context])
            if len(raw) > context:
                skip(len(raw) - context)
        elif next_is_change:
            skipped = max(0, len(raw) - context)
            if skipped > 0:
                skip(skipped)
            show(raw[skipped:])
        else:
            old_no += len(raw)
            new_no += len(raw)
        last_was_change = False
    return "\n".join(output), first_changed
