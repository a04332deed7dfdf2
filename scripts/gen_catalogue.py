"""Generate caddie's model catalogue (src/caddie/ai/catalogue.json) from the catalogue Pi ships.

The facts — providers, their environment variables and base URLs, and per model the context window, max
output, input modalities, reasoning support, prices, compat flags and thinking-level maps — are read from
an installed ``@earendil-works/pi-ai`` by ``scripts/pi_catalogue.mjs`` (run with Node), then kept for every
model whose API caddie speaks (``caddie.ai.model.Api``). Nothing is typed in by hand.

    uv run python scripts/gen_catalogue.py                 # rewrite src/caddie/ai/catalogue.json
    uv run python scripts/gen_catalogue.py --check         # exit 1 when the committed file is stale
    uv run python scripts/gen_catalogue.py --out FILE      # write elsewhere

Pi is looked for in ``--pi-dir``, else ``$CADDIE_PI_DIR``, else ``.cache/pi`` of the checkout (where
``.ci/run`` installs it: ``npm install --prefix .cache/pi node@22 @earendil-works/pi-coding-agent@0.84.4``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from caddie.ai.model import Api  # noqa: E402

DEFAULT_OUT = REPO / "src" / "caddie" / "ai" / "catalogue.json"
NODE_SCRIPT = Path(__file__).resolve().parent / "pi_catalogue.mjs"
PI_AI = Path("node_modules") / "@earendil-works" / "pi-ai"

CADDIE_ONLY = ("faux", "anthropic-bedrock", "anthropic-vertex")
"""APIs Pi's table does not use (Pi reaches Bedrock through AWS's Converse API and has no Claude on Vertex)."""
APIS = tuple(a for a in get_args(Api) if a not in CADDIE_ONLY)
"""The APIs caddie speaks; a provider is kept when at least one of its models uses one of them."""

BEARER_ONLY_KEYS = frozenset({"ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_OAUTH_TOKEN"})
"""Variables Pi sends as ``Authorization: Bearer`` (OAuth and auth tokens), not as the API key caddie sends:
left out of a provider's key variables."""

MODEL_FIELDS = (
    "id",
    "name",
    "api",
    "baseUrl",
    "reasoning",
    "input",
    "cost",
    "contextWindow",
    "maxTokens",
    "headers",
    "compat",
    "thinkingLevelMap",
)
PLACEHOLDER = re.compile(r"\{([A-Z][A-Z0-9_]*)\}")


def pi_dir(explicit: str | None) -> Path:
    return Path(explicit or os.environ.get("CADDIE_PI_DIR") or REPO / ".cache" / "pi")


def find_node(root: Path) -> str:
    for candidate in (root / "node_modules" / "node" / "bin" / "node", shutil.which("node")):
        if candidate and Path(candidate).exists():
            return str(candidate)
    raise SystemExit(f"gen_catalogue: Node not found (looked in {root} and on PATH)")


def read_pi(root: Path) -> dict[str, Any]:
    """Pi's provider table as ``scripts/pi_catalogue.mjs`` prints it."""
    package = root / PI_AI
    if not (package / "package.json").exists():
        raise SystemExit(f"gen_catalogue: {package} is not installed (set --pi-dir or CADDIE_PI_DIR)")
    done = subprocess.run(
        [find_node(root), str(NODE_SCRIPT), str(package)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"gen_catalogue: {NODE_SCRIPT.name} failed: {done.stderr.strip()}")
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _most_common(values: list[str]) -> str:
    return max(sorted(set(values)), key=values.count)


def build(pi: dict[str, Any]) -> dict[str, Any]:
    """caddie's catalogue from Pi's table: only the models whose API caddie speaks."""
    providers: dict[str, Any] = {}
    for p in sorted(pi["providers"], key=lambda p: p["id"]):
        models = [m for m in p["models"] if m.get("api") in APIS]
        if not models:
            continue
        models.sort(key=lambda m: m["id"])
        apis = [m["api"] for m in models]
        urls = [m.get("baseUrl") or "" for m in models]
        base_url = p.get("baseUrl") or _most_common(urls)
        placeholders = sorted({name for url in [base_url, *urls] for name in PLACEHOLDER.findall(url)})
        entry: dict[str, Any] = {
            "name": p["name"],
            "api": _most_common(apis),
            "baseUrl": base_url,
            "envKeys": [k for k in p.get("envKeys") or [] if k not in BEARER_ONLY_KEYS],
        }
        if placeholders:
            entry["baseUrlEnv"] = placeholders
        if p.get("loginLabel"):
            entry["loginLabel"] = p["loginLabel"]
        if p.get("headers"):
            entry["headers"] = p["headers"]
        entry["models"] = [{key: m[key] for key in MODEL_FIELDS if m.get(key) is not None} for m in models]
        providers[p["id"]] = entry
    return {"source": f"{pi['package']} {pi['version']}", "apis": list(APIS), "providers": providers}


def render(catalogue: dict[str, Any]) -> str:
    """Stable JSON text: one provider field per line and one model per line, so diffs stay readable."""

    def dumps(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    lines = ["{", f'"source":{dumps(catalogue["source"])},', f'"apis":{dumps(catalogue["apis"])},']
    lines.append('"providers":{')
    names = list(catalogue["providers"])
    for n, name in enumerate(names):
        entry = catalogue["providers"][name]
        lines.append(f"{dumps(name)}:{{")
        for key, value in entry.items():
            if key != "models":
                lines.append(f"  {dumps(key)}:{dumps(value)},")
        lines.append('  "models":[')
        models = entry["models"]
        for i, model in enumerate(models):
            lines.append("    " + dumps(model) + ("," if i < len(models) - 1 else ""))
        lines.append("  ]")
        lines.append("}" + ("," if n < len(names) - 1 else ""))
    lines.append("}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def generate(root: Path) -> str:
    return render(build(read_pi(root)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--pi-dir", help="where Node 22 and Pi are installed (default $CADDIE_PI_DIR or .cache/pi)"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the file to write")
    parser.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    args = parser.parse_args(argv)
    text = generate(pi_dir(args.pi_dir))
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is stale: run uv run python scripts/gen_catalogue.py", file=sys.stderr)
            return 1
        print(f"{args.out} is up to date")
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out} ({len(json.loads(text)['providers'])} providers)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
