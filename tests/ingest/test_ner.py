"""NER: the Entity record, tag normalisation, the regex extractor (English + Chinese), spaCy, the factory."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from agentbase.errors import ConfigError, MissingDependencyError, ValidationError
from agentbase.ner import (
    Entity,
    EntityExtractor,
    RegexExtractor,
    SpacyExtractor,
    create_extractor,
    entity_tags,
    tag_for,
)
from agentbase.ner.base import mention_pattern
from agentbase.ner.vocative import drop_vocatives
from agentbase.ner.spacy_extractor import _chunks

HAS_SPACY = SpacyExtractor.available()
needs_spacy = pytest.mark.skipif(not HAS_SPACY, reason="the [ner] extra (spaCy + model) is not installed")


@pytest.fixture(scope="module")
def regex() -> RegexExtractor:
    return RegexExtractor()


@pytest.fixture(scope="module")
def spacy_ner() -> SpacyExtractor:
    if not HAS_SPACY:
        pytest.skip("the [ner] extra is not installed")
    return SpacyExtractor()


def labels(entities: list[Entity]) -> dict[str, str]:
    return {e.text: e.label for e in entities}


# ------------------------------------------------------------------------------------------------ tags
def test_entity_is_frozen_and_small():
    ent = Entity("Alice", "PERSON", 0, 5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ent.text = "Bob"  # type: ignore[misc]
    assert ent == Entity("Alice", "PERSON", 0, 5)


@pytest.mark.parametrize(
    ("name", "tag"),
    [
        ("Alice", "ner_Alice"),
        ("New York", "ner_New_York"),
        ("  New   York  ", "ner_New_York"),
        ("Alice's", "ner_Alice"),
        ("Alice’s", "ner_Alice"),
        ("the Beatles", "ner_Beatles"),
        ("The Beatles", "ner_The_Beatles"),
        ('"Acme"', "ner_Acme"),
        ("ner_Paris", "ner_Paris"),
        ("北京市", "ner_北京市"),
        ("ＡＣＭＥ", "ner_ACME"),
    ],
)
def test_tag_for_normalises(name: str, tag: str):
    assert tag_for(name) == tag


@pytest.mark.parametrize("bad", ["", "   ", "...", "- — -", "《》"])
def test_tag_for_rejects_names_without_letters(bad: str):
    with pytest.raises(ValidationError):
        tag_for(bad)


def test_tag_for_rejects_non_strings():
    with pytest.raises(ValidationError):
        tag_for(42)  # type: ignore[arg-type]


def test_entity_tags_skips_amounts_and_dedups_case_insensitively():
    ents = [
        Entity("Alice", "PERSON", 0, 5),
        Entity("May 8, 2023", "DATE", 10, 21),
        Entity("$40", "MONEY", 25, 28),
        Entity("15%", "PERCENT", 30, 33),
        Entity("3", "CARDINAL", 35, 36),
        Entity("ALICE", "PERSON", 40, 45),
        Entity("New York", "GPE", 50, 58),
        Entity("2023", "ORG", 60, 64),
        Entity("https://example.com/page", "ORG", 70, 94),
    ]
    assert entity_tags(ents) == ["ner_Alice", "ner_New_York"]


# ----------------------------------------------------------------------------------------------- regex
def test_regex_alice_acme_paris(regex: RegexExtractor):
    text = "Alice works at Acme in Paris"
    ents = regex.extract(text)
    assert entity_tags(ents) == ["ner_Alice", "ner_Acme", "ner_Paris"]
    assert labels(ents) == {"Alice": "PERSON", "Acme": "ORG", "Paris": "GPE"}
    assert all(text[e.start:e.end] == e.text for e in ents)


def test_regex_drops_sentence_initial_stop_words(regex: RegexExtractor):
    text = "The weather in London is nice. My friend Bob agrees. I think It's fine. Thanks Carol!"
    assert entity_tags(regex.extract(text)) == ["ner_London", "ner_Bob", "ner_Carol"]


@pytest.mark.parametrize("text, tags", [
    ("Got it, thanks!", []), ("Sure! Got the tickets for Paris.", ["ner_Paris"]), ("Haha, Yeah", []),
    ("Lol, Nope, Melanie!", ["ner_Melanie"]),
])
def test_regex_skips_interjections_and_got(regex: RegexExtractor, text: str, tags: list[str]):
    assert entity_tags(regex.extract(text)) == tags


def test_regex_multi_word_names_and_labels(regex: RegexExtractor):
    text = "My sister moved to New York and now works for the Bank of America with Dr. Smith."
    ents = labels(regex.extract(text))
    assert ents["New York"] == "GPE"
    assert ents["Bank of America"] == "ORG"
    assert ents["Smith"] == "PERSON"


@pytest.mark.parametrize("text, names", [
    ("I met Zoë and José Müller in Zürich yesterday.", ["Zoë", "José Müller", "Zürich"]),
    ("Łukasz and Émile flew to Kraków with Ólafur.", ["Łukasz", "Émile", "Kraków", "Ólafur"]),
    ("Αθηνά and Дмитрий met in Москва.", ["Αθηνά", "Дмитрий", "Москва"]),
    ("José去了北京市", ["José", "北京市"]),  # a Latin name ends where Chinese begins
    ("我和Zoë在北京市见面", ["Zoë", "北京市"]),  # ... and starts where Chinese ends
    ("私はMüllerです", ["Müller"]),
    ("Zoe\u0308 and A\u030asa met in Malmo\u0308.", ["Zoe\u0308", "A\u030asa", "Malmo\u0308"]),  # decomposed
    ("I use an iPhone and 3M tape.", []),  # a capital inside a word or after a digit starts no name
    ("Это Москва. Где Москва?", ["Москва", "Москва"]),  # other languages' function words start no name
    ("Ο Νίκος ήρθε.", ["Νίκος"]),
    ("Los Angeles, Las Vegas, La Paz and Ella Fitzgerald.", ["Los Angeles", "Las Vegas", "La Paz", "Ella Fitzgerald"]),
    ("Mein Kampf, Ton Koopman and Nous Research, in Para.", ["Mein Kampf", "Ton Koopman", "Nous Research", "Para"]),
])
def test_regex_names_with_accents_and_other_cased_scripts(regex: RegexExtractor, text: str, names: list[str]):
    """Names are read whole in any cased script (they were cut at the first non-ASCII letter: "Zo", "Jos")."""
    found = [e.text for e in regex.extract(text)]
    assert found == names
    assert all(text[e.start:e.end] == e.text for e in regex.extract(text))
    assert labels(regex.extract("We moved to Malmö last year."))["Malmö"] == "GPE"  # the word before, "to"


def test_regex_many_names_keep_order_and_offsets(regex: RegexExtractor):
    text = "Zoë. " * 3000 + "Alice met Bob in Paris on May 8, 2023."
    ents = regex.extract(text)
    assert [e.text for e in ents[:3]] == ["Zoë"] * 3 and len([e for e in ents if e.text == "Zoë"]) == 3000
    assert [e.text for e in ents[3000:]] == ["Alice", "Bob", "Paris", "May 8, 2023"]
    assert all(text[e.start:e.end] == e.text for e in ents)
    assert all(a.end <= b.start for a, b in zip(ents, ents[1:]))


def test_decomposed_and_composed_names_share_a_tag(regex: RegexExtractor):
    assert entity_tags(regex.extract("Zoe\u0308 called.")) == entity_tags(regex.extract("Zoë called.")) == ["ner_Zoë"]


def test_regex_dates_are_dates_not_names(regex: RegexExtractor):
    text = "We met on May 8, 2023 and again on 8 May 2024, then 2024-06-01, last Tuesday and in March."
    ents = regex.extract(text)
    dates = [e.text for e in ents if e.label == "DATE"]
    assert dates == ["May 8, 2023", "8 May 2024", "2024-06-01", "last Tuesday", "March"]
    assert entity_tags(ents) == []


def test_regex_may_as_a_verb_is_not_a_date(regex: RegexExtractor):
    assert regex.extract("May I ask you something?") == []


def test_regex_quantities(regex: RegexExtractor):
    ents = labels(regex.extract("I paid $40,000 for it, 15% off, and drove 5 km in 2 hours."))
    assert ents["$40,000"] == "MONEY"
    assert ents["15%"] == "PERCENT"
    assert ents["5 km"] == "QUANTITY"
    assert ents["2 hours"] == "QUANTITY"


def test_regex_year_after_preposition(regex: RegexExtractor):
    ents = regex.extract("I started learning Spanish in 2020.")
    assert ("2020", "DATE") in [(e.text, e.label) for e in ents]
    assert entity_tags(ents) == ["ner_Spanish"]


def test_regex_chinese_places_and_organisations(regex: RegexExtractor):
    ents = regex.extract("我在北京市的华为公司工作")
    assert labels(ents) == {"北京市": "GPE", "华为公司": "ORG"}
    assert entity_tags(ents) == ["ner_北京市", "ner_华为公司"]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("北京市海淀区", ["北京市", "海淀区"]),
        ("中国银行", ["中国银行"]),
        ("我毕业于复旦大学", ["复旦大学"]),
        ("华为技术有限公司", ["华为技术有限公司"]),
        ("他们昨天去了上海市", ["上海市"]),
        ("我在这个城市住了三年", []),
        ("这家公司很好", []),
        ("国际关系和市场部门", []),
    ],
)
def test_regex_chinese_suffix_boundaries(regex: RegexExtractor, text: str, names: list[str]):
    assert [e.text for e in regex.extract(text) if e.label not in ("DATE", "QUANTITY")] == names


def test_regex_chinese_dates_and_money(regex: RegexExtractor):
    ents = labels(regex.extract("我2023年5月8日去了上海市，花了500元。"))
    assert ents == {"2023年5月8日": "DATE", "上海市": "GPE", "500元": "MONEY"}


def test_regex_offsets_match_text_on_mixed_input(regex: RegexExtractor):
    text = "Hi! On 2024-01-02 Alice’s team (Acme Corp) met Bob in 上海市 — cost €300, 20% over budget."
    ents = regex.extract(text)
    assert ents and all(text[e.start:e.end] == e.text for e in ents)
    assert [e.start for e in ents] == sorted(e.start for e in ents)
    assert all(a.end <= b.start for a, b in zip(ents, ents[1:]))


def test_regex_empty_and_bad_input(regex: RegexExtractor):
    assert regex.extract("") == []
    assert regex.extract("   \n ") == []
    with pytest.raises(ValidationError):
        regex.extract(None)  # type: ignore[arg-type]


def test_regex_extract_many(regex: RegexExtractor):
    texts = ["Alice works at Acme", "", "我住在上海市"]
    assert regex.extract_many(texts) == [regex.extract(t) for t in texts]


# ---------------------------------------------------------------------------------------------- factory
def test_create_extractor_regex():
    ex = create_extractor("regex")
    assert isinstance(ex, RegexExtractor) and ex.name == "regex"
    assert isinstance(ex, EntityExtractor)


def test_create_extractor_auto_prefers_spacy_when_installed():
    ex = create_extractor("auto")
    assert ex.name == ("spacy" if HAS_SPACY else "regex")
    assert isinstance(ex, EntityExtractor)


def test_create_extractor_auto_falls_back_when_model_missing():
    assert create_extractor("auto", model="no_such_spacy_model_xyz").name == "regex"


def test_create_extractor_spacy_missing_model_names_the_extra():
    with pytest.raises(MissingDependencyError, match=r"agentbase\[ner\]"):
        create_extractor("spacy", model="no_such_spacy_model_xyz")


def test_create_extractor_rejects_unknown_kind():
    with pytest.raises(ConfigError):
        create_extractor("bert")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------- spaCy
def test_chunks_cover_the_text_at_whitespace():
    text = "word " * 30
    pieces = _chunks(text, 32)
    assert "".join(p for _, p in pieces) == text
    assert all(len(p) <= 32 for _, p in pieces)
    assert all(text[off:off + len(p)] == p for off, p in pieces)


@needs_spacy
def test_spacy_loads_lazily():
    ex = SpacyExtractor()
    assert ex._nlp is None
    assert ex.extract("") == []
    assert ex._nlp is None  # empty input never loads the model
    ex.extract("Alice")
    assert ex._nlp is not None and ex._nlp.pipe_names == ["ner"]


@needs_spacy
def test_spacy_alice_acme_paris(spacy_ner: SpacyExtractor):
    text = "Alice works at Acme in Paris"
    ents = spacy_ner.extract(text)
    assert entity_tags(ents) == ["ner_Alice", "ner_Acme", "ner_Paris"]
    assert labels(ents)["Alice"] == "PERSON"
    assert all(text[e.start:e.end] == e.text for e in ents)


@needs_spacy
def test_spacy_extract_many_equals_extract(spacy_ner: SpacyExtractor):
    texts = ["Alice works at Acme in Paris", "", "My sister Sarah moved to New York on May 8, 2023.", "我住上海市"]
    assert spacy_ner.extract_many(texts) == [spacy_ner.extract(t) for t in texts]


@needs_spacy
def test_spacy_reads_chinese_through_regex(spacy_ner: SpacyExtractor):
    tags = entity_tags(spacy_ner.extract("我在北京市的华为公司工作"))
    assert "ner_北京市" in tags and "ner_华为公司" in tags
    mixed = spacy_ner.extract("Alice moved to 上海市 in 2020.")
    assert {"ner_Alice", "ner_上海市"} <= set(entity_tags(mixed))


@needs_spacy
def test_spacy_long_text_is_chunked_with_correct_offsets():
    ex = SpacyExtractor(max_chunk_chars=60)
    text = "Nothing to see here at all. " * 4 + "Alice works at Acme in Paris."
    ents = ex.extract(text)
    assert all(text[e.start:e.end] == e.text for e in ents)
    assert "ner_Paris" in entity_tags(ents)


@needs_spacy
def test_spacy_is_thread_safe():
    ex = SpacyExtractor()
    texts = ["Alice works at Acme in Paris", "Bob visited London with Carol", "Google hired Dave in Rome"] * 4
    assert ex._nlp is None  # all threads race to load the model
    results: dict[int, list[Entity]] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            results[i] = ex.extract(texts[i])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert [results[i] for i in range(len(texts))] == ex.extract_many(texts)


@needs_spacy
def test_spacy_rejects_non_strings(spacy_ner: SpacyExtractor):
    with pytest.raises(ValidationError):
        spacy_ner.extract_many(["ok", 3])  # type: ignore[list-item]


def test_regex_pattern_gates_never_change_the_result(monkeypatch):
    """The digit/CJK gates only skip patterns that cannot match: extraction with every gate open is identical."""
    from agentbase.ner import regex_extractor as rx

    texts = ["2023年5月8日我在北京市", "三月五日星期三开会", "百分之五十的人", "价格是５０元", "on ٣ May we met",
             "I paid $5 for 3 km of Tokyo taxi", "Meet Alice at 10:30am on Friday", "They left in May",
             "two weeks in Lisbon", "No digits or names here", "我们在清华大学见面", "Half an hour with Bob"]
    x = rx.RegexExtractor()
    gated = [x.extract(t) for t in texts]
    monkeypatch.setattr(rx.P, "HAS_DIGIT", lambda text: True)
    monkeypatch.setattr(rx, "has_cjk", lambda text: True)
    assert [x.extract(t) for t in texts] == gated
    assert any(e.label == "MONEY" for e in gated[3]) and any(e.label == "DATE" for e in gated[1])


def test_typographic_and_ascii_apostrophes_are_one_entity():
    assert tag_for("O’Brien") == tag_for("O'Brien") == tag_for("Oʼbrien".replace("b", "B")) == "ner_O'Brien"
    assert tag_for("O’Brien’s") == "ner_O'Brien"
    assert mention_pattern("o'brien").search("met o’brien today")
    assert mention_pattern("o’brien").search("o'brien called")
    assert not mention_pattern("o'brien").search("o brien")


async def test_query_entity_boosts_both_apostrophe_spellings(db):
    curly = await db.add_memory("Lunch with Sean O’Brien about the audit", user_id="u")
    ascii_ = await db.add_memory("Sean O'Brien sent the audit report", user_id="u")
    assert "ner_Sean_O'Brien" in curly.tags and "ner_Sean_O'Brien" in ascii_.tags
    hits = await db.find("What did Sean O'Brien say about the audit?", user_id="u", mode="fts")
    assert {h.entry.id for h in hits} == {curly.id, ascii_.id}
    assert all(h.score_parts.get("ner_boost", 1.0) > 1.0 for h in hits)


@pytest.mark.parametrize("text, kept", [
    ("Wow, Caroline, that's gorgeous!", []), ("Hey Mel! Good to see you.", []), ("Caroline, congrats!", []),
    ("That's great news, Caroline!", []), ("Thanks Melanie.", []),
    ("I met Caroline at the park.", ["Caroline"]), ("Caroline's painting is great.", ["Caroline"]),
    ("Caroline said hi.", ["Caroline"]), ("I told Melanie, and she laughed.", ["Melanie"]),
    ("Thanks, Paris!", ["Paris"]),  # not a participant: kept
    ("I went to Paris, France.", ["Paris", "France"]),
])
def test_vocative_names_of_participants_are_dropped(regex: RegexExtractor, text: str, kept: list[str]):
    ents = regex.extract(text)
    assert [e.text for e in drop_vocatives(text, ents, ["Caroline", "Melanie", "Mel"])] == kept


def test_vocative_matches_a_participants_first_name():
    ents = RegexExtractor().extract("Thanks, Caroline! See you, Smith.")
    assert [e.text for e in drop_vocatives("Thanks, Caroline! See you, Smith.", ents, ["Caroline Smith"])] == \
        ["Smith"]


async def test_add_memory_reads_entities_from_the_first_ner_max_chars(tmp_path):
    from agentbase import AgentBase, load_settings

    settings = load_settings(ner="regex")
    settings.ingest.ner_max_chars = 40
    db = AgentBase(tmp_path / "cap.db", settings=settings, embedder="none")
    try:
        e = await db.add_memory("Alice planted tomatoes in the garden, " + "then watered them. " * 3 + "Bob came.",
                                user_id="u")
        assert "ner_Alice" in e.tags and "ner_Bob" not in e.tags
    finally:
        await db.close()


async def test_the_first_call_of_a_new_instance_tags_its_text(tmp_path):
    """add_memory() and update() tag their text before the file is opened; the extractor was created only by the
    opening, so the first add_memory() of a new instance (or a first update() in a new process) had no tags."""
    from agentbase import AgentBase, load_settings

    path = tmp_path / "first.db"
    db = AgentBase(path, settings=load_settings(ner="regex"), embedder="none")
    try:
        e = await db.add_memory("Alice planted tomatoes with Bob in Paris.", user_id="u")
        assert {"ner_Alice", "ner_Bob", "ner_Paris"} <= set(e.tags)
    finally:
        await db.close()
    db = AgentBase(path, settings=load_settings(ner="regex"), embedder="none")
    try:
        assert {"ner_Carol", "ner_Rome"} <= set((await db.update(e.id, "Carol went to Rome.")).tags)
        assert [r.entry.id for r in await db.find("Carol", user_id="u", mode="fts")] == [e.id]
    finally:
        await db.close()


async def test_a_curly_apostrophe_in_the_query_gets_the_strong_entity_boost(db):
    e = await db.add_memory("Conan O'Brien hosted the show", user_id="u")
    for query in ("What did Conan O'Brien do?", "What did Conan O’Brien do?"):
        hits = await db.find(query, user_id="u", mode="fts")
        assert hits[0].entry.id == e.id and hits[0].score_parts["ner_boost"] == pytest.approx(1.3), query
