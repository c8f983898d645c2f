"""Rule patterns that read relations from text for :mod:`agentbase.graph` (no LLM).

A subject (a named entity, or "I" resolved to the speaker) and the next named entity form a relation when the
words between them are exactly one verb pattern below, optionally with an auxiliary and an adverb ("I've just
joined", "is currently working at"); "my X is Y" relates the speaker to Y with predicate X.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import ValidationError
from .ner import NON_TAG_LABELS, Entity

__all__ = ["GATE", "RelationMention", "extract_relation_mentions", "normalize_predicate"]

_PRED = re.compile(r"^[a-z0-9][a-z0-9_]{0,63}$")


_AUX = r"(?:['’](?:m|s|ve|re)|\s+(?:am|is|are|was|were|has|have|had|also|now))?(?:\s+been)?"
_ADV = r"(?:(?:now|currently|recently|just|also|still|finally|officially|already|since)\s+)?"
_ART = r"(?:(?:the|a|an)\s+)?"
# (verb phrase, predicate); a predicate starting with "!" ends the open relation instead of adding one.
_VERBS: list[tuple[str, str]] = [
    (r"(?:work|works|working)\s+(?:at|for)|joined|(?:started|starting)\s+(?:working\s+|a\s+(?:new\s+)?job\s+)?at"
     r"|got\s+a\s+(?:new\s+)?job\s+(?:at|with)|(?:got\s+)?hired\s+(?:at|by)|employed\s+(?:at|by)", "works_at"),
    (r"(?:live|lives|living)\s+in|(?:moved|relocated)\s+(?:back\s+)?to|based\s+in", "lives_in"),
    (r"worked\s+(?:at|for)", "worked_at"),
    (r"lived\s+in", "lived_in"),
    (r"(?:come|comes|coming)\s+from|from|born\s+in", "comes_from"),
    (r"married\s+to|married", "married_to"),
    (r"(?:study|studies|studying|studied)\s+at|graduated\s+from|attends|attended", "studied_at"),
    (r"left|quit|resigned\s+from|retired\s+from|stopped\s+working\s+(?:at|for)", "!works_at"),
    (r"moved\s+(?:out\s+of|away\s+from)", "!lives_in"),
]
_BETWEEN = [(re.compile(rf"{_AUX}\s+{_ADV}(?:{verb})\s+{_ART}", re.I), pred) for verb, pred in _VERBS]
# Perfect tense of the past forms means the state still holds ("I have lived in Oslo for years").
_PERFECT = re.compile(r"(?:['’]ve|\s+(?:has|have))\s", re.I)
_MY = re.compile(r"\b[Mm]y\s+((?:[a-z]+\s+){0,2}?[a-z]+)\s+is\s+(?:called\s+|named\s+)?$")
_MY_SKIP = {"name", "favorite", "favourite", "birthday", "age", "goal", "dream", "job", "plan", "idea"}
_PRONOUN = re.compile(r"\bI\b")
_AND = re.compile(r",?\s+and(?=\s)", re.I)
GATE = re.compile(r"work|join|start|hired|employ|live|living|moved|relocat|based|from|born|married|stud|"
                   r"graduat|attend|left|quit|resign|retire|\bmy\s", re.I)


@dataclass(frozen=True, slots=True)
class RelationMention:
    """One relation found in text, before entity resolution.

    Attributes:
        subject, object: entity surface names. subject_type, object_type: NER labels or None.
        predicate: normalised predicate such as ``works_at``.
        ends: True when the text ends the relation ("Alice left Acme") instead of starting it.
    """

    subject: str
    subject_type: str | None
    predicate: str
    object: str
    object_type: str | None
    ends: bool = False


def extract_relation_mentions(text: str, entities: Sequence[Entity], *, speaker: str | None = None,
                              max_chars: int = 2000) -> list[RelationMention]:
    """Find subject-verb-object relations between named entities of ``text`` (no LLM; about 10 us per clause).

    A subject is a named entity or the pronoun "I" (resolved to ``speaker``; skipped when ``speaker`` is None);
    the object is the next named entity; the words between them must be one of the verb patterns exactly (so
    "Alice said Bob works at Acme" relates Bob, not Alice). "my X is Y" relates the speaker to Y with predicate X.

    Args:
        text: the message or memory text.
        entities: NER output for ``text`` (offsets into it); dates, times and amounts are ignored.
        speaker: who "I" and "my" refer to (a speaker name or user id).
        max_chars: only entities starting within this many characters are used.

    Returns:
        Mentions in text order, e.g. ``RelationMention("Alice", "PERSON", "works_at", "Acme", "ORG")``.
    """
    if not text or not GATE.search(text[:max_chars]):
        return []
    named = [e for e in entities if e.label not in NON_TAG_LABELS and e.start < max_chars
             and any(ch.isalpha() for ch in e.text)]
    subjects: list[tuple[int, int, str, str | None]] = [(e.start, e.end, e.text, e.label) for e in named]
    if speaker:
        taken = [(e.start, e.end) for e in named]
        subjects += [(m.start(), m.end(), speaker, "PERSON") for m in _PRONOUN.finditer(text[:max_chars])
                     if not any(s <= m.start() < e for s, e in taken)]
    subjects.sort()
    out: list[RelationMention] = []
    for obj in named:
        before = [s for s in subjects if s[1] <= obj.start]
        if before:
            _s0, s_end, s_name, s_type = before[-1]
            between = text[s_end:obj.start]
            pred = _verb(between)
            if pred is None and out and _AND.match(between):
                # "Alice works at Acme and lives in Paris": the coordinated verb shares the last subject.
                pred = _verb(between[_AND.match(between).end():])
                s_name, s_type = out[-1].subject, out[-1].subject_type
            if pred is not None:
                out.append(RelationMention(s_name, s_type, pred.lstrip("!"), obj.text, obj.label,
                                           pred.startswith("!")))
                continue
        if speaker:
            m = _MY.search(text[max(0, obj.start - 60):obj.start])
            if m and not (set(m.group(1).split()) & _MY_SKIP):
                out.append(RelationMention(speaker, "PERSON", normalize_predicate(m.group(1)), obj.text,
                                           obj.label))
    return out


def _verb(between: str) -> str | None:
    """The predicate whose verb pattern is exactly the text between subject and object, else None."""
    for rx, pred in _BETWEEN:
        if rx.fullmatch(between):
            if pred in ("worked_at", "lived_in") and _PERFECT.match(between):
                return "works_at" if pred == "worked_at" else "lives_in"
            return pred
    return None


def normalize_predicate(predicate: str) -> str:
    """``"Works At"`` -> ``"works_at"``.

    Raises:
        ValidationError: empty or with characters outside ``[a-z0-9_]`` after normalisation, or over 64 chars.
    """
    if not isinstance(predicate, str):
        raise ValidationError("predicate must be a string")
    p = re.sub(r"[\s\-]+", "_", predicate.strip().casefold())
    if not _PRED.match(p):
        raise ValidationError(f"predicate {predicate!r} must be 1-64 characters of letters, digits and underscores")
    return p
