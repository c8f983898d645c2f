"""Rule table for :mod:`agentbase.ingest.facts`: precompiled English patterns, trigger words, word lists.

Contractions are expanded before matching ("I'm" -> "I am", "don't" -> "do not"), so patterns spell only the
long forms. A rule runs only when one of its trigger words is a substring of the lower-cased clause.
"""

from __future__ import annotations

import re

GATE = re.compile(r"\b(?:i|my|im|i'm|i’m|i've|i'll|i'd|we|call me)\b|我", re.I)
CLAUSE = re.compile(
    r"[,;:]?\s+(?:and|but|so|because|although|though|while|whereas|plus|also|then|since)\s+(?=(?:I|[Mm]y)\b)"
    r"|[,;:]\s+(?=(?:I|[Mm]y)\b)|\s+[-—]\s+"
)
# "We" counts only for the rules that accept it (a household move: "We just moved to Austin").
FIRST_PERSON = re.compile(r"\b(?:[Ii]|[Mm]y|im|ive|[Ww]e|[Cc]all me)\b")
HYPOTHETICAL = re.compile(
    r"\b(?:if|whether|unless|wonder|wondering|not sure|what if|do you think|imagine|imagined|suppose|pretend"
    r"|pretended|in case|as if|you think|ask (?:you )?(?:if|whether)|dreamed|dreamt|dream"
    r"|let us say|let's say|let’s say)\b"
    r"(?:\s+\S+){0,3}\s*$",
    re.I,
)
# The user does not assert what follows: it is denied ("I do not think I am ...", "I never said I live ..."),
# someone else's claim ("My friend said I am ...", "People think I am ..."), or hedged ("Maybe I am ...").
# Read like HYPOTHETICAL, on the clause before the rule's match (contractions are already expanded).
NOT_ASSERTED = re.compile(
    r"(?:\b(?:not|never|cannot)\s+(?:\w+\s+)?(?:think|believe|say|said|claim|claimed|know|knew|remember|mean|guess"
    r"|suppose|agree|feel|felt|admit|admitted)\b(?:\s+that)?"
    r"|\b(?:not|never|hardly|no longer) (?:true|the case|correct) that|\bfalse that|\bnot that"
    r"|\b(?:told|tells|tell|reminded|reminds) me(?: that)?|\baccording to [\w' ]+,?"
    r"|\bI (?:guess|hope|doubt|suppose)(?: that)?|\b(?:probably|supposedly|apparently|allegedly),?"
    r"|\b(?:he|she|they|people|someone|somebody|everyone|everybody|nobody"
    r"|(?:my|his|her|their|our|the) [\w'-]+|(?-i:[A-Z][\w'-]+))\s+(?:\w+ly\s+)?"
    r"(?:say|says|said|think|thinks|thought|believe|believes|believed|claim|claims|claimed|insists|insisted"
    r"|assumes|assumed|swears|swore)(?:\s+that)?"
    r"|\b(?:maybe|perhaps|possibly)\b,?)\s*$",
    re.I,
)
ADV = (
    r"(?:\s+(?:really|absolutely|totally|just|also|actually|truly|still|always|genuinely|especially"
    r"|definitely|personally|kind of|sort of|currently|now|recently|finally|already|seriously|usually"
    r"|generally|mostly|secretly))*"
)
I_SUBJ = r"(?<![\w'])I"
WE_SUBJ = r"(?<![\w'])(?:I|[Ww]e)"
FAV = r"(?:all[- ]time |absolute |very |new |current )?favou?rite"
_WORDS = r"(?:[\w'-]+ ){{0,{n}}}?[\w'-]+"

