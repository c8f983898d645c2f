"""Precompiled patterns and word lists for :class:`~agentbase.ner.regex_extractor.RegexExtractor`.

Only explicit expressions count as dates (ISO dates, "May 8, 2023", "8 May 2023", "2023年5月8日", weekdays);
relative words such as "yesterday" are left to the temporal parser of the retrieval pipeline.
"""

from __future__ import annotations

import re

from .._letters import LETTERS, UPPER

__all__ = ["CAP_SEQUENCE", "CAP_WORD", "HAS_DIGIT", "LETTERS", "SPAN_PATTERNS"]

#: Whether a text holds a digit (``\d``: any Unicode decimal digit, as in the patterns).
HAS_DIGIT = re.compile(r"\d").search

_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December"
    r"|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)(?:\.|(?![A-Za-z]))"
)
_MONTH_NOT_MAY = r"(?:January|February|March|April|June|July|August|September|October|November|December)"
_WEEKDAY = r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?:1[89]\d\d|2[01]\d\d)"
# A number starts where a digit run starts: without the look-behind every digit of a long run would start a
# scan to the run's end (a 10,000-digit query took 10 s).
_NUM = r"(?<![\d,])\d[\d,]*(?:\.\d+)?"
_CN_NUM = "零一二三四五六七八九十百千两"

_UNITS = (
    r"km|kilomet(?:er|re)s?|miles?|mi|met(?:er|re)s?|m|cm|mm|ft|feet|foot|inch(?:es)?|yards?|kg|kilos?|"
    r"kilograms?|g|grams?|mg|lbs?|pounds|oz|ounces?|tons?|tonnes?|l|lit(?:er|re)s?|ml|gallons?|cups?|tbsp|"
    r"tsp|hours?|hrs?|h|minutes?|mins?|seconds?|secs?|days?|weeks?|months?|years?|yrs?|decades?|°\s?[CF]|"
    r"degrees?|"
    r"[KMGT]B|kcal|calories|cal|mph|km/h|kph|steps|reps|laps|pages"
)
_SPELLED_UNITS = r"(?:hours?|minutes?|days?|weeks?|months?|years?|miles?|kilomet(?:er|re)s?)"
_NUM_WORD = (
    r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|"
    r"a few|several|half an?)"
)

