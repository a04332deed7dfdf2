"""The ``--goal`` options' own checks, as the goal extension registers them (``register_flag(..., check=...)``).

A task's objective and budget, and ``--total-budget``, are checked before anything runs, with the very rules
the goal applies in each task's process — reached through the public flag API, not the extension's code.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from collections.abc import Callable

from caddie.extensions.loader import bundled_sources, load_extensions


@functools.cache
def goal_option_checks() -> dict[str, Callable[[str], object]]:
    """Option name → its check, for every option the bundled extensions register with one."""

    async def load() -> dict[str, Callable[[str], object]]:
        loaded = await load_extensions(bundled_sources())
        return {
            name: spec.check
            for extension in loaded.extensions
            for name, spec in extension.flags.items()
            if spec.check is not None
        }

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(load())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # called from async code: load on a fresh loop
        return pool.submit(asyncio.run, load()).result()


def check_option(name: str, value: str) -> object:
    """The value as the option's extension reads it; ``ValueError`` or ``UsageError`` with its sentence for a bad
    one (the value as given when no extension checks the option)."""
    check = goal_option_checks().get(name)
    return value if check is None else check(value)