TRIGGERS: dict[str, tuple[str, ...]] = {
    "favorite": ("favo",),
    "favorite_rev": ("favo",),
    "name": ("name is", "call me", "called", "go by", "name to"),
    "age": ("i am ", "turned"),
    "residence": ("live", "resid", "living", "based", "located", "settled"),
    "moved": ("moved", "relocated"),
    "changed_employer": ("join", "hired", "working at", "working for", "offer"),
    "origin": ("from", "grew up", "born", "raised"),
    "employer": ("work", "employed"),
    "new_job": ("job", "position", "role", "internship"),
    "occupation": ("work",),
    "employer_role": ("work",),
    "education": ("graduated",),
    "preference": ("like", "love", "ador", "enjoy", "prefer", "hate", "dislike", "detest", "loath", "stand"),
    "be_preference": ("i am ",),
    "plan": ("i am ",),
    "plan_verb": (" to ", "will"),
    "plan_progressive": ("ing ",),
    "possession": (
        "have", "own", "bought", "purchased", "got", "received", "adopted", "inherited", "picked", "ordered",
        "acquired", "rescued",
    ),
    "habit": ("play", "practi", "speak", "drive", "learning", "studying"),
    "habit_stop": ("play", "practi", "speak", "driv"),
    "have_been": ("have been",),
    "event": ("i ",),
    "my_is": ("my ",),
    "i_am_a": ("i am ", "became", "become"),
    "diet": ("vegetarian", "vegan", "pescatarian", "flexitarian"),
}