#: (label, pattern, group, needs) in priority order; an earlier span wins over a later overlapping one. ``needs``
#: names what a text must contain for the pattern to match at all (``"digit"``, ``"cjk"``, either of several,
#: or nothing). About half of LongMemEval's turns hold no digit; skipping the digit patterns for them halves
#: their extraction time (183 -> 98 us per synthetic chat turn).
SPAN_PATTERNS: list[tuple[str, re.Pattern[str], int, frozenset[str]]] = [
    (label, re.compile(pattern), group, frozenset(needs.split()))
    for label, pattern, group, needs in [
        ("DATE", r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b", 0, "digit"),
        ("DATE", r"\b\d{4}/\d{1,2}/\d{1,2}\b|\b\d{1,2}[/.]\d{1,2}[/.](?:\d{4}|\d{2})\b", 0, "digit"),
        ("DATE", rf"\b(?:{_WEEKDAY},?\s+)?{_MONTH}\s*{_DAY}\b(?:,?\s+{_YEAR}\b)?", 0, "digit"),
        ("DATE", rf"\b(?:{_WEEKDAY},?\s+)?(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR}\b)?", 0, "digit"),
        ("DATE", rf"\b{_MONTH},?\s+{_YEAR}\b", 0, "digit"),
        ("DATE", r"\d{4}\s*年(?:\s*\d{1,2}\s*月(?:\s*\d{1,2}\s*[日号])?)?|\d{1,2}\s*月\s*\d{1,2}\s*[日号]", 0, "digit"),
        ("DATE", rf"[{_CN_NUM}]{{1,2}}月[{_CN_NUM}]{{1,3}}[日号]|(?:星期|礼拜|周)[一二三四五六日天]", 0, "cjk"),
        (
            "DATE",
            r"\b(?:[Ii]n|[Ss]ince|[Ff]rom|[Uu]ntil|[Tt]ill|[Bb]y|[Dd]uring|[Bb]efore|[Aa]fter|[Aa]round|of|"
            rf"[Ee]arly|[Ll]ate|[Mm]id-?)\s+((?:the\s+)?(?:{_YEAR}|(?:19|20)\d0s)|May)\b",
            1, "",
        ),
        ("DATE", rf"\b(?:(?:[Ll]ast|[Nn]ext|[Tt]his|[Ee]very)\s+)?{_WEEKDAY}s?\b", 0, ""),
        ("DATE", rf"\b{_MONTH_NOT_MAY}\b", 0, ""),
        ("TIME", r"\b(?:[01]?\d|2[0-3]):[0-5]\d(?:\s?[ap]\.?m\.?)?(?![\w:])", 0, "digit"),
        ("TIME", r"\b(?:1[0-2]|0?[1-9])\s?[ap]\.?m\b\.?", 0, "digit"),
        ("MONEY", rf"[$€£¥₹]\s?{_NUM}(?:\s?(?:k|K|m|M|bn|million|billion|thousand)\b)?", 0, "digit"),
        ("MONEY", rf"\b{_NUM}\s?(?:dollars?|bucks|USD|EUR|euros?|GBP|yuan|RMB|CNY|yen|JPY)\b", 0, "digit"),
        ("MONEY", rf"{_NUM}\s?(?:万元|亿元|元|块钱|块|美元|欧元|英镑|日元|人民币)", 0, "digit"),
        ("PERCENT", rf"\b{_NUM}\s?(?:%|percent\b|per cent\b)|百分之[\d{_CN_NUM}点]+", 0, "digit cjk"),
        ("QUANTITY", rf"\b{_NUM}\s?(?:{_UNITS})(?![A-Za-z])", 0, "digit"),
        ("QUANTITY", rf"\b{_NUM_WORD}\s+{_SPELLED_UNITS}\b", 0, ""),
        ("QUANTITY", r"(?<!\d)\d+(?:\.\d+)?\s?(?:公斤|千克|公里|千米|厘米|毫米|米|克|斤|小时|分钟|秒钟|天|周|个月|年|岁|度|升|毫升|页)", 0, "digit"),
    ]
]

_CAP_WORD = rf"[{UPPER}][{LETTERS}]*(?:[&'’\-][{LETTERS}]+)*"
CAP_WORD = re.compile(_CAP_WORD)
# A name starts after anything but a letter of a cased script, a digit or "_" (not ``\b``: a Chinese or Japanese
# character right before it is a word character, and "我和Zoë在北京" holds the name "Zoë").
CAP_SEQUENCE = re.compile(
    rf"(?<![{LETTERS}\d_]){_CAP_WORD}"
    r"(?:[ \t]+(?:(?:of(?:[ \t]+the)?|de|da|del|della|der|den|van|von|la|le|du|di)[ \t]+)?"
    rf"{_CAP_WORD})*"
)

#: Words that split a capitalised sequence wherever they occur.
ALWAYS_STOP = frozenset("i i'm i've i'd i'll i’m i’ve i’d i’ll ok okay may".split())
MONTHS_WEEKDAYS = frozenset(
    "january february march april june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays fridays "
    "saturdays sundays".split()
)
#: Function words and greetings that never start a name, wherever they are.
FUNCTION_STOP = frozenset(
    "the a an my our your his her their its it this that these those hi hello hey dear thanks thank please "
    "yes no oh wow well so and but or if also just what when where why how who which whose whats what's "
    "not yeah yep yup nope haha hahaha lol lmao omg hmm ugh oops alright".split()
) | frozenset(
    # The same kind of words in Russian and Greek, now that names of those scripts are read ("Это Москва" is
    # "Москва", "Ο Νίκος" is "Νίκος"). Latin-script languages' words are left out: they also begin English names
    # and titles ("Mein Kampf", "Ton Koopman", "Nous Research", "Para"), and a cut name is a wrong tag.
    """это где когда почему как что кто я ты он она мы вы они и в на с не мой моя мои наш наша да нет спасибо
    привет вот там тут сегодня вчера но а
    ο η το οι τα και που πότε γιατί πώς τι ποιος εγώ εσύ αυτός αυτή εμείς είναι στο στη με για ναι όχι
    ευχαριστώ γεια σήμερα χθες""".split()
)
#: Words that do not start a name at the start of a sentence (pronouns, auxiliaries, imperatives, adverbs).
INITIAL_STOP = frozenset(
    """we you he she it they there here can could would should will shall might must do does did is are was
    were have has had am be been let let's lets tell give show make find help remember write create explain
    list describe suggest recommend compare check try get take use add consider keep note see look go come say
    know think need want like love today tomorrow yesterday tonight now then sometimes maybe perhaps actually
    honestly anyway recently currently finally still however besides overall first second third next last
    after before since during every each some any many most all both not never always only great good nice
    cool sure sounds awesome perfect interesting speaking by as at in on for from with about into of to
    unfortunately luckily hopefully definitely absolutely exactly really yeah yep nope alright right okay
    congrats congratulations sorry wait btw lol haha other another such even though although while because
    once hence instead plus there all more due one current additionally furthermore moreover therefore thus
    meanwhile otherwise similarly regardless ugh hmm oops well got gotta gonna""".split()
)
#: All-caps abbreviations that are not names of things.
NON_NAME_ACRONYMS = frozenset(
    """TV PC PM AM VR AR AI ML PS FAQ DIY ASAP FYI BTW ETA CEO CTO CFO HR URL API PDF USB GPS SUV DM OMG LOL
    TBH IMO IMHO ID PIN SMS ATM RSVP PTO UI UX OK TL DR ADHD DNA HIIT BBQ ETF IRA""".split()
)
TITLES = frozenset(
    "mr mrs ms miss dr prof professor sir madam aunt uncle grandma grandpa coach captain".split()
)
ORG_SUFFIX = frozenset(
    """inc corp corporation ltd llc co company group bank university college school institute foundation
    association agency labs lab technologies systems airlines motors studios club society hospital clinic
    church academy council committee ministry department team party records press times news""".split()
)
FAC_SUFFIX = frozenset(
    "street st avenue ave road rd boulevard blvd bridge airport station museum stadium tower mall center "
    "centre hotel cafe restaurant temple cathedral square".split()
)
LOC_WORDS = frozenset(
    "river lake mountain mountains mount island islands beach bay valley ocean sea desert forest canyon "
    "coast falls park".split()
)
GPE_WORDS = frozenset("city county state province village town kingdom republic".split())
GPE_ACRONYMS = frozenset("USA US UK UAE NYC LA SF DC".split())
PLACE_PREPOSITIONS = frozenset(
    "in from to near visit visited visiting around across via into toward towards live lives lived".split()
)
ORG_PREPOSITIONS = frozenset("at for joined join employer".split())
DEMONYMS = frozenset(
    """american british english french german spanish italian chinese japanese korean indian mexican canadian
    russian brazilian australian irish scottish dutch swedish norwegian danish finnish greek turkish thai
    vietnamese arabic arab portuguese polish african european asian latino latina hispanic muslim christian
    jewish hindu buddhist catholic democrat democrats republican republicans mandarin cantonese""".split()
)
