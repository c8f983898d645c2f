"""Rule-based fact extraction from a user's message (English and Chinese), no LLM.

Each sentence is split into clauses ("I love hiking but I hate running" gives two); each clause yields at most
one fact, from the first rule that matches, in this priority: profile rules with a knowledge-update key
(favourite, name, age, residence, origin, employer, occupation) > preferences > plans > possessions > events >
"my X is Y" > "I am a X". Questions and hypotheticals ("if I like...") are skipped. Fact texts are standalone
third-person sentences ("User likes spicy food") so they read well out of context. A change worded as a change
keeps the key of what changed: "We just moved to Austin" (residence; "we" counts only for a move), "I left Google
and joined Netflix" / "I got hired by Stripe" / "I started working at Acme" (employer), "I changed my name to
Robin" (name), "I became a nurse" (occupation), "I went vegan" (diet).

``subject_key`` enables knowledge-update detection (see :func:`agentbase.ingest.dedup.classify_update`): the
same key with a new value supersedes the old fact. Keys: ``favorite <thing>``, ``name``, ``age``,
``residence``, ``origin``, ``employer``, ``occupation``, ``diet``, ``education``, ``opinion of <thing>``
(value ``positive`` or ``negative``), ``has:<noun>`` (possessions with have/own), and ``<thing>`` for "my
<thing> is <value>".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Literal

from ..errors import ValidationError
from . import _fact_rules as R
from ._facts_en import FactTuple, english_fact
from ._facts_zh import chinese_facts
from ._grammar import expand_contractions
from ._text import MEMO_CHARS, clean_text, has_cjk, split_sentences
from .tiers import lead
from ..retrieval.temporal import parse_time_range

__all__ = ["FACT_CATEGORIES", "KEY_DESCRIPTIONS", "Fact", "extract_facts", "resolve_time"]

FactCategory = Literal["preference", "possession", "plan", "event", "profile"]
FACT_CATEGORIES: tuple[str, ...] = ("preference", "possession", "plan", "event", "profile")
_MAX_FACT_CHARS = 200

# What a profile fact answers, in the words a question about it uses: the description of the fact's entry (a keyword
# and vector key), so "where do I live now?" reaches "User moved to Denver last month" (key ``residence``), the
# current value, and not only the older turns that say "live".
KEY_DESCRIPTIONS: dict[str, str] = {
    "residence": "where they live: home, city, lives",
    "employer": "where they work: job, employer, company, works",
    "occupation": "what they do for a living: job, occupation, work",
    "origin": "where they are from: hometown, grew up, born",
    "name": "their name, what they are called",
    "age": "how old they are: age",
    "diet": "what they eat: diet, food",
}


@dataclass(frozen=True, slots=True)
class Fact:
    """One fact stated by the user.

    Attributes:
        text: standalone third-person sentence, e.g. ``"User's favorite color is blue"`` (<= 200 characters).
        category: ``preference``, ``possession``, ``plan``, ``event`` or ``profile``.
        subject_key: normalised key for knowledge-update detection (``"favorite color"``, ``"residence"``), or
            ``None`` when the fact can coexist with any other.
        value: the value for ``subject_key`` (``"blue"``, ``"Paris"``); for key-less facts the object phrase.
        confidence: 0..1; rule-specific (0.9 for explicit statements such as "my name is", 0.5 for weak ones).
        time_expr: the raw time expression in the clause ("last week", "May 5", "2020"), for the caller to
            resolve against the message time (e.g. with ``dateparser``); ``None`` when absent.
    """

    text: str
    category: FactCategory
    subject_key: str | None = None
    value: str | None = None
    confidence: float = 0.8
    time_expr: str | None = None


def extract_facts(text: str, *, subject: str = "User", max_chars: int = 20_000) -> list[Fact]:
    """Extract facts the user states about themselves from one message.

    Fenced code blocks are ignored; questions and hypotheticals are skipped; each clause gives at most one
    fact.

    Args:
        text: the message content (written by the user).
        subject: how the user is named in fact texts (``"User"``; a speaker name such as ``"Caroline"`` works
            too). Chinese facts use ``"用户"`` when ``subject`` is ``"User"``.
        max_chars: only the first ``max_chars`` characters are read (bounds time on pasted documents).

    Returns:
        Facts in message order, without duplicate texts. Examples: "My favorite color is blue" ->
        ``Fact("User's favorite color is blue", "preference", "favorite color", "blue", 0.9)``;
        "I live in Paris" -> ``Fact("User lives in Paris", "profile", "residence", "Paris", 0.85)``.

    Raises:
        ValidationError: ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise ValidationError(f"text must be a str, got {type(text).__name__}")
    # Memoised for messages up to 8,192 characters: a session commit reads each user turn twice (its facts,
    # then the session summary's "Facts:" line).
    return list((_extract_cached if len(text) <= MEMO_CHARS else _extract)(text, subject, max_chars))


def _extract(text: str, subject: str, max_chars: int) -> tuple[Fact, ...]:
    if not text or not R.GATE.search(text):
        return ()
    zh_subject = "用户" if subject == "User" else subject
    facts: list[Fact] = []
    seen: set[str] = set()
    for sentence in split_sentences(_QUOTED.sub(" ", clean_text(text[:max_chars], drop_code=True))):
        if sentence.endswith(("?", "？")):
            continue
        if has_cjk(sentence) and "我" in sentence:
            found = [Fact(t, c, k, v, conf, w) for t, c, k, v, conf, w in chinese_facts(sentence, zh_subject)]
        elif R.FIRST_PERSON.search(sentence):
            found = []
            for whole in _asserted_clauses(expand_contractions(sentence)):
                for clause, hit in _clause_facts(whole.strip(), subject):
                    if hit is not None and not clause.endswith("?"):
                        found.append(Fact(*hit))  # type: ignore[arg-type]
        else:
            continue
        for fact in found:
            if len(fact.text) > _MAX_FACT_CHARS:
                fact = Fact(lead(fact.text, _MAX_FACT_CHARS), fact.category, fact.subject_key, fact.value,
                            fact.confidence, fact.time_expr)
            if fact.text.casefold() not in seen:
                seen.add(fact.text.casefold())
                facts.append(fact)
    return tuple(facts)