_PATTERNS: list[tuple[str, str]] = [
    ("favorite",
     rf"\bmy {FAV} ({_WORDS.format(n=3)}) (?:is|are|was|has (?:always )?been|would be|has to be) (.+)"),
    ("favorite_rev",
     r"^(?:(?:I think|I guess|I would say|probably|maybe|definitely|honestly|well|oh|so|now),? )*"
     rf"({_WORDS.format(n=3)}) (?:is|are) (?:definitely |probably |still |now |currently |officially )?"
     rf"my {FAV} ({_WORDS.format(n=2)})"),
    ("name", r"\b(?:my (?:new )?name is|call me|I am (?:now )?called|I (?:now )?go by"
             r"|I (?:have )?(?:just |legally |officially )?changed my name to) "
             r"((?-i:(?:Dr|Mr|Mrs|Ms|Mx|Prof)\. )?[a-z][\w'-]*(?-i: [A-Z][\w'-]*){0,2})"),
    ("age",
     rf"{I_SUBJ} am (\d{{1,3}})(?: ?(?:years?|yrs?|y/?o)(?: old)?)?"
     r"(?![\w%$.,/:-]| ?(?:minutes|hours|days|weeks|months|times|pounds|lbs|kg|km|miles|feet|ft|cm"
     r"|percent|%))"
     rf"|{I_SUBJ} (?:just )?turned (\d{{1,3}})\b"),
    ("residence",  # "we" is the user's household ("We live in Austin"), as for a move
     rf"{WE_SUBJ}{ADV} (?:live|reside) (?:in|at|near|on) (.+)"
     rf"|{I_SUBJ} am (?:currently |now |still )?(?:living|based|located|settled) (?:in|at|near|out of) (.+)"
     rf"|{WE_SUBJ} are (?:currently |now |still )?living (?:in|at|near) (.+)"),  # "we are based in": a company
    ("moved",
     rf"{WE_SUBJ}(?: have)?(?: just| recently| finally| actually)? (?:moved|relocated) "
     r"(?:back )?(?:from (?:[\w'.-]+ ){1,4}?)?(?:to|into) (.+)"),
    ("origin",
     rf"{I_SUBJ} am (?:originally )?from (.+)"
     rf"|{I_SUBJ} (?:grew up|was born and raised|was born|was raised) in (.+)"),
    ("employer",
     rf"{I_SUBJ}{ADV} work (?:at|for) (.+)"
     rf"|{I_SUBJ} am (?:currently |now )?(?:working|employed) (?:at|for|by) (.+)"),
    ("new_job",
     rf"{I_SUBJ}(?: have)?(?: just| recently| finally)? (?:started|got|accepted|landed|took|began)"
     r"(?: a| my| the)? (?:new )?(?:job|position|role|internship) (?:at|with) (.+)"),
    # a change of employer: "I left Google and joined Netflix", "I got hired by Stripe", "I started working at
    # Acme". A bare "I joined X" is not enough (a gym, a book club).
    ("changed_employer",
     rf"{I_SUBJ}(?: have)?(?: just| recently| finally)? left (?:my job at )?[A-Z][\w&.'-]*(?: [A-Z][\w&.'-]*){{0,3}}"
     r",? (?:and|to) (?:have )?(?:just )?(?:joined|join|started at|start at|started working (?:at|for)) (.+)"
     rf"|{I_SUBJ}(?: have)?(?: just| recently| finally)?(?: got| was| have been| have just been)? hired (?:by|at) (.+)"
     rf"|{I_SUBJ}(?: have)?(?: just| recently| finally)? (?:started|began) working (?:at|for) (.+)"
     rf"|{I_SUBJ}(?: have)?(?: just| recently| finally)? accepted (?:a |an |the )?(?:job |position |role )?"
     r"offer (?:from|at|with) (.+)"
     rf"|{I_SUBJ}(?: have)?(?: just| recently| finally)? joined (.+? as (?:an?|the|their) .+)"),
    # "I work as a nurse at Northwestern": the employer is what changes with a new job, so it is the key
    ("employer_role",
     rf"{I_SUBJ}(?: currently| now| still)? work as (?:an? )?(?:[\w'-]+ ){{0,4}}?[\w'-]+ (?:at|for) (.+)"
     rf"|{I_SUBJ} am (?:currently |now )?working as (?:an? )?(?:[\w'-]+ ){{0,4}}?[\w'-]+ (?:at|for) (.+)"),
    ("occupation",
     rf"{I_SUBJ}(?: currently| now)? work as (?:an? )?(.+)"
     rf"|{I_SUBJ} am (?:currently |now )?working as (?:an? )?(.+)"),
    ("education", rf"{I_SUBJ}(?: have)?(?: just| recently)? graduated from (.+)"),
    ("diet",
     rf"{I_SUBJ} (?:am(?:{ADV}| fully| strictly| officially)*|(?:have )?(?:just |recently )?"
     r"(?:gone|went|turned|become|became)) (vegetarian|vegan|pescatarian|flexitarian)\b"),
    ("preference",
     rf"{I_SUBJ}{ADV} (like|love|adore|enjoy|prefer|hate|dislike|detest|loathe|cannot stand"
     r"|do (?:really )?(?:like|love|enjoy)|do not (?:really )?(?:like|enjoy|love)|did not (?:like|enjoy)"
     r"|liked|loved|enjoyed|hated|disliked) (.+)"),
    ("be_preference",
     rf"{I_SUBJ} am(?: really| also| totally| definitely| just| so| very| pretty| a little| kind of)* "
     r"((?:not )?(?:an? )?(?:big |huge |massive |great |die-hard )?fan of|(?:not )?(?:really )?into"
     r"|obsessed with|interested in|passionate about|allergic to|addicted to|crazy about|keen on|fond of"
     r"|sick of|tired of) (.+)"),
    ("plan",
     rf"{I_SUBJ} am(?: also| really| actually| just| still| now| seriously| definitely| probably)? "
     r"(going to|planning to|planning on|about to|hoping to|thinking about|thinking of|considering"
     r"|looking forward to|scheduled to|set to|saving up for|saving for|preparing for|moving to"
     r"|planning(?= (?:a|an|my|our|the) (?:trip|vacation|holiday|visit|move|party|wedding|surprise)\b)) (.+)"),
    ("plan_verb",
     rf"{I_SUBJ}(?: also| really| actually| still| definitely| probably| eventually| finally)? "
     r"(plan to|plan on|intend to|hope to|want to|would like to|would love to|will|aim to|have decided to"
     r"|decided to|have been meaning to|need to|have to) (.+)"),
    ("plan_progressive", rf"{I_SUBJ} am(?: also| actually| just| finally)? (\w+ing) (.+)"),
    # a habit that ended ("I don't play guitar anymore", "I no longer drive", "I quit playing chess"): keyed like
    # the habit, so it replaces it
    ("habit_stop",
     rf"{I_SUBJ}(?: do not| no longer)(?: really)? (play|practi[cs]e|speak|drive)"
     r"(?: (.+?))?(?:\s*(?:any ?more|these days|now))?\s*[.!]?$"
     rf"|{I_SUBJ}(?: have)?(?: just| recently| finally)? (?:stopped|quit|gave up) (playing|practi[cs]ing|speaking"
     r"|driving)(?: (.+?))?\s*[.!]?$"),
    # a habit in the present tense: "I play guitar", "I speak Spanish", "I drive a Tesla", "I practice yoga"
    ("habit", rf"{I_SUBJ}{ADV} (play|practice|practise|speak|drive) (.+)"
              rf"|{I_SUBJ} am(?: also| currently| now| still| actually| really)? (learning|studying) (.+)"),
    ("possession",
     rf"{I_SUBJ}(?: also| just| recently| finally| already| actually| now| still| currently)* "
     r"(have got|have|own|bought|purchased|got|received|adopted|inherited|picked up|ordered|acquired"
     r"|rescued) (.+)"),
    ("have_been", rf"{I_SUBJ} have been (\w+ing) (.+)"),
    ("event",
     rf"{I_SUBJ}((?: just| recently| finally| also| actually| first| already| then| officially)*)"
     r"(?: have)?(?: just| recently| finally| already)? ([a-z]+) (.+)"),
    ("my_is", r"\bmy ((?:[a-z][\w'-]* ){0,2}?[a-z][\w'-]*) (is|are|was|were) (?:called |named )?(.+)"),
    ("i_am_a",
     rf"{I_SUBJ} (?:am(?: now| currently| officially)?|(?:have )?(?:just |recently |finally )?become|became) "
     r"(an?) (.+)"),
]

