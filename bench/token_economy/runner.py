"""Running one episode through the real ``caddie -p`` against the fake OpenAI-compatible server, and billing it.

An episode is played by a scripted model (a reply function on the fake server) in one of three modes:

- ``off``: mulligan disabled (settings ``disabledExtensions: ["mulligan"]``); the model wastes, then works on;
- ``on``: mulligan loaded; the model wastes, and if a mulligan nudge reached it (the bloat reminder on a big
  result, or the drift line) together with mulligan's tools, it makes the episode's mulligan calls (rewind or
  shrink), then works on;
- ``limit``: mulligan loaded; the waste is never produced (a lean step takes its place), then the same work.

``on`` and ``limit`` run with mulligan's ``tools`` setting ``"always"`` (every request carries its four tool
schemas) or ``"when-needed"`` (from the first nudge on).

Every request the server records is billed: ``ceil(characters / 4)`` of its system prompt, tool schemas
(compact JSON) and messages (text, tool-call names and arguments), characters counted as UTF-16 code units,
mulligan's own estimate. The same figure is returned to caddie as the request's usage: what a prefix cache
would serve (the tools and the messages shared with the previous request) as cache reads, the rest as input —
so the session prices caching as the provider reported it. The model's catalogue price is 1 $/M input,
0.1 $/M cache read (``CACHE_READ_SHARE``), so dollars × 10⁶ are input-token equivalents.

After the run, what the session itself reports mulligan saved is read the way a user reads it:
``caddie context --stats --json`` on the session file (the ``savings`` event's answer).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tests.support import fake_llm as fl

Mode = Literal["off", "on", "limit"]
MODES: tuple[Mode, ...] = ("off", "on", "limit")
ToolsMode = Literal["always", "when-needed"]
TOOLS_MODES: tuple[ToolsMode, ...] = ("always", "when-needed")
NUDGE_MARKS = ("`mulligan_shrink` to summarize, or `mulligan_rewind`", "Previous turn ")
CONTEXT_WINDOW = 200_000
CACHE_READ_SHARE = 0.1
"""Cache reads priced at a tenth of the input rate (Anthropic's and OpenAI's recent models)."""


@dataclass(frozen=True)
class Call:
    tool: str
    args: dict[str, Any]
    id: str


@dataclass(frozen=True)
class Turn:
    """One model reply: a short thought and the tool calls it makes (parallel when several)."""

    calls: tuple[Call, ...]
    text: str = ""


def turn(text: str, *calls: Call) -> Turn:
    return Turn(tuple(calls), text)


def bash(call_id: str, command: str) -> Call:
    return Call("bash", {"command": command}, call_id)


@dataclass(frozen=True)
class Episode:
    name: str
    waste_kind: str
    """What the waste is, for the report."""
    prompt: str
    setup: Callable[[Path], None]
    waste: tuple[Turn, ...]
    remedy: tuple[Turn, ...]
    """The mulligan calls the model makes once nudged (``on`` only)."""
    after: tuple[Turn, ...]
    """What follows the waste in ``on`` and ``off`` (the targeted redo after a rewind; empty after a shrink)."""
    lean: tuple[Turn, ...]
    """What ``limit`` does instead of waste + after."""
    work: tuple[Turn, ...]
    """The rest of the task (10–30 turns)."""
    answer: str
    woven: tuple[Turn, ...] = ()
    """For wastes of several turns: ``waste[1:]`` as a model that a nudge has reached plays it — the same
    turns, with a mulligan call made in parallel once a result it targets is no longer needed (each turn is
    played so only if a nudge reached the model by its request); empty: the waste is played as it is."""

    def plan(self, mode: Mode, nudged: Callable[[], bool]) -> list[Turn | Callable[[], list[Turn]]]:
        """The turns the model plays. With mulligan, once a nudge reached it, the model makes the remedy's
        calls in the same reply as its next step (parallel tool calls), so acting on the nudge costs no
        request of its own."""
        if mode == "limit":
            return [*self.lean, *self.work]
        if mode == "off" or not self.waste:
            return [*self.waste, *self.after, *self.work]
        follow = [*self.after, *self.work]
        plan: list[Turn | Callable[[], list[Turn]]] = [self.waste[0]]
        if self.woven:
            assert len(self.woven) == len(self.waste) - 1
            for woven, plain in zip(self.woven, self.waste[1:], strict=True):
                # decided when its request arrives: only a model a nudge has reached acts on it
                plan.append(_decided(woven, plain, nudged))
        else:
            plan.extend(self.waste[1:])
        remedy = list(self.remedy)
        plan.append(lambda: [merge(remedy, follow[0]), *follow[1:]] if nudged() and follow else follow)
        return plan


def merge(first: Sequence[Turn], then: Turn) -> Turn:
    """One reply making the calls of ``first`` and of ``then`` in parallel (mulligan's calls first)."""
    calls = tuple(c for t in first for c in t.calls) + then.calls
    return Turn(calls, then.text or next((t.text for t in first if t.text), ""))


def units(text: str) -> int:
    """UTF-16 code units (JavaScript ``length``), as mulligan counts characters."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le")) // 2


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return units(content)
    if isinstance(content, list):
        return sum(units(str(p.get("text", ""))) for p in content if isinstance(p, dict))
    return 0


def message_chars(message: dict[str, Any]) -> int:
    n = _content_chars(message.get("content")) + units(str(message.get("reasoning_content") or ""))
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        n += units(str(fn.get("name", ""))) + units(str(fn.get("arguments", "")))
    return n


def tool_schema_chars(tools: Sequence[Any], *, only_prefix: str | None = None) -> int:
    picked = [
        t
        for t in tools
        if only_prefix is None or str((t.get("function") or {}).get("name", "")).startswith(only_prefix)
    ]
    return units(json.dumps(picked, separators=(",", ":"), ensure_ascii=False)) if picked else 0


def request_chars(body: dict[str, Any]) -> int:
    messages = body.get("messages") or []
    return tool_schema_chars(body.get("tools") or []) + sum(message_chars(m) for m in messages)


def billed_tokens(body: dict[str, Any]) -> int:
    """The input tokens one request is billed (system prompt, tool schemas and messages; chars / 4)."""
    return math.ceil(request_chars(body) / 4)


def cached_tokens(body: dict[str, Any], previous: dict[str, Any] | None) -> int:
    """Of ``billed_tokens(body)``, what a prefix cache would serve: the tool schemas and the messages the
    request shares, from the start, with the previous request (system prompt first)."""
    if previous is None or body.get("tools") != previous.get("tools"):
        return 0
    now, before = body.get("messages") or [], previous.get("messages") or []
    chars = tool_schema_chars(body.get("tools") or [])
    for a, b in zip(now, before, strict=False):
        if a != b:
            break
        chars += message_chars(a)
    return math.ceil(chars / 4)


def seen_once_chars(bodies: Sequence[dict[str, Any]], waste_ids: set[str]) -> list[int]:
    """Per request of a run without mulligan: its characters had every waste result (and the call that made
    it) been sent on the first request that carries the result, and never again — what the model must read
    to judge a result, with nothing left behind (no note, no summary, no mulligan call)."""
    first_seen: dict[str, int] = {}
    out: list[int] = []
    for index, body in enumerate(bodies):
        chars = request_chars(body)
        for m in body.get("messages") or []:
            if m.get("role") == "tool" and m.get("tool_call_id") in waste_ids:
                seen = first_seen.setdefault(str(m["tool_call_id"]), index)
                if seen != index:
                    chars -= message_chars(m)
            for call in m.get("tool_calls") or []:
                call_id = call.get("id")
                if call_id in waste_ids and first_seen.get(call_id, index) != index:
                    fn = call.get("function") or {}
                    chars -= units(str(fn.get("name", ""))) + units(str(fn.get("arguments", "")))
        out.append(chars)
    return out


def has_nudge(request: fl.RecordedRequest) -> bool:
    for m in request.messages:
        text = m.get("content")
        flat = text if isinstance(text, str) else json.dumps(text) if text else ""
        if any(mark in flat for mark in NUDGE_MARKS):
            return True
    return False


def offers_mulligan(body: dict[str, Any]) -> bool:
    """Whether the request carries mulligan's tools (a model can only call the tools it is given)."""
    return any(
        str((t.get("function") or {}).get("name", "")).startswith("mulligan_")
        for t in body.get("tools") or []
    )


@dataclass
class RunResult:
    episode: str
    mode: Mode
    tools_mode: ToolsMode = "always"
    billed: list[int] = field(default_factory=list)
    """Input tokens billed, per request."""
    cached: list[int] = field(default_factory=list)
    """Of those, what a prefix cache would have served."""
    mulligan_schema: int = 0
    """Tokens of mulligan's four tool schemas in each request (0 when mulligan is disabled)."""
    mulligan_calls: list[str] = field(default_factory=list)
    nudged: bool = False
    seconds: float = 0.0
    answer: str = ""
    seen_once: list[int] = field(default_factory=list)
    """``off`` only: each request's characters with the waste sent once (``seen_once_chars``)."""
    mulligan_schema_chars: int = 0
    schema_requests: int = 0
    """Requests that carried mulligan's tool schemas."""
    reported: dict[str, Any] = field(default_factory=dict)
    """What the session reports mulligan saved (``caddie context --stats --json``: ``tokens`` net, ``grossTokens``,
    ``cost`` net in dollars); empty without mulligan."""

    @property
    def total(self) -> int:
        return sum(self.billed)

    @property
    def requests(self) -> int:
        return len(self.billed)

    def to_json(self) -> dict[str, Any]:
        return {
            "episode": self.episode,
            "mode": self.mode,
            "toolsMode": self.tools_mode,
            "requests": self.requests,
            "billed": self.total,
            "billedPerRequest": self.billed,
            "cachedPerRequest": self.cached,
            "mulliganSchemaPerRequest": self.mulligan_schema,
            "mulliganCalls": self.mulligan_calls,
            "nudged": self.nudged,
            "seconds": round(self.seconds, 2),
            "schemaRequests": self.schema_requests,
            "reported": self.reported,
            "seenOnceCharsPerRequest": self.seen_once,
        }


class ScriptedModel:
    """The fake server's reply function: plays an episode's plan, one turn per request, then the answer."""

    def __init__(self, episode: Episode, mode: Mode) -> None:
        self.episode = episode
        self.mode = mode
        self.saw_nudge = False
        self._served = 0
        self._previous: dict[str, Any] | None = None
        self._queue: list[Turn | Callable[[], list[Turn]]] = episode.plan(mode, lambda: self.saw_nudge)
        self.calls: list[str] = []

    def __call__(self, request: fl.RecordedRequest) -> fl.Reply:
        body = request.body if isinstance(request.body, dict) else {}
        cached = cached_tokens(body, self._previous)
        self._previous = body
        usage = fl.UsageSpec(input=billed_tokens(body) - cached, output=40, cache_read=cached)
        if self.mode == "on" and self._served > 0:
            # the waste began with the first reply: did a mulligan nudge reach the model since, with the tools
            # to act on it?
            self.saw_nudge = self.saw_nudge or (has_nudge(request) and offers_mulligan(body))
        self._served += 1
        while self._queue and callable(self._queue[0]):
            step = self._queue.pop(0)
            assert callable(step)
            self._queue[0:0] = step()
        if not self._queue:
            return fl.text(self.episode.answer, usage=usage)
        next_turn = self._queue.pop(0)
        assert isinstance(next_turn, Turn)
        self.calls.extend(c.tool for c in next_turn.calls)
        return fl.Reply(
            text=next_turn.text,
            tool_calls=[fl.ToolCallSpec(c.tool, c.args, c.id) for c in next_turn.calls],
            usage=usage,
            chunk_size=4096,
        )


def run_episode(
    episode: Episode, mode: Mode, *, tools_mode: ToolsMode = "always", timeout: float = 300
) -> RunResult:
    """Play ``episode`` in ``mode`` through ``caddie -p`` in a fresh home and project; bill every request."""
    with tempfile.TemporaryDirectory(prefix=f"caddie-economy-{episode.name}-") as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        project.mkdir()
        episode.setup(project)
        model = ScriptedModel(episode, mode)
        with fl.FakeLLM(default_reply=model) as llm:
            agent = home / "agent"
            cost = {"input": 1.0, "output": 0.0, "cacheRead": CACHE_READ_SHARE, "cacheWrite": 0.0}
            llm.write_models_json(
                agent, provider="fake", model_id="fake-model", contextWindow=CONTEXT_WINDOW, cost=cost
            )
            settings: dict[str, Any] = (
                {"disabledExtensions": ["mulligan"]} if mode == "off" else {"mulligan": {"tools": tools_mode}}
            )
            (agent / "settings.json").write_text(json.dumps(settings))
            env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
            env.update(CADDIE_DIR=str(home), NO_COLOR="1", CADDIE_OLLAMA_URL="http://127.0.0.1:9")
            start = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "caddie", "-p", "--model", "fake/fake-model", episode.prompt],
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            seconds = time.perf_counter() - start
            if proc.returncode != 0:
                raise RuntimeError(
                    f"{episode.name} ({mode}): caddie exited {proc.returncode}: {proc.stderr[-2000:]}"
                )
            requests = [r.body for r in llm.llm_requests if isinstance(r.body, dict)]
            reported = reported_savings(home, project, env, timeout) if mode != "off" else {}
        result = RunResult(
            episode.name,
            mode,
            tools_mode if mode != "off" else "always",
            nudged=model.saw_nudge,
            seconds=seconds,
            answer=proc.stdout.strip(),
        )
        result.reported = reported
        previous: dict[str, Any] | None = None
        for body in requests:
            result.billed.append(billed_tokens(body))
            result.cached.append(cached_tokens(body, previous))
            previous = body
            if offers_mulligan(body):
                result.schema_requests += 1
        schemas = [tool_schema_chars(b.get("tools") or [], only_prefix="mulligan_") for b in requests]
        schema = max(schemas, default=0)
        result.mulligan_schema = math.ceil(schema / 4)
        result.mulligan_schema_chars = schema
        if mode == "off":
            waste_ids = {c.id for t in episode.waste for c in t.calls}
            result.seen_once = seen_once_chars(requests, waste_ids)
        result.mulligan_calls = [c for c in model.calls if c.startswith("mulligan_")]
        return result


def reported_savings(home: Path, project: Path, env: dict[str, str], timeout: float) -> dict[str, Any]:
    """What the session says mulligan saved, as ``caddie context --stats --json`` shows it."""
    [session_file] = list((home / "agent" / "sessions").rglob("*.jsonl"))
    proc = subprocess.run(
        [sys.executable, "-m", "caddie", "context", "--stats", "--json", str(session_file)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"caddie context --stats exited {proc.returncode}: {proc.stderr[-2000:]}")
    reports = [r for r in json.loads(proc.stdout).get("savings") or [] if r.get("source") == "mulligan"]
    return reports[0] if reports else {}


def _decided(woven: Turn, plain: Turn, nudged: Callable[[], bool]) -> Callable[[], list[Turn]]:
    """A turn chosen when its request arrives: the woven one once a nudge has reached the model."""
    return lambda: [woven if nudged() else plain]
