"""Extension commands that share a name are all reachable, under Pi's invocation names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.runtime.harness import inline_extension, start_session


async def test_a_name_registered_twice_is_name_1_and_name_2_as_in_pi(tmp_path: Path) -> None:
    ran: list[str] = []

    def command(label: str) -> Any:
        async def handler(args: str, ctx: Any) -> None:
            ran.append(f"{label} {args}".strip())

        return handler

    extensions = [
        inline_extension(lambda api: api.register_command("review", command("first")), "one"),
        inline_extension(lambda api: api.register_command("review:2", command("literal")), "two"),
        inline_extension(lambda api: api.register_command("review", command("second")), "three"),
        inline_extension(lambda api: api.register_command("solo", command("solo")), "four"),
    ]
    run = await start_session(tmp_path, extensions=extensions)
    names = sorted(run.session.extensions.commands())
    await run.session.prompt("/review:1 a")
    await run.session.prompt("/review:3 b")
    await run.session.prompt("/review:2")
    await run.session.prompt("/solo")
    await run.session.shutdown("quit")
    assert names == ["review:1", "review:2", "review:3", "solo"], "no copy keeps the bare name"
    assert ran == ["first a", "second b", "literal", "solo"], "a taken suffix moves on to the next number"