#: (name, triggers, pattern) in priority order; the handler in ``facts._build`` is chosen by name.
RULES: list[tuple[str, frozenset[str], re.Pattern[str]]] = [
    (name, frozenset(TRIGGERS[name]), re.compile(pattern, re.I)) for name, pattern in _PATTERNS
]
ALL_TRIGGERS: tuple[str, ...] = tuple(sorted({t for ts in TRIGGERS.values() for t in ts}))

WANT_BLOCK = frozenset(
    """know ask understand see check confirm clarify say tell thank mention make hear share discuss talk note
    point follow add write create build implement code fix debug convert generate compute calculate get find
    verify be try let keep look give take use run print change update explain""".split()
)
# First words after a habit verb that make it no habit ("I play it safe", "I speak to my manager", "I drive to
# work", "I practice what I preach"), and head nouns that do ("I play a big part / role in it").
HABIT_BLOCK = frozenset(
    """it along around with to about up out for on back home there here down into through by what some this
    that them him her me you us favorites""".split()
)
HABIT_OBJECT_BLOCK = frozenset("part role card cards trick tricks joke jokes favorite".split())
# What "I drive ..." must name to be the user's car: a vehicle word, or a brand (a capitalised word first)
VEHICLES = frozenset(
    """car cars truck van suv minivan sedan hatchback coupe convertible pickup jeep motorcycle motorbike scooter
    moped camper rv wagon hybrid ev""".split()
)
# A request that quotes a sentence before a colon: "Translate to French: I live in Berlin"
REQUEST_FRAME = re.compile(
    r"^\s*(?:please\s+|can you\s+|could you\s+)?(?:translate|repeat|rewrite|paraphrase|correct|proofread|fix"
    r"|write|say|summari[sz]e|example|e\.g\.|for example|sample|quote)\b", re.I)
