"""One exception base: every exception class caddie defines derives from ``CaddieError``, "aborted" has one
name, and extensions reach the hierarchy through their API."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import caddie
from caddie import errors
from caddie.ai.abort import AbortController
from caddie.extensions import api

OPTIONAL = ("caddie.modes.batch.backends",)
"""Modules that need an optional extra (Ray) to import; their classes are checked when it is installed."""


def caddie_exception_classes() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(caddie.__path__, "caddie."):
        if info.name == "caddie.__main__":  # running it is the command line
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            assert info.name.startswith(OPTIONAL), f"{info.name} does not import"
            continue
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__.startswith("caddie."):
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return list(found.values())


def test_every_exception_class_caddie_defines_derives_from_caddie_error() -> None:
    classes = caddie_exception_classes()
    outside = sorted(
        f"{c.__module__}.{c.__qualname__}" for c in classes if not issubclass(c, errors.CaddieError)
    )
    assert outside == []
    assert len(classes) > 30  # the walk really found the package's classes


KINDS = (
    errors.ConfigurationError,
    errors.UsageError,
    errors.ProviderError,
    errors.SessionStoreError,
    errors.ToolError,
    errors.ExtensionError,
    errors.Aborted,
)


def test_every_other_class_is_of_exactly_one_kind() -> None:
    """Not ``CaddieError`` directly: a caller tells failures apart by kind, so each class has one."""
    kindless = {}
    for cls in caddie_exception_classes():
        if cls is errors.CaddieError or cls in KINDS:
            continue
        kinds = [kind.__name__ for kind in KINDS if issubclass(cls, kind)]
        if len(kinds) != 1:
            kindless[f"{cls.__module__}.{cls.__qualname__}"] = kinds
    assert kindless == {}


def test_aborted_has_one_name() -> None:
    names = {
        c.__name__
        for c in caddie_exception_classes()
        if "abort" in c.__name__.lower() or "cancel" in c.__name__.lower()
    }
    assert names == {"Aborted"}


def test_an_aborted_signal_raises_the_one_aborted() -> None:
    controller = AbortController()
    controller.abort()
    try:
        controller.signal.throw_if_aborted()
    except errors.Aborted as e:
        assert str(e) == "Operation aborted"
    else:
        raise AssertionError("throw_if_aborted did not raise")


def test_extensions_get_the_hierarchy_through_the_public_api() -> None:
    for name in (
        "CaddieError",
        "ConfigurationError",
        "UsageError",
        "ProviderError",
        "SessionStoreError",
        "ToolError",
        "ExtensionError",
        "Aborted",
    ):
        assert getattr(api, name) is getattr(errors, name)
