"""The extension as a whole: registration, session lifecycle, runtime state, the debug log."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from caddie.extensions.api import EventBus, ExtensionAPI
from caddie.extensions.bundled.mulligan import register
from caddie.extensions.bundled.mulligan.log import DebugLog
from caddie.extensions.bundled.mulligan.state import BloatHit, Runtimes, SessionRuntime
from caddie.extensions.runner import Extension
from tests.mulligan.fakehost import Harness, user


class TestRegistration:
    def test_four_tools_three_commands_eight_handlers(self) -> None:
        h = Harness()
        assert list(h.extension.tools) == [
            "mulligan_rewind",
            "mulligan_shrink",
            "mulligan_audit",
            "mulligan_cancel",
        ]
        assert [t.label for t in h.extension.tools.values()] == [
            "Mulligan Rewind",
            "Mulligan Shrink",
            "Mulligan Audit",
            "Mulligan Cancel",
        ]
        assert list(h.extension.commands) == [
            "mulligan_checkpoint",
            "mulligan_checkpoint_revoke",
            "mulligan_audit",
        ]
        assert {k: len(v) for k, v in h.extension.handlers.items()} == {
            "context": 1,
            "entry_visibility": 1,
            "savings": 1,
            "tool_result": 1,
            "turn_end": 1,
            "session_start": 1,
            "session_tree": 1,
            "session_shutdown": 1,
        }

    def test_the_vestigial_checkpoint_tool_is_not_registered(self) -> None:
        assert "mulligan_checkpoint" not in Harness().extension.tools

    def test_registration_is_synchronous_and_needs_no_host(self) -> None:
        api = ExtensionAPI(Extension("/x", "mulligan"), EventBus())
        assert not inspect.iscoroutinefunction(register)
        register(api)  # no host bound yet: registration must not call any action method


class TestSessionLifecycle:
    def test_settings_are_read_on_session_start(self) -> None:
        h = Harness()
        assert h.mulligan.config.enabled
        h.host.settings = {"mulligan": {"enabled": False}}
        h.session_start()
        assert not h.mulligan.config.enabled

    @pytest.mark.parametrize("reason", ["startup", "reload", "new", "resume", "fork"])
    def test_every_reason_rereads_settings_and_resets_the_runtime(self, reason: str) -> None:
        h = Harness({})
        rt = h.rt
        rt.seq = 7
        h.host.settings = {"mulligan": {"rewind": {"maxDepth": 1}}}
        h.session_start(reason)
        assert h.mulligan.config.rewind.max_depth == 1 and h.rt is not rt and h.rt.seq == 0

    def test_unreadable_or_missing_settings_give_defaults(self) -> None:
        h = Harness({"enabled": False})
        h.host.fail["settings"] = RuntimeError("boom")
        h.session_start()
        assert h.mulligan.config.enabled
        h.host.fail.clear()
        h.host.settings = {}
        h.session_start()
        assert h.mulligan.config.enabled

    def test_the_log_destination_follows_the_settings(self, tmp_path: Path) -> None:
        h = Harness({"log": {"file": str(tmp_path / "a.jsonl")}})
        assert h.mulligan.log.path == str(tmp_path / "a.jsonl")
        h.configure({})
        assert h.mulligan.log.path is None

    def test_shutdown_drops_every_runtime(self) -> None:
        h = Harness({})
        h.rt.seq = 3
        h.mulligan.runtimes.get("other").seq = 4
        h.session_shutdown()
        assert h.rt.seq == 0 and h.mulligan.runtimes.get("other").seq == 0

    def test_a_resumed_session_reapplies_its_markers(self) -> None:
        h = Harness({})
        h.add(user("u"))
        h.execute("mulligan_shrink", {"target": {"by_content_includes": "u"}, "replacement": "s"})
        before = h.view()
        h.session_start("resume")
        assert h.view() == before and h.rt.token_baseline is None


class TestRuntime:
    def test_a_fresh_runtime(self) -> None:
        rt = Runtimes().get("s")
        assert (
            rt.session_id,
            rt.seq,
            rt.token_baseline,
            rt.last_turn_index,
            rt.last_filtered,
            rt.last_filter_ts,
        ) == (
            "s",
            0,
            None,
            None,
            None,
            None,
        )
        assert (
            rt.pending_bloat_hits,
            rt.shrink_miss_counts,
            rt.above_high_water,
            rt.rewind_refused_turn_index,
        ) == (
            [],
            {},
            False,
            None,
        )

    def test_the_same_session_gets_the_same_live_object(self) -> None:
        runtimes = Runtimes()
        rt = runtimes.get("s")
        rt.pending_bloat_hits.append(BloatHit("bash", 1))
        assert runtimes.get("s") is rt and runtimes.get("s").pending_bloat_hits == [BloatHit("bash", 1)]

    def test_sessions_are_isolated(self) -> None:
        runtimes = Runtimes()
        a, b = runtimes.get("a"), runtimes.get("b")
        a.next_seq(), a.next_seq()
        a.shrink_miss_counts["x"] = 1
        a.above_high_water = True
        assert (b.seq, b.shrink_miss_counts, b.above_high_water) == (0, {}, False)
        assert a.pending_bloat_hits is not b.pending_bloat_hits

    def test_seq_starts_at_one_and_counts_up(self) -> None:
        runtimes = Runtimes()
        assert [runtimes.next_seq("s") for _ in range(3)] == [1, 2, 3] and runtimes.get("s").seq == 3

    def test_reset_and_clear(self) -> None:
        runtimes = Runtimes()
        old = runtimes.get("a")
        old.above_high_water = True
        runtimes.get("b").seq = 5
        runtimes.reset("a")
        runtimes.reset("never-seen")
        fresh = runtimes.get("a")
        assert fresh is not old and not fresh.above_high_water and runtimes.get("b").seq == 5
        assert fresh.next_seq() == 1
        runtimes.clear()
        runtimes.clear()
        assert "b" not in runtimes

    def test_session_runtime_is_plain_data(self) -> None:
        assert SessionRuntime("s") == SessionRuntime("s")


class TestDebugLog:
    def read(self, path: Path) -> list[dict[str, Any]]:
        return [json.loads(line) for line in path.read_text().splitlines()]

    def test_one_json_line_per_event(self, tmp_path: Path) -> None:
        path = tmp_path / "m.jsonl"
        log = DebugLog(str(path))
        log.info("filter.fire", "s1", {"before": 10, "after": 5})
        log.write("debug", "x", "s1")
        log.error("y", "s1", None)
        lines = self.read(path)
        assert set(lines[0]) == {"ts", "level", "event", "sessionId", "data"}
        assert lines[0]["ts"].endswith("Z") and len(lines[0]["ts"]) == 24
        assert (lines[0]["level"], lines[0]["event"], lines[0]["sessionId"], lines[0]["data"]) == (
            "info",
            "filter.fire",
            "s1",
            {"before": 10, "after": 5},
        )
        assert "data" not in lines[1] and lines[2]["data"] is None

    def test_levels_and_append_only(self, tmp_path: Path) -> None:
        path = tmp_path / "m.jsonl"
        path.write_text('{"pre": "existing"}\n')
        log = DebugLog(str(path))
        log.debug("a", "s")
        log.info("a", "s")
        log.warn("a", "s")
        log.error("a", "s")
        lines = self.read(path)
        assert lines[0] == {"pre": "existing"} and [x["level"] for x in lines[1:]] == [
            "debug",
            "info",
            "warn",
            "error",
        ]

    def test_off_by_default_and_switchable(self, tmp_path: Path) -> None:
        log = DebugLog()
        log.info("a", "s")
        first, second = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
        log.path = str(first)
        log.info("a", "s")
        log.path = str(second)
        log.info("b", "s")
        log.path = None
        log.info("c", "s")
        assert [x["event"] for x in self.read(first)] == ["a"] and [
            x["event"] for x in self.read(second)
        ] == ["b"]

    @pytest.mark.parametrize("where", ["missing-dir/m.jsonl", ""])
    def test_a_bad_destination_goes_to_stderr(
        self, tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        dest = str(tmp_path / where) if where else str(tmp_path)  # a missing directory, or a directory itself
        DebugLog(dest).warn("filter.retire", "s", {"x": 1})
        err = capsys.readouterr().err
        assert err.startswith(f"[mulligan] log: write failed (event=filter.retire level=warn dest={dest}): ")

    def test_unserialisable_data_writes_nothing(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = tmp_path / "m.jsonl"
        circular: dict[str, Any] = {}
        circular["me"] = circular
        log = DebugLog(str(path))
        log.info("a", "s", circular)
        log.info("b", "s", {"x": object()})
        assert not path.exists() and capsys.readouterr().err.count("[mulligan] log: write failed") == 2


def test_fake_host_implements_the_whole_host_api() -> None:
    """The fake host answers every ``ExtensionAPI`` action, so an extension's flag, exit-code and publish
    calls run against it instead of failing with AttributeError."""
    harness = Harness()
    harness.host.flags["goal"] = "ship it"
    assert harness.api.get_flag("--goal") == "ship it"
    assert harness.api.get_flag("absent") is None
    harness.api.publish("mulligan:test", {"n": [1]})
    harness.api.set_exit_code(3)
    assert harness.host.published == [("mulligan:test", {"n": [1]})]
    assert harness.host.exit_code == 3
