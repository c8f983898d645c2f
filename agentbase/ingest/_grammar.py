"""Small English grammar helpers for rule-based facts: contractions, first to third person, value trimming,
time expressions. Everything is precompiled; nothing here allocates per call beyond the strings it returns."""

from __future__ import annotations

import re

__all__ = [
    "FUTURE_TIME",
    "PAST_TIME",
    "TIME_EXPR",
    "expand_contractions",
    "find_time",
    "head_noun",
    "is_past_verb",
    "object_forms",
    "third_person",
    "trim_value",
]

_CONTRACTIONS = {
    "i'm": "I am", "im": "I am", "i've": "I have", "ive": "I have", "i'll": "I will", "i'd": "I would",
    "can't": "cannot", "won't": "will not", "gonna": "going to", "wanna": "want to", "gotta": "have to",
    "i": "I",
}
_CONTRACTION_RE = re.compile(
    r"\b(?:[Ii](?:'m|'ve|'ll|'d)|im|ive|[Cc]an't|[Ww]on't|gonna|wanna|gotta|i(?![\w.]))\b|"
    r"\b([Dd]o|[Dd]oes|[Dd]id|[Ii]s|[Aa]re|[Ww]as|[Ww]ere|[Hh]ave|[Hh]as|[Hh]ad|[Cc]ould|[Ww]ould"
    r"|[Ss]hould)n't\b"
)


def expand_contractions(text: str) -> str:
    """Expand first-person and negative contractions ("I'm" -> "I am", "don't" -> "do not", "i" -> "I").

    Args:
        text: English text; curly apostrophes are straightened first.

    Returns:
        The text with the long forms, so that rules need to spell only those.
    """

    def repl(m: re.Match[str]) -> str:
        if m.group(1):
            return m.group(1) + " not"
        return _CONTRACTIONS[m.group().lower()]

    if "’" in text or "‘" in text:
        text = text.replace("’", "'").replace("‘", "'")
    return _CONTRACTION_RE.sub(repl, text)


_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_COUNT = (
    r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|a couple of|several|\d+)"
)
_UNIT = r"(?:days?|weeks?|months?|years?)"
_MONTH_FULL = r"(?:january|february|march|april|may|june|july|august|september|october|november|december)"
_PERIOD = (
    rf"(?:week|weekend|month|year|summer|winter|spring|fall|autumn|night|morning|evening|semester"
    rf"|{_WEEKDAY}|{_MONTH_FULL})"
)
_PAST = (
    rf"yesterday|today|last {_PERIOD}|{_COUNT} {_UNIT} ago|earlier (?:today|this {_PERIOD})|the other day"
    rf"|this past {_PERIOD}|recently|lately|this morning|this afternoon"
)
_FUTURE = (
    rf"tomorrow|tonight|next {_PERIOD}|this coming {_PERIOD}|coming {_PERIOD}|later (?:today|this {_PERIOD})"
    rf"|in {_COUNT} {_UNIT}|soon|this weekend"
)
_EXPLICIT = (
    rf"{_MONTH}\.? \d{{1,2}}(?:st|nd|rd|th)?(?:,? \d{{4}})?"
    rf"|\d{{1,2}}(?:st|nd|rd|th)? (?:of )?{_MONTH}(?:,? \d{{4}})?"
    rf"|\d{{4}}-\d{{2}}-\d{{2}}|(?<=in )(?:{_MONTH}|(?:19|20)\d\d)(?: (?:19|20)\d\d)?"
    rf"|(?<=since )(?:{_MONTH}|(?:19|20)\d\d)"
    rf"|(?:early|late|mid)[- ](?:{_MONTH}|(?:19|20)\d\d)|(?:on |last |this |next )?{_WEEKDAY}"
    rf"|(?<=for )(?:{_COUNT} (?:{_UNIT}|hours?)|(?:over )?a (?:decade|year))"
)
_TIME_KEYS = (
    "day", "last", "ago", "earlier", "past", "recent", "lately", "morning", "afternoon", "tomorrow",
    "tonight", "next", "coming", "later", "soon", "weekend", "week", "month", "year", "decade", "summer",
    "winter", "spring", "fall", "autumn", "night", "evening", "semester", "jan", "feb", "mar", "apr", "may",
    "jun", "jul", "aug", "sep", "oct", "nov", "dec", "early", "late", "mid",
)
_DIGIT = re.compile(r"\d").search
_TIME_HINT = re.compile("|".join(_TIME_KEYS)).search


