"""Copies of the stored messages for code that must not touch them, reused across turns; and the
per-message caches that such stable copies make possible.

Extension ``context`` handlers get copies of the agent's messages, never the stored objects, so that a
handler changing a message in place cannot corrupt the session. Copying the whole context every turn (one
msgpack round trip) costs time linear in the session, and gives every turn new message objects, which
defeats any per-message cache downstream. ``MessageCopies`` keeps each message's copy and hands the same
copy out again for as long as it still equals its stored message by value: that check catches a handler
that changed the copy in place, and caddie code that changed the stored message, and either way the
message is copied afresh. ``seal`` is applied to what the handlers return: every object in it that is not
an unchanged copy (one a handler changed in place, or one a handler made) is replaced by a fresh copy.

So the objects caddie passes on to a provider are either unchanged copies, equal to their stored message
each time they are passed on, or objects first seen this turn. That is what makes ``ConversionCache``
sound: a provider's conversion of a message to its wire format is kept by the message's identity and
reused while the same object comes back, and an object that comes back is one nobody has changed.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from caddie.ai.messages import AgentMessage, copy_messages


def _unchanged_trusted(copies: list[AgentMessage], originals: list[AgentMessage]) -> bool:
    """True without looking, unless ``CADDIE_VERIFY_COPIES`` asks for the proof (see ``MessageCopies.copies``)."""
    if os.environ.get("CADDIE_VERIFY_COPIES"):
        changed = [i for i, (c, o) in enumerate(zip(copies, originals, strict=True)) if c != o]
        if changed:
            raise AssertionError(
                f"messages changed in place while only caddie's own code ran: indices {changed}"
            )
    return True


class MessageCopies:
    """Per-message deep copies of a session's messages, kept across turns (see the module docstring).

    The checks run as list operations in C (identity and value comparisons of whole lists), so reusing
    2,000 copies costs a fraction of a millisecond; per-message Python work is done only for the messages
    that are new or changed.
    """

    __slots__ = ("_copies", "_original_of", "_originals", "_trusted_since")

    def __init__(self) -> None:
        self._trusted_since = False
        """The last call was made with ``only_trusted_code`` too (no other code had the copies since)."""
        self._originals: list[AgentMessage] = []
        self._copies: list[AgentMessage] = []
        """``_copies[i]`` is the copy of ``_originals[i]``, as last handed out."""
        self._original_of: dict[int, AgentMessage] = {}
        """id(copy) -> its original, for ``seal`` (the copies are alive in ``_copies``: ids are not reused)."""

    def copies(self, originals: list[AgentMessage], *, only_trusted_code: bool = False) -> list[AgentMessage]:
        """Deep copies of ``originals``, in order, each equal to its original by value.

        A copy handed out before is handed out again if it still equals its original; the others are
        copied afresh, in one batch.

        ``only_trusted_code``: no code but caddie's own (its bundled extensions included, whose ``context``
        handlers are tested to be copy-on-write) could have reached the copies or the stored messages since
        the last call (which was made with it too), and caddie never changes a message in place once it is
        in the context. The usual turn (the same messages plus new ones) then skips comparing every copy
        with its original by value, the one per-turn cost here that grows with the session. With
        ``CADDIE_VERIFY_COPIES`` set (the test suite sets it) the comparison still runs, and a difference
        raises ``AssertionError``.
        """
        old_originals, old_copies = self._originals, self._copies
        k = len(old_originals)
        if (
            k <= len(originals)
            and originals[:k] == old_originals
            and (
                _unchanged_trusted(old_copies, old_originals)
                if only_trusted_code and self._trusted_since
                else old_copies == old_originals
            )
        ):
            # The usual turn: the same messages (compared by identity first, by value otherwise), none
            # changed in place, plus some new ones at the end.
            out = old_copies + copy_messages(originals[k:]) if len(originals) > k else list(old_copies)
            # (A reused copy stays mapped to the original it was made from: equal by value to this one.)
            self._original_of.update(zip(map(id, out[k:]), originals[k:], strict=True))
        else:
            by_original = {id(o): (o, c) for o, c in zip(old_originals, old_copies, strict=True)}
            out = []
            missing: list[int] = []
            for i, m in enumerate(originals):
                hit = by_original.get(id(m))
                if hit is not None and hit[0] is m and hit[1] == m:
                    out.append(hit[1])
                else:
                    missing.append(i)
                    out.append(m)  # replaced below
            if missing:
                for i, copy in zip(missing, copy_messages([originals[i] for i in missing]), strict=True):
                    out[i] = copy
            self._original_of = dict(zip(map(id, out), originals, strict=True))
        self._originals, self._copies = list(originals), out
        self._trusted_since = only_trusted_code
        return list(out)

    def seal(self, messages: list[AgentMessage], *, edited_in_place: bool = True) -> list[AgentMessage]:
        """``messages`` with every object that is not an unchanged copy from the last ``copies`` replaced by
        a fresh deep copy (the objects a handler made or changed in place keep their value, not identity).

        ``edited_in_place=False`` is for a handler known never to change the messages it is given (caddie's
        bundled extensions, whose tests check it): only the objects it made are copied, and the comparison of
        every copy with its original by value, linear in the session, is skipped."""
        out = list(messages)
        originals: list[Any] = list(map(self._original_of.get, map(id, out)))
        made = [i for i, o in enumerate(originals) if o is None] if None in originals else []
        for i in made:
            originals[i] = out[i]  # compares equal to itself below; copied afterwards
        changed = made
        if edited_in_place and out != originals:  # some copy was changed in place: find which
            changed = [i for i, (m, o) in enumerate(zip(out, originals, strict=True)) if m is o or m != o]
        if changed:
            for i, copy in zip(changed, copy_messages([out[i] for i in changed]), strict=True):
                out[i] = copy
        return out


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

    Only sound for message objects that nobody changes in place while they are cached: the runtime
    passes one with the messages it has checked (``MessageCopies``), and providers use it only then. The
    entries hold their messages, so an id is never reused while its entry lives. ``key`` names a kind of
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
        # Identity, not value: a message a handler changed in place is passed on under a new identity
        # (``MessageCopies.seal``), while the checkpoint may hold the very object that was changed.
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
