"""How the extension host's modules hang together: no import cycle, every bundled extension loaded."""

from __future__ import annotations

import ast
import pkgutil
from pathlib import Path

import caddie.extensions as extensions_pkg
import caddie.extensions.bundled as bundled_pkg
from caddie.extensions import api
from caddie.extensions.loader import BUNDLED, bundled_sources

HOST = Path(extensions_pkg.__file__).parent


def _imports(module: Path) -> set[str]:
    """Every ``caddie.extensions.*`` module ``module`` imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("caddie.extensions"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("caddie.extensions"))
    return found


def test_the_host_modules_import_each_other_in_one_direction_only() -> None:
    graph = {f"caddie.extensions.{p.stem}": _imports(p) for p in HOST.glob("*.py") if p.stem != "__init__"}

    def reaches(start: str, goal: str, seen: frozenset[str] = frozenset()) -> bool:
        return any(
            n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in graph.get(start, ())
        )

    cycles = sorted(m for m in graph if reaches(m, m))
    assert cycles == []
    assert "caddie.extensions.api" not in graph["caddie.extensions.runner"]


def test_every_bundled_package_is_loaded_and_the_contract_covers_it() -> None:
    packages = {m.name for m in pkgutil.iter_modules(bundled_pkg.__path__) if m.ispkg}
    assert packages == set(BUNDLED)
    assert [s.path for s in bundled_sources()] == [f"bundled:{name}" for name in BUNDLED]
    pyproject = (HOST.parents[2] / "pyproject.toml").read_text()
    assert 'source_modules = ["caddie.extensions.bundled"]' in pyproject


def test_the_public_surface_names_only_what_it_has() -> None:
    missing = [name for name in api.__all__ if not hasattr(api, name)]
    assert missing == []
    for name in (
        "register_provider",
        "unregister_provider",
        "register_shortcut",
        "register_message_renderer",
    ):
        assert callable(getattr(api.ExtensionAPI, name))
