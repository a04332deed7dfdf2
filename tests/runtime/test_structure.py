"""The shape the house keeps: no import circle among the runtime's or the modes' modules, no class with more
than 40 methods of its own, and the modes on the one session API (``AgentSession`` is a ``Session``)."""

from __future__ import annotations

import ast
from pathlib import Path

import caddie
from caddie.runtime.session import AgentSession
from caddie.runtime.session_api import Session

SRC = Path(caddie.__file__).parent
MAX_METHODS = 40
STILL_TOO_BIG: set[str] = set()
"""None left: the TUI's subclass chain became composed parts (issue #25, the TUI's part)."""


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, package: str) -> set[str]:
    """Every caddie module ``path`` imports, anywhere in the file (top level, TYPE_CHECKING, functions)."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            base = node.module
            if node.level:  # relative: resolve against this module's package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, node.module])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("caddie.")}


def circles(package_dirs: list[Path]) -> list[list[str]]:
    modules = {module_name(p): p for d in package_dirs for p in d.rglob("*.py")}
    graph = {
        name: {
            other for other in imports_of(path, name.rpartition(".")[0]) if other in modules and other != name
        }
        for name, path in modules.items()
    }
    # Tarjan's strongly connected components: a component of two or more modules is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return out


def test_no_import_circle_among_runtime_or_modes_modules() -> None:
    assert circles([SRC / "runtime", SRC / "modes"]) == []


def test_no_class_has_more_than_40_methods_of_its_own() -> None:
    too_big: dict[str, int] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                count = sum(isinstance(b, ast.FunctionDef | ast.AsyncFunctionDef) for b in node.body)
                name = f"{module_name(path)}.{node.name}"
                if count > MAX_METHODS and name not in STILL_TOO_BIG:
                    too_big[name] = count
    assert too_big == {}


def test_the_session_the_modes_get_is_the_documented_api() -> None:
    def as_api(session: AgentSession) -> Session:
        return session  # mypy checks that AgentSession implements every call of Session

    documented = {n for n in vars(Session) if not n.startswith("_")}
    implemented = {n for n in vars(AgentSession) if not n.startswith("_")}
    assert implemented == documented  # nothing public beyond the documented API (``core`` is per instance)
    assert len(documented) <= MAX_METHODS


def test_nothing_outside_the_runtime_reaches_past_the_session_api() -> None:
    """``session.core`` is for the factory and tests: the modes, the SDK and the command line use the API."""
    reaches = []
    outside = [p for p in SRC.rglob("*.py") if not p.is_relative_to(SRC / "runtime")]
    for path in outside:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "core":
                reaches.append(f"{module_name(path)}:{node.lineno}")
    assert len(outside) > 100 and reaches == []
