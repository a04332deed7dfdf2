"""How the tools turn a model-given path into a file: Pi's path-utils.

A leading ``@`` is stripped, Unicode spaces become plain spaces, ``~`` and ``~/x`` expand to the home
directory, ``file://`` URLs become paths, and relative paths resolve against the tool's cwd. ``read``
also tries the spellings macOS uses in screenshot names (narrow no-break space before AM/PM, NFD,
curly apostrophe) when the path as given does not exist.
"""

from __future__ import annotations

import os
import re
import unicodedata
from urllib.parse import unquote, urlparse

_UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")
_AM_PM = re.compile(r" (AM|PM)\.", re.IGNORECASE)


def _home() -> str:
    return os.environ.get("HOME") or os.path.expanduser("~")


def normalize_path(
    value: str,
    *,
    normalize_unicode_spaces: bool = False,
    strip_at_prefix: bool = False,
    expand_tilde: bool = True,
) -> str:
    text = value
    if normalize_unicode_spaces:
        text = _UNICODE_SPACES.sub(" ", text)
    if strip_at_prefix and text.startswith("@"):
        text = text[1:]
    if expand_tilde:
        if text == "~":
            return _home()
        if text.startswith("~/"):
            return node_join(_home(), text[2:])
    if text.startswith("file://"):
        return unquote(urlparse(text).path)
    return text


def node_normalize(path: str) -> str:
    """``path.normalize`` for POSIX paths, without keeping a trailing slash."""
    if not path:
        return "."
    normalized = os.path.normpath(path)
    if normalized.startswith("//"):
        normalized = "/" + normalized.lstrip("/")
    return normalized


def node_join(*parts: str) -> str:
    joined = "/".join(p for p in parts if p)
    return node_normalize(joined) if joined else "."


def node_resolve(*parts: str) -> str:
    """``path.resolve``: the last absolute part wins, relative parts join onto it, cwd if none is absolute."""
    result = ""
    for part in reversed(parts):
        if not part:
            continue
        result = f"{part}/{result}" if result else part
        if part.startswith("/"):
            break
    if not result.startswith("/"):
        result = f"{os.getcwd()}/{result}" if result else os.getcwd()
    return node_normalize(result)


def expand_path(file_path: str) -> str:
    return normalize_path(file_path, normalize_unicode_spaces=True, strip_at_prefix=True)


def resolve_to_cwd(file_path: str, cwd: str) -> str:
    """The absolute path a tool acts on for ``file_path`` given by the model."""
    normalized = expand_path(file_path)
    base = normalize_path(cwd)
    if normalized.startswith("/"):
        return node_resolve(normalized)
    return node_resolve(base, normalized)


def _exists(path: str) -> bool:
    return os.path.exists(path)


def resolve_read_path(file_path: str, cwd: str) -> str:
    """Like ``resolve_to_cwd``, then try macOS screenshot spellings if the file is not there."""
    resolved = resolve_to_cwd(file_path, cwd)
    if _exists(resolved):
        return resolved
    am_pm = _AM_PM.sub(lambda m: f"\u202f{m.group(1)}.", resolved)
    if am_pm != resolved and _exists(am_pm):
        return am_pm
    nfd = unicodedata.normalize("NFD", resolved)
    if nfd != resolved and _exists(nfd):
        return nfd
    curly = resolved.replace("'", "\u2019")
    if curly != resolved and _exists(curly):
        return curly
    nfd_curly = nfd.replace("'", "\u2019")
    if nfd_curly != resolved and _exists(nfd_curly):
        return nfd_curly
    return resolved