def find_time(clause: str) -> tuple[int, int] | None:
    """Find the first explicit or relative time expression ("last week", "May 5", "in 2020").

    Skips the regex when no time keyword or digit is present, and matches the lower-cased text with a
    case-sensitive copy of the pattern (several times faster than ``re.I``).

    Args:
        clause: English text.

    Returns:
        ``(start, end)`` character offsets of the expression in ``clause``, or ``None``.
    """
    low = clause.lower()
    if not (_DIGIT(clause) or _TIME_HINT(low)):
        return None
    m = _TIME_LC.search(low) if len(low) == len(clause) else TIME_EXPR.search(clause)
    return m.span() if m else None


TIME_EXPR = re.compile(rf"\b(?:{_PAST}|{_FUTURE}|{_EXPLICIT})\b", re.I)
_TIME_LC = re.compile(rf"\b(?:{_PAST}|{_FUTURE}|{_EXPLICIT})\b")
PAST_TIME = re.compile(rf"\b(?:{_PAST}|(?:on|in|since) (?:{_EXPLICIT}))\b", re.I)
FUTURE_TIME = re.compile(rf"\b(?:{_FUTURE}|next {_WEEKDAY}|on {_WEEKDAY})\b", re.I)

_IRREGULAR_PAST = frozenset(
    """went bought got saw took made met ran began came did had ate drank drove flew found gave heard kept
    knew left lost paid said sat sent spent spoke stood swam taught thought told won wore wrote caught brought
    built chose fell felt fought forgot grew held hit hung led lent meant put quit rode rang rose sang sold
    shot slept stole threw understood woke became broke hurt set cut fed froze hid laid lit sought shook spun
    swore tore was were been done seen gone taken given eaten driven flown grown known shown written begun run
    become read""".split()
)
_NOT_PAST = frozenset("need feed seed weed bleed breed speed proceed exceed succeed".split())


def is_past_verb(word: str) -> bool:
    """Tell whether ``word`` looks like an English past tense or past participle ("visited", "went", "been").

    Args:
        word: one word, any case.

    Returns:
        ``True`` for irregular past forms and "-ed" words (except "need", "feed", ...).
    """
    w = word.lower()
    return w in _IRREGULAR_PAST or (w.endswith("ed") and len(w) > 3 and w not in _NOT_PAST)


_MODALS = frozenset("could should would might must may can cannot will shall".split())
_ADVERBS = frozenset(
    """just recently finally also really actually still never always usually often sometimes already first
    then absolutely totally truly definitely probably currently now even kind sort genuinely especially
    personally seriously mostly only rarely occasionally""".split()
)
_SUBJECT = [
    (re.compile(r"^I am\b"), "{s} is"),
    (re.compile(r"^I was\b"), "{s} was"),
    (re.compile(r"^I have\b"), "{s} has"),
    (re.compile(r"^I do\b"), "{s} does"),
]
_WORD = re.compile(r"\S+")
_OBJECT_FORMS = [
    (re.compile(r"\bI am\b"), "they are"),
    (re.compile(r"\bI was\b"), "they were"),
    (re.compile(r"\bI have\b"), "they have"),
    (re.compile(r"\bI\b"), "they"),
    (re.compile(r"\bmyself\b", re.I), "themselves"),
    (re.compile(r"\bmine\b", re.I), "theirs"),
    (re.compile(r"\bmy\b", re.I), "their"), (re.compile(r"\bme\b", re.I), "them"),
]


def _conjugate(verb: str) -> str:
    low = verb.lower()
    if low in _MODALS or is_past_verb(low) or not low.isalpha():
        return verb
    if low == "have":
        return "has"
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def object_forms(text: str) -> str:
    """Replace first-person words inside a phrase: "my sister" -> "their sister", "me" -> "them".

    Args:
        text: a phrase with contractions expanded.

    Returns:
        The phrase in the third person (plural "they" form).
    """
    for pattern, repl in _OBJECT_FORMS:
        text = pattern.sub(repl, text)
    return text


