"""Keep the branch up to date with its upstream, and have the agent resolve conflicts (Pi's
git-merge-and-resolve example). After every run: with a clean tree and an upstream, fetch and merge it
(``--no-ff``); a clean merge says nothing more. Conflicts — from this merge or one left unfinished — reach
the agent as a follow-up listing each conflict block (file, lines, ours and theirs), after every run until
they are resolved."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from caddie.extensions.api import ExtensionAPI, ExtensionContext


@dataclass
class ConflictBlock:
    file: str
    start: int
    separator: int
    end: int


def conflict_blocks(file: str, text: str) -> list[ConflictBlock]:
    """The ``<<<<<<<`` / ``=======`` / ``>>>>>>>`` blocks of one file (1-based line numbers)."""
    blocks: list[ConflictBlock] = []
    start: int | None = None
    separator: int | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("<<<<<<<"):
            start, separator = number, None
        elif line.startswith("=======") and start is not None:
            separator = number
        elif line.startswith(">>>>>>>") and start is not None and separator is not None:
            blocks.append(ConflictBlock(file, start, separator, number))
            start = separator = None
    return blocks


def line_range(start: int, end: int) -> str:
    return "empty" if start > end else str(start) if start == end else f"{start}-{end}"


def describe_conflicts(ref: str, blocks: list[ConflictBlock]) -> str:
    lines = [f"Merged {ref} with conflicts:", ""]
    for b in blocks:
        ours, theirs = line_range(b.start + 1, b.separator - 1), line_range(b.separator + 1, b.end - 1)
        lines.append(f"  {b.file}:{b.start}-{b.end} (ours {ours}, theirs {theirs})")
    lines += ["", "Resolve these conflicts."]
    return "\n".join(lines)


def register(api: ExtensionAPI) -> None:
    async def git(ctx: ExtensionContext, *args: str) -> tuple[int, str, str]:
        done = await api.exec("git", args, cwd=ctx.cwd)
        return done.code, done.stdout, done.stderr

    async def conflicts(ctx: ExtensionContext) -> list[ConflictBlock]:
        code, names, _ = await git(ctx, "diff", "--name-only", "--diff-filter=U")
        if code != 0:
            return []
        found: list[ConflictBlock] = []
        for name in names.split():
            try:
                found += conflict_blocks(name, (Path(ctx.cwd) / name).read_text(encoding="utf-8"))
            except OSError:
                continue
        return found

    async def after_run(event: object, ctx: ExtensionContext) -> None:
        if (await git(ctx, "rev-parse", "--git-dir"))[0] != 0:
            return
        ref = "MERGE_HEAD"
        if (await git(ctx, "rev-parse", "MERGE_HEAD"))[0] != 0:
            if (await git(ctx, "status", "--porcelain"))[1].strip():
                return  # work in progress: leave it alone
            code, upstream, _ = await git(ctx, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}")
            if code != 0:
                return
            ref = upstream.strip()
            remote = ref.split("/")[0]
            ctx.ui.notify(f"git-merge-and-resolve: fetching {remote}, merging {ref}", "info")
            code, _, error = await git(ctx, "fetch", remote)
            if code != 0:
                ctx.ui.notify(f"git-merge-and-resolve: fetch failed: {error.strip()}", "warning")
                return
            if (await git(ctx, "merge", "--no-ff", ref))[0] == 0:
                return
        found = await conflicts(ctx)
        if found:
            api.send_user_message(describe_conflicts(ref, found), "follow_up")

    api.on("agent_end", after_run)
