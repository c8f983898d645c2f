"""Exact and near-duplicate detection, and knowledge-update classification of keyed facts.

Exact duplicates share :func:`content_hash` (SHA-256 of the normalised text). Near duplicates are compared by
the Jaccard similarity of word shingles (Broder 1997, "On the resemblance and containment of documents"); the
default threshold 0.9 is ``IngestSettings.near_duplicate_threshold``. CJK characters count as one word each,
so Chinese text without spaces gets useful shingles too.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Mapping
from typing import Any, Literal

from ..errors import ConfigError, ValidationError
from ._text import CJK

__all__ = [
    "classify_update",
    "content_hash",
    "harden_confidence",
    "is_near_duplicate",
    "jaccard",
    "normalize_for_hash",
    "normalize_value",
    "shingles",
]

_WS = re.compile(r"\s+")
_TOKEN = re.compile(rf"[{CJK}]|[^\W_{CJK}]+(?:['’][^\W_]+)*")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_ARTICLES = re.compile(r"^(?:a|an|the|my|some)\s+")
_VALUE_FILLER = re.compile(r"^(?:now|actually|still|currently|definitely|probably|really)\s+")


def _check(text: Any, what: str = "text") -> str:
    if not isinstance(text, str):
        raise ValidationError(f"{what} must be a str, got {type(text).__name__}")
    if _SURROGATE.search(text):
        raise ValidationError(f"{what} contains a lone surrogate code point")
    return text


def normalize_for_hash(text: str) -> str:
    """Normalise text so that trivially different copies hash alike.

    Applies Unicode NFKC (full-width to ASCII), ``casefold()``, collapses every whitespace run to one space,
    and strips punctuation (Unicode categories P*) at both ends ("Hello, World!!" -> "hello, world"). Symbols
    stay: "I rate the film 👍" and "... 👎" are different texts (files written before this rule hashed them alike;
    such an old entry is not found as a duplicate of its re-added text, which then gets a second entry).

    Args:
        text: any string.

    Returns:
        The normalised text (may be empty).

    Raises:
        ValidationError: ``text`` is not a ``str`` or contains a lone surrogate.
    """
    text = _WS.sub(" ", unicodedata.normalize("NFKC", _check(text)).casefold()).strip()
    start, end = 0, len(text)
    while start < end and (text[start].isspace() or unicodedata.category(text[start])[0] == "P"):
        start += 1
    while end > start and (text[end - 1].isspace() or unicodedata.category(text[end - 1])[0] == "P"):
        end -= 1
    return text[start:end]


def content_hash(text: str) -> str:
    """SHA-256 of :func:`normalize_for_hash` (UTF-8), as 64 lowercase hex digits.

    Args:
        text: any string.

    Returns:
        The hex digest; ``content_hash("Hello  World.") == content_hash("hello world")``.

    Raises:
        ValidationError: ``text`` is not a ``str`` or contains a lone surrogate.
    """
    return hashlib.sha256(normalize_for_hash(text).encode("utf-8")).hexdigest()


def shingles(text: str, n: int = 3) -> set[str]:
    """Word n-grams of the normalised text, each joined by one space.

    Words are runs of letters/digits; each CJK character is its own word. A text with fewer than ``n`` words
    gives one shingle of all its words; an empty text gives an empty set.

    Args:
        text: any string.
        n: words per shingle (>= 1).

    Returns:
        The set of shingles, e.g. ``shingles("a b c d", 3) == {"a b c", "b c d"}``.

    Raises:
        ConfigError: ``n < 1``.
        ValidationError: ``text`` is not a ``str``.
    """
    if n < 1:
        raise ConfigError(f"shingle size must be >= 1, got {n}")
    words = _TOKEN.findall(normalize_for_hash(text))
    if len(words) <= n:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}


def jaccard(a: set[Any], b: set[Any]) -> float:
    """Jaccard similarity ``|a ∩ b| / |a ∪ b|``.

    Args:
        a: first set.
        b: second set.

    Returns:
        A value in [0, 1]; two empty sets give 1.0 (identical), one empty set gives 0.0.
    """
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def is_near_duplicate(a: str, b: str, threshold: float = 0.9, *, n: int = 3) -> bool:
    """Tell whether two texts say the same thing up to trivial edits.

    Args:
        a: first text.
        b: second text.
        threshold: minimum Jaccard similarity of word ``n``-shingles, in [0, 1].
        n: shingle size in words.

    Returns:
        ``True`` when the normalised texts are equal or their shingle similarity is >= ``threshold``.

    Raises:
        ConfigError: ``threshold`` outside [0, 1] or ``n < 1``.
        ValidationError: a text is not a ``str``.
    """
    if not 0.0 <= threshold <= 1.0:
        raise ConfigError(f"near-duplicate threshold must be in [0, 1], got {threshold}")
    if normalize_for_hash(a) == normalize_for_hash(b):
        return True
    return jaccard(shingles(a, n), shingles(b, n)) >= threshold


def normalize_value(value: str | None) -> str:
    """Normalise a fact key or value for comparison: :func:`normalize_for_hash`, "favourite" -> "favorite",
    leading articles/possessives and fillers ("a", "the", "my", "now", "actually") removed.

    Args:
        value: a key or value, or ``None``.

    Returns:
        The comparable form; ``None`` gives ``""``.
    """
    if value is None:
        return ""
    out = normalize_for_hash(value).replace("favourite", "favorite")
    for _ in range(3):
        out = _ARTICLES.sub("", _VALUE_FILLER.sub("", out))
    return out


def _key_value(fact: Any) -> tuple[str | None, str | None, str | None]:
    """(key, value, text) of a Fact, a mapping or a ``(key, value)`` tuple."""
    if isinstance(fact, tuple):
        return (fact[0], fact[1] if len(fact) > 1 else None, None)
    if isinstance(fact, Mapping):
        key = fact.get("subject_key", fact.get("key", fact.get("fact_key")))
        return key, fact.get("value"), fact.get("text")
    return getattr(fact, "subject_key", None), getattr(fact, "value", None), getattr(fact, "text", None)


def classify_update(old: Any, new: Any, *, threshold: float = 0.9) -> Literal["same", "update", "unrelated"]:
    """Decide how a new fact relates to a stored one (knowledge-update detection).

    Facts are compared by ``subject_key`` and ``value`` after :func:`normalize_value`:
    same key and same value -> ``"same"`` (harden the old fact, see :func:`harden_confidence`); same key and a
    different value -> ``"update"`` (supersede the old fact, keep it in history); different keys ->
    ``"unrelated"``. Without keys, facts whose texts are near duplicates are ``"same"``.

    Args:
        old: the stored fact: a :class:`~agentbase.ingest.facts.Fact`, any object with
            ``subject_key``/``value`` (and optionally ``text``) attributes, a mapping with ``subject_key`` or
            ``key`` and ``value``, or a ``(key, value)`` tuple.
        new: the incoming fact, in any of the same shapes.
        threshold: near-duplicate threshold for key-less facts.

    Returns:
        ``"same"``, ``"update"`` or ``"unrelated"``.
        Example: ``("favorite color", "blue")`` vs ``("favorite color", "green")`` -> ``"update"``.
    """
    old_key, old_value, old_text = _key_value(old)
    new_key, new_value, new_text = _key_value(new)
    if old_key and new_key:
        if normalize_value(old_key) != normalize_value(new_key):
            return "unrelated"
        return "same" if normalize_value(old_value) == normalize_value(new_value) else "update"
    if old_text and new_text and is_near_duplicate(old_text, new_text, threshold):
        return "same"
    return "unrelated"


def harden_confidence(confidence: float, step: float = 0.1) -> float:
    """Raise a repeated fact's confidence by ``step``, capped at 1.0 (``IngestSettings.confidence_step``).

    Args:
        confidence: current confidence in [0, 1].
        step: increment per repetition.

    Returns:
        ``min(1.0, confidence + step)``, rounded to 6 decimal places so that repeated steps of 0.1 land on 0.8,
        not 0.7999999999999999.
    """
    return min(1.0, round(max(0.0, confidence) + step, 6))
