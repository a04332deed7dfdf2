"""A provider's per-message wire-format conversions, kept across requests by message identity.

A turn's request carries the whole conversation, but only its last few messages are new. Converting each
message to an API's wire format once and reusing that conversion while the same message object comes back
keeps the per-turn work about the new messages, not the session. Keying by identity is sound because
messages are frozen values (``caddie.ai.messages``): an object that comes back is the message it was.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Sequence
from typing import Any


class ConversionScope:
    """One request's view of a ``ConversionCache``: ``get`` what an earlier request converted, ``put`` what
    this one converts. Only the entries this request used or added are kept for the next."""

    __slots__ = ("_new", "_old")

    def __init__(self, old: dict[int, tuple[object, Any]], new: dict[int, tuple[object, Any]]) -> None:
        self._old = old
        self._new = new

    def get(self, message: object) -> Any:
        """The value ``put`` for this very object by an earlier request, or None."""
        hit = self._old.get(id(message))
        if hit is None or hit[0] is not message:
            return None
        self._new[id(message)] = hit
        return hit[1]

    def put(self, message: object, value: Any) -> None:
        """Keep ``value`` (which callers must never change afterwards) for this object."""
        self._new[id(message)] = (message, value)


def cached_conversion(
    scope: ConversionScope | None, message: object, convert: Callable[..., Any], *args: Any
) -> Any:
    """``convert(message, *args)``, kept in ``scope`` under the message's identity and taken from there
    while the same object comes back (no scope: converted every time)."""
    if scope is None:
        return convert(message, *args)
    value = scope.get(message)
    if value is None:
        value = convert(message, *args)
        scope.put(message, value)
    return value


class ConversionCache:
    """A provider's per-message wire-format conversions, kept across requests by message identity.

    The entries hold their messages, so an id is never reused while its entry lives. ``key`` names a kind of
    conversion and what else it depends on (API, provider, model, compatibility flags); each key keeps
    only what its last request used, and only the ``MAX_KEYS`` most recently used keys are kept.

    A conversion that is a left fold over the messages can also keep a ``checkpoint``: its state after the
    last request's messages. When the next request starts with those very objects (the usual turn: the
    same history plus new messages), ``resume`` hands the state back and only the new messages are
    visited; comparing the prefix is one pass of identity checks in C.
    """

    MAX_KEYS = 8

    __slots__ = ("_checkpoints", "_entries")

    def __init__(self) -> None:
        self._entries: dict[Hashable, dict[int, tuple[object, Any]]] = {}
        self._checkpoints: dict[Hashable, tuple[list[object], Any]] = {}

    def scope(self, key: Hashable, *, keep: bool = False) -> ConversionScope:
        """The entries of ``key`` for one request; with ``keep``, those the request does not visit stay
        (a resumed request visits only the new messages)."""
        entries = self._entries
        old = entries.pop(key, {})
        new: dict[int, tuple[object, Any]] = dict(old) if keep else {}
        entries[key] = new  # the most recently used key last
        while len(entries) > self.MAX_KEYS:
            dropped = next(iter(entries))
            del entries[dropped]
            self._checkpoints.pop(dropped, None)
        return ConversionScope(old, new)

    def resume(self, key: Hashable, messages: Sequence[object]) -> tuple[int, Any] | None:
        """``(n, state)`` when ``messages`` starts with the ``n`` very objects of ``key``'s checkpoint."""
        checkpoint = self._checkpoints.get(key)
        if checkpoint is None:
            return None
        inputs, state = checkpoint
        # Identity, not value: messages are frozen, so the very objects are the very messages.
        if len(inputs) > len(messages) or not all(map(operator.is_, messages, inputs)):
            return None
        return len(inputs), state

    def checkpoint(self, key: Hashable, messages: Sequence[object], state: Any) -> None:
        """Keep ``state``, the fold's state after ``messages`` (which the caller must not change later)."""
        if key in self._entries:
            self._checkpoints[key] = (list(messages), state)

    def clear(self) -> None:
        self._entries.clear()
        self._checkpoints.clear()
