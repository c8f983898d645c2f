"""Zero-LLM ingest rules: L0/L1 tiers, fact extraction, session summaries, dedup and knowledge updates."""

from __future__ import annotations

import re
import time
from types import SimpleNamespace

import pytest

from agentbase.errors import ConfigError, ValidationError
from agentbase.ingest.dedup import (
    classify_update,
    content_hash,
    harden_confidence,
    is_near_duplicate,
    jaccard,
    normalize_for_hash,
    normalize_value,
    shingles,
)
from agentbase.ingest.facts import FACT_CATEGORIES, Fact, extract_facts
from agentbase.ingest.summary import session_keywords, summarize_session
from agentbase.ingest.tiers import L0_MAX_CHARS, L1_MAX_CHARS, l0_abstract, l1_overview

LONG = (
    "The quarterly planning meeting covered budget allocations for the marketing team, new hiring plans in "
    "engineering, and the timeline for the product launch in Europe. Everyone agreed to reconvene next week."
)


def one(text: str) -> Fact:
    facts = extract_facts(text)
    assert len(facts) == 1, facts
    return facts[0]


# ------------------------------------------------------------------------------------------------ tiers
def test_l0_of_a_200_char_text_is_cut_at_a_word_boundary():
    assert len(LONG) > 200
    l0 = l0_abstract(LONG)
    assert len(l0) <= L0_MAX_CHARS == 50
    assert l0 == "The quarterly planning meeting covered budget…"
    assert LONG.startswith(l0[:-1]) and LONG[len(l0) - 1] == " "


def test_l0_keeps_a_short_first_sentence_whole():
    assert l0_abstract("I moved to Paris last year. It is lovely there.") == "I moved to Paris last year."


def test_l0_joins_a_greeting_with_the_next_sentence():
    text = "Hi! I need help with my Python code. It crashes."
    assert l0_abstract(text) == "Hi! I need help with my Python code."


def test_l1_takes_whole_sentences_that_fit():
    text = "First sentence here. Second one follows. " + "x " * 400
    assert l1_overview(text).startswith("First sentence here. Second one follows.")
    assert len(l1_overview(text)) <= L1_MAX_CHARS == 300
    assert l1_overview(LONG) == LONG  # 205 characters fit
    assert len(l1_overview(LONG * 3)) <= 300


def test_tiers_handle_cjk_without_spaces():
    text = "我在北京市的华为公司工作，每天早上八点上班，晚上十点才下班，周末还要经常加班，感觉非常累，想换一份轻松一点的工作，你有什么建议吗？"
    l0 = l0_abstract(text)
    assert len(l0) <= 50 and l0.endswith("…") and text.startswith(l0[:-1].rstrip("，"))
    assert l0_abstract("我喜欢猫。我也喜欢狗。") == "我喜欢猫。我也喜欢狗。"


def test_tiers_hard_cut_a_single_long_token_and_clean_markdown():
    url = "https://example.com/" + "a" * 100
    assert len(l0_abstract(url)) == 50 and l0_abstract(url).endswith("…")
    assert l0_abstract("# Title\n\n- first point\n- second") == "Title first point"
    assert l0_abstract("   \n") == "" and l1_overview("") == ""