def third_person(clause: str, subject: str = "User") -> str:
    """Rewrite a first-person clause that starts with "I" into the third person.

    Args:
        clause: a clause starting with "I", contractions expanded.
        subject: the name that replaces "I".

    Returns:
        E.g. "I really love spicy food" -> "User really loves spicy food"; "I am moving to my sister's place"
        -> "User is moving to their sister's place". Trailing punctuation is dropped.
    """
    out = clause.strip()
    for pattern, template in _SUBJECT:
        if pattern.match(out):
            out = pattern.sub(template.format(s=subject), out, count=1)
            break
    else:
        if out.startswith("I "):
            words = out[2:].split(" ")
            i = 0
            while i < len(words) - 1 and words[i].lower() in _ADVERBS:
                i += 1
            if words and words[i]:
                words[i] = "does" if words[i].lower() == "do" else _conjugate(words[i])
            out = f"{subject} " + " ".join(words)
    head, _, rest = out.partition(" ")
    return f"{head} {object_forms(rest)}".strip().rstrip(" .,;:!")


_CUT = re.compile(
    r"\s*(?:[,;:!?()\[\]\"]|\.(?:\s|$)|\s-\s|\s—|—)|\s+(?:because|since|but|so that|so|when|whenever|while|"
    r"although|though|which|who|where|unless|until|except|whereas|as well as"
    r"|and (?:I|it|that|this|they|he|she|we|my|then|also|now|have|am|was|will|would|had|got|is|are)\b"
    r"|(?:any|for) more|anymore|these days|right now|by the way|btw|too$|lol|haha)\b",
    re.I,
)
_TAIL = re.compile(
    r"(?:\s+(?:a lot|so much|very much|too|lately|now|though|as well|either|anyway|really|again))+$", re.I
)
_LEAD = re.compile(
    r"^(?:(?:now|actually|still|currently|definitely|probably|really|also|just|officially|recently|finally"
    r"|lately)\s+)+",
    re.I,
)
_TRAILING_PREP = re.compile(r"\s+(?:on|in|at|since|for|by|from)$", re.I)
_PRONOUNS = frozenset(
    """it that this these those you your yours him her them one both how what when where which who whatever
    everything anything nothing something there here myself""".split()
)


_DANGLING = frozenset(
    """the a an that to of in for and or their my your his her its our with on at some from by as about into
    than this these those is are was were be very so more most any how what which who""".split()
)


def trim_value(value: str, *, max_words: int = 12, stop_at_time: bool = True) -> str | None:
    """Cut a captured object at its clause boundary and drop fillers.

    Args:
        value: the text after a verb, e.g. "spicy food, but not too hot".
        max_words: longest value kept, in words.
        stop_at_time: also cut before a time expression ("a car last week" -> "a car").

    Returns:
        The trimmed value ("spicy food"), or ``None`` when nothing meaningful is left (empty or a pronoun such
        as "it" / "that idea").
    """
    m = _CUT.search(value)
    if m:
        value = value[:m.start()]
    value = _LEAD.sub("", value.strip())
    if stop_at_time:
        t = find_time(value)
        if t and t[0] == 0:
            value = _LEAD.sub("", value[t[1]:].strip())
            t = find_time(value)
        if t:
            value = value[:t[0]]
    value = _TRAILING_PREP.sub("", _TAIL.sub("", value.strip()))
    words = [w.strip(".,;:!?\"'…") for w in value.split()[:max_words]]
    while words and (not words[-1] or words[-1].lower() in _DANGLING):
        words.pop()
    if not words or words[0].lower() in _PRONOUNS:
        return None
    return " ".join(words).strip(" .,'\"") or None


_DETERMINERS = re.compile(
    r"^(?:(?:a|an|the|my|our|his|her|their|some|any|another|new|old|little|big|few|several|many|couple|lot"
    r"|lots|pair|of|one|two|three|four|five|six|seven|eight|nine|ten|\d+)\s+)+",
    re.I,
)
_NOUN_END = re.compile(
    r"\s+(?:named|called|with|for|from|in|at|of|that|which|who|to|on|and|about|over|into|like)\b.*$", re.I
)


def head_noun(value: str) -> str:
    """The singular head noun of a noun phrase, for possession keys.

    Args:
        value: a noun phrase.

    Returns:
        The lower-case singular head noun: "two cute cats named Tom and Bo" -> "cat".
    """
    phrase = _NOUN_END.sub("", _DETERMINERS.sub("", value.strip())).strip().lower()
    word = phrase.split()[-1] if phrase else value.strip().lower()
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ses", "xes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word
