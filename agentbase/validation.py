"""Input checks shared by the public API: text, ids, limits, integers and JSON metadata.

Bad input raises ValidationError and writes nothing.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import ValidationError

__all__ = ["INT64_MAX", "INT64_MIN", "check_bool", "check_category", "check_id", "check_int", "check_json", "check_limit",
           "check_metadata", "check_path", "check_tags", "check_text", "clean_query"]

_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_ID_LEN = 256
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1  # SQLite INTEGER range


def check_text(value: Any, what: str = "content", *, allow_empty: bool = False) -> str:
    """Return ``value`` if it is usable text.

    Raises:
        ValidationError: not a ``str``, empty/whitespace (unless ``allow_empty``), holding a lone UTF-16
            surrogate (``"\\ud83d"``), which cannot be stored as UTF-8, or holding NUL (U+0000), which PostgreSQL's
            ``text`` cannot store: refused on both engines so that the same input gets the same answer, and a
            lookup value with NUL (an entity name, a tag filter) is refused as it could never have been stored.
    """
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise ValidationError(f"{what} must not be empty")
    if "\x00" in value:
        raise ValidationError(f"{what} must not contain NUL characters (U+0000)")
    if _SURROGATE.search(value):
        raise ValidationError(f"{what} contains a lone surrogate code point (invalid Unicode); fix the encoding")
    return value


def clean_query(value: Any) -> str:
    """Normalise a query: lone surrogates become U+FFFD, NUL (U+0000, a token separator to the keyword leg
    already) a space, whitespace is collapsed, so the trace stores the query on both engines (PostgreSQL's text
    cannot hold NUL). Never raises for a str.

    Raises:
        ValidationError: ``value`` is not a string.
    """
    if not isinstance(value, str):
        raise ValidationError(f"query must be a string, got {type(value).__name__}")
    return " ".join(_SURROGATE.sub("\ufffd", value).replace("\x00", " ").split())


def check_id(value: Any, what: str = "id") -> str:
    """Return ``value`` as an id string (1-256 characters, no NUL).

    Raises:
        ValidationError: empty, too long, not a string, or holding NUL.
    """
    if not isinstance(value, str) or not value or len(value) > MAX_ID_LEN:
        raise ValidationError(f"{what} must be a non-empty string of at most {MAX_ID_LEN} characters")
    if "\x00" in value:
        raise ValidationError(f"{what} must not contain NUL characters (U+0000)")
    if _SURROGATE.search(value):
        raise ValidationError(f"{what} contains a lone surrogate")
    return value


def check_tags(tags: Any) -> list[str]:
    """Return a de-duplicated list of non-empty tag strings.

    Args:
        tags: None (no tags), or a list or tuple of non-empty strings.

    Returns:
        The stripped tags in first-seen order.

    Raises:
        ValidationError: not a list/tuple of non-empty strings (a dict, set or single string is refused), or a
            tag with a lone surrogate.
    """
    if tags is None:
        return []
    if not isinstance(tags, (list, tuple)) or not all(isinstance(t, str) and t.strip() for t in tags):
        raise ValidationError("tags must be a list of non-empty strings")
    return list(dict.fromkeys(check_text(t, "tag").strip() for t in tags))


def check_limit(value: Any, what: str = "top_k", *, maximum: int = 10_000) -> int:
    """Return ``value`` if it is an int in ``1..maximum``.

    Raises:
        ValidationError: otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise ValidationError(f"{what} must be an integer between 1 and {maximum}")
    return value


def check_category(value: Any, what: str = "category") -> str:
    """Return ``value`` if it is a usable category label.

    Raises:
        ValidationError: not a non-empty string, or holding NUL or a lone surrogate.
    """
    return check_text(value, what)