_extract_cached = lru_cache(maxsize=512)(_extract)

# A quoted first-person sentence is someone's words, or text to work on ('Translate "I live in Berlin"', 'He told
# me "I drive a Tesla"'), not the user's statement; other quotes (titles: 'I just read "Dune"') stay.
_QUOTED = re.compile(r"[\"“](?:I|I'm|I’m|We|My|Me)\b[^\"”\n]{0,2000}[\"”]")


def _asserted_clauses(sentence: str) -> list[str]:
    """The sentence's clauses (split at :data:`~._fact_rules.CLAUSE`) without those a punctuation-separated frame
    before them reports or supposes: "According to my mom, I ...", "Tom said: I ...", "If I move, I ...". A
    conjunction ends the frame ("..., probably because I went to bed early" asserts the going to bed); a request
    before a colon ("Translate to French: ...") covers the rest of the sentence."""
    out: list[str] = []
    start, framed = 0, False
    for m in R.CLAUSE.finditer(sentence):
        piece = sentence[start:m.start()]
        if ":" in m.group() and R.REQUEST_FRAME.match(piece):
            return out  # "Translate to French: I speak Spanish and I live in Berlin": the rest is the text to work on
        if not framed:
            out.append(piece)
        framed = not re.search(r"[a-z]", m.group()) and bool(
            R.NOT_ASSERTED.search(piece) or R.HYPOTHETICAL.search(piece))
        start = m.end()
    if not framed:
        out.append(sentence[start:])
    return out


_AND = re.compile(r",?\s+and\s+")
_ALSO = re.compile(r"^(?:also|even|now|still)\s+", re.IGNORECASE)
_OWN_SUBJECT = re.compile(r"(?:I|[Mm]y|[Ww]e|[Tt]he|[Aa]n?|[Hh]e|[Ss]he|[Tt]hey|[Ii]t)\b")


def _clause_facts(clause: str, subject: str) -> list[tuple[str, FactTuple | None]]:
    """``(clause, english_fact(clause) or None)`` for one clause, or for its two halves when it is a first-person
    clause whose second half shares its subject ("I am vegetarian and allergic to peanuts", "I love hiking and
    hate running" give "I am allergic to peanuts", "I hate running") and that half, read so, yields a fact. A
    list of things ("I love hiking and running") stays whole: "I running" yields nothing. Each fact is read once
    (the caller drops the clauses that ask)."""
    whole = english_fact(clause, subject) if clause else None
    m = _AND.search(clause)
    if not m or not clause.startswith("I "):
        return [(clause, whole)]
    head, tail = clause[:m.start()], clause[m.end():]
    if not tail or _OWN_SUBJECT.match(tail) or whole is None:
        return [(clause, whole)]
    first = english_fact(head, subject)
    if first is None:
        return [(clause, whole)]  # the first half states nothing ("I'm pretending to be vegetarian and allergic")
    if whole[3] and whole[3].lower() in tail.lower():
        return [(clause, whole)]  # a rule read the second half on purpose: "I left Google and joined Netflix"
    tail = _ALSO.sub("", tail)  # "and also allergic to peanuts"
    candidates = [f"I {tail}"] + ([f"I am {tail}"] if clause.startswith("I am ") else [])
    for candidate in candidates:
        second = english_fact(candidate, subject)
        if second is not None and first[1] == "plan" and (second[2] or "").startswith(("habit:", "vehicle")):
            break  # "I'm going to work on my form and practice regularly": a planned habit, not a habit
        if second is not None:
            return [(head, first), (candidate, second)]
    return [(clause, whole)]


_YEAR = re.compile(r"\b(?:1[6-9]|2\d)\d\d\b")


def resolve_time(fact: Fact, said_at: datetime) -> dict[str, str] | None:
    """The dates a fact's relative time expression meant when it was said.

    "User moved to Denver last month", said on 15 November 2026, meant October 2026: ``{"expr": "last month",
    "from": "2026-10-01", "to": "2026-10-31"}``. The expression is parsed by
    :func:`agentbase.retrieval.temporal.parse_time_range` (English and Chinese) against ``said_at``; dates are UTC
    calendar days, inclusive. The fact's text keeps its words: writing the date into it ("... in October 2026")
    cost LoCoMo hybrid R@5 0.684 -> 0.669 (docs/benchmarks.md), so the date goes to the entry's metadata.

    Args:
        fact: an extracted fact (its ``time_expr`` is read).
        said_at: when the message was written (aware; naive is UTC).

    Returns:
        ``{"expr", "from", "to"}`` (ISO dates), or ``None`` when the fact has no expression, it already names a
        year ("in 2020"), or it is an open range ("since May") or not recognised.
    """
    if not fact.time_expr or _YEAR.search(fact.time_expr):
        return None
    tr = parse_time_range(fact.time_expr, said_at)
    if tr is None or tr.granularity not in ("day", "week", "weekend", "month", "year"):
        return None
    return {"expr": fact.time_expr, "from": tr.date_from.date().isoformat(), "to": tr.date_to.date().isoformat()}
