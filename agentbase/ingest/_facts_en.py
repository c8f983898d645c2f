"""English fact rules: one handler per rule family, each turning a regex match into a fact tuple.

Returns plain tuples so that :mod:`agentbase.ingest.facts` owns the :class:`~agentbase.ingest.facts.Fact`
type.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from . import _fact_rules as R
from ._grammar import FUTURE_TIME, find_time, head_noun, is_past_verb, object_forms, third_person, trim_value

__all__ = ["FactTuple", "english_fact"]

# (text, category, subject_key, value, confidence, time_expr)
FactTuple = tuple[str, str, str | None, str | None, float, str | None]


def _time_phrase(clause: str) -> tuple[str | None, str | None, bool]:
    """(time expression, phrase to append, is future) of a clause: ("2020", "in 2020", False)."""
    span = find_time(clause)
    if not span:
        return None, None, False
    start, end = span
    when = clause[start:end]
    prep = R.PREP_BEFORE.search(clause, max(0, start - 6), start)
    phrase = f"{prep.group(1).lower()} {when}" if prep else when
    if phrase.split()[0].lower() in R.LOWER_TIME_WORDS:
        phrase = phrase[0].lower() + phrase[1:]
    return when, phrase, FUTURE_TIME.search(clause) is not None


@dataclass(slots=True)
class _Hit:
    """One rule match in a clause, with what every handler needs."""

    m: re.Match[str]
    clause: str
    subject: str
    when: str | None
    phrase: str | None
    future: bool

    @property
    def groups(self) -> list[str]:
        """The groups that matched, in order (alternations leave the others as ``None``)."""
        return [g for g in self.m.groups() if g is not None]

    def sentence(self, value: str) -> str:
        """Third-person text: the clause from its subject up to the end of ``value``, plus the time phrase."""
        last = self.m.lastindex or 0
        seg = self.clause[self.m.start():self.m.start(last) if last else self.m.end()] + value
        if self.phrase and self.phrase.lower() not in seg.lower():
            seg = f"{seg} {self.phrase}"
        if seg[:3] in ("We ", "we "):  # a household statement ("We moved to Austin") is the user's too
            seg = ("I am " + seg[7:]) if seg[3:7] == "are " else "I " + seg[3:]
        return third_person(seg, self.subject)


def _favorite(h: _Hit) -> FactTuple | None:
    g = h.groups
    if h.m.re is R.RULES[0][2]:  # "my favorite X is Y"
        thing, value, conf = g[0].lower(), trim_value(g[1], max_words=8), 0.9
    else:  # "Y is my favorite X"
        value, thing, conf = trim_value(g[0], max_words=4), g[1].lower(), 0.85
        if value and value.lower() in ("it", "this", "that", "which", "what"):
            return None
    if not value:
        return None
    thing = thing.replace("favourite", "favorite")
    text = f"{h.subject}'s favorite {thing} is {value}"
    return (text, "preference", f"favorite {thing}", value, conf, h.when)


def _names_something(value: str, clause: str) -> bool:
    """Whether ``value`` can be a name (of a place, company or person): its first word is not a function word,
    and it holds a capital letter unless the whole clause is typed in lower case ("my name is sam")."""
    words = value.split()
    capitalised = [w[:1].isupper() for w in words]
    first = words[0].lower() if words else ""
    if first in R.NOT_A_NAME and not (first in ("the", "a", "an") and any(capitalised[1:])):
        return False
    return clause == clause.lower() or any(capitalised)


def _keyed(h: _Hit, key: str | None, value: str) -> str | None:
    """``key``, or ``None`` when this clause should not set it: a hedge or background clause before the match
    ("When I moved to Boston in 2010 ..."), or a value that names nothing for a key that needs a name."""
    if key is None or R.BACKGROUND.search(h.clause[:h.m.start()]):
        return None
    if key in R.NAMED_KEYS and not _names_something(value, h.clause):
        return None
    return key


def _name(h: _Hit) -> FactTuple | None:
    name = h.groups[0]
    if _keyed(h, "name", name) is None:
        return None
    return (f"{h.subject}'s name is {name}", "profile", "name", name, 0.9, None)


def _age(h: _Hit) -> FactTuple | None:
    age = int(h.groups[0])
    if not 0 < age <= 120:
        return None
    return (f"{h.subject} is {age} years old", "profile", "age", str(age), 0.85, h.when)


_PROFILE_KEYS = {"moved": "residence", "new_job": "employer", "changed_employer": "employer",
                 "employer_role": "employer"}
_PROFILE_RULES = ("residence", "moved", "origin", "employer", "new_job", "changed_employer", "employer_role",
                  "occupation", "education")


def _profile(h: _Hit, name: str) -> FactTuple | None:
    said = trim_value(h.groups[-1], max_words=6)
    value = said
    if name in ("employer", "new_job", "changed_employer"):  # "Netflix as a designer": the employer is Netflix
        value = trim_value(re.split(r"\s+as\s+", h.groups[-1], maxsplit=1)[0], max_words=6)
    if not said or not value:
        return None
    conf = 0.8 if name in ("new_job", "moved", "changed_employer") else 0.85
    key = _keyed(h, _PROFILE_KEYS.get(name, name), value)
    if key is None and name != "education":
        if h.m.group(0)[:3].lower() == "we " or name in ("changed_employer", "employer_role"):
            return None  # "We moved to a new topic", "I left the keys and joined the queue"
        return (h.sentence(said), "event", None, said, 0.6, h.when)
    category = "event" if name == "education" else "profile"
    return (h.sentence(said), category, key, value, conf, h.when)


def _preference(h: _Hit) -> FactTuple | None:
    verb, raw = h.groups
    value = trim_value(re.split(r"\s+(?:over|rather than|instead of|more than)\s+", raw, maxsplit=1)[0])
    if not value or R.PREF_OBJECT_BLOCK.match(value) or R.ABOUT_ASSISTANT.search(value):
        return None
    polarity = "negative" if R.NEGATIVE.search(verb) else "positive"
    conf = 0.6 if verb.lower().endswith("ed") else 0.85
    key = "opinion of " + re.sub(r"^(?:the|a|an|to) ", "", value.lower())
    return (h.sentence(trim_value(raw) or value), "preference", key, polarity, conf, h.when)


_WEAK_PLANS = frozenset(
    "want to|would like to|would love to|need to|have to|thinking about|thinking of|considering".split("|")
)
_WISHES = frozenset(["want to", "would like to", "would love to", "will", "need to", "have to"])


def _plan(h: _Hit, name: str) -> FactTuple | None:
    verb, value = h.groups[0].lower(), trim_value(h.groups[1])
    if not value:
        return None
    if name == "plan_progressive" and (not h.future or verb in ("going", "looking", "trying", "wondering")):
        return None
    if verb in ("will", "need to", "have to") and not h.future:
        return None  # "I will try that" is a reply, not a plan; "I will fly to Oslo tomorrow" is
    if verb in _WISHES and value.split()[0].lower() in R.WANT_BLOCK:
        return None  # "I want to know ..." is a request
    conf = 0.5 if verb in _WEAK_PLANS else 0.7
    return (h.sentence(value), "plan", None, value, conf, h.when)


def _possession(h: _Hit) -> FactTuple | None:
    verb, raw = h.groups[0].lower(), R.LEADING_ADVERBS.sub("", h.groups[1])
    first = raw.split()[0].lower().strip(".,!?;:") if raw.split() else ""
    if R.BACKGROUND.search(h.clause[:h.m.start()]):
        return None  # "a library for when I have kids": not something the user has
    participle = verb.startswith("have") and is_past_verb(first)
    if first in R.POSSESSION_BLOCK or first.endswith("ing") or participle:
        return None  # "I have to", "I have been", "I have finished"
    if verb == "got" and not re.match(r"(?:a|an|my|two|three|four|five|some|\d+|[A-Z])\b", raw):
        return None  # "I got home", "I got it"
    value = trim_value(raw)
    if not value or head_noun(value) in R.HAVE_BLOCK or value.split()[-1].lower() in R.HAVE_BLOCK:
        return None  # "I have a question", "I have news" ("news" is no plural of "new")
    key = f"has:{head_noun(value)}" if verb in ("have", "have got", "own") and not h.when else None
    return (h.sentence(value), "possession", key, value, 0.8, h.when)


def _have_been(h: _Hit) -> FactTuple | None:
    value = trim_value(h.groups[1])
    if not value or not h.when:
        return None
    return (h.sentence(value), "event", None, value, 0.75, h.when)


_HABIT_VERB = {"play": "play", "playing": "play", "practice": "practice", "practise": "practice",
               "practicing": "practice", "practising": "practice", "speak": "speak", "speaking": "speak",
               "drive": "drive", "driving": "drive", "learning": "learn", "studying": "study"}
_HABIT_TAIL = re.compile(r"\s+(?:every|each|once|twice|daily|weekly|a lot|sometimes|often|regularly|on|at|in|with"
                         r"|for)\b.*$", re.IGNORECASE)


_NOT_A_SUBJECT = re.compile(r"(?:a lot|a ton|lots|so much|much|more|how|that|and|but|something|things|stuff"
                            r"|a thing|anything)\b", re.IGNORECASE)  # after "I'm learning / studying"
_DETERMINERS = frozenset("a an the my our his her their some this that these those".split())


def _content_words(value: str) -> list[str]:
    return [w for w in re.findall(r"[\w'-]+", value) if w.lower() not in _DETERMINERS]


def _habit_key(verb: str, value: str) -> str:
    """The key a habit and its end share: one car at a time ("vehicle"), else the verb and the object's first
    word ("habit:play:guitar" for "guitar", "the guitar my dad gave me", "guitar on weekends"; "habit:speak:english"
    for "English well"; "acoustic guitar" and "electric guitar" stay two habits)."""
    if verb == "drive":
        return "vehicle"
    words = _content_words(value)
    return f"habit:{verb}:{(words[0].lower() if words else value.lower())[:40]}"


def _names_vehicle(value: str) -> bool:
    """Whether "I drive <value>" names a car: a vehicle word among its first words, or a brand ("a 2015 Ford
    Mustang", "a Tesla"), not "my kids to school", "a lot", "a hard bargain", "40 miles to work"."""
    words = [w for w in _content_words(value) if not re.fullmatch(r"(?:19|20)\d\d", w)][:4]
    return bool(words) and (words[0][0].isupper() or any(w.lower().rstrip("s") in R.VEHICLES for w in words))


def _habit(h: _Hit) -> FactTuple | None:
    said, raw = [g for g in h.groups if g is not None][:2]
    verb = _HABIT_VERB[said.lower()]
    first = raw.split()[0].lower().strip(".,!?;:") if raw.split() else ""
    if first in R.HABIT_BLOCK or R.BACKGROUND.search(h.clause[:h.m.start()]):
        return None
    if verb in ("learn", "study") and _NOT_A_SUBJECT.match(raw):
        return None  # "I'm learning a lot from you", "I'm learning how it works"
    value = trim_value(raw, max_words=6)
    if not value or head_noun(value) in R.HABIT_OBJECT_BLOCK:
        return None
    key: str | None = _habit_key(verb, value)
    if verb == "drive":
        if h.when or not _names_vehicle(value):
            return None  # "I drive my kids to school", "I drive a lot", "Tomorrow I drive a Porsche at the track"
        if re.search(r"\balso\b", h.m.group(0), re.IGNORECASE):
            key = None  # "I also drive a Ford truck for work": a second car, not a new one
    return (h.sentence(value), "profile", key, value, 0.7, h.when)


def _habit_stop(h: _Hit) -> FactTuple | None:
    g = [x for x in h.groups if x is not None]
    verb, raw = _HABIT_VERB[g[0].lower()], (g[1] if len(g) > 1 else "")
    raw = re.sub(r"\s*\b(?:any ?more|these days|now)\W*$", "", raw, flags=re.IGNORECASE)
    value = (trim_value(raw, max_words=6) or "") if raw else ""
    ended = re.search(r"\b(?:no longer|any ?more|stopped|quit|gave up)\b", h.m.group(0), re.IGNORECASE)
    if verb == "drive" and value and not (ended and _names_vehicle(value)):
        return None  # "I do not drive a Tesla" says nothing of the car the user drives
    if (not value and verb != "drive") or (value and value.split()[0].lower() in R.HABIT_BLOCK):
        return None  # "I do not play", "I do not speak to him"
    said = f"no longer {verb}s" if ended else f"does not {verb}"
    thing = f" {value}" if value else ""
    # a plain "does not" with more than the object ("I don't speak Spanish at work") ends no habit
    narrow = not ended and (len(_content_words(value)) > 2 or _HABIT_TAIL.search(value))
    return (f"{h.subject} {said}{thing}", "profile", None if narrow else _habit_key(verb, value), "no", 0.7,
            h.when)


def _event(h: _Hit) -> FactTuple | None:
    adverbs, verb, raw = h.groups if len(h.groups) == 3 else ("", *h.groups)
    low = verb.lower()
    if not is_past_verb(low) or low in R.REPORTING or (low in ("was", "were") and not h.when):
        return None
    recent = bool(re.search(r"just|recently|finally", adverbs, re.I))
    if not (h.when or recent or low in R.MILESTONES):
        return None
    value = trim_value(raw)
    if not value:
        return None
    return (h.sentence(value), "event", None, value, 0.8 if h.when else 0.6, h.when)


def _my_is(h: _Hit) -> FactTuple | None:
    said, verb, raw = h.groups[0], h.groups[1], h.groups[2]
    thing = said.lower()  # the key; the text keeps names as written ("User's cat Mochi is 7 years old")
    value = trim_value(raw, max_words=8)
    if not value or thing in R.MY_IS_BLOCK or R.MY_IS_VALUE_BLOCK.match(raw) or thing.startswith("favo"):
        return None
    if thing.endswith("name") and not _names_something(value, h.clause):
        return None  # "my name is on the list"
    category = "plan" if thing in R.PLAN_KEYS else "profile"
    conf = 0.85 if thing.endswith("name") or thing in ("birthday", "email", "phone number") else 0.6
    return (f"{h.subject}'s {said} {verb} {object_forms(value)}", category, thing, value, conf, h.when)


def _diet(h: _Hit) -> FactTuple | None:
    diet = h.groups[0].lower()
    if R.TEMPORARY.search(h.clause, h.m.end()) or _keyed(h, "diet", diet) is None:
        return (h.sentence(diet), "event", None, diet, 0.6, h.when)
    return (h.sentence(diet), "profile", "diet", diet, 0.8, h.when)


def _i_am_a(h: _Hit) -> FactTuple | None:
    article, raw = h.groups
    value = trim_value(raw, max_words=6)
    if not value or value.split()[0].lower() in R.NOT_IDENTITY_START:
        return None
    head = head_noun(value)
    if head in R.DIETS:
        key: str | None = "diet"
    elif head in R.NOT_OCCUPATION:
        return None
    elif head in R.OCCUPATION_WORDS or head.endswith(("er", "or", "ist", "ian", "ant", "ent", "eer")):
        key = "occupation"
    else:
        key = None
    return (f"{h.subject} is {article.lower()} {object_forms(value)}", "profile", key, value, 0.7, h.when)


_HANDLERS: dict[str, Callable[[_Hit], FactTuple | None]] = {
    "favorite": _favorite,
    "favorite_rev": _favorite,
    "name": _name,
    "age": _age,
    **{n: partial(_profile, name=n) for n in _PROFILE_RULES},
    "preference": _preference,
    "be_preference": _preference,
    **{n: partial(_plan, name=n) for n in ("plan", "plan_verb", "plan_progressive")},
    "possession": _possession,
    "habit": _habit,
    "habit_stop": _habit_stop,
    "have_been": _have_been,
    "event": _event,
    "my_is": _my_is,
    "i_am_a": _i_am_a,
    "diet": _diet,
}


_WORD_BEFORE = re.compile(r"(\S+)\s+$")


def _relative_clause(clause: str, start: int) -> bool:
    """Whether the subject "I"/"we" at ``start`` opens a relative clause ("the support I got", "These figurines
    I bought"): the word right before it is an ordinary lowercase word, or the clause's first word when that is
    one capitalised by position ("Everything I have is yours"), not one of :data:`~._fact_rules.BEFORE_SUBJECT`.
    Punctuation, numbers and mid-clause capitalised words ("Last Fri I", "Thanks Mel I") before it mean a main
    clause."""
    m = _WORD_BEFORE.search(clause, 0, start)
    if m is None or m.end() != start:
        return False
    word = m.group(1)
    if not word.isalpha() or word.lower() in R.BEFORE_SUBJECT:
        return False
    return word.islower() or (word[0].isupper() and m.start(1) == len(clause) - len(clause.lstrip()))


def english_fact(clause: str, subject: str) -> FactTuple | None:
    """The first fact an English clause yields (contractions already expanded), or ``None``.

    Args:
        clause: one clause, e.g. "I am planning to move to Berlin next year".
        subject: how the user is named in the fact text ("User").

    Returns:
        ``(text, category, subject_key, value, confidence, time_expr)`` or ``None``.
    """
    low = clause.lower()
    present = {t for t in R.ALL_TRIGGERS if t in low}
    if not present:
        return None
    timing: tuple[str | None, str | None, bool] | None = None  # computed once, on the first matching rule
    for name, triggers, pattern in R.RULES:
        if triggers.isdisjoint(present):
            continue
        m = pattern.search(clause)
        if not m or R.HYPOTHETICAL.search(clause[:m.start()]) or R.NOT_ASSERTED.search(clause[:m.start()]):
            continue
        if clause[m.start():m.start() + 1] in ("I", "W", "w") and _relative_clause(clause, m.start()):
            continue
        if timing is None:
            timing = _time_phrase(clause)
        fact = _HANDLERS[name](_Hit(m, clause, subject, *timing))
        if fact is not None:
            return fact
    return None
