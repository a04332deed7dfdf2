"""The texts the model reads: the rewind note, the bloat reminder, the drift and high-water lines."""

from __future__ import annotations

import math

import pytest

from caddie.extensions.bundled.mulligan.ledger import FileLedger
from caddie.extensions.bundled.mulligan.notes import (
    NOTE_INVALID_REASON,
    DriftNudgeInput,
    k_tokens,
    render_bloat_reminder,
    render_drift_nudge,
    render_high_water_nudge,
    render_note,
    validate_note,
)

NOTE = {"what_happened": "went wrong", "true_current_state": "state", "next": "do next"}
TAIL = ". If wasteful, `mulligan_rewind` to undo the turn or `mulligan_shrink` to compact a result."


class TestValidateNote:
    def test_three_non_blank_fields_are_valid(self) -> None:
        assert validate_note(NOTE)

    @pytest.mark.parametrize("field", ["what_happened", "true_current_state", "next"])
    @pytest.mark.parametrize("value", ["", "   ", "\t\n", 42, None])
    def test_any_blank_or_non_string_field_is_invalid(self, field: str, value: object) -> None:
        assert not validate_note({**NOTE, field: value})

    @pytest.mark.parametrize("field", ["what_happened", "true_current_state", "next"])
    def test_a_missing_field_is_invalid(self, field: str) -> None:
        assert not validate_note({k: v for k, v in NOTE.items() if k != field})

    def test_padding_around_real_content_and_single_characters_are_valid(self) -> None:
        assert validate_note({"what_happened": "  x  ", "true_current_state": "y", "next": "\tz"})

    @pytest.mark.parametrize("note", [None, [], "note", 3])
    def test_a_non_object_note_is_invalid(self, note: object) -> None:
        assert not validate_note(note)

    def test_the_reason_is_the_pinned_text(self) -> None:
        assert NOTE_INVALID_REASON == "note fields must all be non-empty"


class TestRenderNote:
    def test_without_ledger_entries_there_are_no_blocks(self) -> None:
        assert render_note(NOTE, FileLedger(), "last_tool_call_group") == (
            "## 🔄 Mulligan rewind (last_tool_call_group)\n\n"
            "**What happened:** went wrong\n\n"
            "**Current true state:** state\n\n"
            "**Next:** do next"
        )

    def test_a_full_ledger_renders_read_modified_bash_in_order(self) -> None:
        ledger = FileLedger(("a.ts", "b.ts"), ("c.ts",), ('git commit -m "wip"',))
        assert render_note(NOTE, ledger, "last_turn") == (
            "## 🔄 Mulligan rewind (last_turn)\n\n"
            "**What happened:** went wrong\n\n"
            "**Current true state:** state\n\n"
            "<files-read>\na.ts\nb.ts\n</files-read>\n\n"
            "<files-modified>\nc.ts\n</files-modified>\n\n"
            '<bash-side-effects>\ngit commit -m "wip"\n</bash-side-effects>\n\n'
            "**Next:** do next"
        )

    @pytest.mark.parametrize(
        ("ledger", "present", "absent"),
        [
            (FileLedger(read_files=("a",)), "<files-read>", ("<files-modified>", "<bash-side-effects>")),
            (FileLedger(modified_files=("a",)), "<files-modified>", ("<files-read>", "<bash-side-effects>")),
            (
                FileLedger(bash_side_effects=("rm x",)),
                "<bash-side-effects>",
                ("<files-read>", "<files-modified>"),
            ),
        ],
    )
    def test_each_block_appears_only_when_it_has_entries(
        self, ledger: FileLedger, present: str, absent: tuple[str, ...]
    ) -> None:
        text = render_note(NOTE, ledger, "checkpoint")
        assert present in text and not any(a in text for a in absent)

    def test_fields_are_inserted_verbatim(self) -> None:
        note = {
            "what_happened": '  `grep -r` ran *twice* "oops"  ',
            "true_current_state": "<x>",
            "next": "\n",
        }
        text = render_note(note, FileLedger(), "last_turn")
        assert '**What happened:**   `grep -r` ran *twice* "oops"  ' in text
        assert text.endswith("**Next:** \n")

    def test_missing_fields_render_empty(self) -> None:
        assert "**What happened:** \n" in render_note({}, FileLedger(), "last_turn")


