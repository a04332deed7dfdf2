"""Pi's ``project_trust`` event: extensions loaded from the user's own places (and ``-e``) decide whether a
project is trusted before its own extensions and code-running settings load.

The first handler that answers ``yes`` or ``no`` decides (and, with ``remember``, the decision is saved as
``trust.json`` keeps the built-in prompt's answer); ``undecided`` leaves it to the next handler, then to the
usual rules (``--trust``, a remembered answer, the interactive question). Handlers get a small context:
``cwd``, ``mode``, ``has_ui`` and ``ui``; as in Pi 0.84.4 only the terminal UI has dialogs then (RPC, JSON
and print modes get ``has_ui`` False, dialogs that answer at once, and notices on stderr).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from caddie.extensions.api import ExtensionUI, Mode, ProjectTrustEvent, ProjectTrustResult
from caddie.extensions.runner import Extension, call_handler
from caddie.runtime.trust import remember_trust

log = logging.getLogger("caddie.session")


@dataclass(slots=True)
class TrustContext:
    """The ``ctx`` a ``project_trust`` handler gets (Pi's ``ProjectTrustContext``)."""

    cwd: str
    mode: Mode
    ui: ExtensionUI

    @property
    def has_ui(self) -> bool:
        """Only the terminal UI asks at start-up, as Pi: in RPC, JSON and print modes the dialogs answer at
        once (``confirm`` False, the others None), since no client can answer before the session exists."""
        return self.mode == "tui"


async def decide_project_trust(
    extensions: Sequence[Extension], cwd: str, mode: Mode, ui: ExtensionUI
) -> tuple[bool | None, list[str]]:
    """The extensions' decision (None: nobody decided) and one line per handler that failed."""
    ctx = TrustContext(cwd, mode, ui)
    problems: list[str] = []
    for ext in extensions:  # loaded without the project's trust: its own extensions are not among them
        for handler in ext.handlers.get("project_trust", ()):
            try:
                answer = await call_handler(handler, ProjectTrustEvent(cwd), ctx)
            except Exception as e:
                problems.append(f'Extension "{ext.path}" project_trust error: {e}')
                continue
            if not isinstance(answer, ProjectTrustResult) or answer.trusted not in ("yes", "no"):
                continue
            decision = answer.trusted == "yes"
            if answer.remember:
                try:
                    remember_trust(cwd, decision)
                except OSError as e:
                    log.warning("could not save the trust decision for %s: %s", cwd, e)
            return decision, problems
    return None, problems
