"""Write a large, realistic session file for the benchmarks (default: 100,000 entries, about 110 MB).

The mix is what long coding sessions hold: user prompts, assistant messages with thinking, text and tool
calls (with usage), tool results of a few hundred bytes to a few KB, and some extension state entries.

    uv run python bench/make_session.py /tmp/big.jsonl [--entries 100000]
"""

from __future__ import annotations

import argparse
import json
import random
import secrets
from datetime import UTC, datetime, timedelta
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    words = [
        "the",
        "of",
        "and",
        "to",
        "in",
        "is",
        "that",
        "for",
        "it",
        "with",
        "as",
        "was",
        "on",
        "be",
        "by",
        "this",
        "are",
        "from",
        "or",
        "have",
        "an",
        "which",
    ]

    def prose(n_words: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n_words))

    start = datetime(2026, 11, 1, tzinfo=UTC)
    ids: set[str] = set()

    def new_id() -> str:
        while True:
            i = secrets.token_hex(4)
            if i not in ids:
                ids.add(i)
                return i

    parent: str | None = None
    lines = [
        json.dumps(
            {
                "type": "session",
                "version": 3,
                "id": "0197a000-0000-7000-8000-000000000001",
                "timestamp": start.isoformat().replace("+00:00", "Z"),
                "cwd": "/home/dev/project",
            }
        )
    ]
    n = 0
    call = 0
    while n < args.entries:
        ts = start + timedelta(seconds=n)
        iso = ts.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        ms = int(ts.timestamp() * 1000)
        eid = new_id()
        if n % 40 == 0:
            entry = {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": iso,
                "message": {"role": "user", "content": prose(60), "timestamp": ms},
            }
        elif n % 40 == 39:
            entry = {
                "type": "custom",
                "customType": "mulligan:turn-metric",
                "data": {"deltaTokens": 900, "turnIndex": n},
                "id": eid,
                "parentId": parent,
                "timestamp": iso,
            }
        elif n % 2 == 1:
            call += 1
            entry = {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": iso,
                "message": {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "thinking",
                            "thinking": prose(40),
                            "thinkingSignature": secrets.token_hex(32),
                        },
                        {"type": "text", "text": prose(30)},
                        {
                            "type": "toolCall",
                            "id": f"call_{call}",
                            "name": "bash",
                            "arguments": {"command": f"grep -rn {rng.choice(words)} src/ | head -50"},
                        },
                    ],
                    "api": "anthropic-messages",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "usage": {
                        "input": 1200,
                        "output": 300,
                        "cacheRead": 40000,
                        "cacheWrite": 500,
                        "totalTokens": 42000,
                        "cost": {
                            "input": 0.0036,
                            "output": 0.0045,
                            "cacheRead": 0.012,
                            "cacheWrite": 0.0019,
                            "total": 0.022,
                        },
                    },
                    "stopReason": "toolUse",
                    "timestamp": ms,
                },
            }
        else:
            entry = {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": iso,
                "message": {
                    "role": "toolResult",
                    "toolCallId": f"call_{call}",
                    "toolName": "bash",
                    "content": [{"type": "text", "text": prose(rng.randint(110, 420))}],
                    "isError": False,
                    "timestamp": ms,
                },
            }
        lines.append(json.dumps(entry, separators=(",", ":")))
        parent = eid
        n += 1
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}: {n} entries, {args.out.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
