"""``caddie auth print-api-key | print-bearer-token | check``: Pi's ``pi auth`` commands, for scripts and tools
that need the credential caddie would send (a login's token is renewed first when due).

    caddie auth print-api-key --provider <provider> [--model <model>]
    caddie auth print-bearer-token --provider <provider> [--model <model>] [--min-expiry <duration>]
    caddie auth check --provider <provider> [--model <model>] [--json] [--credentials] [--no-refresh]

``print-*`` print the credential alone on stdout (exit 0) or one ``Error: …`` line on stderr (exit 1).
``check`` prints ``ready``, ``not_ready`` or ``invalid`` (or a JSON object with the reason) and exits 0, 1
or 2; ``--credentials`` prints the credential instead of the status; ``--no-refresh`` never renews a login
(and never writes auth.json). Texts and exit codes are Pi's.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from dataclasses import dataclass

from caddie.ai.model import Model
from caddie.ai.oauth.types import LoginFailed
from caddie.errors import UsageError
from caddie.models import ModelNotFound, ModelRegistry
from caddie.models.oauth import MIN_VALIDITY_MS, LoginExpired

USAGE = """Usage:
  caddie auth print-api-key [--provider <provider>] [--model <model>]
  caddie auth print-bearer-token [--provider <provider>] [--model <model>] [--min-expiry <duration>]
  caddie auth check [--provider <provider>] [--model <model>] [--json] [--credentials] [--no-refresh]

Auth commands require at least one of --provider or --model. Checks refresh expired OAuth credentials by default; --no-refresh prevents this. --credentials emits the credential, or includes it in JSON output."""

KINDS = {"check": "check", "print-api-key": "api_key", "print-bearer-token": "bearer_token"}
NAMES = {"check": "auth check", "api_key": "auth print-api-key", "bearer_token": "auth print-bearer-token"}
DEFAULT_BEARER_MIN_EXPIRY_MS = 30 * 60_000
_DURATION = re.compile(r"^(\d+)(ms|s|m|h)$", re.IGNORECASE)
_UNITS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000}


class AuthCommandError(UsageError):
    """A usage or credential problem; the message is Pi's text. ``late``: found while checking the
    arguments' meaning (``check`` then exits 2, as Pi's does), not while reading them."""

    def __init__(self, message: str, late: bool = False) -> None:
        super().__init__(message)
        self.late = late


@dataclass
class AuthCommand:
    kind: str
    provider: str | None = None
    model: str | None = None
    json: bool = False
    credentials: bool = False
    no_refresh: bool = False
    min_expiry_ms: int | None = None


def parse(args: list[str]) -> AuthCommand:
    """``args`` after ``auth``; ``AuthCommandError`` with Pi's texts for what is wrong."""
    sub = args[0] if args else ""
    kind = KINDS.get(sub)
    if kind is None:
        raise AuthCommandError(
            f'Unknown auth command "{sub}". Use "caddie auth print-api-key", "caddie auth print-bearer-token", '
            'or "caddie auth check".'
        )
    command = AuthCommand(kind)
    rest = iter(args[1:])
    for arg in rest:
        if arg == "--min-expiry":
            if kind != "bearer_token":
                raise AuthCommandError("--min-expiry is only supported by print-bearer-token")
            match = _DURATION.match(next(rest, ""))
            if match is None:
                raise AuthCommandError("--min-expiry must use a duration such as 30m or 1h")
            command.min_expiry_ms = int(match.group(1)) * _UNITS[match.group(2).lower()]
        elif arg in ("--json", "--credentials", "--no-refresh"):
            if kind != "check":
                raise AuthCommandError(f"{arg} is only supported by auth check")
            setattr(command, arg[2:].replace("-", "_"), True)
        elif arg in ("--provider", "--model"):
            value = next(rest, None)
            if value is None or value.startswith("--"):
                raise AuthCommandError(f"{arg} needs a value")
            setattr(command, arg[2:], value.strip() or None)
        elif arg.startswith("--"):
            raise AuthCommandError(f'Unknown option {arg} for "{NAMES[kind]}".')
        else:
            raise AuthCommandError("Auth commands only accept --provider and --model", late=True)
    if not command.provider and not command.model:
        raise AuthCommandError(
            "Auth checks require --provider <provider> or --model <model>"
            if kind == "check"
            else "Credential printing requires --provider <provider> or --model <model>",
            late=True,
        )
    return command


