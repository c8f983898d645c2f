"""mem0 add(infer=True) with a model configured: mem0's extract / retrieve / decide / apply algorithm through the
adapter, against the loopback server; malformed answers fall back to the rule-based path and log it."""

from __future__ import annotations

import json
import logging
import re

from agentbase import SyncAgentBase
from agentbase.adapters import AsyncMem0Adapter, Mem0Adapter

from .helpers import make_llm_db, scripted, user_text


def _numbered(request) -> dict[int, str]:
    stored = user_text(request).split("New facts:")[0]
    return {int(m[1]): m[2] for m in re.finditer(r"^(\d+): (.*)$", stored, re.M)}


def decide(request):
    """Moves replace the stored city (UPDATE), "no longer" deletes, anything else is added."""
    stored = _numbered(request)
    facts = re.findall(r"^- (.*)$", user_text(request), re.M)
    out = []
    for fact in facts:
        city = next((i for i, t in stored.items() if "lives in" in t), None)
        pet = next((i for i, t in stored.items() if "dog" in t), None)
        if "moved to" in fact and city is not None:
            out.append({"id": str(city), "text": fact, "event": "UPDATE", "old_memory": stored[city]})
        elif "no longer" in fact and pet is not None:
            out.append({"id": str(pet), "text": stored[pet], "event": "DELETE"})
        elif fact in stored.values():
            out.append({"id": str(next(i for i, t in stored.items() if t == fact)), "text": fact, "event": "NONE"})
        else:
            out.append({"id": str(len(stored) + len(out)), "text": fact, "event": "ADD"})
    return json.dumps({"memory": out})


def extract(request):
    text = user_text(request)
    if "Berlin" in text and "moved" not in text:
        return {"facts": ["Ann lives in Berlin", "Ann has a dog named Rex"]}
    if "Munich" in text:
        return {"facts": ["Ann moved to Munich"]}
    if "gave" in text:
        return {"facts": ["Ann no longer has a dog"]}
    return {"facts": []}


def test_add_update_delete_events(tmp_path, fake_llm):
    fake_llm.responder = scripted(facts=extract, mem0_update=decide)
    sync = SyncAgentBase(db=make_llm_db(tmp_path / "m.db", fake_llm.url))
    m = Mem0Adapter(sync)
    first = m.add([{"role": "user", "content": "Hi, I'm Ann. I live in Berlin with my dog Rex."}], user_id="ann")
    assert sorted((r["event"], r["memory"]) for r in first["results"]) == [
        ("ADD", "Ann has a dog named Rex"), ("ADD", "Ann lives in Berlin")]
    city_id = next(r["id"] for r in first["results"] if "Berlin" in r["memory"])
    dog_id = next(r["id"] for r in first["results"] if "Rex" in r["memory"])
    second = m.add("We moved to Munich last month.", user_id="ann")
    assert second["results"] == [{"id": city_id, "memory": "Ann moved to Munich", "event": "UPDATE",
                                  "previous_memory": "Ann lives in Berlin"}]
    assert m.get(city_id)["memory"] == "Ann moved to Munich"
    third = m.add("I gave Rex to my sister.", user_id="ann")
    assert third["results"] == [{"id": dog_id, "memory": "Ann has a dog named Rex", "event": "DELETE"}]
    assert m.get(dog_id) is None
    assert [h["event"] for h in m.history(city_id)] == ["ADD", "UPDATE"]
    assert m.add("Nothing to note.", user_id="ann") == {"results": []}
    by = sync.stats()["llm"]["by_purpose"]
    assert by["mem0_extract"]["calls"] == 4 and by["mem0_update"]["calls"] == 3  # no facts: no decision call
    # each add() is one trace of its model calls (the find() calls inside it have their own)
    infers = [sync.get_trace(t["id"]) for t in sync.list_traces(limit=100) if t["query"] == "llm mem0 infer"]
    assert len(infers) == 4 and all(t.params == {"kind": "mem0_infer", "user_id": "ann"} for t in infers)
    purposes = sorted(s.details["purpose"] for t in infers for s in t.steps if s.name == "llm_call")
    assert purposes == ["mem0_extract"] * 4 + ["mem0_update"] * 3
    m.close()
    sync.close()


def test_malformed_answer_falls_back_to_rules_and_says_so(tmp_path, fake_llm, caplog):
    fake_llm.responder = scripted(facts={"facts": ["Ann lives in Berlin"]}, mem0_update='{"memory": [{"id": "7", '
                                  '"text": "x", "event": "UPDATE"}]}')
    sync = SyncAgentBase(db=make_llm_db(tmp_path / "m.db", fake_llm.url, summaries=False, facts=False,
                                        retrieval_keys=False))
    m = Mem0Adapter(sync)
    with caplog.at_level(logging.WARNING, logger="agentbase.adapters.mem0"):
        out = m.add("I live in Berlin.", user_id="ann")
    assert "the LLM path failed (LLMOutputError" in caplog.text
    # the rule-based extraction ran instead: its fact, and nothing from the rejected answer
    assert [r["event"] for r in out["results"]] == ["ADD"] and "Berlin" in out["results"][0]["memory"]
    assert all(e["memory"] != "x" for e in m.get_all(filters={"user_id": "ann"})["results"])
    m.close()
    sync.close()


async def test_async_adapter_and_switch_off(tmp_path, fake_llm):
    fake_llm.responder = scripted(facts={"facts": ["Ann likes tea"]}, mem0_update={"memory": [
        {"id": "0", "text": "Ann likes tea", "event": "ADD"}]})
    db = make_llm_db(tmp_path / "m.db", fake_llm.url, mem0_infer=False, summaries=False, facts=False,
                     retrieval_keys=False)
    m = AsyncMem0Adapter(db)
    out = await m.add("I like tea.", user_id="ann")
    assert fake_llm.requests == []  # mem0_infer off: the rule-based path, no call
    assert out["results"]
    await db.close()
    db = make_llm_db(tmp_path / "n.db", fake_llm.url, summaries=False, facts=False, retrieval_keys=False)
    m = AsyncMem0Adapter(db)
    out = await m.add("I like tea.", user_id="ann")
    assert [(r["event"], r["memory"]) for r in out["results"]] == [("ADD", "Ann likes tea")]
    await db.close()
