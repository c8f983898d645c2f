"""The ingest uses as durable ``llm`` jobs, against the fault-injecting loopback server: summaries, tiers,
retrieval keys and facts replace the rule-based output; retries, deferral, no loss, no duplicates."""

from __future__ import annotations

import json

import pytest

from agentbase import AgentBase
from agentbase.embeddings import HashEmbedder

from .fake_server import dead_url
from .helpers import make_llm_db, purpose_of, scripted, user_text

ANSWERS = {
    "summary": {"summary": "Ann told the assistant she adopted a beagle named Rufus in Lisbon.",
                "overview": "Ann adopted Rufus, a beagle, in Lisbon.", "abstract": "Ann's new beagle Rufus"},
    "turn": lambda req: json.dumps({"key": "KEY " + user_text(req).split("Message: ", 1)[1][:40],
                                    "abstract": "short abstract"}),
    "facts": {"facts": ["Ann adopted a beagle named Rufus.", "Ann lives in Lisbon."]},
}


async def _session(db: AgentBase) -> str:
    s = await db.create_session(user_id="ann")
    await db.add_messages(s.id, [
        {"role": "user", "name": "Ann", "content": "I adopted a beagle called Rufus last week, here in Lisbon."},
        {"role": "assistant", "content": "Congratulations! Beagles are friendly and curious dogs."},
    ])
    return s.id


async def _summary(db: AgentBase, sid: str):
    return [e for e in await db.list(session_id=sid, category="summary", limit=10)][0]


async def test_no_model_means_no_jobs_and_no_calls(tmp_path, fake_llm):
    db = AgentBase(tmp_path / "a.db", embedder=HashEmbedder(dims=64), settings={"ner": "regex"})
    sid = await _session(db)
    await db.commit_session(sid)
    assert await db.flush() == 0
    stats = await db.stats()
    assert db.llm is None and stats["llm"]["total"]["calls"] == 0 and stats["llm"]["configured"] is False
    assert (await db.db.fetchone("SELECT COUNT(*) FROM jobs WHERE kind = 'llm'"))[0] == 0
    assert fake_llm.requests == []
    await db.close()


@pytest.mark.parametrize("wait", [True, False])
async def test_llm_output_replaces_rule_based_output(tmp_path, fake_llm, wait):
    fake_llm.responder = scripted(**ANSWERS)
    db = make_llm_db(tmp_path / "a.db", fake_llm.url)
    sid = await _session(db)
    db.llm_worker.enabled = False  # hold the jobs: the rule-based output is in place first
    await db.commit_session(sid, wait=wait)
    await db.flush()
    rule_summary = await _summary(db, sid)
    assert rule_summary.l2_full.startswith("Topics:") and "written_by" not in rule_summary.metadata
    jobs = dict(await db.db.fetchall("SELECT target, status FROM jobs WHERE kind = 'llm'"))
    assert sorted(t.split(":")[0] for t in jobs) == ["facts", "summary", "turn", "turn"]
    assert set(jobs.values()) == {"pending"}
    db.llm_worker.enabled = True
    assert await db.flush() == 0
    summary = await _summary(db, sid)
    assert summary.l2_full == ANSWERS["summary"]["summary"]
    assert summary.l1_overview == ANSWERS["summary"]["overview"] and summary.l0_abstract == "Ann's new beagle Rufus"
    assert summary.metadata["written_by"] == "llm:fake-model"
    turns = await db.list(session_id=sid, category="turn", limit=10)
    user_turn = next(t for t in turns if t.metadata["role"] == "user")
    assert user_turn.metadata["retrieval_key"].startswith("KEY I adopted a beagle")
    assert user_turn.l0_abstract == "short abstract"
    # the key is keyword-searchable: a word only the key holds finds the turn
    hits = await db.find("KEY", mode="fts", user_id="ann")
    assert {h.entry.id for h in hits} >= {t.id for t in turns}
    facts = [e for e in await db.list(user_id="ann", limit=50) if e.metadata.get("source") == "llm"]
    assert sorted(f.l2_full for f in facts) == sorted(ANSWERS["facts"]["facts"])
    assert all(f.metadata["message_id"] == user_turn.metadata["message_id"] for f in facts)
    stats = await db.stats()
    by = stats["llm"]["by_purpose"]
    assert by["summary"]["calls"] == 1 and by["retrieval_key"]["calls"] == 2 and by["facts"]["calls"] == 1
    assert stats["llm"]["total"]["prompt_tokens"] == sum(v["prompt_tokens"] for v in by.values()) > 0
    assert stats["jobs"].get("done", 0) >= 4
    await db.close()


