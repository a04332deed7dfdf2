"""The SDKs are used only through their public API, and every SDK dependency is capped below its next major
(a minor release that renames a private name, or a new major, must not break a pip user's requests)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SDKS = (
    "openai",
    "anthropic",
    "google-genai",
    "google-auth",
    "boto3",
    "mcp",
    "agent-client-protocol",
    "httpx2",
    "websockets",
    "jiter",
    "ray",
)
SDK_MODULES = (
    "openai",
    "anthropic",
    "google",
    "boto3",
    "botocore",
    "mcp",
    "acp",
    "httpx2",
    "websockets",
    "jiter",
)
PRIVATE_MODULE = re.compile(rf"\b(?:{'|'.join(SDK_MODULES)})(?:\.[a-z0-9_]+)*\._[a-z]")
"""``openai._models``, ``from anthropic._base_client import …``, ``import_module("openai._utils…")``."""
PRIVATE_CLIENT_ATTRIBUTE = re.compile(r"\b(?:client|sdk|_client|api_client)\._[a-z]")
"""``client._ensure_access_token()``, ``client._client``…: a private member of an SDK client."""


def dependency_specs() -> dict[str, str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        specs.extend(extra)
    found: dict[str, str] = {}
    for spec in specs:
        name = re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0].lower()
        found.setdefault(name, spec)
        if "<" in spec:
            found[name] = spec
    return found


def test_every_sdk_dependency_is_capped_below_its_next_major() -> None:
    specs = dependency_specs()
    uncapped = [spec for name, spec in specs.items() if name in SDKS and "<" not in spec]
    assert uncapped == []
    assert {"openai", "anthropic", "mcp"} <= set(specs)


def test_no_sdk_private_module_or_client_member_is_used_in_src() -> None:
    offenders = []
    for path in sorted((REPO / "src" / "caddie").rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if "``" in code:  # prose in a docstring naming what is avoided
                continue
            if PRIVATE_MODULE.search(code) or PRIVATE_CLIENT_ATTRIBUTE.search(code):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert offenders == []
