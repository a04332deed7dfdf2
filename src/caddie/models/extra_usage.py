"""Pi's warning that a Claude Pro/Max login in a third-party harness is billed per token as extra usage.

Anthropic bills subscription (OAuth) use from tools other than Claude Code as *extra usage*, per token,
not against the plan's limits. Pi 0.84.4 says so once per session when the Anthropic model in use
authenticates with a subscription — at start, on a model switch and after ``/login`` — unless settings
``warnings.anthropicExtraUsage`` is ``false``. ``extra_usage_warning`` decides (pure: nothing is run, no
key command either); the terminal UI shows the text.
"""

from __future__ import annotations

from caddie.ai.model import Model

ANTHROPIC_EXTRA_USAGE_WARNING = (
    "Anthropic subscription auth is active. Third-party harness usage draws from extra usage and is billed "
    "per token, not your Claude plan limits. Manage extra usage at https://claude.ai/settings/usage. "
    "Disable this warning in /settings."
)
SUBSCRIPTION_TOKEN_PREFIX = "sk-ant-oat"
"""How a Claude Pro/Max token starts (``ANTHROPIC_OAUTH_TOKEN``, or one pasted as a key)."""


def extra_usage_warning(
    model: Model | None,
    has_login: bool,
    plain_keys: list[str | None],
    enabled: bool = True,
) -> str | None:
    """The warning to show for ``model``, or None: ``has_login`` — auth.json holds an Anthropic login;
    ``plain_keys`` — the literal keys that would otherwise be sent (stored key, environment); ``enabled`` —
    settings ``warnings.anthropicExtraUsage`` is not ``false``."""
    if model is None or model.provider != "anthropic" or not enabled:
        return None
    subscription = has_login or any(
        isinstance(key, str) and key.startswith(SUBSCRIPTION_TOKEN_PREFIX) for key in plain_keys
    )
    return ANTHROPIC_EXTRA_USAGE_WARNING if subscription else None