async def test_jobs_run_twice_change_nothing(tmp_path, fake_llm):
    fake_llm.responder = scripted(**ANSWERS)
    db = make_llm_db(tmp_path / "a.db", fake_llm.url)
    sid = await _session(db)
    await db.commit_session(sid)
    await db.flush()
    before = sorted((e.id, e.l2_full, e.l0_abstract, json.dumps(e.metadata, sort_keys=True), e.superseded_by)
                    for e in await db.list(user_id="ann", limit=100))
    history = (await db.db.fetchone("SELECT COUNT(*) FROM entry_history"))[0]
    # an expired lease / a second process: every job runs again
    async with db.db.transaction() as conn:
        await conn.execute("UPDATE jobs SET status = 'pending' WHERE kind = 'llm'")
    calls = len(fake_llm.requests)
    assert await db.flush() == 0
    assert len(fake_llm.requests) == calls + 4
    after = sorted((e.id, e.l2_full, e.l0_abstract, json.dumps(e.metadata, sort_keys=True), e.superseded_by)
                   for e in await db.list(user_id="ann", limit=100))
    assert after == before
    assert (await db.db.fetchone("SELECT COUNT(*) FROM entry_history"))[0] == history
    await db.close()


async def test_429_and_500_are_retried_nothing_lost(tmp_path, fake_llm):
    fake_llm.responder = scripted(**ANSWERS)
    db = make_llm_db(tmp_path / "a.db", fake_llm.url, facts=False, retrieval_keys=False, max_retries=1,
                     max_concurrency=1)
    sid = await _session(db)
    db.llm_worker.enabled = False
    await db.commit_session(sid)
    # 2 attempts (1 retry) fail in the client -> the job records an attempt; then 429 once more, then success
    fake_llm.script = [("status", 500), ("status", 429, 0), ("status", 429, 0)]
    db.llm_worker.enabled = True
    assert await db.flush() == 0
    rows = await db.db.fetchall("SELECT status, attempts FROM jobs WHERE kind = 'llm'")
    assert {r[0] for r in rows} == {"done"} and sum(r[1] for r in rows) == 1  # one job retried once
    assert (await _summary(db, sid)).l2_full == ANSWERS["summary"]["summary"]
    total = (await db.stats())["llm"]["total"]
    assert total["calls"] == len(rows) + 1 and total["errors"] == 1
    assert len(fake_llm.requests) == len(rows) + 3  # each 5xx/429 answer was one request
    await db.close()


async def test_unreachable_endpoint_defers_and_keeps_rule_output(tmp_path, fake_llm):
    db = make_llm_db(tmp_path / "a.db", dead_url(), max_retries=0, facts=False)
    sid = await _session(db)
    await db.commit_session(sid, wait=False)
    assert await db.flush(timeout=30) == 0  # deferred jobs do not hold flush()
    rows = await db.db.fetchall("SELECT status, attempts, last_error FROM jobs WHERE kind = 'llm'")
    assert rows and all(r[0] == "deferred" and r[1] == 0 and "cannot reach" in r[2] for r in rows)
    assert (await _summary(db, sid)).l2_full.startswith("Topics:")  # rule-based output kept
    assert (await db.stats())["jobs"]["deferred"] == len(rows)
    await db.close()
    # the endpoint comes back (same file, a new process pointed at the live server): the deferred jobs run
    fake_llm.responder = scripted(**ANSWERS)
    db = make_llm_db(tmp_path / "a.db", fake_llm.url, facts=False)
    await db.initialize()
    async with db.db.transaction() as conn:  # their deferral time has passed
        await conn.execute("UPDATE jobs SET next_run_at = '2000-01-01T00:00:00.000000Z' WHERE status = 'deferred'")
    assert await db.flush() == 0
    assert (await _summary(db, sid)).l2_full == ANSWERS["summary"]["summary"]
    assert (await db.db.fetchone("SELECT COUNT(*) FROM jobs WHERE kind = 'llm' AND status != 'done'"))[0] == 0
    await db.close()


async def test_malformed_answer_fails_the_job_and_keeps_rule_output(tmp_path, fake_llm):
    fake_llm.responder = scripted(summary="I am sorry, I cannot summarise that.", turn="{not json",
                                  facts={"facts": "not a list"})
    db = make_llm_db(tmp_path / "a.db", fake_llm.url)
    sid = await _session(db)
    await db.commit_session(sid)
    assert await db.flush() == 0
    rows = await db.db.fetchall("SELECT target, status, last_error FROM jobs WHERE kind = 'llm'")
    assert all(r[1] == "failed" and "LLMOutputError" in r[2] and "rule-based output kept" in r[2] for r in rows)
    assert (await _summary(db, sid)).l2_full.startswith("Topics:")
    turns = await db.list(session_id=sid, category="turn", limit=10)
    assert all("retrieval_key" not in t.metadata for t in turns)
    rule_facts = [e for e in await db.list(user_id="ann", limit=50) if e.metadata.get("source") == "session"]
    assert rule_facts and all(f.superseded_by is None for f in rule_facts)
    await db.close()


