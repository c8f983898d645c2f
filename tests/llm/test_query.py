"""The query uses: LLM decomposition for strategy="hierarchical" and the listwise LLM reranker, against the
loopback server; malformed answers keep the rule-based order and the trace says so."""

from __future__ import annotations

import json
import re

import pytest

from agentbase.errors import LLMOutputError
from agentbase.llm.query import parse_ranking, parse_sub_queries

from .fake_server import dead_url
from .helpers import make_llm_db, purpose_of, scripted, user_text

MEMORIES = ["The quarterly budget review is on Friday.", "Bob prefers green tea in the morning.",
            "The launch party is at the harbour on May 3.", "Alice's cat is called Miso.",
            "The server migration finished on Tuesday."]


async def _db(tmp_path, url, **llm):
    db = make_llm_db(tmp_path / "q.db", url, summaries=False, facts=False, retrieval_keys=False, **llm)
    ids = [(await db.add_memory(t, user_id="u")).id for t in MEMORIES]
    await db.flush()
    return db, ids


def _candidate_lines(request) -> dict[int, str]:
    return {int(m[1]): m[2] for m in re.finditer(r"^\[(\d+)\] (.*)$", user_text(request), re.M)}


async def test_rerank_follows_the_models_order(tmp_path, fake_llm):
    def judge(request):  # put the cat first, whatever the fused order
        lines = _candidate_lines(request)
        cat = next(i for i, t in lines.items() if "Miso" in t)
        return json.dumps({"ranking": [cat, *[i for i in lines if i != cat]]})

    fake_llm.responder = scripted(rerank=judge)
    db, ids = await _db(tmp_path, fake_llm.url, rerank=True)
    # a keyword query the cat memory does not match: it is no candidate, so the judge cannot lift it
    baseline = await db.find("budget review Friday", user_id="u", mode="fts")
    assert baseline[0].entry.l2_full == MEMORIES[0]
    assert purpose_of(fake_llm.requests[-1]) == "rerank"
    # every memory is a candidate of this one: the judge's first pick comes first
    results = await db.find("the", user_id="u", mode="hybrid", trace=True)
    assert results[0].entry.l2_full == MEMORIES[3] and "llm_rerank" in results[0].score_parts
    trace = await db.get_trace(results[0].trace_id)
    step = next(s for s in trace.steps if s.name == "llm_rerank")
    assert step.details["kept_fused_order"] is False and step.details["fallback"] is None
    call = step.details["llm_calls"][0]
    assert call["purpose"] == "rerank" and call["outcome"] == "ok" and call["prompt_tokens"] > 0
    assert (await db.stats())["llm"]["by_purpose"]["rerank"]["calls"] == 2
    await db.close()


@pytest.mark.parametrize("answer", ['{"ranking": [0, 99]}', "no idea", '{"ranking": []}', '{"ranking": "0,1"}'])
async def test_malformed_ranking_keeps_fused_order(tmp_path, fake_llm, answer):
    db, _ = await _db(tmp_path, fake_llm.url)  # rerank off: the fused order
    fused = [r.entry.id for r in await db.find("the", user_id="u")]
    await db.close()
    fake_llm.responder = scripted(rerank=answer)
    db = make_llm_db(tmp_path / "q.db", fake_llm.url, summaries=False, facts=False, retrieval_keys=False,
                     rerank=True)
    results = await db.find("the", user_id="u", trace=True)
    assert [r.entry.id for r in results] == fused
    step = next(s for s in (await db.get_trace(results[0].trace_id)).steps if s.name == "llm_rerank")
    assert step.details["kept_fused_order"] is True and "LLMOutputError" in step.details["fallback"]
    await db.close()


async def test_dead_endpoint_keeps_fused_order(tmp_path, fake_llm):
    db, _ = await _db(tmp_path, fake_llm.url)
    fused = [r.entry.id for r in await db.find("the", user_id="u")]
    await db.close()
    db = make_llm_db(tmp_path / "q.db", dead_url(), rerank=True, decompose=True, max_retries=0)
    results = await db.find("the", user_id="u", strategy="hierarchical", trace=True)
    trace = await db.get_trace(results[0].trace_id)
    names = {s.name: s for s in trace.steps}
    assert "LLMUnavailable" in names["llm_rerank"].details["fallback"]
    assert "LLMUnavailable" in names["llm_decompose"].details["fallback"]
    assert names["llm_decompose"].details["llm_calls"][0]["outcome"] == "unavailable"
    assert {r.entry.id for r in results} == set(fused)
    await db.close()


async def test_decomposition_adds_sub_query_legs(tmp_path, fake_llm):
    fake_llm.responder = scripted(decompose={"queries": [{"type": "keyword", "text": "Miso cat"},
                                                         {"type": "semantic", "text": "Alice's pet"}]})
    db, ids = await _db(tmp_path, fake_llm.url, decompose=True)
    plain = await db.find("What about Alice?", user_id="u", strategy="auto", trace=True)
    assert not any(purpose_of(r) == "decompose" for r in fake_llm.requests)  # only for hierarchical
    results = await db.find("What about Alice?", user_id="u", strategy="hierarchical", trace=True)
    assert results[0].entry.l2_full == MEMORIES[3]
    steps = {s.name: s for s in (await db.get_trace(results[0].trace_id)).steps}
    assert steps["llm_decompose"].details["sub_queries"][0] == {"type": "keyword", "text": "Miso cat"}
    assert set(steps["candidates_llm_sub_queries"].details["legs"]) == {"llm_fts_0", "llm_vector_1"}
    assert plain  # the rule-based path still answers
    await db.close()


def test_parsers():
    assert parse_ranking({"ranking": [2, "0", 2]}, 3) == [2, 0]
    for bad in ({"ranking": [3]}, {"ranking": [True]}, {"x": 1}, []):
        with pytest.raises(LLMOutputError):
            parse_ranking(bad, 3)
    assert parse_sub_queries({"queries": ["a b", {"type": "odd", "text": "c"}, {"type": "keyword", "text": "A B"}]}) \
        == [{"type": "semantic", "text": "a b"}, {"type": "semantic", "text": "c"}]
    with pytest.raises(LLMOutputError):
        parse_sub_queries({"queries": [{"type": "keyword"}]})


async def test_token_totals_accumulate_and_persist(tmp_path, fake_llm):
    fake_llm.responder = scripted(rerank={"ranking": [0]})
    db, _ = await _db(tmp_path, fake_llm.url, rerank=True)
    totals = []
    for _ in range(3):
        await db.find("the", user_id="u")
        totals.append((await db.stats())["llm"]["by_purpose"]["rerank"]["calls"])
    assert totals == [1, 2, 3]
    tokens = (await db.stats())["llm"]["total"]["prompt_tokens"]
    assert tokens > 0
    await db.close()
    db = make_llm_db(tmp_path / "q.db", fake_llm.url)  # another process: the file's totals
    stats = await db.stats()
    assert stats["llm"]["by_purpose"]["rerank"]["calls"] == 3 and stats["llm"]["total"]["prompt_tokens"] == tokens
    await db.close()
