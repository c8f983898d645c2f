"""L0/L1 content layers computed by rules (no LLM): the leading sentence(s), cut at a word boundary.

``l0_abstract`` is at most 50 characters and ``l1_overview`` at most 300 (the :class:`~agentbase.models.Entry`
contract). A cut text ends with "…" (one character, counted in the limit). CJK text has no spaces, so any
position next to a CJK character is a word boundary.
"""

from __future__ import annotations

import re

from ..errors import ValidationError
from ._text import CJK, clean_text, split_sentences

__all__ = ["L0_MAX_CHARS", "L1_MAX_CHARS", "l0_abstract", "l1_overview", "lead"]

L0_MAX_CHARS = 50
L1_MAX_CHARS = 300
ELLIPSIS = "…"
_IS_CJK = re.compile(f"[{CJK}\u3000-\u303f\uff00-\uffef]").match
_TRAILING_JUNK = " \t\n,;:、，；：-–—([{\"'“‘"
_MIN_LEAD = 12  # a first sentence shorter than this ("Hi!", "OK.") is joined with the next one


def _boundary(text: str, pos: int) -> bool:
    """True when cutting ``text`` at ``pos`` does not split a word."""
    before, after = text[pos - 1], text[pos] if pos < len(text) else " "
    return before.isspace() or after.isspace() or bool(_IS_CJK(before)) or bool(_IS_CJK(after))


def _join(head: str, tail: str) -> str:
    """Join two sentences with a space, or without one between CJK text ("我喜欢猫。" + "我也喜欢狗。")."""
    if not head:
        return tail
    return head + tail if _IS_CJK(head[-1]) or _IS_CJK(tail[0]) else f"{head} {tail}"


def _truncate(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters including a trailing "…", at a word boundary when one is near."""
    if len(text) <= limit:
        return text
    budget = limit - len(ELLIPSIS)
    cut = budget
    for pos in range(budget, max(1, budget // 2), -1):
        if _boundary(text, pos):
            cut = pos
            break
    head = text[:cut].rstrip(_TRAILING_JUNK) or text[:budget]
    return head + ELLIPSIS


def lead(text: str, limit: int) -> str:
    """The leading sentences of ``text`` that fit in ``limit`` characters.

    Whitespace is collapsed and line breaks become spaces; markdown heading/bullet markers are dropped. Whole
    sentences are taken while they fit; if even the first one does not fit it is truncated at a word boundary
    with "…". A very short first sentence (under 12 characters, e.g. "Hi!") is followed by the next ones.

    Args:
        text: any text.
        limit: maximum length of the result in characters (>= 2).

    Returns:
        A string of at most ``limit`` characters; ``""`` for blank input.

    Raises:
        ValidationError: ``text`` is not a ``str`` or ``limit < 2``.
    """
    if not isinstance(text, str):
        raise ValidationError(f"text must be a str, got {type(text).__name__}")
    if limit < 2:
        raise ValidationError(f"limit must be >= 2, got {limit}")
    sentences = split_sentences(clean_text(text))
    if not sentences:
        return ""
    out = ""
    for sentence in sentences:
        candidate = _join(out, sentence)
        if len(candidate) <= limit:
            out = candidate
            continue
        if not out or len(out) < _MIN_LEAD:
            out = _truncate(candidate, limit)
        break
    return out


def l0_abstract(text: str) -> str:
    """A one-line abstract (L0) of at most 50 characters: the first sentence, cut at a word boundary with "…".

    A very short first sentence (under 12 characters, e.g. "Hi!") is joined with the next one.

    Args:
        text: any text.

    Returns:
        At most 50 characters, e.g. ``"I moved to Paris last year."``; ``""`` for blank text.

    Raises:
        ValidationError: ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise ValidationError(f"text must be a str, got {type(text).__name__}")
    sentences = split_sentences(clean_text(text))
    if not sentences:
        return ""
    head = sentences[0]
    for sentence in sentences[1:]:
        if len(head) >= _MIN_LEAD:
            break
        head = _join(head, sentence)
    return _truncate(head, L0_MAX_CHARS)


def l1_overview(text: str) -> str:
    """An overview (L1) of at most 300 characters: the leading sentences that fit, else the first one cut.

    Args:
        text: any text.

    Returns:
        At most 300 characters; ``""`` for blank text.

    Raises:
        ValidationError: ``text`` is not a ``str``.
    """
    return lead(text, L1_MAX_CHARS)