async def test_timeout_is_retried_by_the_job(tmp_path, fake_llm):
    fake_llm.responder = scripted(**ANSWERS)
    db = make_llm_db(tmp_path / "a.db", fake_llm.url, timeout_s=0.5, max_retries=0, facts=False,
                     retrieval_keys=False)
    sid = await _session(db)
    db.llm_worker.enabled = False
    await db.commit_session(sid)
    fake_llm.script = [("hang", 2.0)]
    db.llm_worker.enabled = True
    assert await db.flush() == 0
    rows = await db.db.fetchall("SELECT status, attempts FROM jobs WHERE kind = 'llm'")
    assert {r[0] for r in rows} == {"done"} and sum(r[1] for r in rows) == 1
    assert (await _summary(db, sid)).l2_full == ANSWERS["summary"]["summary"]
    await db.close()


async def test_edited_turn_keeps_no_stale_key(tmp_path, fake_llm):
    fake_llm.responder = scripted(**ANSWERS)
    db = make_llm_db(tmp_path / "a.db", fake_llm.url, summaries=False, facts=False)
    sid = await _session(db)
    await db.commit_session(sid)
    await db.flush()
    turn = next(t for t in await db.list(session_id=sid, category="turn", limit=10) if t.metadata["role"] == "user")
    assert [h.entry.id for h in await db.find("KEY adopted", mode="fts", user_id="ann")][:1]
    await db.update(turn.id, content="I adopted a cat instead.")
    hits = await db.find("KEY", mode="fts", user_id="ann")
    assert turn.id not in {h.entry.id for h in hits}  # the key described the old text: no longer indexed
    await db.close()


def test_purpose_tags_are_distinct():
    from agentbase.llm import prompts

    tags = {purpose_of({"messages": f(*args)}) for f, args in [
        (prompts.summary_messages, ("x",)), (lambda t: prompts.facts_messages(t, speaker="A", context=None), ("x",)),
        (prompts.decompose_messages, ("x", 3)), (prompts.rerank_messages, ("x", ["a"]))]}
    assert len(tags) == 4


async def test_commit_does_not_wait_for_the_model_and_the_key_is_never_stored(tmp_path, fake_llm):
    import time

    fake_llm.responder = scripted(**ANSWERS)
    fake_llm.script = [("hang", 2.0)] * 4
    db = make_llm_db(tmp_path / "a.db", fake_llm.url, api_key="sk-very-secret-key", timeout_s=10, rerank=True)
    sid = await _session(db)
    t0 = time.perf_counter()
    out = await db.commit_session(sid)  # inline enrichment: rule-based output now, the model's later
    assert time.perf_counter() - t0 < 1.5 and out["summary_id"]
    assert (await _summary(db, sid)).l2_full.startswith("Topics:")
    await db.flush()
    await db.find("beagle", user_id="ann", trace=True)
    assert (await _summary(db, sid)).l2_full == ANSWERS["summary"]["summary"]
    await db.close()
    for f in tmp_path.iterdir():
        assert b"sk-very-secret-key" not in f.read_bytes()


async def test_permanent_http_error_fails_at_once_keeping_rule_output(tmp_path, fake_llm):
    db = make_llm_db(tmp_path / "a.db", fake_llm.url, facts=False, retrieval_keys=False, max_concurrency=1)
    sid = await _session(db)
    db.llm_worker.enabled = False
    await db.commit_session(sid)
    n_jobs = (await db.db.fetchone("SELECT COUNT(*) FROM jobs WHERE kind = 'llm'"))[0]
    fake_llm.script = [("status", 404)] * n_jobs  # e.g. a model name the server does not know
    db.llm_worker.enabled = True
    assert await db.flush() == 0
    rows = await db.db.fetchall("SELECT status, attempts, last_error FROM jobs WHERE kind = 'llm'")
    assert all(r[0] == "failed" and r[1] == 0 and "HTTP 404" in r[2] for r in rows)
    assert len(fake_llm.requests) == n_jobs  # not retried
    assert (await _summary(db, sid)).l2_full.startswith("Topics:")
    await db.close()


async def test_each_jobs_model_calls_are_a_trace(tmp_path, fake_llm):
    fake_llm.responder = scripted(**ANSWERS)
    db = make_llm_db(tmp_path / "a.db", fake_llm.url)
    sid = await _session(db)
    await db.commit_session(sid)
    assert await db.flush() == 0
    await db.find("beagle", user_id="ann")  # a retrieval trace beside them
    summaries = [t for t in await db.list_traces(limit=50) if t["query"].startswith("llm job ")]
    assert sorted(t["query"].split()[2].split(":")[0] for t in summaries) == ["facts", "summary", "turn", "turn"]
    calls = []
    for t in summaries:
        trace = await db.get_trace(t["id"])
        assert trace.params["kind"] == "llm_job" and trace.params["target"] == t["query"][len("llm job "):]
        calls += [s.details for s in trace.steps if s.name == "llm_call"]
    assert sorted(c["purpose"] for c in calls) == ["facts", "retrieval_key", "retrieval_key", "summary"]
    assert all(c["outcome"] == "ok" and c["model"] and c["prompt_tokens"] > 0 and c["latency_ms"] >= 0
               for c in calls)
    by = (await db.stats())["llm"]["by_purpose"]  # the traces and the totals count the same calls
    assert sum(c["prompt_tokens"] for c in calls) == sum(v["prompt_tokens"] for v in by.values())
    await db.close()
