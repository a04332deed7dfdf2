"""``#`` completes GitHub issues in the editor (Pi's github-issue-autocomplete example): in a checkout of a
GitHub repository, typing ``#`` offers its open issues (``#27  [open] The interactive UI``); digits narrow
by number, words by a fuzzy match on the title. Anything else goes to caddie's own completions.

The issues come from the GitHub CLI (``gh issue list``), loaded once per session in the background and then
filtered locally, so completing never waits on the network after the first load. Without ``gh``, outside a
git repository or without a GitHub remote, the extension says so once and completes nothing.

``ui.add_autocomplete_provider(factory)`` receives the provider below (caddie's) and returns one whose
``get_suggestions(lines, line, column)`` answers ``Suggestions`` (or an awaitable of them), or defers below.

Load it with ``caddie -e examples/extensions/github_issue_autocomplete.py``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from dataclasses import dataclass
from typing import Any

from caddie.extensions.api import (
    AutocompleteProvider,
    ExtensionAPI,
    ExtensionContext,
    Suggestion,
    Suggestions,
)

MAX_ISSUES = 100
MAX_SUGGESTIONS = 20
ISSUE_TOKEN = re.compile(r"(?:^|[ \t])#([^\s#]*)$")
GITHUB_REMOTES = (
    re.compile(r"^git@github\.com:([^/]+/[^/]+?)(?:\.git)?$"),
    re.compile(r"^https?://github\.com/([^/]+/[^/]+?)(?:\.git)?$"),
)


@dataclass(frozen=True, slots=True)
class Issue:
    number: int
    title: str
    state: str

    def suggestion(self) -> Suggestion:
        return Suggestion(f"#{self.number}", f"#{self.number}", f"[{self.state.lower()}] {self.title}")


def issue_token(before_cursor: str) -> str | None:
    """What follows a ``#`` at the cursor (``""`` right after it), or None when the cursor is not on one."""
    match = ISSUE_TOKEN.search(before_cursor)
    return match.group(1) if match else None


def github_repo(remotes: str) -> str | None:
    """``owner/name`` from ``git remote -v`` output, or None when no remote is on GitHub."""
    for line in remotes.splitlines():
        columns = line.split()
        for pattern in GITHUB_REMOTES:
            match = pattern.match(columns[1]) if len(columns) > 1 else None
            if match:
                return match.group(1)
    return None


def fuzzy_score(query: str, text: str) -> int | None:
    """How loosely ``query``'s characters appear in order in ``text`` (lower is tighter); None: they do not."""
    query, text = query.lower(), text.lower()
    position, spread = -1, 0
    for ch in query:
        found = text.find(ch, position + 1)
        if found < 0:
            return None
        spread += found - position - 1 if position >= 0 else 0
        position = found
    return spread


def matching(issues: list[Issue], query: str) -> list[Suggestion]:
    if not query.strip():
        return [i.suggestion() for i in issues[:MAX_SUGGESTIONS]]
    if query.isdigit():
        by_number = [i for i in issues if str(i.number).startswith(query)]
        if by_number:
            return [i.suggestion() for i in by_number[:MAX_SUGGESTIONS]]
    scored = [
        (score, i) for i in issues if (score := fuzzy_score(query, f"{i.number} {i.title}")) is not None
    ]
    return [i.suggestion() for _, i in sorted(scored, key=lambda pair: pair[0])[:MAX_SUGGESTIONS]]


def parse_issues(stdout: str) -> list[Issue]:
    """``gh issue list --json number,title,state`` output (ValueError when it is something else)."""
    data = json.loads(stdout)
    if not isinstance(data, list):
        raise ValueError("not a list")
    return [Issue(int(d["number"]), str(d["title"]), str(d.get("state", "open"))) for d in data]


class IssueCompletion:
    def __init__(self, below: AutocompleteProvider, issues: asyncio.Task[list[Issue] | None]) -> None:
        self.below, self.issues = below, issues

    def get_suggestions(self, lines: list[str], line: int, column: int) -> Any:
        token = issue_token(lines[line][:column])
        if token is None:
            return self.below.get_suggestions(lines, line, column)
        return self._issue_suggestions(token, lines, line, column)

    async def _issue_suggestions(self, token: str, lines: list[str], line: int, column: int) -> Any:
        issues = await asyncio.shield(self.issues)
        found = matching(issues or [], token)
        if not found:
            below = self.below.get_suggestions(lines, line, column)
            return await below if inspect.isawaitable(below) else below
        return Suggestions(f"#{token}", found)


def register(api: ExtensionAPI) -> None:
    async def load_issues(ctx: ExtensionContext, repo: str) -> list[Issue] | None:
        args = ["issue", "list", "--repo", repo, "--state", "open", "--limit", str(MAX_ISSUES)]
        result = await api.exec("gh", [*args, "--json", "number,title,state"], cwd=ctx.cwd, timeout=5)
        if result.code != 0:
            details = result.stderr.strip() or f"exit code {result.code}"
            ctx.ui.notify(f"github-issue-autocomplete: failed to load issues: {details}", "error")
            return None
        try:
            return parse_issues(result.stdout)
        except (ValueError, KeyError, TypeError):
            ctx.ui.notify("github-issue-autocomplete: failed to parse gh issue list output", "error")
            return None

    async def on_start(event: object, ctx: ExtensionContext) -> None:
        if not ctx.ui.supports("autocomplete"):
            return
        remotes = await api.exec("git", ["remote", "-v"], cwd=ctx.cwd, timeout=5)
        if remotes.code != 0:
            ctx.ui.notify("github-issue-autocomplete: cwd is not a git repository", "error")
            return
        repo = github_repo(remotes.stdout)
        if repo is None:
            ctx.ui.notify("github-issue-autocomplete: cwd is not a GitHub repository", "error")
            return
        issues = asyncio.ensure_future(load_issues(ctx, repo))  # loading starts now, in the background
        ctx.ui.add_autocomplete_provider(lambda below: IssueCompletion(below, issues))

    api.on("session_start", on_start)
