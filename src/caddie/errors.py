"""caddie's exceptions: one base, ``CaddieError``, and the few kinds a caller tells apart.

Every exception caddie raises on purpose derives from ``CaddieError``; anything else escaping is a bug. The
kinds say what went wrong and so what the caller does about it:

- ``ConfigurationError`` — settings, models.json, packages, themes, credentials: the user changes something;
- ``UsageError`` — a request (a command line, a command, an RPC call, a prompt) that cannot be done as asked;
- ``ProviderError`` — a model provider could not be asked, or failed or refused the request;
- ``SessionStoreError`` — a session file cannot be read, written or locked;
- ``ToolError`` — a tool could not do what the model asked (the message is the tool result's text);
- ``ExtensionError`` — an extension failed, or called the extension API wrongly;
- ``Aborted`` — the user or the caller stopped the work (Esc, an abort signal, a cancelled compaction).

The message of each is a sentence for the user (what is wrong and what to do next), shown as it is; the
developer's details travel as ``__cause__``. This module is at the bottom of the layers, so every layer
(and every extension, through ``caddie.extensions.api``) can raise and catch these.
"""

from __future__ import annotations


class CaddieError(Exception):
    """Base of every exception caddie raises on purpose; ``str(error)`` is one sentence for the user."""


class ConfigurationError(CaddieError):
    """Something the user set up (settings, models.json, a package, a theme, credentials) cannot be used."""


class UsageError(CaddieError):
    """A request that cannot be done as asked: a bad option, a command at the wrong moment, a missing model."""


class ProviderError(CaddieError):
    """A model provider could not be asked (credentials, region, an optional SDK), or failed the request."""


class SessionStoreError(CaddieError):
    """A session file cannot be read, written or locked."""


class ToolError(CaddieError):
    """A tool could not do what it was asked; raised from ``execute``, ``str(error)`` is exactly the text of
    the error result the model gets."""


class ExtensionError(CaddieError):
    """An extension failed, or called the extension API in a way it cannot be used."""


class Aborted(CaddieError):
    """The work was stopped on purpose: the user pressed Esc, a caller's abort signal fired, a compaction or
    a shell command was cancelled. Not a failure: callers end quietly (a reply ends ``aborted``)."""

    def __init__(self, message: str = "Operation aborted") -> None:
        super().__init__(message)