def check_path(value: Any, what: str = "path", *, error: type[Exception] = ValidationError,
               empty_hint: str = "name a file or folder ('.' for the current folder)") -> Path:
    """A file or folder path the caller names: a non-empty ``str`` or ``os.PathLike`` without NUL.

    An empty string would mean the current folder (``Path("")`` is ``.``), so a forgotten argument would back up
    into, or import, whatever folder the program runs in.

    Args:
        value: the path. what: its name in messages. error: the exception class raised (``AgentBase(path=...)``
            raises ``ConfigError``). empty_hint: what the message for an empty path tells the caller to do.

    Returns:
        The path as a :class:`pathlib.Path`.

    Raises:
        ValidationError (or ``error``): another type, an empty or blank string, or a NUL character.
    """
    if not isinstance(value, (str, os.PathLike)):
        raise error(f"{what} must be a str or os.PathLike path, got {type(value).__name__}")
    text = os.fspath(value)
    if not isinstance(text, str):
        raise error(f"{what} must be a text path, got {type(text).__name__}")
    if not text.strip():
        raise error(f"{what} is empty: {empty_hint}")
    if "\0" in text:
        raise error(f"{what} contains a NUL character")
    return Path(text)


def check_int(value: Any, what: str, *, minimum: int = INT64_MIN, maximum: int = INT64_MAX) -> int:
    """Return ``value`` if it is an int (not bool) in ``minimum..maximum`` (default: SQLite's 64-bit range).

    Raises:
        ValidationError: otherwise (a string such as ``"1"`` is refused, not converted).
    """
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise ValidationError(f"{what} must be an integer between {minimum} and {maximum}, got {value!r}")
    return value


def check_bool(value: Any, what: str) -> bool:
    """Return ``value`` if it is a bool.

    Raises:
        ValidationError: anything else (``"no"`` is truthy in Python; a flag given as a string is refused).
    """
    if not isinstance(value, bool):
        raise ValidationError(f"{what} must be True or False, got {value!r}")
    return value


def _walk_json(value: Any, what: str, depth: int, max_depth: int, dicts: tuple[type, ...]) -> None:
    if depth > max_depth:
        raise ValidationError(f"{what} is nested more than {max_depth} levels deep")
    if value is None or isinstance(value, (bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(f"{what} holds {value!r}; JSON has no NaN or infinity")
    elif isinstance(value, str):
        if _SURROGATE.search(value):
            raise ValidationError(f"{what} holds a string with a lone surrogate code point (invalid Unicode)")
    elif isinstance(value, dicts):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError(f"{what} keys must be strings, got {key!r}")
            if _SURROGATE.search(key):
                raise ValidationError(f"{what} key {key!r} holds a lone surrogate code point (invalid Unicode)")
            _walk_json(item, what, depth + 1, max_depth, dicts)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _walk_json(item, what, depth + 1, max_depth, dicts)
    else:
        raise ValidationError(f"{what} must hold only JSON values (dict with str keys, list, str, int, float, "
                              f"bool, None), got {type(value).__name__}")


def check_json(value: Any, what: str = "value", *, max_depth: int = 100, mappings: bool = False) -> Any:
    """Return ``value`` if it round-trips through JSON unchanged and can be stored as UTF-8.

    Args:
        value: the value. what: its name in errors. max_depth: the deepest nesting allowed (levels). mappings:
            accept any ``collections.abc.Mapping`` as an object (the caller turns it into a dict), not only dict.

    Raises:
        ValidationError: a non-str dict key (``json`` would turn ``1`` into ``"1"``), NaN or infinity, a lone
            surrogate, a non-JSON type (set, bytes, objects), or nesting deeper than ``max_depth`` levels.
    """
    _walk_json(value, what, 0, max_depth, (Mapping,) if mappings else (dict,))  # a cycle ends at the depth limit
    return value


def check_metadata(value: Any, what: str = "metadata") -> dict[str, Any]:
    """Return a shallow copy of ``value`` as a metadata dict (None gives ``{}``).

    Args:
        value: None or a dict with str keys and JSON values.

    Returns:
        A new dict.

    Raises:
        ValidationError: not a dict, or not storable as JSON (see :func:`check_json`).
    """
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError(f"{what} must be a dict, got {type(value).__name__}")
    return dict(check_json(value, what))
