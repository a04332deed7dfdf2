"""The lines around the editor: queued messages, the working indicator, extension widgets and the footer.

The footer shows where you are (directory, session name), the model and thinking level, tokens, cost,
context usage, the sandbox mode when one is on, and the statuses extensions set with ``ui.set_status``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.containers import Vertical
from textual.timer import Timer
from textual.widgets import Static

from caddie.modes.interactive.render import format_cost, format_count, one_line

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def ansi_line(text: str) -> Text:
    """Extension text may carry ANSI colours (as Pi extensions' do); keep them, drop other escapes."""
    return Text.from_ansi(text) if "\x1b" in text else Text(text)


@dataclass(slots=True)
class FooterState:
    cwd: str
    session_name: str | None
    model: str | None
    thinking: str | None
    """None when the model does not think."""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0
    context_percent: float | None = None
    context_window: int = 0
    statuses: Mapping[str, str] | None = None
    cache_hit: float | None = None
    """Percent of the latest reply's prompt read from the cache (Pi's ``CH``)."""
    auto_compact: bool = False
    """Automatic compaction is on (Pi's ``(auto)`` after the context figure)."""
    branch: str | None = None
    """The git branch of the directory."""
    sandbox: str | None = None
    """The active sandbox (``workspace-write, network off``); None when it is off."""
    tokens_estimated: bool = False
    """Some token counts are caddie's estimate (the server reported no usage): shown with "≈"."""
    context_estimated: bool = False


def shorten_left(text: str, width: int) -> str:
    """``…/end/of/a/long/path`` in at most ``width`` characters."""
    if len(text) <= width:
        return text
    return "…" + text[len(text) - max(1, width - 1) :]


def footer_lines(state: FooterState, width: int = 80) -> tuple[Text, Text, Text, Text | None]:
    """Left and right of line one, line two, and the extension statuses line (None when there are none).

    The directory gives way first when line one is too long: it is cut from the left."""
    right = Text()
    if state.model:
        right.append(state.model)
        if state.thinking is not None:
            right.append(f" • {state.thinking}", style="italic")
    else:
        right.append("no model (/model)", style="yellow")
    name = (f" ({state.branch})" if state.branch else "") + (
        f" • {state.session_name}" if state.session_name else ""
    )
    room = max(12, width - right.cell_len - len(name) - 6)
    left = Text(shorten_left(state.cwd, room), style="bold")
    left.append(name)
    usage = Text(style="dim")
    approx = "≈" if state.tokens_estimated else ""
    parts = []  # as Pi's footer: each figure once it is not zero
    if state.input_tokens:
        parts.append(f"↑{approx}{format_count(state.input_tokens)}")
    if state.output_tokens:
        parts.append(f"↓{approx}{format_count(state.output_tokens)}")
    if state.cache_read:
        parts.append(f"R{format_count(state.cache_read)}")
    if state.cache_write:
        parts.append(f"W{format_count(state.cache_write)}")
    if (state.cache_read or state.cache_write) and state.cache_hit is not None:
        parts.append(f"CH{state.cache_hit:.1f}%")
    if state.cost:
        parts.append(format_cost(state.cost))
    usage.append(" ".join(parts))
    if state.context_window:
        pct = "?" if state.context_percent is None else f"{state.context_percent:.1f}%"
        pct = f"≈{pct}" if state.context_estimated and state.context_percent is not None else pct
        auto = " (auto)" if state.auto_compact else ""
        percent = state.context_percent or 0.0
        colour = "red" if percent > 90 else "yellow" if percent > 70 else None
        usage.append(
            ("  " if parts else "") + f"{pct}/{format_count(state.context_window)}{auto}", style=colour
        )
    if state.sandbox:
        usage.append(f"  sandbox: {state.sandbox}", style="green")
    statuses = None
    if state.statuses:
        statuses = Text("  ").join(ansi_line(state.statuses[k]) for k in sorted(state.statuses))
    return left, right, usage, statuses


class StatusFooter(Static):
    DEFAULT_CSS = "StatusFooter { height: auto; padding: 0 1; color: $text-muted; }"

    component: Any = None
    """``ui.set_footer``: an extension's component drawn instead (None: caddie's footer)."""

    def use_component(self, component: Any) -> None:
        self.component = component

    def show(self, state: FooterState) -> None:
        if self.component is not None:
            from caddie.modes.interactive.extension_ui import component_lines

            self.update(component_lines(self.component, max(1, (self.size.width or 80) - 2)))
            return
        left, right, usage, statuses = footer_lines(state, self.size.width or 80)
        grid = Table.grid(expand=True)
        grid.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
        grid.add_column(justify="right", no_wrap=True, overflow="ellipsis", min_width=right.cell_len)
        grid.add_row(left, right)
        grid.add_row(usage, "")
        if statuses is not None:
            statuses.no_wrap = True
            statuses.overflow = "ellipsis"
            grid.add_row(statuses, "")
        self.update(grid)


class WorkingLine(Static):
    """A spinner and a message while the agent works (``ui.set_working_message`` replaces the text)."""

    DEFAULT_CSS = """
    WorkingLine { height: 1; padding: 0 1; color: $text-accent; display: none; }
    WorkingLine.-on { display: block; }
    """

    def __init__(self) -> None:
        super().__init__("", id="working")
        self.message: str | None = None
        self.active = False
        self.visible = True
        """``ui.set_working_visible``: False hides the line even while the agent works."""
        self.frames: Sequence[str] = SPINNER
        self.interval = 0.1
        self._frame = 0
        self._timer: Timer | None = None

    def set_indicator(self, visible: bool, frames: Sequence[str] | None, interval_ms: int | None) -> None:
        """``ui.set_working_visible`` / ``set_working_indicator`` (frames None: the spinner; ``[]``: none)."""
        self.visible = visible
        self.frames = SPINNER if frames is None else list(frames)
        self.interval = max(0.02, (interval_ms or 100) / 1000)
        self._frame = 0
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.set_active(self.active)

    def set_active(self, active: bool) -> None:
        self.active = active
        self.set_class(active and self.visible, "-on")
        if active and self._timer is None and len(self.frames) > 1:
            self._timer = self.set_interval(self.interval, self._tick)
        elif not active and self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._draw()

    def set_message(self, message: str | None) -> None:
        self.message = message
        self._draw()

    def _tick(self) -> None:
        self._frame = (self._frame + 1) % max(1, len(self.frames))
        self._draw()

    def _draw(self) -> None:
        frame = self.frames[self._frame % len(self.frames)] if self.frames else ""
        line = Text.from_ansi(frame + " ") if frame else Text()
        line.append_text(Text.from_ansi(self.message or "Working…"))  # an extension's colours kept
        line.append("  esc to interrupt", style="dim")
        self.update(line)


class PendingMessages(Static):
    """Messages typed while the agent works, until it takes them."""

    DEFAULT_CSS = """
    PendingMessages { height: auto; padding: 0 1; color: $text-muted; display: none; }
    PendingMessages.-on { display: block; }
    """

    def __init__(self) -> None:
        super().__init__("", id="pending")
        self.steering: list[str] = []
        self.follow_up: list[str] = []

    def show(self, steering: Sequence[str], follow_up: Sequence[str]) -> None:
        self.steering, self.follow_up = list(steering), list(follow_up)
        lines = [Text(f"Steering: {one_line(t, 200)}") for t in steering]
        lines += [Text(f"Follow-up: {one_line(t, 200)}") for t in follow_up]
        if lines:
            lines.append(Text("alt+up to edit, esc to abort and edit", style="dim"))
        for line in lines:
            line.no_wrap = True
            line.overflow = "ellipsis"
        self.update(Text("\n").join(lines))
        self.set_class(bool(lines), "-on")


class WidgetArea(Vertical):
    """Where ``ui.set_widget`` lines go, above or below the editor, one block per key."""

    DEFAULT_CSS = """
    WidgetArea { height: auto; padding: 0 1; }
    WidgetArea > Static { height: auto; }
    """

    def show(
        self, widgets: Mapping[str, Any], tui: Callable[[], Any] | None = None, theme: Any = None
    ) -> None:
        """Lines, or components made by the factories (``(tui, theme) -> component``), one block per key."""
        existing = {child.name: child for child in self.children if isinstance(child, Static)}
        for key, child in existing.items():
            if key not in widgets:
                child.remove()
        for key, content in widgets.items():
            current = existing.get(key)
            if callable(content):
                from caddie.modes.interactive.extension_ui import ComponentView, made_by

                made_with = (content, getattr(theme, "name", None))
                if isinstance(current, ComponentView) and current.made_with == made_with:
                    current.redraw()  # the same factory and theme: the component keeps its state
                    continue
                view = ComponentView(made_by(content, tui() if tui is not None else None, theme), name=key)
                view.made_with = made_with
                self._put(view, current)
                continue
            text = Text("\n").join(ansi_line(line) for line in content)
            if current is None or type(current) is not Static:
                self._put(Static(text, name=key), current)
            else:
                current.update(text)

    def _put(self, widget: Static, instead_of: Static | None) -> None:
        """Mount ``widget`` where ``instead_of`` is (keeping the order of the keys), or at the end."""
        if instead_of is None:
            self.mount(widget)
        else:
            self.mount(widget, after=instead_of)
            instead_of.remove()


def git_head(cwd: str) -> str | None:
    """What ``.git/HEAD`` of the repository around ``cwd`` says (``ref: refs/heads/main``, or a commit id
    when detached); None outside a repository."""
    from pathlib import Path

    here = Path(cwd)
    for folder in (here, *here.parents):
        git = folder / ".git"
        if git.is_file():  # a worktree or submodule: "gitdir: <path>"
            try:
                target = git.read_text(encoding="utf-8").strip().removeprefix("gitdir:").strip()
            except OSError:
                return None
            git = (folder / target).resolve()
        if git.is_dir():
            try:
                return (git / "HEAD").read_text(encoding="utf-8").strip()
            except OSError:
                return None
    return None


def git_branch(cwd: str) -> str | None:
    """The checked-out branch of the git repository around ``cwd`` (a short commit id when detached), read
    from ``.git/HEAD``; None outside a repository."""
    head = git_head(cwd)
    if head is None:
        return None
    return head.removeprefix("ref: refs/heads/") if head.startswith("ref: ") else head[:7]


BRANCH_POLL_S = 1.0
"""How often the footer data looks at ``.git/HEAD`` while a footer listens for branch changes."""


class FooterData:
    """Pi's footer data (``ReadonlyFooterDataProvider``), the third argument of ``ui.set_footer``'s factory:
    what a footer shows that ``ctx`` does not have."""

    def __init__(
        self,
        cwd: Callable[[], str],
        statuses: Callable[[], Mapping[str, str]],
        providers: Callable[[], int],
        every: Callable[[float, Callable[[], None]], Any],
        report: Callable[[str], None],
    ) -> None:
        """``every(seconds, callback)`` starts a repeating timer and returns it (``.stop()`` ends it);
        ``report`` shows a listener's failure."""
        self._report = report
        self._cwd = cwd
        self._statuses = statuses
        self._providers = providers
        self._every = every
        self._listeners: list[Callable[[], Any]] = []
        self._timer: Any = None
        self._branch: str | None = None

    def get_git_branch(self) -> str | None:
        """The current git branch; ``"detached"`` at a detached HEAD; None outside a repository (as Pi)."""
        head = git_head(self._cwd())
        if head is None:
            return None
        return head.removeprefix("ref: refs/heads/") if head.startswith("ref: ") else "detached"

    def get_extension_statuses(self) -> Mapping[str, str]:
        """The texts extensions set with ``ui.set_status``, by key."""
        return dict(self._statuses())

    def get_available_provider_count(self) -> int:
        """How many providers have a model that can be used (a key, or a local server)."""
        return self._providers()

    def on_branch_change(self, callback: Callable[[], Any]) -> Callable[[], None]:
        """Call ``callback`` when the git branch changes (checked every second while someone listens);
        returns the function that stops it."""
        self._listeners.append(callback)
        if self._timer is None:
            self._branch = self.get_git_branch()
            self._timer = self._every(BRANCH_POLL_S, self.check_branch)

        def unsubscribe() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)
            if not self._listeners and self._timer is not None:
                self._timer.stop()
                self._timer = None

        return unsubscribe

    def check_branch(self) -> None:
        """Tell the listeners when the branch is not the one seen last (an extension's error is its own)."""
        branch = self.get_git_branch()
        if branch == self._branch:
            return
        self._branch = branch
        for callback in list(self._listeners):
            try:
                callback()
            except Exception as e:  # a listener's failure must not stop the others or the timer
                self._report(f"A footer's branch-change listener failed: {type(e).__name__}: {e}")
