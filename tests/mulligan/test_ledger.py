"""The file ledger of a hidden span: reads, writes, and side-effecting shell commands."""

from __future__ import annotations

from typing import Any

import pytest

from caddie.extensions.api import AgentMessage
from caddie.extensions.bundled.mulligan.ledger import FileLedger, extract_file_ledger, is_read_only_bash
from tests.mulligan.fakehost import assistant, assistant_text, call, result, user


def tool(name: str, **arguments: Any) -> AgentMessage:
    return assistant(call(f"id-{name}-{len(arguments)}", name, **arguments))


def bash(command: str) -> AgentMessage:
    return tool("bash", command=command)


def ledger_of(*messages: AgentMessage) -> FileLedger:
    return extract_file_ledger(list(messages), range(len(messages)))


def test_the_pinned_example() -> None:
    out = ledger_of(tool("read", path="a.ts"), tool("edit", path="b.ts"), bash("git commit"), bash("ls"))
    assert out == FileLedger(("a.ts",), ("b.ts",), ("git commit",))
    assert out.to_json() == {
        "readFiles": ["a.ts"],
        "modifiedFiles": ["b.ts"],
        "bashSideEffects": ["git commit"],
    }


def test_empty_spans_and_lists_give_an_empty_ledger() -> None:
    assert extract_file_ledger([tool("read", path="x")], []) == FileLedger()
    assert extract_file_ledger([], [0, 1, 2]) == FileLedger()


class TestReadsAndWrites:
    def test_read_takes_path_or_file_path(self) -> None:
        assert ledger_of(tool("read", path="src/a.ts")).read_files == ("src/a.ts",)
        assert ledger_of(tool("read", file_path="b.ts")).read_files == ("b.ts",)

    def test_search_tools_count_as_reads(self) -> None:
        msgs = [
            tool("grep", path="src"),
            tool("rg", path="lib"),
            tool("find", path="dist"),
            tool("ls", path="g.ts"),
        ]
        assert ledger_of(*msgs).read_files == ("dist", "g.ts", "lib", "src")

    def test_a_read_without_a_string_path_adds_nothing(self) -> None:
        assert ledger_of(tool("read", pattern="x"), tool("read", path=42)).read_files == ()

    def test_reads_are_deduplicated_and_sorted(self) -> None:
        assert ledger_of(
            tool("read", path="z.ts"), tool("read", path="a.ts"), tool("read", path="z.ts")
        ).read_files == (
            "a.ts",
            "z.ts",
        )

    def test_write_and_edit_are_modifications(self) -> None:
        assert ledger_of(tool("write", path="old.ts"), tool("edit", path="new.ts")).modified_files == (
            "new.ts",
            "old.ts",
        )

    def test_unknown_tools_are_ignored(self) -> None:
        assert ledger_of(tool("mulligan_rewind", path="x")) == FileLedger()


