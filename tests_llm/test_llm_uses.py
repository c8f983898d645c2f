"""The ingest and query uses of the LLM with the real local model: jobs finish (done, or failed with the rule-based
output kept when the small model's JSON is unusable), calls and tokens are counted, traces name the calls."""

from __future__ import annotations

from agentbase import AgentBase, load_settings
from agentbase.embeddings import HashEmbedder


def _db(path, llm_settings, **uses) -> AgentBase:
    settings = load_settings(ner="regex", llm={**llm_settings, **uses}, ingest={"enrich_idle_s": 0})
    return AgentBase(path, settings=settings, embedder=HashEmbedder(dims=64))


async def test_ingest_jobs_complete_and_are_counted(tmp_path, llm_settings):
    db = _db(tmp_path / "ingest.db", llm_settings, summaries=True, retrieval_keys=True, facts=True)
    s = await db.create_session(user_id="ann")
    await db.add_messages(s.id, [
        {"role": "user", "name": "Ann", "content": "I adopted a beagle called Rufus last week, here in Lisbon."},
        {"role": "assistant", "content": "Congratulations! Beagles are friendly and curious dogs."},
    ])
    await db.commit_session(s.id)
    assert await db.flush(timeout=600) == 0
    jobs = await db.db.fetchall("SELECT target, status, last_error FROM jobs WHERE kind = 'llm'")
    targets = {t.split(":", 1)[0] for t, _, _ in jobs}
    assert {"summary", "turn", "facts"} <= targets
    assert {status for _, status, _ in jobs} <= {"done", "failed"}  # none left pending, running or deferred
    assert all("rule-based output kept" in (err or "") for _, status, err in jobs if status == "failed")
    stats = await db.stats()
    usage = stats["llm"]
    assert usage["configured"] is True and usage["total"]["calls"] >= len(jobs)
    assert usage["total"]["prompt_tokens"] > 50 and usage["total"]["completion_tokens"] > 0
    assert {"summary", "facts"} <= set(usage["by_purpose"])
    summary = (await db.list(session_id=s.id, category="summary", limit=5))[0]
    assert summary.l2_full.strip()  # the model's summary, or the rule-based one kept
    done = {t.split(":", 1)[0] for t, status, _ in jobs if status == "done"}
    if "summary" in done:
        assert summary.metadata.get("written_by", "").startswith("llm:")
    await db.close()


async def test_rerank_with_real_model_keeps_a_valid_order(tmp_path, llm_settings):
    memories = ["The quarterly budget review is on Friday.", "Bob prefers green tea in the morning.",
                "Alice's cat is called Miso.", "The server migration finished on Tuesday."]
    db = _db(tmp_path / "rerank.db", llm_settings, summaries=False, retrieval_keys=False, facts=False,
             rerank=True)
    ids = {(await db.add_memory(t, user_id="u")).id for t in memories}
    await db.flush()
    results = await db.find("What is the name of Alice's cat?", user_id="u", trace=True)
    assert results and {r.entry.id for r in results} <= ids and len({r.entry.id for r in results}) == len(results)
    step = next(s for s in (await db.get_trace(results[0].trace_id)).steps if s.name == "llm_rerank")
    call = step.details["llm_calls"][0]
    assert call["purpose"] == "rerank" and call["outcome"] == "ok" and call["prompt_tokens"] > 0
    # the small model's ranking is used when it parses, else the fused order is kept and the trace says why
    if step.details["fallback"] is not None:
        assert step.details["kept_fused_order"] is True
    await db.close()


def test_mem0_infer_round_trip_shape(tmp_path, llm_settings):
    """mem0's add(infer=True) with the real model: the model path or, when the small model's JSON is unusable,
    the logged rule-based fallback; either way mem0's result shape and the calls counted."""
    from agentbase import SyncAgentBase
    from agentbase.adapters import Mem0Adapter

    settings = load_settings(ner="regex", llm={**llm_settings, "summaries": False, "retrieval_keys": False,
                                               "facts": False, "mem0_infer": True})
    sync = SyncAgentBase(db=AgentBase(tmp_path / "mem0.db", settings=settings, embedder=HashEmbedder(dims=64)))
    m = Mem0Adapter(sync)
    out = m.add([{"role": "user", "content": "Hi, I'm Ann. I live in Berlin and I have a dog named Rex."}],
                user_id="ann")
    assert set(out) == {"results"}
    for r in out["results"]:
        assert r["event"] in ("ADD", "UPDATE", "DELETE") and isinstance(r["memory"], str) and r["id"]
        if r["event"] != "DELETE":
            assert m.get(r["id"])["memory"] == r["memory"]
    by = sync.stats()["llm"]["by_purpose"]
    assert by["mem0_extract"]["calls"] == 1 and by["mem0_extract"]["prompt_tokens"] > 20
    listed = m.get_all(user_id="ann")["results"]
    assert {r["id"] for r in out["results"] if r["event"] == "ADD"} <= {r["id"] for r in listed}
    m.close()
    sync.close()