class TestBloatReminder:
    def test_exact_text(self) -> None:
        assert render_bloat_reminder(30 * 1024) == (
            "\n---\n~30 KB added to your context. `mulligan_shrink` to summarize, "
            "or `mulligan_rewind` if the whole call was a mistake."
        )

    @pytest.mark.parametrize(
        ("num_bytes", "kb"),
        [(8 * 1024, 8), (8704, 9), (8703, 8), (511, 0), (512, 1), (math.nan, 0), (-5, 0), (math.inf, 0)],
    )
    def test_rounds_to_whole_kilobytes_half_up(self, num_bytes: float, kb: int) -> None:
        assert render_bloat_reminder(num_bytes).startswith(f"\n---\n~{kb} KB added")


class TestDriftNudge:
    def test_a_known_delta_leads(self) -> None:
        assert (
            render_drift_nudge(DriftNudgeInput(4200))
            == "Previous turn added ~4.2k tokens to your context" + TAIL
        )

    @pytest.mark.parametrize("hits", [1, 3])
    def test_a_known_delta_wins_over_bloat_hits(self, hits: int) -> None:
        text = render_drift_nudge(DriftNudgeInput(4200, hits))
        assert "produced" not in text and text.startswith("Previous turn added ~4.2k")

    @pytest.mark.parametrize(("hits", "word"), [(1, "result"), (2, "results"), (5, "results")])
    def test_without_a_delta_bloat_hits_lead(self, hits: int, word: str) -> None:
        assert (
            render_drift_nudge(DriftNudgeInput(None, hits))
            == f"Previous turn produced {hits} bloated {word}" + TAIL
        )

    def test_neither_delta_nor_bloat_gives_the_neutral_line(self) -> None:
        assert render_drift_nudge(DriftNudgeInput(None)) == "Previous turn changed your context" + TAIL

    @pytest.mark.parametrize(
        ("delta", "k"),
        [
            (4200, "4.2k"),
            (5000, "5k"),
            (800, "0.8k"),
            (42000, "42k"),
            (3000, "3k"),
            (9800, "9.8k"),
            (-250, "-0.2k"),
            (0, "0k"),
        ],
    )
    def test_k_formatting(self, delta: int, k: str) -> None:
        assert k_tokens(delta) == k

    def test_the_sustained_clause_explains_a_small_latest_delta(self) -> None:
        assert render_drift_nudge(DriftNudgeInput(800, 0, 3)) == (
            "Previous turn added ~0.8k tokens to your context (sustained over the last 3 turns)" + TAIL
        )

    @pytest.mark.parametrize("delta", [4000, 9000])
    def test_no_sustained_clause_when_the_latest_turn_explains_it(self, delta: int) -> None:
        assert "sustained" not in render_drift_nudge(DriftNudgeInput(delta, 0, 3))

    def test_no_sustained_clause_on_the_bloat_lead(self) -> None:
        assert "sustained" not in render_drift_nudge(DriftNudgeInput(None, 2, 3))

    @pytest.mark.parametrize("delta", ["4200", math.nan, math.inf, True])
    def test_a_malformed_delta_counts_as_unknown(self, delta: object) -> None:
        assert render_drift_nudge(DriftNudgeInput(delta)).startswith("Previous turn changed")

    def test_the_tail_is_always_there_and_single_line(self) -> None:
        for nudge in (DriftNudgeInput(4200), DriftNudgeInput(None, 2), DriftNudgeInput(None)):
            text = render_drift_nudge(nudge)
            assert text.endswith(TAIL) and "\n" not in text


class TestHighWaterText:
    @pytest.mark.parametrize(
        ("total", "window", "pct"), [(700, 1000, 70), (750, 1000, 75), (666, 1000, 67), (140000, 200000, 70)]
    )
    def test_reports_the_rounded_percentage(self, total: int, window: int, pct: int) -> None:
        assert render_high_water_nudge(total, window) == (
            f"[mulligan] Context is at ~{pct}% of the window; review recent output for reclaimable space."
        )

    @pytest.mark.parametrize("window", [0, -1])
    def test_an_unknown_window_gives_the_fallback(self, window: int) -> None:
        assert render_high_water_nudge(10, window) == (
            "[mulligan] Context is filling up; review recent output for reclaimable space."
        )
