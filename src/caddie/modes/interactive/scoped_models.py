"""``/scoped-models``: which models Ctrl+P cycles among, and in what order (Pi's scoped models selector).

Enter switches the highlighted model on or off, Ctrl+A switches on every model (or every one the filter
shows), Ctrl+X switches them off, Ctrl+P every model of the highlighted one's provider, Alt+Up / Alt+Down
move it in the cycle order, Ctrl+S saves the choice as settings ``enabledModels``. Changes apply to the
session at once, as Pi's do; only Ctrl+S writes them. "All enabled" is no scope at all (``None``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.text import Text
from textual.binding import BindingType
from textual.widgets import Input, Static

from caddie.ai.model import Model
from caddie.modes.interactive.dialogs import Choice, ListScreen
from caddie.modes.interactive.keymap import keyed

Enabled = list[str] | None
"""The enabled models' refs in cycle order; None: every model (no scope)."""


def toggled(enabled: Enabled, ref: str) -> Enabled:
    if enabled is None:
        return [ref]  # the first switch starts from this model alone, as Pi
    return [r for r in enabled if r != ref] if ref in enabled else [*enabled, ref]


def with_all(enabled: Enabled, every: Sequence[str], targets: Sequence[str] | None) -> Enabled:
    if enabled is None:
        return None
    result = [*enabled, *(r for r in (targets or every) if r not in enabled)]
    return None if set(result) >= set(every) and len(result) == len(every) else result


def without(enabled: Enabled, every: Sequence[str], targets: Sequence[str] | None) -> Enabled:
    if enabled is None:
        return [r for r in every if r not in targets] if targets is not None else []
    drop = set(targets if targets is not None else enabled)
    return [r for r in enabled if r not in drop]


def moved(enabled: Enabled, ref: str, step: int) -> Enabled:
    if enabled is None or ref not in enabled:
        return enabled
    order = list(enabled)
    i = order.index(ref)
    j = i + step
    if 0 <= j < len(order):
        order[i], order[j] = order[j], order[i]
    return order


def in_order(enabled: Enabled, every: Sequence[str]) -> list[str]:
    """The enabled models first, in cycle order, then the others."""
    if enabled is None:
        return list(every)
    return [*(r for r in enabled if r in every), *(r for r in every if r not in enabled)]


class ScopedModelsScreen(ListScreen):
    """See the module docstring."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *ListScreen.BINDINGS,
        keyed("app.models.enableAll", "all"),
        keyed("app.models.clearAll", "clear"),
        keyed("app.models.toggleProvider", "provider"),
        keyed("app.models.reorderUp", "reorder(-1)"),
        keyed("app.models.reorderDown", "reorder(1)"),
        keyed("app.models.save", "save"),
    ]

    def __init__(
        self,
        models: Sequence[Model],
        enabled: Enabled,
        on_change: Callable[[Enabled], None],
        save: Callable[[Enabled], str | None],
    ) -> None:
        self.models = {m.ref: m for m in models}
        self.every = [m.ref for m in models]
        self.enabled: Enabled = [r for r in enabled if r in self.models] if enabled is not None else None
        self.on_change = on_change
        self.save = save
        """Writes settings ``enabledModels``; a sentence when it failed."""
        self.dirty = False
        super().__init__(
            f"Scoped models: what {self.key_hint('app.model.cycleForward')} cycles among (for this session; "
            f"{self.key_hint('app.models.save')} saves)",
            self._choices(),
            filter_placeholder="type to filter models",
            hint=self._hint(),
        )

    def _choices(self) -> list[Choice]:
        choices = []
        for ref in in_order(self.enabled, self.every):
            model = self.models[ref]
            prompt = Text(model.id)
            prompt.append(f" [{model.provider}]", style="dim")
            if self.enabled is not None:
                on = ref in self.enabled
                prompt.append(" ✓" if on else " ✗", style="green" if on else "dim")
            choices.append(Choice(ref, prompt, f"{ref} {model.name}"))
        return choices

    def _hint(self) -> str:
        count = "all enabled" if self.enabled is None else f"{len(self.enabled)}/{len(self.every)} enabled"
        key = self.key_hint
        return (
            f"{key('tui.select.confirm')} toggle · {key('app.models.enableAll')} all · "
            f"{key('app.models.clearAll')} clear · {key('app.models.toggleProvider')} provider · "
            f"{key('app.models.reorderUp')}/{key('app.models.reorderDown')} reorder · "
            f"{key('app.models.save')} save · {key('tui.select.cancel')} close · {count}"
            + (" (unsaved)" if self.dirty else "")
        )

    def _filtered(self) -> list[str] | None:
        """The refs the filter shows, or None without a filter (Ctrl+A / Ctrl+X then mean every model)."""
        query = self.query_one("#filter", Input).value.strip()
        return [c.id for c in self.shown] if query else None

    def _change(self, enabled: Enabled, keep: str | None = None) -> None:
        if enabled == self.enabled:
            return
        self.enabled = enabled
        self.dirty = True
        self.on_change(enabled)
        current = self.highlighted_choice()
        self.choices = self._choices()
        self.refill(keep if keep is not None else current.id if current else None)
        self.query_one("#hint", Static).update(Text(self._hint()))

    def pick(self, index: int | None = None) -> None:
        """Enter switches the highlighted model on or off (it does not close the screen)."""
        choice = self.highlighted_choice() if index is None else self.shown[index]
        if choice is not None:
            self._change(toggled(self.enabled, choice.id), choice.id)

    def action_all(self) -> None:
        self._change(with_all(self.enabled, self.every, self._filtered()))

    def action_clear(self) -> None:
        self._change(without(self.enabled, self.every, self._filtered()))

    def action_provider(self) -> None:
        choice = self.highlighted_choice()
        if choice is None:
            return
        provider = self.models[choice.id].provider
        refs = [r for r in self.every if self.models[r].provider == provider]
        if self.enabled is not None and all(r in self.enabled for r in refs):
            self._change(without(self.enabled, self.every, refs), choice.id)
        else:
            self._change(
                with_all(self.enabled if self.enabled is not None else [], self.every, refs), choice.id
            )

    def action_reorder(self, step: int) -> None:
        choice = self.highlighted_choice()
        if choice is not None:
            self._change(moved(self.enabled, choice.id, step), choice.id)

    def action_save(self) -> None:
        problem = self.save(self.enabled)
        if problem is None:
            self.dirty = False
        self.query_one("#hint", Static).update(Text(problem or self._hint() + " · saved"))