def test_tiers_reject_non_strings():
    with pytest.raises(ValidationError):
        l0_abstract(None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        l1_overview(b"bytes")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------ facts
def test_favorite_colour_then_update():
    old, new = one("My favorite color is blue"), one("My favorite color is now green.")
    assert old == Fact("User's favorite color is blue", "preference", "favorite color", "blue", 0.9)
    assert new.text == "User's favorite color is green"
    assert (new.subject_key, new.value) == ("favorite color", "green")
    assert classify_update(old, new) == "update"
    assert classify_update(old, one("my favourite colour is Blue!")) == "unrelated"  # "colour" is another key
    assert classify_update(old, one("My favorite color is blue.")) == "same"
    assert one("Blue is my favorite color.").subject_key == "favorite color"


@pytest.mark.parametrize(
    ("text", "fact_text", "category", "key", "value"),
    [
        ("I live in Paris.", "User lives in Paris", "profile", "residence", "Paris"),
        ("I moved to Berlin last month.", "User moved to Berlin last month", "profile", "residence",
         "Berlin"),
        ("My name is Alice Smith.", "User's name is Alice Smith", "profile", "name", "Alice Smith"),
        ("I'm 32 years old.", "User is 32 years old", "profile", "age", "32"),
        ("I work at Google.", "User works at Google", "profile", "employer", "Google"),
        ("I work as a nurse.", "User works as a nurse", "profile", "occupation", "nurse"),
        ("We just moved to Austin.", "User just moved to Austin", "profile", "residence", "Austin"),
        ("I left Google and joined Netflix.", "User left Google and joined Netflix", "profile", "employer",
         "Netflix"),
        ("I left my job at Google to join Netflix as a designer.",
         "User left their job at Google to join Netflix as a designer", "profile", "employer", "Netflix"),
        ("I got hired by Stripe.", "User got hired by Stripe", "profile", "employer", "Stripe"),
        ("I started working at Acme in May.", "User started working at Acme in May", "profile", "employer",
         "Acme"),
        ("I work at Google as an engineer.", "User works at Google as an engineer", "profile", "employer",
         "Google"),
        ("I changed my name to Robin.", "User's name is Robin", "profile", "name", "Robin"),
        ("Call me Robin from now on.", "User's name is Robin", "profile", "name", "Robin"),
        ("I moved from Boston to Denver.", "User moved from Boston to Denver", "profile", "residence", "Denver"),
        ("I accepted an offer from Stripe.", "User accepted an offer from Stripe", "profile", "employer",
         "Stripe"),
        ("I joined Stripe as an engineer.", "User joined Stripe as an engineer", "profile", "employer", "Stripe"),
        ("I moved to the couch.", "User moved to the couch", "event", None, "the couch"),
        ("I'm now a nurse.", "User is a nurse", "profile", "occupation", "nurse"),
        ("I became a teacher.", "User is a teacher", "profile", "occupation", "teacher"),
        ("I went vegan in January.", "User went vegan in January", "profile", "diet", "vegan"),
        ("I am vegetarian now.", "User is vegetarian", "profile", "diet", "vegetarian"),
        ("I'm a software engineer.", "User is a software engineer", "profile", "occupation",
         "software engineer"),
        ("I'm a vegetarian.", "User is a vegetarian", "profile", "diet", "vegetarian"),
        ("I'm originally from India.", "User is originally from India", "profile", "origin", "India"),
        ("My dog's name is Max.", "User's dog's name is Max", "profile", "dog's name", "Max"),
        ("I don't like mushrooms.", "User does not like mushrooms", "preference", "opinion of mushrooms",
         "negative"),
        ("I'm allergic to peanuts.", "User is allergic to peanuts", "preference", "opinion of peanuts",
         "negative"),
        ("I have two cats named Tom and Bo.", "User has two cats named Tom and Bo", "possession", "has:cat",
         "two cats named Tom and Bo"),
        ("I'm planning to move to Berlin next year.", "User is planning to move to Berlin next year", "plan",
         None, "move to Berlin"),
        ("Next week I'm visiting my parents in Ohio.", "User is visiting their parents in Ohio next week",
         "plan", None, "my parents in Ohio"),
        ("I started learning piano in 2020.", "User started learning piano in 2020", "event", None,
         "learning piano"),
        ("I just bought a new Tesla last week!", "User just bought a new Tesla last week", "possession", None,
         "a new Tesla"),
        ("I've been collecting vintage films for three months now.",
         "User has been collecting vintage films for three months", "event", None, "vintage films"),
    ],
)
def test_english_patterns(text: str, fact_text: str, category: str, key: str | None, value: str):
    fact = one(text)
    assert (fact.text, fact.category, fact.subject_key, fact.value) == (fact_text, category, key, value)
    assert fact.category in FACT_CATEGORIES and 0 < fact.confidence <= 1


def test_joining_a_club_is_not_a_change_of_employer():
    assert [f.subject_key for f in extract_facts("I joined a gym. I joined the Sierra Club last year.")] == [None, None]
    assert [f.subject_key for f in extract_facts("We have a dog. We love pizza.")] == []


def test_time_expressions_are_kept_raw_for_the_caller():
    assert one("On May 5 I ran my first marathon.").time_expr == "May 5"
    assert one("I started learning piano in 2020.").time_expr == "2020"
    assert one("I live in Paris.").time_expr is None


def test_clauses_give_separate_facts():
    facts = extract_facts("I love hiking but I hate running, and I work at Acme.")
    assert [(f.text, f.subject_key, f.value) for f in facts] == [
        ("User loves hiking", "opinion of hiking", "positive"),
        ("User hates running", "opinion of running", "negative"),
        ("User works at Acme", "employer", "Acme"),
    ]


def test_opinion_flip_is_an_update():
    assert classify_update(one("I love sushi."), one("I hate sushi.")) == "update"
    assert classify_update(one("I love sushi."), one("I really like sushi.")) == "same"


@pytest.mark.parametrize(
    "text",
    [
        "Do I like spicy food?",
        "If I like it I will buy it.",
        "I want to know how to sort a list.",
        "I have a question about Python.",
        "I love your suggestions!",
        "Alice works at Acme in Paris.",
        "We went to the park.",
        "Call me back tomorrow.",
        "My name is on the list.",
        "Can you recommend a restaurant?",
        "```python\nI love bugs = True\n```",
        "",
    ],
)
def test_no_fact_from_questions_requests_or_code(text: str):
    assert extract_facts(text) == []


@pytest.mark.parametrize("text", [
    "My own journey and the support I got made a huge difference.",
    "These figurines I bought yesterday remind me of family love.",
    "This book I read last year reminds me to always pursue my dreams.",
    "The car I bought last year broke down.",
    "Everything I have is yours.",
    "I'm truly grateful for all the support I've got from friends and mentors.",
    "Nah, I haven't.",
    "I've come so far since then.",
    "I'm creating a library for when I have kids.",
    "I have news too!",
])
def test_no_fact_from_relative_clauses_perfect_tenses_or_background(text: str):
    """LoCoMo turns gave facts such as "Caroline got made a huge difference" and "Caroline has not", which then
    outranked real evidence on vector similarity."""
    assert extract_facts(text, subject="Caroline") == []


@pytest.mark.parametrize("text, fact_text", [
    ("Last Friday I went to a council meeting for adoption.",
     "Caroline went to a council meeting for adoption last Friday"),
    ("Yesterday I took the kids to the museum.", "Caroline took the kids to the museum yesterday"),
    ("Last Fri I finally took my kids to a pottery workshop.",
     "Caroline finally took their kids to a pottery workshop"),
    ("Mel, I moved to Austin last month.", "Caroline moved to Austin last month"),
    ("Thanks Mel I went hiking yesterday.", "Caroline went hiking yesterday"),
    ("I have two cats and a dog.", "Caroline has two cats and a dog"),
    ("By the way I'm vegetarian, so no meat for me.", "Caroline is vegetarian"),
    ("In fact I moved to Austin in May.", "Caroline moved to Austin in May"),
])
def test_main_clauses_after_time_words_names_or_commas_still_give_facts(text: str, fact_text: str):
    assert [f.text for f in extract_facts(text, subject="Caroline")] == [fact_text]


def test_chinese_patterns():
    facts = extract_facts("我喜欢吃辣的食物。我住在上海市。我在北京市的华为公司工作。我最喜欢的颜色是蓝色。我下周要去日本旅游。")
    assert [(f.text, f.category, f.subject_key, f.value) for f in facts] == [
        ("用户喜欢吃辣的食物", "preference", "opinion of 吃辣的食物", "positive"),
        ("用户住在上海市", "profile", "residence", "上海市"),
        ("用户在北京市的华为公司工作", "profile", "employer", "北京市的华为公司"),
        ("用户最喜欢的颜色是蓝色", "preference", "最喜欢的颜色", "蓝色"),
        ("用户要去日本旅游", "plan", None, "日本旅游"),
    ]
    assert facts[-1].time_expr == "下周"
    assert classify_update(facts[1], one("我搬到了杭州市")) == "update"


def test_subject_name_and_dedup_within_a_message():
    facts = extract_facts("I love jazz. I love jazz!", subject="Caroline")
    assert [f.text for f in facts] == ["Caroline loves jazz"]


def test_extract_facts_rejects_non_strings():
    with pytest.raises(ValidationError):
        extract_facts(None)  # type: ignore[arg-type]


def test_fact_extraction_throughput():
    base = [
        "I love hiking but I hate running in the rain.",
        "Can you recommend a good book about the history of Rome? I enjoyed SPQR a lot.",
        "My favorite color is green and I live in Lisbon.",
        "I just bought a new bike last week, and I'm planning to ride to work every day.",
        "Thanks, that's really helpful! Could you also explain how the second step works in more detail?",
    ]
    msgs = [f"{m} ({i})" for i in range(400) for m in base]
    start = time.perf_counter()
    total = sum(len(extract_facts(m)) for m in msgs)
    rate = len(msgs) / (time.perf_counter() - start)
    assert total >= 1600
    assert rate > 500, f"{rate:.0f} messages/s"  # ~5,000/s on a laptop core; loose bound for slow CI


# ---------------------------------------------------------------------------------------------- summary
CHAT = [
    ("user", "Hi!"),
    ("user", "I'm planning a trip to Japan next month and I love spicy food. Any restaurant tips for Tokyo?"),
    ("assistant", "Tokyo has great spicy ramen. Try Nakiryu for tantanmen and Kikanbo for spicy miso ramen."),
    ("system", "ignored system prompt about ramen ramen ramen"),
    ("user", "Great, Kikanbo ramen sounds perfect. I live in Berlin, so I'll fly from there."),
    ("assistant", "Enjoy the ramen in Tokyo! Book Kikanbo early because queues get long."),
]


def test_summary_has_topics_request_facts_and_outcome():
    summary = summarize_session(CHAT)
    lines = summary.split("\n")
    assert len(summary) <= 600
    assert lines[0].startswith("Topics: ramen, ")
    assert "tokyo" in lines[0] and "kikanbo" in lines[0]
    assert lines[1].startswith("User asked: I'm planning a trip to Japan next month")
    assert lines[2].startswith("Facts: ")
    assert "User loves spicy food" in lines[2] and "User lives in Berlin" in lines[2]
    assert lines[3] == "Assistant: Enjoy the ramen in Tokyo! Book Kikanbo early because queues get long."


def test_summary_opening_line_names_the_speaker_and_says_or_asks():
    """A statement is not reported as a request ("User asked: I work at Stripe" misled), and a named speaker is
    named."""
    said = summarize_session([("user", "I work at Stripe as a backend engineer."), ("assistant", "Nice!")])
    assert said.split("\n")[1] == "User said: I work at Stripe as a backend engineer."
    named = summarize_session([("user", "Hi!", "Maya"), ("user", "Which laptop suits video editing work?", "Maya")])
    assert named.split("\n")[1] == "Maya asked: Which laptop suits video editing work?"


def test_summary_is_deterministic_and_accepts_message_shapes():
    as_dicts = [{"role": r, "content": c} for r, c in CHAT]
    as_objects = [SimpleNamespace(role=r, content=c) for r, c in CHAT]
    assert summarize_session(CHAT) == summarize_session(as_dicts) == summarize_session(as_objects)


def test_summary_respects_max_chars_and_empty_input():
    assert len(summarize_session(CHAT, max_chars=120)) <= 120
    assert summarize_session([]) == ""
    assert summarize_session([("system", "x"), ("tool", "{}")]) == ""
    with pytest.raises(ValidationError):
        summarize_session(CHAT, max_chars=10)
    with pytest.raises(ValidationError):
        summarize_session([("user", None)])


def test_session_keywords_merge_plurals_and_weight_the_user():
    msgs = [("user", "dogs dog dogs cats"), ("assistant", "cats cats cats")]
    assert session_keywords(msgs, 2) == ["dogs", "cats"]  # user x2: dog 6 vs cat 5


def test_session_keywords_keep_accented_words_whole():
    msgs = [("user", "The café near the café in Zürich; Zürich again"), ("assistant", "Café au lait")]
    assert session_keywords(msgs, 2) == ["café", "zürich"]
    # words of any cased script are words, lower-cased ("Über" = "über"), not two-character CJK pieces
    msgs = [("user", "Москва Москва, Αθήνα Αθήνα, Über über über, Łukasz Łukasz 北京北京")]
    assert session_keywords(msgs, 5) == ["über", "москва", "αθήνα", "łukasz", "北京北京"]


def test_summary_chinese():
    summary = summarize_session([("user", "我在北京市的华为公司工作，我喜欢吃辣的食物。你能推荐一些北京的川菜馆吗？"),
                                 ("assistant", "当然可以！北京有很多不错的川菜馆。")])
    assert "北京" in summary.split("\n")[0]
    assert "用户喜欢吃辣的食物" in summary


# ------------------------------------------------------------------------------------------------ dedup
def test_normalize_and_hash():
    assert normalize_for_hash("  Hello,   WORLD!! ") == "hello, world"
    assert normalize_for_hash("ＡＢＣ\u3000ｄｅｆ") == "abc def"
    h = content_hash("Hello  World.")
    assert h == content_hash("hello world") and re.fullmatch(r"[0-9a-f]{64}", h)
    assert h == "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"  # sha256(b"hello world")
    assert content_hash("hello world") != content_hash("hello, world")
    # symbols at the ends are content: two ratings are two texts; quotes and brackets are punctuation
    assert content_hash("I rate the film 👍") != content_hash("I rate the film 👎")
    assert normalize_for_hash("«Quoted»") == "quoted" and normalize_for_hash("costs 5$") == "costs 5$"
    with pytest.raises(ValidationError):
        content_hash("bad \ud800 surrogate")
    with pytest.raises(ValidationError):
        normalize_for_hash(3)  # type: ignore[arg-type]


def test_shingles_and_jaccard():
    assert shingles("A b, c d!") == {"a b c", "b c d"}
    assert shingles("just two") == {"just two"}
    assert shingles("") == set()
    assert shingles("我喜欢猫") == {"我 喜 欢", "喜 欢 猫"}
    assert shingles("a b c", n=1) == {"a", "b", "c"}
    assert jaccard({"a", "b"}, {"b", "c"}) == pytest.approx(1 / 3)
    assert jaccard(set(), set()) == 1.0 and jaccard({"a"}, set()) == 0.0
    with pytest.raises(ConfigError):
        shingles("x", n=0)


def test_near_duplicates():
    a = "User likes spicy food and visits Tokyo every spring with their sister"
    assert is_near_duplicate(a, a.upper() + "!!")
    b = a.replace("spring", "autumn")  # 12 words, 10 shingles each; 3 differ: 7 shared / 13 in the union
    assert jaccard(shingles(a), shingles(b)) == pytest.approx(7 / 13)
    assert is_near_duplicate(a, b) is False
    assert is_near_duplicate(a, b, threshold=0.5)
    assert not is_near_duplicate("User likes tea", "User likes coffee")
    with pytest.raises(ConfigError):
        is_near_duplicate("a", "b", threshold=1.5)


def test_classify_update_shapes():
    assert classify_update(("favorite color", "blue"), ("favourite color", "Blue.")) == "same"
    assert classify_update(("favorite color", "blue"), ("favorite color", "green")) == "update"
    old, new = {"key": "residence", "value": "Paris"}, {"subject_key": "residence", "value": "Lyon"}
    assert classify_update(old, new) == "update"
    assert classify_update(("residence", "Paris"), ("employer", "Paris")) == "unrelated"
    keyless = Fact("User visited Rome in May", "event")
    assert classify_update(keyless, Fact("user visited Rome in May.", "event")) == "same"
    assert classify_update(keyless, Fact("User visited Oslo in June", "event")) == "unrelated"
    assert normalize_value("now the Blue ") == "blue"


def test_harden_confidence():
    assert harden_confidence(0.5) == pytest.approx(0.6)
    assert harden_confidence(0.95) == 1.0
    assert harden_confidence(0.7, step=0.2) == pytest.approx(0.9)


def test_relative_times_in_facts_are_resolved_against_the_message_time():
    from datetime import datetime, timezone

    from agentbase.ingest.facts import resolve_time

    said = datetime(2026, 11, 15, 10, tzinfo=timezone.utc)  # a Sunday

    def when(text):
        return [resolve_time(f, said) for f in extract_facts(text)]

    assert when("I moved to Denver last month.") == [{"expr": "last month", "from": "2026-10-01", "to": "2026-10-31"}]
    assert when("I bought a car last week!") == [{"expr": "last week", "from": "2026-11-02", "to": "2026-11-08"}]
    assert when("I went to a support group yesterday.") == [
        {"expr": "yesterday", "from": "2026-11-14", "to": "2026-11-14"}]
    assert when("I am planning a trip to Japan next April.") == [
        {"expr": "next April", "from": "2027-04-01", "to": "2027-04-30"}]
    assert when("我昨天买了一辆车。") == [{"expr": "昨天", "from": "2026-11-14", "to": "2026-11-14"}]
    # a year already named, or no time at all: nothing to resolve
    assert when("I started learning piano in 2020.") == [None]
    assert when("I live in Paris.") == [None]


@pytest.mark.parametrize(("text", "facts"), [
    ("I'm vegetarian and allergic to peanuts.", ["User is vegetarian", "User is allergic to peanuts"]),
    ("I love hiking and hate running.", ["User loves hiking", "User hates running"]),
    ("I am from Sweden and live in Boston.", ["User is from Sweden", "User lives in Boston"]),
    ("I love hiking and running.", ["User loves hiking and running"]),  # a list of things stays one fact
    ("I left Google and joined Netflix.", ["User left Google and joined Netflix"]),  # the employer rule's own
    ("I have a dog and a cat.", ["User has a dog and a cat"]),
    ("My cat Mochi is 7 years old.", ["User's cat Mochi is 7 years old"]),  # was "cat mochi"
    ("I'm vegetarian and also allergic to peanuts.", ["User is vegetarian", "User is allergic to peanuts"]),
    ("I'm pretending to be vegetarian and allergic to nuts.", []),  # the first half states nothing
])
def test_a_shared_subject_gives_each_half_its_fact(text, facts):
    """"I'm vegetarian and allergic to peanuts" gave only "User is vegetarian", and the mem0 adapter's infer=True
    then dropped the verbatim message: the allergy was lost (a new-user helper's finding)."""
    assert [f.text for f in extract_facts(text)] == facts


@pytest.mark.parametrize(("text", "facts"), [
    ("I don't think I'm vegetarian.", []),
    ("I never said I live in Berlin.", []),
    ("My friend said I'm vegetarian.", []),
    ("People say I'm a great cook.", []),
    ("Sarah thinks I am allergic to nuts.", []),
    ("Maybe I'm vegetarian.", []),
    ("I think I'm vegetarian now.", ["User is vegetarian"]),  # the user's own belief is a statement
    ("I said I live in Berlin.", ["User lives in Berlin"]),
    ("My mom always says I work too hard, and I work at Google.", ["User works at Google"]),
    ("My name is Dr. John Smith.", ["User's name is Dr. John Smith"]),  # was "Dr" (cut at the title's dot)
    ("It's not true that I'm vegetarian.", []),
    ("My friend told me that I live in Porto.", []),
    ("I can't say I'm vegetarian.", []),
    ("I guess I'm vegetarian.", []),
    ("I hope I'm vegetarian one day.", []),
    ("Probably I'm vegetarian.", []),
    ("Supposedly I like jazz.", []),
    ("I also live in Madrid.", ["User also lives in Madrid"]),  # an adverb no longer hides the statement
    ("I'm actually vegetarian.", ["User is actually vegetarian"]),
    ("I definitely work at Netflix.", ["User definitely works at Netflix"]),
])
def test_denied_reported_or_hedged_statements_give_no_fact(text, facts):
    """"I don't think I'm vegetarian" and "My friend said I'm vegetarian" stored "User is vegetarian" (a
    helper's finding); on 23,725 LongMemEval/LoCoMo turns the guard removed one fact ("Maybe I'll do that this
    weekend")."""
    assert [f.text for f in extract_facts(text)] == facts


@pytest.mark.parametrize(("text", "facts"), [
    ("According to my mom, I'm vegetarian.", []),
    ("Tom said: I live in Berlin.", []),
    ("If I move, I will live in Berlin.", []),
    ("I'm feeling energized, probably because I went to bed early last night.",
     ["User went to bed early last night"]),  # a conjunction ends the frame
    ("I was sick, but I live in Berlin.", ["User lives in Berlin"]),
])
def test_a_framing_clause_before_punctuation_reports_what_follows(text, facts):
    """The clause split dropped the frame: "According to my mom, I'm vegetarian" and "Tom said: I live in Berlin"
    stored the claim as the user's own (left in the previous round's note)."""
    assert [f.text for f in extract_facts(text)] == facts


@pytest.mark.parametrize(("text", "facts"), [
    ('He told me "I drive a Tesla".', []),
    ('She said, "I speak French."', []),
    ("Translate to French: I speak Spanish and I live in Berlin.", []),
    ('Translate "I live in Berlin" into German.', []),
    ("Please rewrite: I play guitar.", []),
    ("Update: I live in Berlin now.", ["User lives in Berlin"]),
    ("I play guitar\u2028I drive a Tesla", ["User plays guitar", "User drives a Tesla"]),  # a line separator
])
def test_quoted_or_requested_sentences_are_not_the_users_statements(text, facts):
    """A break-pass helper: quoted speech and text to translate became the user's facts."""
    assert [f.text for f in extract_facts(text)] == facts


@pytest.mark.parametrize(("text", "facts"), [
    ("I play guitar.", ["User plays guitar"]),
    ("I speak Spanish and French.", ["User speaks Spanish and French"]),
    ("I drive a 2015 Ford Mustang.", ["User drives a 2015 Ford Mustang"]),
    ("I practice yoga on Sundays.", ["User practices yoga on Sundays"]),
    ("I play it safe.", []),
    ("I speak to my manager daily.", []),
    ("I drive to work.", []),
    ("I want to grow the blog and drive more traffic to it.",
     ["User wants to grow the blog and drive more traffic to it"]),
    ("I play a big part in it.", []),
    ("I'm going to work on my form and practice regularly.",
     ["User is going to work on their form and practice regularly"]),  # a planned habit stays a plan
    ("We live in Austin.", ["User lives in Austin"]),
    ("We are living in Denver.", ["User is living in Denver"]),
    ("We are based in Berlin and sell to enterprises.", []),  # a company, not a home
    ("We live in a small apartment.", []),
    ("I'm also learning Japanese.", ["User is also learning Japanese"]),  # was lost by mem0 infer=True
    ("I'm studying International Business.", ["User is studying International Business"]),
    ("I'm learning a lot from you.", []),
    ("I'm still learning and want to improve.", []),
])
def test_habits_and_household_residence(text, facts):
    """"I play guitar", "I drive a Tesla" and "We live in Austin" gave no fact (left in the previous round's
    note); on 23,725 LongMemEval/LoCoMo turns 10 gain a habit (instruments, sports, a car) and none loses one."""
    assert [f.text for f in extract_facts(text)] == facts


@pytest.mark.parametrize(("text", "key", "fact"), [
    ("I play guitar.", "habit:play:guitar", "User plays guitar"),
    ("I play the guitar on weekends.", "habit:play:guitar", "User plays the guitar on weekends"),
    ("I don't play guitar anymore.", "habit:play:guitar", "User no longer plays guitar"),
    ("I don't play guitar.", "habit:play:guitar", "User does not play guitar"),
    ("I quit playing chess.", "habit:play:chess", "User no longer plays chess"),
    ("I drive a Tesla.", "vehicle", "User drives a Tesla"),
    ("Now I drive a Honda.", "vehicle", "User drives a Honda"),
    ("I don't drive anymore.", "vehicle", "User no longer drives"),
    ("I don't drive a Tesla.", None, None),  # says nothing of the car the user drives
    ("I don't drive a Tesla anymore.", "vehicle", "User no longer drives a Tesla"),
    ("I speak English well.", "habit:speak:english", "User speaks English well"),
    ("I play the guitar my dad gave me.", "habit:play:guitar", "User plays the guitar their dad gave them"),
    ("I don't speak Spanish at work.", None, "User does not speak Spanish at work"),  # narrower: ends nothing
    ("I also drive a Ford truck for work.", None, "User also drives a Ford truck for work"),  # a second car
    ("I drive my kids to school every morning.", None, None),
    ("I drive a lot.", None, None),
    ("I drive 40 miles to work.", None, None),
    ("Tomorrow I drive a Porsche at the track.", None, None),
    ("I play video games.", "habit:play:video", "User plays video games"),
    ("I never practice yoga.", None, None),
    ("I don't speak to him anymore.", None, None),
])
def test_a_habit_and_its_end_share_a_key(text, key, fact):
    """"I don't play guitar anymore" left "User plays guitar" live (a new-user helper): the end of a habit now has
    the habit's key, so it supersedes it. A break-pass helper then found keys read from a tail word ("English
    well" and "Spanish really well" both "well") and "I drive my kids to school" replacing the user's car."""
    facts = extract_facts(text)
    assert [(f.subject_key, f.text) for f in facts] == ([(key, fact)] if fact else [])


@pytest.mark.parametrize(("text", "facts"), [
    ("I'm planning a trip to Japan in October.", ["User is planning a trip to Japan in October"]),
    ("I am planning my wedding for June.", ["User is planning their wedding for June"]),
    ("I'm planning the budget.", []),  # planning a thing, not an event of the user's
])
def test_planning_an_event_is_a_plan(text, facts):
    """"I'm planning a trip to Japan in October." gave no fact while "I plan to visit Japan" did (new-user
    helper); 97 of 23,725 LongMemEval/LoCoMo turns gain a plan, every recall figure unchanged."""
    assert [f.text for f in extract_facts(text)] == facts
