"""The human's commands and the active-checkpoint banner."""

from __future__ import annotations

import logging

import pytest

from caddie.extensions.bundled.mulligan.audit import build_audit, list_checkpoints
from caddie.extensions.bundled.mulligan.banner import BANNER_WIDGET_KEY, banner_line, reconcile_banner
from caddie.extensions.bundled.mulligan.commands import clear_checkpoint_by_name, valid_checkpoint_name
from caddie.extensions.bundled.mulligan.tools.audit import safe_markers
from tests.mulligan.fakehost import Harness, assistant, call, result, user


def set_message(name: str) -> str:
    return (
        f"Mulligan: checkpoint '{name}' set. Until you revoke it, the agent may rewind across your subsequent "
        f"prompts back to this point (your prompts after here can be hidden). Revoke with "
        f"/mulligan_checkpoint_revoke {name}."
    )


@pytest.fixture
def h() -> Harness:
    h = Harness({})
    h.add(user("task"), assistant(call("c", "read", path="a")), result("c", "A", "read"))
    h.host.ui.widget_calls.clear()  # the session start's banner refresh
    return h


def test_registration(h: Harness) -> None:
    commands = h.extension.commands
    assert set(commands) == {"mulligan_checkpoint", "mulligan_checkpoint_revoke", "mulligan_audit"}
    assert commands["mulligan_checkpoint"].description == (
        "Set a Mulligan checkpoint — the agent may rewind across your subsequent prompts back to this point"
    )
    assert commands["mulligan_checkpoint_revoke"].description == "Revoke a Mulligan checkpoint"
    assert commands["mulligan_audit"].description == (
        "Run the Mulligan context-bloat diagnostic — see what the model is carrying"
    )


class TestCheckpoint:
    def test_labels_the_last_message_and_shows_the_banner(self, h: Harness) -> None:
        h.command("mulligan_checkpoint", "  before-x ")
        assert h.session.labels == {h.session.all[2].id: "mulligan:checkpoint:before-x"}
        assert h.host.ui.notifications == [(set_message("before-x"), "warning")]
        assert h.host.ui.widgets[BANNER_WIDGET_KEY] == [banner_line("before-x")]

    @pytest.mark.parametrize("name", ["a", "a-b_c1", "x" * 40, "---", "123"])
    def test_valid_names(self, h: Harness, name: str) -> None:
        h.command("mulligan_checkpoint", name)
        assert list(h.session.labels.values()) == [f"mulligan:checkpoint:{name}"]

    @pytest.mark.parametrize("name", ["", "has space", "Upper", "dot.ted", "bang!", "x" * 41])
    def test_invalid_names_are_refused(self, h: Harness, name: str) -> None:
        h.command("mulligan_checkpoint", name)
        assert h.host.ui.notifications == [
            (
                f"Mulligan: invalid checkpoint name '{name}' (lowercase, digits, hyphen, underscore; max 40)",
                "warning",
            )
        ]
        assert h.host.writes == [] and h.host.ui.widget_calls == []

    def test_name_validation(self) -> None:
        assert valid_checkpoint_name("good-name_1") and not valid_checkpoint_name("a\n")

    def test_switched_off_it_says_so_before_validating(self) -> None:
        h = Harness({"enabled": False})
        h.add(user("u"))
        h.command("mulligan_checkpoint", "BAD NAME")
        assert h.host.ui.notifications == [("Mulligan is disabled", "warning")] and h.host.writes == []

    def test_without_a_message_there_is_nothing_to_checkpoint(self) -> None:
        h = Harness({})
        h.command("mulligan_checkpoint", "cp")
        assert h.host.ui.notifications == [
            (
                "Mulligan: could not set checkpoint: no conversation message to checkpoint (emit a message first, then retry)",
                "warning",
            )
        ]

    def test_a_failing_label_is_reported(self, h: Harness) -> None:
        h.host.fail["set_label"] = RuntimeError("read-only session")
        h.command("mulligan_checkpoint", "cp")
        assert h.host.ui.notifications == [
            ("Mulligan: could not set checkpoint: read-only session", "warning")
        ]

    def test_without_a_ui_the_label_is_still_set(self, h: Harness) -> None:
        h.host.has_ui = False
        h.command("mulligan_checkpoint", "cp")
        assert h.session.labels and h.host.ui.notifications == []

    def test_unexpected_errors_are_reported(self, h: Harness) -> None:
        h.host.fail["session_id"] = RuntimeError("weird")
        h.host.fail["branch"] = RuntimeError("weird")
        h.command("mulligan_checkpoint", "cp")
        assert h.host.ui.notifications == [("Mulligan: could not set checkpoint: weird", "warning")]