class TestBash:
    def test_a_redirect_target_is_modified(self) -> None:
        out = ledger_of(bash("echo x > out.txt"))
        assert out.modified_files == ("out.txt",) and out.bash_side_effects == ("echo x > out.txt",)

    def test_file_commands_report_their_paths(self) -> None:
        out = ledger_of(bash("rm file.ts"), bash("mv a.ts b.ts"), bash("sed -i 's/a/b/' f.ts"))
        assert out.modified_files == ("a.ts", "b.ts", "f.ts", "file.ts")

    def test_dev_null_is_not_a_file(self) -> None:
        out = ledger_of(bash("echo x > /dev/null"))
        assert out.modified_files == () and out.bash_side_effects == ("echo x > /dev/null",)

    def test_git_commit_is_a_side_effect_without_paths(self) -> None:
        out = ledger_of(bash('git commit -m "wip"'))
        assert out.modified_files == () and out.bash_side_effects == ('git commit -m "wip"',)

    @pytest.mark.parametrize("command", ["node script.js", "npm install", "make build/out.o"])
    def test_arguments_of_other_programs_are_not_paths(self, command: str) -> None:
        assert ledger_of(bash(command)).modified_files == ()

    def test_curl_output_file_but_not_the_url(self) -> None:
        assert ledger_of(bash("curl -o out.txt https://x.com/y")).modified_files == ("out.txt",)
        assert ledger_of(bash("curl https://x.com/y")).modified_files == ()

    def test_modifications_are_deduplicated_across_tools(self) -> None:
        assert ledger_of(tool("edit", path="z.ts"), bash("rm z.ts")).modified_files == ("z.ts",)

    @pytest.mark.parametrize(
        "command",
        ["ls", "cat foo", "grep bar", "wc -l x", "find . -name '*.ts'", "echo done", "/usr/bin/ls -la"],
    )
    def test_read_only_commands_are_omitted(self, command: str) -> None:
        assert ledger_of(bash(command)).bash_side_effects == ()

    @pytest.mark.parametrize(
        "command", ["cat foo | grep bar", "ls 2>&1 | cat", "FOO=1 ls && pwd; echo 'a;b'", "test 1 >= 0"]
    )
    def test_read_only_pipelines_are_omitted(self, command: str) -> None:
        assert is_read_only_bash(command)

    def test_other_commands_are_listed_verbatim_and_sorted(self) -> None:
        out = ledger_of(bash("npm install"), bash("git commit"), bash("node script.js"))
        assert out.bash_side_effects == ("git commit", "node script.js", "npm install")

    def test_unknown_commands_are_side_effects(self) -> None:
        assert ledger_of(bash("my-weird-tool --foo")).bash_side_effects == ("my-weird-tool --foo",)

    @pytest.mark.parametrize("command", ["find . -delete", "find . -exec rm {} \\;"])
    def test_destructive_find_is_a_side_effect(self, command: str) -> None:
        assert ledger_of(bash(command)).bash_side_effects == (command,)

    def test_tee_writes_its_argument(self) -> None:
        out = ledger_of(bash("ls | tee out.txt"))
        assert out.bash_side_effects == ("ls | tee out.txt",) and out.modified_files == ("out.txt",)

    def test_stderr_to_dev_null_still_counts_as_a_redirect(self) -> None:
        assert ledger_of(bash("ls 2>/dev/null")).bash_side_effects == ("ls 2>/dev/null",)

    def test_identical_commands_are_deduplicated(self) -> None:
        assert ledger_of(bash("git commit"), bash("git commit")).bash_side_effects == ("git commit",)

    @pytest.mark.parametrize("arguments", [{"command": ""}, {}])
    def test_empty_commands_are_ignored(self, arguments: dict[str, str]) -> None:
        assert ledger_of(tool("bash", **arguments)) == FileLedger()

    def test_quoted_separators_do_not_split(self) -> None:
        assert ledger_of(bash("echo 'a && rm -rf /' ; ls")).bash_side_effects == ()

    @pytest.mark.parametrize(
        "token", ["-rf", "https://a.b/c", "user@host:x", "123", "&1", "s/a/b/g", ".", ".."]
    )
    def test_tokens_that_are_not_paths(self, token: str) -> None:
        assert ledger_of(bash(f"rm {token}")).modified_files == ()

    @pytest.mark.parametrize("token", ["dir/x", "a.txt", "./x", "../y", ".env"])
    def test_tokens_that_look_like_paths(self, token: str) -> None:
        assert ledger_of(bash(f"rm {token}")).modified_files == (token,)


class TestRange:
    def test_only_assistant_messages_in_range_are_scanned(self) -> None:
        msgs = [tool("read", path="a.ts"), result("x"), user("read b.ts"), tool("read", path="out.ts")]
        assert extract_file_ledger(msgs, [0, 1, 2]).read_files == ("a.ts",)

    def test_out_of_bounds_indices_are_skipped(self) -> None:
        assert extract_file_ledger([tool("read", path="a.ts")], [0, 5, 99, -1]).read_files == ("a.ts",)

    def test_text_blocks_are_not_tool_calls(self) -> None:
        assert ledger_of(assistant_text("read a.ts")) == FileLedger()

    def test_sorting_is_by_utf16_code_unit_like_javascript(self) -> None:
        assert ledger_of(tool("read", path="😀"), tool("read", path="\uffff")).read_files == ("😀", "\uffff")
