"""A query that names the user ("Which marathon is Erin running?") is answered by the user's own turns, which
say "I": the name must not favour the entries that merely mention it (a new-user helper's finding: the answer
ranked 4th behind the turn, summary and fact holding "Erin")."""

from __future__ import annotations

import pytest

from agentbase import SyncAgentBase, load_settings

_CHAT = [
    {"role": "user", "content": "Hi! I'm Erin. My cat Mochi is 7 years old and hates thunderstorms."},
    {"role": "assistant", "content": "Nice to meet you, Erin! Mochi sounds adorable."},
    {"role": "user", "content": "I am training for the Berlin marathon in September."},
    {"role": "assistant", "content": "That's exciting! How is the training going?"},
    {"role": "user", "content": "I volunteer at the Red Cross on Sundays."},
]


@pytest.mark.parametrize(("user_id", "intro"), [("erin", None), ("u-1729", "My name is Erin Walsh.")])
def test_a_query_naming_the_user_prefers_the_users_own_turns(tmp_path, user_id, intro):
    db = SyncAgentBase(path=tmp_path / "erin.db", embedder="hash", settings=load_settings(ner="regex"))
    try:
        s = db.create_session(user_id=user_id)
        db.add_messages(s.id, ([{"role": "user", "content": intro}] if intro else []) + _CHAT)
        db.commit_session(s.id)
        db.flush()
        for query, answer in [("which marathon is Erin running", "I am training for the Berlin marathon"),
                              ("what does Erin do on Sundays?", "I volunteer at the Red Cross"),
                              ("which marathon is erin running", "I am training for the Berlin marathon"),
                              ("what does erin do on sundays", "I volunteer at the Red Cross")]:
            top = db.find(query, user_id=user_id, top_k=3, trace=True)
            assert top[0].text.startswith(answer), [r.text for r in top]
            assert top[0].score_parts.get("speaker_boost") == 1.15
        # another user's memory: "Erin" is just a name there, boosted as before
        other = db.find("which marathon is Erin running", user_id="someone-else", top_k=3)
        assert other == []
    finally:
        db.close()


def test_names_in_query_reads_whole_words_in_any_case_and_skips_common_words():
    from agentbase.retrieval.names import names_in_query

    assert names_in_query("what does bob like?", {"bob", "erin walsh"}) == {"bob"}
    assert names_in_query("Is ERIN WALSH running?", {"erin walsh", "erin"}) == {"erin walsh", "erin"}
    assert names_in_query("what does bobby like", {"bob"}) == set()  # a whole word, not a prefix
    assert names_in_query("what will I do", {"will", "u-1729"}) == set()  # a stopword is no name here
    assert names_in_query("what did u-1729 say", {"u-1729"}) == {"u-1729"}


def test_a_user_id_that_is_a_named_speakers_name_keeps_that_speakers_boost(tmp_path):
    """user_id "melanie" in a conversation between Melanie and Caroline (named speakers): Melanie's turns carry
    her name, so a question about her still prefers them (a helper's finding: they lost both boosts)."""
    db = SyncAgentBase(path=tmp_path / "pair.db", embedder="hash", settings=load_settings(ner="regex"))
    try:
        s = db.create_session(user_id="melanie")
        db.add_messages(s.id, [
            {"role": "user", "name": "Melanie", "content": "I finished reading Becoming by Michelle Obama."},
            {"role": "user", "name": "Caroline", "content": "Wow, Melanie! Which books have you read this year?"},
            {"role": "user", "name": "Melanie", "content": "I also read The Hobbit and Dune."},
            {"role": "user", "name": "Caroline", "content": "I have read books about counseling."}])
        db.commit_session(s.id)
        db.flush()
        top = db.find("What books has Melanie read?", user_id="melanie", top_k=4, trace=True)
        turns = [r for r in top if r.entry.category == "turn"]
        assert turns[0].entry.name == "Melanie" and turns[0].score_parts.get("speaker_boost") == 1.15
        assert "counseling" not in turns[0].text and "counseling" not in turns[1].text
    finally:
        db.close()
