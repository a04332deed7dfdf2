"""The interactive terminal UI (``caddie`` without ``-p``), built with Textual.

Importing this package has no side effects; ``run_interactive`` starts the app.
"""

from caddie.modes.interactive.entry import run_interactive

__all__ = ["run_interactive"]
