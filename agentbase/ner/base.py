"""The NER seam: the :class:`Entity` record, the :class:`EntityExtractor` protocol and entity-tag helpers.

Entity tags are how named things reach an entry's ``tags`` (ARCHITECTURE.md section 2): ``ner_<Entity>`` with
spaces replaced by underscores, e.g. ``ner_Alice`` or ``ner_New_York``. Labels follow the OntoNotes 5 scheme
that spaCy's English models use (PERSON, NORP, FAC, ORG, GPE, LOC, PRODUCT, EVENT, WORK_OF_ART, LAW, LANGUAGE,
DATE, TIME, PERCENT, MONEY, QUANTITY, ORDINAL, CARDINAL).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol, runtime_checkable

from ..errors import ValidationError

__all__ = [
    "NON_TAG_LABELS",
    "TAG_PREFIX",
    "Entity",
    "EntityExtractor",
    "entity_tags",
    "mention_pattern",
    "tag_for",
    "unsegmented",
]

TAG_PREFIX = "ner_"

#: Labels that describe amounts and times rather than named things; they never become tags.
NON_TAG_LABELS: frozenset[str] = frozenset(
    {"DATE", "TIME", "CARDINAL", "ORDINAL", "PERCENT", "MONEY", "QUANTITY"}
)

_MAX_TAG_SOURCE = 64  # characters; longer "entities" are model run-ons
_WS = re.compile(r"\s+")
_LEADING_ARTICLE = re.compile(r"^(?:the|a|an)\s+")  # lower-case only: "The Beatles" keeps its article
# Typographic apostrophes (right single quotation mark, modifier letter apostrophe) are the ASCII one in tags and
# mentions, so "O’Brien" and "O'Brien" are one entity.
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u02bc": "'"})
_ANY_APOSTROPHE = "['\u2019\u02bc]"
_POSSESSIVE = re.compile(r"(?:'s|'|’s|’)$")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")
_EDGE_PUNCT = "\"'“”‘’`.,;:!?()[]{}<>«»「」『』《》【】（），。、；：！？*_#|/\\-–—"


@dataclass(frozen=True, slots=True)
class Entity:
    """One named-entity mention.

    Attributes:
        text: the surface text as it appears in the input.
        label: an OntoNotes label such as ``PERSON``, ``ORG``, ``GPE`` or ``DATE``.
        start: character offset of the first character in the input text.
        end: character offset one past the last character (``text == source[start:end]``).
    """

    text: str
    label: str
    start: int
    end: int


@runtime_checkable
class EntityExtractor(Protocol):
    """Anything that finds named entities in text.

    Implementations: :class:`~agentbase.ner.spacy_extractor.SpacyExtractor` (the ``[ner]`` extra) and the
    dependency-free :class:`~agentbase.ner.regex_extractor.RegexExtractor`.

    Attributes:
        name: short identifier of the implementation (``"spacy"`` or ``"regex"``), recorded in traces.
    """

    name: str

    def extract(self, text: str) -> list[Entity]:
        """Return the entities of ``text`` ordered by ``start``.

        Args:
            text: any string; an empty string gives an empty list.

        Returns:
            Non-overlapping entities sorted by start offset.

        Raises:
            ValidationError: ``text`` is not a ``str``.
        """
        ...


def tag_for(name: str) -> str:
    """Normalise an entity name into its tag, ``ner_<Name>``.

    NFKC-normalises, writes typographic apostrophes as ``'``, strips surrounding quotes/punctuation, a lower-case leading article ("the", "a") and a
    trailing possessive ("'s"), then joins words with underscores. Case is preserved ("ner_New_York"); compare
    tags case-insensitively if you need to.

    Args:
        name: an entity surface text such as ``"New York"`` or ``"Alice's"``.

    Returns:
        The tag, e.g. ``"ner_New_York"``; ``tag_for("Alice's") == "ner_Alice"``.

    Raises:
        ValidationError: ``name`` is not a string or contains no letter or digit after normalisation.
    """
    if not isinstance(name, str):
        raise ValidationError(f"entity name must be a str, got {type(name).__name__}")
    body = _WS.sub(" ", unicodedata.normalize("NFKC", name)).strip().translate(_APOSTROPHES)
    if body.startswith(TAG_PREFIX):
        body = body[len(TAG_PREFIX):]
    body = body.strip(_EDGE_PUNCT + " ")
    body = _LEADING_ARTICLE.sub("", body)
    body = _POSSESSIVE.sub("", body).strip(_EDGE_PUNCT + " ")
    if not any(ch.isalnum() for ch in body):
        raise ValidationError(f"entity name {name!r} has no letters or digits")
    return TAG_PREFIX + body.replace(" ", "_")


def entity_tags(entities: Iterable[Entity]) -> list[str]:
    """Turn entities into de-duplicated ``ner_`` tags for named things.

    Entities whose label is in :data:`NON_TAG_LABELS` (dates, times, numbers, money, quantities) are skipped,
    as are names without any letter (``"2023"``), URLs, e-mail addresses and spans over 64 characters.
    Duplicates are detected case-insensitively; the first spelling wins.

    Args:
        entities: entities from any :class:`EntityExtractor`.

    Returns:
        Tags in first-mention order, e.g. ``["ner_Alice", "ner_Acme", "ner_Paris"]``.
    """
    tags: list[str] = []
    seen: set[str] = set()
    for ent in entities:
        if ent.label in NON_TAG_LABELS or not any(ch.isalpha() for ch in ent.text):
            continue
        if len(ent.text) > _MAX_TAG_SOURCE or "://" in ent.text or "www." in ent.text or "@" in ent.text:
            continue  # URLs, e-mail addresses and run-on spans are not names
        try:
            tag = tag_for(ent.text)
        except ValidationError:
            continue
        key = tag.casefold()
        if key not in seen:
            seen.add(key)
            tags.append(tag)
    return tags


@lru_cache(maxsize=4096)
def mention_pattern(name: str) -> re.Pattern[str]:
    """A compiled pattern that finds ``name`` mentioned in a text: as whole words (any run of whitespace between
    them), or, for a name with CJK or kana/hangul characters (no word boundaries), as a substring.

    Args:
        name: an entity name. The pattern is case-sensitive: case-fold both the name and the text for a
            case-insensitive test (the NER boost), or neither to match the name as written (summary tags).

    Returns:
        The pattern, cached per name: ``mention_pattern("new york").search("i love new  york!")`` matches,
        ``mention_pattern("al").search("also")`` does not; apostrophes match in either form (``'`` / ``’``).
    """
    if unsegmented(name):
        return re.compile(re.escape(name))
    words = (re.escape(w.translate(_APOSTROPHES)).replace("'", _ANY_APOSTROPHE) for w in name.split())
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)")


def unsegmented(text: str) -> bool:
    """Whether ``text`` holds CJK ideographs, kana or hangul: scripts written without spaces between words, where a
    name is matched as a substring rather than as whole words."""
    return _CJK.search(text) is not None
