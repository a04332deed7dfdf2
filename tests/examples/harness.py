"""Loading a Pi example's Python twin from ``examples/extensions/`` into a real session on the faux model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.runtime.harness import Run, start_session

EXAMPLES = Path(__file__).parents[2] / "examples" / "extensions"


def example(name: str) -> str:
    path = EXAMPLES / name
    assert path.exists(), path
    return str(path)


async def with_example(cwd: Path, *names: str, **kw: Any) -> Run:
    """A started session with the examples loaded as ``-e`` extensions; no load errors allowed."""
    run = await start_session(cwd, extension_paths=[example(n) for n in names], **kw)
    assert run.session.state().load_errors == [], run.session.state().load_errors
    return run
