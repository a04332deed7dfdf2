"""Connects the providers extensions register (``api.register_provider``) to the session's model registry.

Calls made inside ``register()`` are kept on the ``Extension`` until ``attach`` hands them to the registry
(which happens before the session's model is chosen); after that, ``register_provider`` reaches the
registry at once. ``/reload`` attaches the new set of extensions: the old set's providers are dropped first.
"""

from __future__ import annotations

from collections.abc import Iterable

from caddie.extensions.extension import Extension, ProviderSink


class ExtensionProviders:
    def __init__(self, sink: ProviderSink) -> None:
        self._sink = sink
        self._attached: list[Extension] = []

    def attach(self, extensions: Iterable[Extension]) -> list[str]:
        """Apply every registered provider; returns the problems as warnings (one line each)."""
        for old in self._attached:
            old.provider_sink = None
            for name in old.providers:
                self._sink.unregister_provider(name)
        self._attached = list(extensions)
        warnings: list[str] = []
        for ext in self._attached:
            for name, config in ext.providers.items():
                warnings += self._sink.register_provider(name, config, ext.path)
            ext.provider_sink = self._sink
        return warnings
