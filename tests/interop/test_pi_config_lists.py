"""Pi's own lists, read from the installed Pi 0.84.4: every option of ``pi --help`` (long and short), every
settings key of its docs/settings.md and every ``PI_*`` variable of its docs/environment-variables.md has a
fate in caddie — parsed the same, or known and warned about — so a key a new Pi adds cannot slip through."""

from __future__ import annotations

import re
import subprocess

from caddie.cli_args import base_parser
from caddie.config.environment import PI_VARIABLES
from caddie.config.settings_keys import BY_KEY
from caddie.models.models_json import MODEL_FIELDS, PROVIDER_FIELDS, REFUSED_MODEL_FIELDS
from tests.interop.pi import PI_DIR, PI_PACKAGE, pi_problem, require_pi, skip_or_fail


def _pi_doc(name: str) -> str:
    problem = pi_problem()
    if problem is not None:
        skip_or_fail(problem)
    return (PI_PACKAGE / "docs" / name).read_text(encoding="utf-8")


def test_every_option_of_pis_help_is_one_of_caddies() -> None:
    node = require_pi()
    out = subprocess.run(
        [node, str(PI_DIR / "node_modules" / ".bin" / "pi"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "PI_OFFLINE": "1"},
    ).stdout
    listed = re.findall(r"^  (--?[a-z][\w-]*)(?:, (-[a-z]+))?", out, re.MULTILINE)
    pi_options = {o for pair in listed for o in pair if o}
    assert {
        "--no-context-files",
        "-nc",
        "--tools",
        "-t",
        "--approve",
        "-a",
    } <= pi_options  # the help was read
    ours = {o for action in base_parser(add_help=True)._actions for o in action.option_strings}
    assert sorted(pi_options - ours) == []


def test_every_settings_key_in_pis_docs_has_a_fate() -> None:
    keys = set(re.findall(r"^\| `([\w.]+)` \|", _pi_doc("settings.md"), re.MULTILINE))
    assert {"defaultThinkingLevel", "retry.provider.timeoutMs", "terminal.trueColor"} <= keys
    assert sorted(k for k in keys if k not in BY_KEY) == []
    assert all(BY_KEY[k].pi for k in keys)


def test_every_pi_variable_in_pis_docs_has_a_fate() -> None:
    text = _pi_doc("environment-variables.md")
    process_table = text[text.index("PI_CODING_AGENT_DIR") - 10 :]
    names = set(re.findall(r"^\| `(PI_[A-Z_]+)` \|", process_table, re.MULTILINE))
    assert {"PI_OFFLINE", "PI_CODING_AGENT_DIR", "PI_CACHE_RETENTION"} <= names
    assert sorted(names - {v.name for v in PI_VARIABLES}) == []


def test_every_models_json_field_in_pis_docs_has_a_fate() -> None:
    text = _pi_doc("models.md")
    provider_table = text[text.index("| `baseUrl` |") : text.index("| `modelOverrides` |") + 200]
    model_table = text[text.index("| `id` | Yes |") : text.index("| `compat` | No |") + 20]
    provider_fields = set(re.findall(r"^\| `(\w+)` \|", provider_table, re.MULTILINE))
    model_fields = set(re.findall(r"^\| `(\w+)` \|", model_table, re.MULTILINE))
    assert {"baseUrl", "modelOverrides"} <= provider_fields and {"id", "samplingParams"} <= model_fields
    assert sorted(provider_fields - PROVIDER_FIELDS) == []
    assert sorted(model_fields - MODEL_FIELDS - set(REFUSED_MODEL_FIELDS)) == []


ENV_READ = re.compile(r"""process\.env\.(PI_[A-Z_]+)|["'](PI_[A-Z_]+)["']""")
"""``process.env.PI_X`` or a ``"PI_X"`` literal (read through a constant or ``process.env[...]``)."""


def test_every_pi_variable_pis_code_reads_has_a_fate() -> None:
    _pi_doc("environment-variables.md")  # skips (fails under CI) without Pi
    root = PI_PACKAGE.parent
    names: set[str] = set()
    for package in ("pi-coding-agent", "pi-ai", "pi-tui"):
        for path in (root / package / "dist").rglob("*.js"):
            text = path.read_text(encoding="utf-8", errors="replace")
            names |= {n for pair in ENV_READ.findall(text) for n in pair if n}
    assert {"PI_OFFLINE", "PI_OAUTH_CALLBACK_HOST"} <= names
    assert sorted(names - {v.name for v in PI_VARIABLES}) == []
