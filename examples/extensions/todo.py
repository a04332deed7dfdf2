"""A todo list the model keeps (Pi's todo example): the ``todo`` tool lists, adds, toggles and clears items;
``/todos`` shows them. The list lives in the tool results' ``details``, not in a file, so it follows the
session tree: after ``/tree`` or ``/fork`` it is what it was at that point of the conversation."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from caddie.extensions.api import (
    AbortSignal,
    CommandContext,
    ExtensionAPI,
    ExtensionContext,
    MessageEntry,
    OnUpdate,
    TextContent,
    ToolDefinition,
    ToolResult,
    ToolResultMessage,
)


@dataclass
class Todo:
    id: int
    text: str
    done: bool = False


class TodoParams(BaseModel):
    action: Literal["list", "add", "toggle", "clear"]
    text: str | None = Field(None, description="Todo text (for add)")
    id: int | None = Field(None, description="Todo ID (for toggle)")


def render_list(todos: list[Todo]) -> str:
    return "\n".join(f"[{'x' if t.done else ' '}] #{t.id}: {t.text}" for t in todos) if todos else "No todos"


class TodoList:
    """The list as of the current branch; every change is recorded in the result's details."""

    def __init__(self) -> None:
        self.todos: list[Todo] = []
        self.next_id = 1

    def rebuild(self, ctx: ExtensionContext) -> None:
        self.todos, self.next_id = [], 1
        for entry in ctx.session.branch():
            message = entry.message if isinstance(entry, MessageEntry) else None
            if isinstance(message, ToolResultMessage) and message.tool_name == "todo":
                details = message.details
                if isinstance(details, dict) and isinstance(details.get("todos"), list):
                    self.todos = [Todo(**t) for t in details["todos"]]
                    self.next_id = int(details.get("nextId", len(self.todos) + 1))

    def result(self, action: str, text: str, error: str | None = None) -> ToolResult:
        details: dict[str, Any] = {
            "action": action,
            "todos": [asdict(t) for t in self.todos],
            "nextId": self.next_id,
        }
        if error:
            details["error"] = error
        return ToolResult([TextContent(text)], details=details)

    def apply(self, params: TodoParams) -> ToolResult:
        if params.action == "list":
            return self.result("list", render_list(self.todos))
        if params.action == "add":
            if not params.text:
                return self.result("add", "Error: text required for add", "text required")
            todo = Todo(self.next_id, params.text)
            self.next_id += 1
            self.todos.append(todo)
            return self.result("add", f"Added todo #{todo.id}: {todo.text}")
        if params.action == "toggle":
            if params.id is None:
                return self.result("toggle", "Error: id required for toggle", "id required")
            found = next((t for t in self.todos if t.id == params.id), None)
            if found is None:
                return self.result("toggle", f"Todo #{params.id} not found", f"#{params.id} not found")
            found.done = not found.done
            return self.result("toggle", f"Todo #{found.id} {'completed' if found.done else 'uncompleted'}")
        count = len(self.todos)
        self.todos, self.next_id = [], 1
        return self.result("clear", f"Cleared {count} todos")


def register(api: ExtensionAPI) -> None:
    state = TodoList()

    async def execute(
        tool_call_id: str, params: TodoParams, signal: AbortSignal, on_update: OnUpdate, ctx: object
    ) -> ToolResult:
        return state.apply(params)

    def show(args: str, ctx: CommandContext) -> None:
        done = sum(t.done for t in state.todos)
        header = (
            f"Todos: {done}/{len(state.todos)} completed"
            if state.todos
            else "No todos yet. Ask the agent to add some!"
        )
        ctx.ui.notify(
            "\n".join([header, *(render_list(state.todos).splitlines() if state.todos else [])]), "info"
        )

    api.on("session_start", lambda event, ctx: state.rebuild(ctx))
    api.on("session_tree", lambda event, ctx: state.rebuild(ctx))
    api.register_tool(
        ToolDefinition(
            name="todo",
            label="Todo",
            description="Manage a todo list. Actions: list, add (text), toggle (id), clear",
            parameters=TodoParams,
            execute=execute,
        )
    )
    api.register_command("todos", show, "Show all todos on the current branch")
