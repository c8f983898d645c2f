"""Input checks shared by the public API: text, ids and limits. Bad input raises ValidationError, writes nothing."""

from __future__ import annotations

import re
from typing import Any

from .errors import ValidationError

__all__ = ["check_id", "check_limit", "check_tags", "check_text", "clean_query"]

_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_ID_LEN = 256


def check_text(value: Any, what: str = "content", *, allow_empty: bool = False) -> str:
    """Return ``value`` if it is usable text.

    Raises:
        ValidationError: not a ``str``, empty/whitespace (unless ``allow_empty``), or holding a lone UTF-16
            surrogate (``"\\ud83d"``), which cannot be stored as UTF-8.
    """
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise ValidationError(f"{what} must not be empty")
    if _SURROGATE.search(value):
        raise ValidationError(f"{what} contains a lone surrogate code point (invalid Unicode); fix the encoding")
    return value


def clean_query(value: Any) -> str:
    """Normalise a query: lone surrogates become U+FFFD, whitespace is collapsed. Never raises for a str.

    Raises:
        ValidationError: ``value`` is not a string.
    """
    if not isinstance(value, str):
        raise ValidationError(f"query must be a string, got {type(value).__name__}")
    return " ".join(_SURROGATE.sub("\ufffd", value).split())


def check_id(value: Any, what: str = "id") -> str:
    """Return ``value`` as an id string (1-256 characters, no NUL).

    Raises:
        ValidationError: empty, too long, or not a string.
    """
    if not isinstance(value, str) or not value or len(value) > MAX_ID_LEN or "\x00" in value:
        raise ValidationError(f"{what} must be a non-empty string of at most {MAX_ID_LEN} characters")
    if _SURROGATE.search(value):
        raise ValidationError(f"{what} contains a lone surrogate")
    return value


def check_tags(tags: Any) -> list[str]:
    """Return a de-duplicated list of non-empty tag strings.

    Raises:
        ValidationError: not a list of strings.
    """
    if tags is None:
        return []
    if isinstance(tags, str) or not all(isinstance(t, str) and t.strip() for t in tags):
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
