"""Pi's git-merge-and-resolve and summarize examples as Python twins, through real sessions on the faux
model (real git repositories: an upstream, a clone, conflicting commits)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from caddie.ai.messages import UserMessage, text_of
from caddie.ai.providers.faux import faux_message, faux_tool_call
from tests.examples.harness import with_example


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=a@b", "-c", "user.name=a", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def _upstream_and_clone(tmp_path: Path) -> tuple[Path, Path]:
    origin = tmp_path / "origin"
    origin.mkdir()
    _git(origin, "init", "-q", "-b", "main")
    (origin / "app.py").write_text("x = 1\n")
    _git(origin, "add", "app.py")
    _git(origin, "commit", "-qm", "start")
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", str(origin), str(clone))
    _git(clone, "config", "user.email", "a@b")  # the example's merge commits, on machines with no identity
    _git(clone, "config", "user.name", "a")
    return origin, clone


async def test_a_conflicting_upstream_change_becomes_a_follow_up_to_resolve(tmp_path: Path) -> None:
    origin, clone = _upstream_and_clone(tmp_path)
    (origin / "app.py").write_text("x = 2  # upstream\n")
    _git(origin, "commit", "-qam", "upstream change")
    (clone / "app.py").write_text("x = 3  # local\n")
    _git(clone, "commit", "-qam", "local change")
    run = await with_example(clone, "git_merge_and_resolve.py")
    resolve = "printf 'x = 4\\n' > app.py && git add app.py && git commit -qm merged"
    run.faux.set_responses(
        [
            faux_message("worked"),
            faux_message(faux_tool_call("bash", {"command": resolve})),  # the follow-up: resolve, commit
            faux_message("resolved"),
        ]
    )
    await run.session.prompt("work")
    await run.session.wait_for_idle()
    asked = [text_of(m.content) for m in run.session.messages if isinstance(m, UserMessage)]
    conflict = (
        "Merged origin/main with conflicts:\n\n  app.py:1-5 (ours 2, theirs 4)\n\nResolve these conflicts."
    )
    assert asked == ["work", conflict]  # resolved: no further follow-up
    assert (clone / "app.py").read_text() == "x = 4\n" and "merged" in _git(clone, "log", "--format=%s")
    assert ("git-merge-and-resolve: fetching origin, merging origin/main", "info") in run.ui.notices
    await run.session.shutdown("quit")


async def test_a_clean_merge_and_a_dirty_tree_say_nothing(tmp_path: Path) -> None:
    origin, clone = _upstream_and_clone(tmp_path)
    (origin / "other.py").write_text("y = 1\n")
    _git(origin, "add", "other.py")
    _git(origin, "commit", "-qm", "another file")
    run = await with_example(clone, "git_merge_and_resolve.py")
    run.faux.set_responses(
        [
            faux_message("fine"),
            faux_message(faux_tool_call("write", {"path": "wip.py", "content": "1"})),
            faux_message("ok"),
        ]
    )
    await run.session.prompt("work")
    assert (clone / "other.py").exists()  # merged
    head = _git(clone, "rev-parse", "HEAD")
    await run.session.prompt("more work")  # leaves wip.py uncommitted: no fetch, no merge
    assert _git(clone, "rev-parse", "HEAD") == head
    assert [
        m for m in run.session.messages if isinstance(m, UserMessage) and "conflicts" in text_of(m.content)
    ] == []
    await run.session.shutdown("quit")


async def test_summarize_asks_the_model_and_shows_the_summary(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "summarize.py")
    run.faux.set_responses(
        [
            faux_message(faux_tool_call("ls", {"path": "."})),
            faux_message("It is empty."),
            faux_message("## Goals\nlook around"),
        ]
    )
    await run.session.prompt("what is here?")
    await run.session.prompt("/summarize")
    prompt = text_of(run.faux.requests[-1].messages[0].content)
    assert prompt.startswith("Summarize this conversation so I can resume it later.")
    assert 'User: what is here?\n\nTool ls was called with args {"path": "."}' in prompt
    assert "Assistant: It is empty." in prompt
    assert run.ui.asked[-1] == ("editor", "Conversation Summary")
    assert len(run.session.messages) == 4  # nothing added to the conversation
    await run.session.shutdown("quit")