class TestRevoke:
    def test_clears_every_entry_carrying_it(self, h: Harness) -> None:
        h.command("mulligan_checkpoint", "cp")
        h.add(user("more"))
        h.command("mulligan_checkpoint", "cp")
        h.host.ui.notifications.clear()
        h.command("mulligan_checkpoint_revoke", "cp")
        assert h.session.labels == {} and list_checkpoints(h.session.entries()) == []
        assert h.host.ui.notifications == [
            (
                "Mulligan: checkpoint 'cp' revoked. The agent can no longer rewind across your prompts to it.",
                "info",
            )
        ]
        assert BANNER_WIDGET_KEY not in h.host.ui.widgets

    def test_an_unknown_name(self, h: Harness) -> None:
        h.command("mulligan_checkpoint_revoke", "nope")
        assert h.host.ui.notifications == [("Mulligan: no active checkpoint named 'nope'.", "info")]
        assert h.host.writes == []

    def test_switched_off(self) -> None:
        h = Harness({"enabled": False})
        h.command("mulligan_checkpoint_revoke", "cp")
        assert h.host.ui.notifications == [("Mulligan is disabled", "warning")]

    def test_only_currently_labelled_targets_are_cleared(self, h: Harness) -> None:
        h.command("mulligan_checkpoint", "cp")
        target = h.session.all[2].id
        h.session.label(target, "something else")
        assert not clear_checkpoint_by_name(h.api, h.ctx, "cp") and h.session.labels == {
            target: "something else"
        }

    def test_unreadable_entries_mean_nothing_to_revoke(self, h: Harness) -> None:
        h.host.fail["entries"] = RuntimeError("boom")
        assert not clear_checkpoint_by_name(h.api, h.ctx, "cp")


class TestAuditCommand:
    def test_shows_the_same_report_as_the_tool(self, h: Harness) -> None:
        h.fire()
        h.command("mulligan_audit", "20")
        expected = build_audit(
            h.rt.last_filtered, safe_markers(h.ctx), [], h.mulligan.config, "medium"
        ).report
        assert h.host.ui.notifications == [(expected, "info")]
        assert h.host.writes == []

    def test_before_any_inference_it_uses_the_fallback_view(self, h: Harness) -> None:
        h.command("mulligan_audit")
        assert "confidence: low" in h.host.ui.notifications[0][0]

    def test_without_a_ui_it_does_nothing(self, h: Harness) -> None:
        h.host.has_ui = False
        h.command("mulligan_audit")
        assert h.host.calls == []

    def test_switched_off(self) -> None:
        h = Harness({"enabled": False})
        h.command("mulligan_audit")
        assert h.host.ui.notifications == [("Mulligan is disabled", "warning")]

    def test_errors_are_reported(self, h: Harness) -> None:
        h.host.fail["session_id"] = RuntimeError("gone")
        h.command("mulligan_audit")
        assert h.host.ui.notifications == [("Mulligan: unexpected error: gone", "warning")]


class TestBanner:
    def test_one_line_per_active_checkpoint_in_order(self, h: Harness) -> None:
        h.command("mulligan_checkpoint", "one")
        h.add(user("x"))
        h.command("mulligan_checkpoint", "two")
        assert h.host.ui.widget_calls[-1] == (
            BANNER_WIDGET_KEY,
            [banner_line("one"), banner_line("two")],
            "aboveEditor",
        )
        assert banner_line("one") == (
            '⚠ Mulligan checkpoint active: "one" (you set it). The agent may rewind across your subsequent prompts '
            "back to this point. Revoke: /mulligan_checkpoint_revoke one"
        )

    def test_a_consumed_checkpoint_clears_the_banner(self, h: Harness) -> None:
        h.command("mulligan_checkpoint", "cp")
        h.add(user("next"), assistant(call("z", "read", path="z")), result("z"))
        h.call_tool(
            "mulligan_rewind",
            {
                "note": {"what_happened": "a", "true_current_state": "b", "next": "c"},
                "granularity": "checkpoint",
                "checkpoint": "cp",
            },
            "rw",
        )
        h.fire()
        assert h.host.ui.widget_calls[-1] == (BANNER_WIDGET_KEY, None, "aboveEditor")

    def test_the_knob_hides_it_even_with_a_checkpoint(self) -> None:
        h = Harness({"ui": {"activeCheckpointBanner": False}})
        h.add(user("u"))
        h.command("mulligan_checkpoint", "cp")
        assert h.session.labels and h.host.ui.widget_calls[-1][1] is None

    def test_without_a_ui_nothing_is_drawn(self, h: Harness) -> None:
        h.host.has_ui = False
        h.command("mulligan_checkpoint", "cp")
        h.fire()
        assert h.host.ui.widget_calls == []

    def test_is_restored_on_session_start(self, h: Harness) -> None:
        h.command("mulligan_checkpoint", "cp")
        h.host.ui.widgets.clear()
        h.session_start("resume")
        assert h.host.ui.widgets[BANNER_WIDGET_KEY] == [banner_line("cp")]

    @pytest.mark.parametrize("failure", ["widget", "entries"])
    def test_never_raises(self, h: Harness, failure: str, caplog: pytest.LogCaptureFixture) -> None:
        caplog.set_level(logging.WARNING, logger="caddie.ext.mulligan")
        if failure == "widget":
            h.host.ui.fail_widget = RuntimeError("tui gone")
        else:
            h.host.fail["entries"] = RuntimeError("tui gone")
        reconcile_banner(h.mulligan.config, h.ctx)
        assert caplog.messages == ["[mulligan] banner: failed to reconcile: tui gone"]
