"""Shared text helpers for the zero-LLM ingest rules: CJK detection, whitespace and sentence splitting."""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["CJK", "clean_text", "cut_text", "has_cjk", "split_sentences"]

CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_HAS_CJK = re.compile(f"[{CJK}]").search
_WS = re.compile(r"[ \t\r\f\v\u00a0\u3000]+")
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_MD_PREFIX = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*+•]\s+|\d+[.)]\s+)+", re.M)
# Sentence ends: Latin [.!?] followed by space, CJK terminators anywhere, newlines.
# A run of end marks is tried from its first mark only (the look-behind): tried from every mark, "!" x 20,000
# with no space after took 4.9 s (quadratic; a helper's finding).
_BREAK = re.compile(r"(?<![.!?…])[.!?…]+[\"'”’)\]]*(?=\s)|[。！？；]+[\"'”’」』）)]*|[\n\u2028\u2029]+")
_ABBREV = frozenset(
    "mr mrs ms dr prof sr jr st vs etc e.g i.e eg ie approx no fig al inc ltd co corp mt ft "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_LAST_WORD = re.compile(r"(\S+)$")


def has_cjk(text: str) -> bool:
    """Tell whether ``text`` contains Chinese, Japanese or Korean characters.

    Args:
        text: any string.

    Returns:
        ``True`` when at least one CJK ideograph, kana or hangul character occurs.
    """
    return _HAS_CJK(text) is not None


def cut_text(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, at the last space in the final fifth, else hard, with ``" ..."``
    appended when anything was cut.

    Args:
        text: any string.
        limit: characters to keep (>= 1).

    Returns:
        ``text`` itself when it has at most ``limit`` characters, else its cut head plus ``" ..."``.
    """
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = head.rfind(" ")
    return (head[:space] if space >= limit * 4 // 5 else head) + " ..."


def clean_text(text: str, *, drop_code: bool = False) -> str:
    """Collapse horizontal whitespace, drop markdown line prefixes (headings, bullets, quotes).

    Args:
        text: raw message or document text.
        drop_code: remove fenced code blocks (```...```) entirely.

    Returns:
        The cleaned text; newlines are kept (at most one in a row).
    """
    if drop_code:
        text = _FENCE.sub("\n", text)
    text = _MD_PREFIX.sub("", text)
    text = _WS.sub(" ", text)
    return re.sub(r"\s*\n\s*", "\n", text).strip()


def split_sentences(text: str) -> list[str]:
    """Split text into sentences (English and CJK punctuation, line breaks), keeping the end punctuation.

    Common abbreviations ("Dr.", "e.g.", "Jan.") and single-letter initials ("J. K.") do not end a sentence.
    Memoised for texts up to 8,192 characters: one entry's text is split for its L0 and L1 tiers, its facts and
    the session summary.

    Args:
        text: cleaned text (see :func:`clean_text`).

    Returns:
        Non-empty stripped sentences in order.
    """
    return list(_split_cached(text) if len(text) <= MEMO_CHARS else _split_sentences(text))


def _split_sentences(text: str) -> tuple[str, ...]:
    out: list[str] = []
    start = 0
    for m in _BREAK.finditer(text):
        end = m.end()
        if m.group()[0] == ".":
            word = _LAST_WORD.search(text, start, m.start())
            token = word.group(1).lower().strip("(\"'") if word else ""
            if token in _ABBREV or (len(token) == 1 and token.isalpha()) or token.replace(".", "") == "":
                continue
        piece = text[start:end].strip()
        if piece:
            out.append(piece)
        start = end
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return tuple(out)


MEMO_CHARS = 8192  # memoised helpers skip longer texts, so their caches stay small (at most ~16 MiB of keys)
_split_cached = lru_cache(maxsize=1024)(_split_sentences)