HAVE_BLOCK = frozenset(
    """question questions problem problems issue issues idea ideas doubt doubts concern concerns feeling
    suggestion suggestions request favor chance time trouble difficulty fun clarification thought thoughts
    opinion query queries error bug task homework assignment minute moment look point sense understanding
    grasp handle news update updates""".split()
)
MILESTONES = frozenset(
    """graduated married retired started finished completed joined quit won adopted launched published bought
    visited attended ran got""".split()
)
NOT_OCCUPATION = frozenset(
    """mother father brother sister daughter member lover fan beginner owner user person customer believer
    follower supporter newcomer reader runner gamer vegetarian vegan pescatarian christian introvert extrovert
    other parent resident citizen patient newbie enthusiast optimist pessimist perfectionist procrastinator
    minimalist foodie bit lot little few kind sort big huge total complete""".split()
)
NOT_IDENTITY_START = frozenset("bit little lot few kind sort huge big total complete fan".split())
OCCUPATION_WORDS = frozenset(
    "nurse chef doctor student cook barista intern ceo cto founder vet pilot".split()
)
DIETS = frozenset("vegetarian vegan pescatarian flexitarian".split())
MY_IS_BLOCK = frozenset(
    "question problem issue point concern guess understanding bad fault pleasure apologies".split()
)
MY_IS_VALUE_BLOCK = re.compile(
    r"^(?:not|so|very|too|really|kind|sort|a bit|pretty|always|also|still|just|\w+ing)\b", re.I
)
LEADING_ADVERBS = re.compile(
    r"^(?:(?:also|just|already|always|never|ever|recently|finally|actually|really|since)\s+)+", re.I
)
# Words after "I have" that make it a perfect tense or a negation, not a possession ("I have come so far", "I
# haven't."); "come", "become", "run" are past participles that look like base forms, so is_past_verb misses them.
POSSESSION_BLOCK = frozenset("to not no never been had got gotten come become run".split())
# Words that may stand right before the subject "I"/"we" of a main clause: conjunctions, adverbs, time words,
# interjections, and the verbs and adjectives of a complement clause ("I think I will", "so glad I went"). Any
# other lowercase word there makes the clause a relative one: in "the support I got made a huge difference" or
# "These figurines I bought yesterday remind me of ...", the user states nothing about getting or buying.
BEFORE_SUBJECT = frozenset("""and but so or nor then because cause since when whenever while after before as if
    though although once until till also actually just really recently finally now today yesterday tonight
    tomorrow week weeks weekend weekends month months year years ago night morning evening afternoon day days
    time times last first too even still well yes yeah yep oh ok okay haha lol hey hi wow anyway anyways btw
    honestly basically definitely probably maybe perhaps sometimes usually always never often literally
    seriously thankfully luckily unfortunately fortunately hopefully plus where that think know believe feel
    hope mean say said guess bet swear remember forgot realized realised noticed wish glad happy proud lucky
    sure sorry thankful grateful excited relieved afraid amazed surprised thrilled stoked thanks lately way fact
    course honest""".split())  # "By the way I'm vegetarian", "in fact I moved", "of course I", "to be honest I"
REPORTING = frozenset(
    """mentioned said told asked wanted wondered thought realized noticed meant hoped needed figured forgot
    felt guessed tried supposed assumed expected heard""".split()
)
PREF_OBJECT_BLOCK = re.compile(
    r"(?:the )?(?:idea|sound|suggestion|way|thought|concept|fact|point|recommendation|advice|tip)s? "
    r"(?:of|that|you|about)\b"
    r"|(?:learning|knowing|hearing|finding|exploring|reading|understanding|getting|seeing|discussing) "
    r"(?:more|out|about)\b",
    re.I,
)
ABOUT_ASSISTANT = re.compile(r"\b(?:you|your|yours)\b", re.I)
PLAN_KEYS = frozenset("goal plan dream aim resolution intention".split())
NEGATIVE = re.compile(
    r"\b(?:hate|hated|dislike|disliked|detest|loathe|cannot|not|allergic|sick of|tired of)\b", re.I
)
# A profile value stated as background ("When I moved to Boston in 2010, ...") or hedged ("Maybe we moved ...")
# is not the current value: such a fact keeps no key, so it supersedes nothing.
BACKGROUND = re.compile(r"\b(?:when|after|before|since|once|while|until|maybe|perhaps)\s*$", re.I)
# "I went vegan for a week as an experiment": a trial, not a diet.
TEMPORARY = re.compile(r"\b(?:for (?:a|one|two|three|a few|the) (?:day|week|month|weekend)s?|experiment|trial|"
                       r"temporarily|for now)\b", re.I)
# Keys whose value names something (a place, a company, a person): a value without a capital letter in a message
# that uses capitals ("I moved to the couch", "I work at night", "My name is on the list") names nothing.
NAMED_KEYS = frozenset({"residence", "employer", "origin", "name"})
NOT_A_NAME = frozenset("""on in at not the a an no my your his her their its our irrelevant unimportant important
    same different private secret long short hard easy simple weird written spelled pronounced also still just
    nobody someone somebody anyone everyone back later tomorrow tonight today anytime maybe when if""".split())
PREP_BEFORE = re.compile(r"\b(in|since|for|on|by) $", re.I)
LOWER_TIME_WORDS = frozenset(
    "next last this tomorrow yesterday today tonight in on since early late mid recently earlier the "
    "for".split()
)
