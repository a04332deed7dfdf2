"""caddie's built-in tools, the same for the model as Pi 0.84's: read, bash, edit, write (+ grep, find, ls).

``create_builtin_tools(cwd)`` returns all seven by name; ``DEFAULT_ACTIVE`` names the ones a session turns
on by default. Before calling ``execute`` the agent loop runs ``validate_arguments`` (see
``caddie.tools.validation``), which also applies ``prepare_arguments``.
"""

from __future__ import annotations

from caddie.sandbox import Sandbox
from caddie.tools.base import ToolDefinition, ToolError, ToolResult
from caddie.tools.bash import EnvPolicy, EnvSource, create_bash_tool, inherited_env, session_env
from caddie.tools.edit import create_edit_tool
from caddie.tools.find import create_find_tool
from caddie.tools.grep import create_grep_tool
from caddie.tools.ls import create_ls_tool
from caddie.tools.mutation_queue import file_mutation_lock, with_file_mutation_queue
from caddie.tools.operations import (
    BashOperations,
    EditOperations,
    FileOperations,
    FindOperations,
    HostFiles,
    LsOperations,
    ReadOperations,
    ShellExec,
    ToolOperations,
    WriteOperations,
)
from caddie.tools.read import create_read_tool
from caddie.tools.truncate import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    GREP_MAX_LINE_LENGTH,
    TruncationResult,
    format_size,
    truncate_head,
    truncate_line,
    truncate_tail,
)
from caddie.tools.validation import ToolArgumentError, validate_arguments
from caddie.tools.write import create_write_tool

ALL_TOOL_NAMES = ["read", "bash", "edit", "write", "grep", "find", "ls"]
DEFAULT_ACTIVE = ["read", "bash", "edit", "write"]


def create_builtin_tools(
    cwd: str,
    *,
    shell_path: str | None = None,
    command_prefix: str | None = None,
    env: EnvSource = None,
    env_policy: EnvPolicy | None = None,
    auto_resize_images: bool = True,
    operations: ToolOperations | None = None,
    sandbox: Sandbox | None = None,
) -> dict[str, ToolDefinition]:
    """All built-in tools for ``cwd``, by name, in Pi's order.

    ``shell_path`` / ``command_prefix`` are Pi's ``shellPath`` / ``shellCommandPrefix`` settings. ``env`` adds
    variables to every bash command: a mapping, or a callable asked before each command (build the session
    variables with ``session_env(session_id=..., session_file=..., provider=..., model=...)``). ``env_policy``
    (settings ``shellEnv``) keeps secret-looking variables from caddie's environment away from commands.
    ``operations`` moves file access (read, edit, write) and commands (bash) elsewhere, e.g. into an editor.
    An active ``sandbox`` runs bash inside it and gives every file tool its path policy.
    """
    files = HostFiles(operations.files) if operations and operations.files else None
    shell = operations.shell if operations else None
    guard = sandbox.file_guard if sandbox is not None else None
    return {
        "read": create_read_tool(cwd, auto_resize_images=auto_resize_images, operations=files, guard=guard),
        "bash": create_bash_tool(
            cwd,
            shell_path=shell_path,
            command_prefix=command_prefix,
            env=env,
            env_policy=env_policy,
            shell=shell,
            sandbox=sandbox,
        ),
        "edit": create_edit_tool(cwd, operations=files, guard=guard),
        "write": create_write_tool(cwd, operations=files, guard=guard),
        "grep": create_grep_tool(cwd, guard=guard),
        "find": create_find_tool(cwd, guard=guard),
        "ls": create_ls_tool(cwd, guard=guard),
    }


__all__ = [
    "ALL_TOOL_NAMES",
    "DEFAULT_ACTIVE",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "GREP_MAX_LINE_LENGTH",
    "BashOperations",
    "EditOperations",
    "EnvPolicy",
    "EnvSource",
    "FileOperations",
    "FindOperations",
    "LsOperations",
    "ReadOperations",
    "ShellExec",
    "ToolArgumentError",
    "ToolDefinition",
    "ToolError",
    "ToolOperations",
    "ToolResult",
    "TruncationResult",
    "WriteOperations",
    "create_bash_tool",
    "create_builtin_tools",
    "create_edit_tool",
    "create_find_tool",
    "create_grep_tool",
    "create_ls_tool",
    "create_read_tool",
    "create_write_tool",
    "file_mutation_lock",
    "format_size",
    "inherited_env",
    "session_env",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
    "validate_arguments",
    "with_file_mutation_queue",
]