def _model(registry: ModelRegistry, command: AuthCommand) -> Model | None:
    if command.model is None:
        return registry.provider_default(command.provider) if command.provider else None
    ref = command.model
    if command.provider and not ref.startswith(f"{command.provider}/"):
        ref = f"{command.provider}/{ref}"
    try:
        return registry.resolve(ref)
    except ModelNotFound:
        raise AuthCommandError(
            f'Model "{command.model}" not found. Use --list-models to see available models.'
        ) from None


def _known(registry: ModelRegistry, provider: str) -> bool:
    return provider in registry.providers() or registry.oauth_flow(provider) is not None


async def print_credential(registry: ModelRegistry, command: AuthCommand) -> str:
    if command.provider and not _known(registry, command.provider):
        raise AuthCommandError(
            f'Unknown provider "{command.provider}". Use --list-models to see available providers.'
        )
    model = _model(registry, command)
    provider = model.provider if model is not None else command.provider
    assert provider is not None
    login = registry.auth.oauth(provider) is not None
    if command.kind == "api_key":
        if login:
            raise AuthCommandError(f'Provider "{provider}" is configured with OAuth, not an API key')
        key = registry.api_key_for(model) if model is not None else None
        if not key or key.startswith("caddie-no-key"):
            raise AuthCommandError("No usable API key is configured")
        return key
    if not login:
        raise AuthCommandError(f'Provider "{provider}" is not configured with an OAuth bearer token')
    try:
        minimum = max(MIN_VALIDITY_MS, command.min_expiry_ms or DEFAULT_BEARER_MIN_EXPIRY_MS)
        auth = await registry.oauth.request_auth(provider, minimum)
    except (LoginExpired, LoginFailed, OSError) as exc:
        raise AuthCommandError(str(exc)) from None
    token = auth.api_key if auth is not None else None
    if not token and auth is not None:
        header = next((v for k, v in auth.headers.items() if k.lower() == "authorization"), "")
        token = header[7:] if header.lower().startswith("bearer ") else None
    if not token:
        raise AuthCommandError("No usable OAuth bearer token is configured")
    return token


async def check(registry: ModelRegistry, command: AuthCommand) -> tuple[dict[str, str], str | None]:
    """(Pi's result object, the credential when asked for and available)."""
    provider = command.provider
    if command.model is not None:
        model = _model(registry, command)
        assert model is not None
        provider = model.provider
    assert provider is not None
    if not _known(registry, provider):
        return {"status": "not_ready", "provider": provider, "reason": "provider_not_found"}, None
    login = registry.auth.oauth(provider)
    try:
        if login is not None:
            if registry.oauth_flow(provider) is None:
                return {"status": "invalid", "provider": provider, "reason": "invalid_state"}, None
            credential = str(login.get("access") or "")
            if not command.no_refresh:
                auth = await registry.oauth.request_auth(provider)
                credential = (auth.api_key if auth is not None else None) or credential
            result = {"status": "ready", "provider": provider, "authType": "oauth"}
            return result, credential if command.credentials else None
        model = _model(registry, command) if command.model is None else registry.resolve(command.model)
        if not registry.has_key(provider) or model is None:
            return {"status": "not_ready", "provider": provider, "reason": "credentials_not_configured"}, None
        key = registry.api_key_for(model) if command.credentials else None
        if command.credentials and not key:
            return {"status": "not_ready", "provider": provider, "reason": "credential_not_available"}, None
        return {"status": "ready", "provider": provider, "authType": "api_key"}, key
    except (LoginExpired, LoginFailed, OSError, ModelNotFound):
        return {"status": "invalid", "provider": provider, "reason": "invalid_state"}, None


def run_auth_command(args: list[str]) -> int:
    """The ``caddie auth`` subcommand (``args`` after ``auth``)."""
    if not args or args[0] == "help" or "--help" in args or "-h" in args:
        print(USAGE)
        return 0
    try:
        command = parse(args)
    except AuthCommandError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2 if exc.late and args[0] == "check" else 1
    registry = ModelRegistry()
    if command.kind != "check":
        try:
            print(asyncio.run(print_credential(registry, command)))
        except AuthCommandError as exc:
            print(f"Error: {exc}", file=sys.stderr)
            return 1
        return 0
    try:
        result, credential = asyncio.run(check(registry, command))
    except AuthCommandError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    if command.credentials and result["status"] == "ready" and not credential:
        result = {"status": "not_ready", "provider": result["provider"], "reason": "credential_not_available"}
        credential = None
    if command.json:
        print(
            json.dumps(
                {**result, **({"credentials": credential} if credential else {})}, separators=(",", ":")
            )
        )
    else:
        print(credential or result["status"])
    return {"ready": 0, "not_ready": 1}.get(result["status"], 2)
