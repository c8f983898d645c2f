"""A dependency-free, bilingual (English + Chinese) entity extractor built from regular expressions.

It is the fallback when spaCy is not installed, and it supplies Chinese names to the spaCy extractor, whose
English model cannot read Chinese. Labels of English names are guesses from context (a preceding "in" suggests
a place, "at" an organisation, a title a person); the span, and therefore the ``ner_`` tag, is what matters.
"""

from __future__ import annotations

import bisect
import re

from ..errors import ValidationError
from . import _patterns as P
from ._cjk import extract_cjk, has_cjk
from .base import Entity

__all__ = ["RegexExtractor"]

_PREV_WORD = re.compile(rf"([{P.LETTERS}]+)\W*$")
_SENTENCE_END = ".!?:;\n…。！？"
_OPENERS = " \t\"'“‘(*-•>#["
_POSSESSIVE_TAIL = re.compile(r"(?:'s|’s|'|’)$")
_CLITIC = re.compile(r"['’](?:s|ve|ll|re|d|m|t)$")


def _base(word: str) -> str:
    """Lower-cased word without a clitic: "It's" -> "it", "We've" -> "we", "Don't" -> "not"."""
    low = word.lower()
    return "not" if low.endswith(("n't", "n’t")) else _CLITIC.sub("", low)


def _is_sentence_initial(text: str, start: int) -> bool:
    before = text[max(0, start - 40):start].rstrip(_OPENERS)
    return not before or before[-1] in _SENTENCE_END or start - len(before) > 40


def _overlaps(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether ``[start, end)`` overlaps one of ``spans`` (sorted, non-overlapping): only its neighbours in that
    order can (a scan of every span made extraction quadratic: 25 s for 40,000 names, a helper's finding)."""
    i = bisect.bisect_left(spans, (start, end))
    return (i > 0 and spans[i - 1][1] > start) or (i < len(spans) and spans[i][0] < end)


class RegexExtractor:
    """Find entities with precompiled regular expressions; no model, no downloads, thread-safe.

    English: dates (ISO, "May 8, 2023", "8 May 2023", "in 2020", weekdays and month names), times, money,
    percentages, quantities with units, and capitalised name sequences ("New York", "Bank of America") with
    sentence-initial stop words ("The", "My", "Hi") and pronoun "I" removed. Chinese: dates (2023年5月8日),
    amounts and place/organisation names by suffix (北京市, 华为公司, 清华大学).

    Attributes:
        name: ``"regex"``.
    """

    name = "regex"

    def extract(self, text: str) -> list[Entity]:
        """Return the entities of ``text``.

        Args:
            text: any string; empty text gives ``[]``.

        Returns:
            Non-overlapping entities sorted by ``start``; ``text[e.start:e.end] == e.text`` for each.

        Raises:
            ValidationError: ``text`` is not a ``str``.
        """
        if not isinstance(text, str):
            raise ValidationError(f"text must be a str, got {type(text).__name__}")
        if not text:
            return []
        found: list[Entity] = []
        taken: list[tuple[int, int]] = []

        def add(label: str, start: int, end: int) -> None:
            if end > start and not _overlaps(taken, start, end):
                bisect.insort(taken, (start, end))
                found.append(Entity(text[start:end], label, start, end))

        present = {"digit": P.HAS_DIGIT(text) is not None, "cjk": has_cjk(text)}
        for label, pattern, group, needs in P.SPAN_PATTERNS:
            if needs and not any(present[n] for n in needs):
                continue
            for m in pattern.finditer(text):
                add(label, m.start(group), m.end(group))
        for ent in extract_cjk(text):
            add(ent.label, ent.start, ent.end)
        for m in P.CAP_SEQUENCE.finditer(text):
            for label, start, end in self._names(text, m.start(), m.group()):
                add(label, start, end)
        found.sort(key=lambda e: e.start)
        return found

    def extract_many(self, texts: list[str]) -> list[list[Entity]]:
        """Extract entities from several texts.

        Args:
            texts: strings to process.

        Returns:
            One entity list per input text, in input order.

        Raises:
            ValidationError: an item is not a ``str``.
        """
        return [self.extract(t) for t in texts]

    # ----------------------------------------------------------------------------------------------- names
    def _names(self, text: str, offset: int, seq: str) -> list[tuple[str, int, int]]:
        """Split one capitalised sequence into names with labels: ``[(label, start, end), ...]``."""
        words = [(w.group(), offset + w.start(), offset + w.end()) for w in P.CAP_WORD.finditer(seq)]
        groups: list[list[tuple[str, int, int]]] = [[]]
        out: list[tuple[str, int, int]] = []
        for word in words:
            low = _base(word[0])
            if low in P.ALWAYS_STOP or low in P.MONTHS_WEEKDAYS or word[0] in P.NON_NAME_ACRONYMS:
                groups.append([])
            else:
                groups[-1].append(word)
        for group in groups:
            initial = bool(group) and _is_sentence_initial(text, group[0][1])
            skip = 0  # leading stop words and titles are counted, then cut once (slicing per word was quadratic)
            while skip < len(group) and (_base(group[skip][0]) in P.FUNCTION_STOP
                                         or (initial and _base(group[skip][0]) in P.INITIAL_STOP)):
                skip += 1
            title = False
            while skip < len(group) and group[skip][0].lower().rstrip(".") in P.TITLES:
                skip, title = skip + 1, True
            group = group[skip:]
            if not group:
                continue
            first, last = group[0], group[-1]
            verbish = first[0].lower().endswith(("ing", "ly", "ed"))
            label_colon = text.startswith(":", first[2])
            if len(group) == 1 and (len(first[0]) == 1 or (initial and (verbish or label_colon))):
                continue  # a single letter, "Running late", or a label such as "Instructions:"
            start, end = first[1], last[2]
            tail = _POSSESSIVE_TAIL.search(text[start:end])
            if tail:
                end -= len(tail.group())
            out.append((self._label(text, group, title), start, end))
        return out

    @staticmethod
    def _label(text: str, group: list[tuple[str, int, int]], title: bool) -> str:
        """Guess an OntoNotes label for a name from its words and the word before it."""
        words = [w[0] for w in group]
        lows = [w.lower() for w in words]
        prev_match = _PREV_WORD.search(text[max(0, group[0][1] - 30):group[0][1]])
        prev = prev_match.group(1).lower() if prev_match else ""
        if title or prev in P.TITLES:
            return "PERSON"
        if lows[-1].rstrip(".") in P.ORG_SUFFIX or (len(lows) > 1 and lows[0] in P.ORG_SUFFIX):
            return "ORG"
        if lows[-1] in P.FAC_SUFFIX:
            return "FAC"
        if lows[-1] in P.LOC_WORDS or lows[0] in ("mount", "lake"):
            return "LOC"
        if any(w in P.GPE_WORDS for w in lows) or words[0] in P.GPE_ACRONYMS:
            return "GPE"
        if len(words) == 1 and lows[0] in P.DEMONYMS:
            return "NORP"
        if prev in P.PLACE_PREPOSITIONS:
            return "GPE"
        if prev in P.ORG_PREPOSITIONS or (len(words) == 1 and words[0].isupper() and len(words[0]) > 1):
            return "ORG"
        return "PERSON"
