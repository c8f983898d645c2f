"""Differential test: one script run against the real ``mem0.Memory`` and against ``Mem0Adapter``.

Both are built with ``from_config`` from the same kind of mem0 config (LangChain
``DeterministicFakeEmbedding`` + ``FakeListChatModel``, embedded Qdrant in a temp folder; the adapter reuses
the LangChain embedder, so cosine similarities, and therefore mem0's ``threshold`` filtering, are the same on
both sides). The script's answers are normalised (uuids and timestamps become placeholders numbered by first
appearance, so "same id" and "same time" relations are kept; scores become ``<float>``; dict key order is
kept) and compared step by step: keys, events, messages, errors and ordering, not scores. Search results are
compared as top hit plus the set of hits, because the two rankers differ. The few intended differences are
listed in ``KNOWN_DIFFERENCES`` with their reason and are asserted explicitly.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Callable

import pytest

UNKNOWN = "0b6e2f4c-1d2a-4c3b-9e8f-7a6b5c4d3e2f"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?\+00:00$")


class Recorder:
    """Runs steps, normalises their answers or errors, and keeps them in order."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}
        self.times: dict[str, str] = {}
        self.steps: dict[str, Any] = {}

    def _norm(self, value: Any) -> Any:
        if isinstance(value, dict):
            return tuple((k, self._norm(v)) for k, v in value.items())
        if isinstance(value, (list, tuple)):
            return [self._norm(v) for v in value]
        if isinstance(value, float):
            return "<float>"
        if isinstance(value, str):
            if _TS.match(value):
                datetime.fromisoformat(value)  # a valid ISO-8601 UTC time on both sides
                return self.times.setdefault(value, f"ts#{len(self.times)}")
            return _UUID.sub(lambda mt: self.ids.setdefault(mt.group(0), f"id#{len(self.ids)}"), value)
        return value

    def __call__(self, name: str, fn: Callable[[], Any], view: Callable[[Any], Any] = lambda v: v) -> Any:
        try:
            raw = fn()
        except Exception as exc:  # noqa: BLE001 - errors are part of the contract being compared
            self.steps[name] = ("raises", type(exc).__name__, getattr(exc, "error_code", None),
                                self._norm(str(exc)))
            return None
        self.steps[name] = self._norm(view(raw))
        return raw


def by_memory(result: dict) -> list[dict]:
    return sorted(result["results"], key=lambda r: r["memory"])


def hits(result: dict) -> dict:
    items = result["results"]
    return {"top": items[0]["memory"] if items else None, "items": sorted(items, key=lambda r: r["memory"])}


def shape(result: dict) -> list:
    return [(sorted(r), r["event"]) for r in result["results"]]


def scenario(m: Any) -> dict[str, Any]:
    """The script. Steps are named; their normalised answers are returned in order."""
    log = Recorder()
    pizza = log("add str", lambda: m.add("I like pizza", user_id="alice", infer=False,
                                         metadata={"topic": "food"}))
    pid = pizza["results"][0]["id"]
    log("add messages", lambda: m.add([
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Hello, I am Alice", "name": "alice_a"},
        {"role": "assistant", "content": "Hi Alice, nice to meet you"}],
        user_id="alice", agent_id="bot", infer=False))
    log("add run", lambda: m.add("Remember build number 42", run_id="run-7", infer=False, metadata={"n": 42}))
    log("add expired", lambda: m.add("Old pizza opinion", user_id="alice", infer=False,
                                     expiration_date="2000-01-01"))
    log("add int id", lambda: m.add("numeric owner", user_id=1234, infer=False))
    log("get", lambda: m.get(pid))
    log("get unknown", lambda: m.get(UNKNOWN))
    log("get_all alice", lambda: m.get_all(filters={"user_id": "alice"}), by_memory)
    log("get_all alice+bot", lambda: m.get_all(filters={"user_id": "alice", "agent_id": "bot"}), by_memory)
    log("get_all run", lambda: m.get_all(filters={"run_id": "run-7"}), by_memory)
    log("get_all int id", lambda: m.get_all(filters={"user_id": 1234}), by_memory)
    log("get_all metadata eq", lambda: m.get_all(filters={"user_id": "alice", "topic": "food"}), by_memory)
    log("get_all show_expired", lambda: m.get_all(filters={"user_id": "alice"}, show_expired=True), by_memory)
    log("get_all top_k", lambda: len(m.get_all(filters={"user_id": "alice"}, top_k=2)["results"]))
    log("search exact", lambda: m.search("I like pizza", filters={"user_id": "alice"}), hits)
    log("search threshold 0", lambda: m.search("pizza", filters={"user_id": "alice"}, threshold=0), hits)
    alice = {"user_id": "alice"}
    for name, query, extra in [  # exact texts as queries: the target is always a candidate (cosine 1)
            ("in", "I like pizza", {"topic": {"in": ["food", "x"]}}),
            ("nin", "I like pizza", {"topic": {"nin": ["food"]}}),
            ("ne", "I like pizza", {"topic": {"ne": "drinks"}}),
            ("ne on missing key", "Hello, I am Alice", {"topic": {"ne": "drinks"}}),
            ("eq list", "I like pizza", {"topic": ["food", "x"]}),
            ("wildcard", "I like pizza", {"topic": "*"}),
            ("NOT", "Hello, I am Alice", {"NOT": [{"topic": "food"}]}),
            ("NOT excludes", "I like pizza", {"NOT": [{"topic": "food"}]}),
            ("OR", "I like pizza", {"OR": [{"topic": "food"}, {"topic": "drinks"}]}),
            ("AND", "I like pizza", {"AND": [{"topic": "food"}, {"role": "user"}]}),
            ("actor_id", "Hello, I am Alice", {"actor_id": "alice_a"}),
            ("role", "Hi Alice, nice to meet you", {"role": "assistant"})]:
        log(f"search op {name}", lambda q=query, f=extra: m.search(q, filters={**alice, **f}), hits)
    build = "Remember build number 42"
    log("search op gte", lambda: m.search(build, filters={"run_id": "run-7", "n": {"gte": 40}}), hits)
    log("search op lt", lambda: m.search(build, filters={"run_id": "run-7", "n": {"lt": 40}}), hits)
    log("search top-level id", lambda: m.search("pizza", user_id="alice", threshold=0), hits)
    log("update text", lambda: m.update(pid, "I like pizza with olives"))
    log("update metadata", lambda: m.update(pid, metadata={"topic": "italian", "user_id": "mallory"}))
    log("get after update", lambda: m.get(pid))
    log("history", lambda: m.history(pid))
    log("add no ids", lambda: m.add("x", infer=False))
    log("add bad memory_type", lambda: m.add("x", user_id="a", memory_type="semantic"))
    log("add bad messages", lambda: m.add(3.5, user_id="a"))
    log("add whitespace id", lambda: m.add("x", user_id="a b", infer=False))
    log("add empty id", lambda: m.add("x", user_id="  ", infer=False))
    log("add bad expiration", lambda: m.add("x", user_id="a", infer=False, expiration_date="soon"))
    log("search empty", lambda: m.search("   ", filters={"user_id": "alice"}))
    log("search threshold", lambda: m.search("x", filters={"user_id": "alice"}, threshold=1.5))
    log("search top_k", lambda: m.search("x", filters={"user_id": "alice"}, top_k=-1))
    log("search no ids", lambda: m.search("x", filters={"topic": "food"}))
    log("search bad operator", lambda: m.search("x", filters={"user_id": "alice", "topic": {"regex": "f"}}))
    log("get_all no ids", lambda: m.get_all(filters={}))
    log("update nothing", lambda: m.update(pid))
    log("update unknown", lambda: m.update(UNKNOWN, "x"))
    log("delete unknown", lambda: m.delete(UNKNOWN))
    log("delete_all no ids", lambda: m.delete_all())
    log("delete", lambda: m.delete(pid))
    log("get deleted", lambda: m.get(pid))
    log("history after delete", lambda: m.history(pid))
    log("delete_all alice", lambda: m.delete_all(user_id="alice"))
    log("get_all alice after", lambda: m.get_all(filters={"user_id": "alice"}, show_expired=True), by_memory)
    log("get_all run after", lambda: m.get_all(filters={"run_id": "run-7"}), by_memory)
    log("infer add", lambda: m.add("I love playing tennis", user_id="carol"), shape)
    return log.steps


def _history_without_actor(rows: list) -> list:
    return [tuple(kv for kv in row if kv[0] not in ("actor_id", "role")) for row in rows]


# step -> (reason, check(mem0_answer, adapter_answer))
KNOWN_DIFFERENCES: dict[str, tuple[str, Callable[[Any, Any], None]]] = {
    "search top-level id": (
        "mem0 2.x rejects top-level ids in search(); the adapter accepts them (older mem0, the seed example)",
        lambda real, ours: (real[0] == "raises" and real[1] == "ValueError" and "Top-level entity" in real[3]
                            and dict(ours)["top"] is not None) or pytest.fail(f"{real} / {ours}")),
    "search bad operator": (
        "the text comes from mem0's vector store (Qdrant lists a set in random order); the adapter uses "
        "mem0's own 'Unsupported metadata filter operator: ...'. Both are ValueError naming the operator",
        lambda real, ours: (real[:3] == ours[:3] == ("raises", "ValueError", None) and "regex" in real[3]
                            and "regex" in ours[3]) or pytest.fail(f"{real} / {ours}")),
    "history after delete": (
        "AgentBase history events do not snapshot metadata: role/actor_id are None once it is deleted",
        lambda real, ours: (_history_without_actor(real) == _history_without_actor(ours)
                            and all(dict(r)["role"] is None for r in ours))
        or pytest.fail(f"{real} / {ours}")),
}


def test_same_script_same_answers(real_mem0, adapter_from_same_config):
    real = scenario(real_mem0)
    ours = scenario(adapter_from_same_config)
    assert list(real) == list(ours)
    mismatches = []
    for step in real:
        if step in KNOWN_DIFFERENCES:
            KNOWN_DIFFERENCES[step][1](real[step], ours[step])
        elif real[step] != ours[step]:
            mismatches.append(f"{step}:\n  mem0:    {real[step]}\n  adapter: {ours[step]}")
    assert not mismatches, "\n".join(mismatches)


def test_infer_true_shape_matches(real_mem0, adapter_from_same_config):
    """infer=True: mem0 asks the (fake) LLM, the adapter extracts rule-based facts; the shape is the same."""
    said = [{"role": "user", "content": "I love playing tennis"}]
    real = real_mem0.add(said, user_id="carol")
    ours = adapter_from_same_config.add(said, user_id="carol")
    assert [sorted(r) for r in real["results"]] == [sorted(r) for r in ours["results"]] == [
        ["event", "id", "memory"]]
    assert real["results"][0]["memory"] == "Likes tennis"
    assert ours["results"][0]["memory"] == "User loves playing tennis"
    for m, result in ((real_mem0, real), (adapter_from_same_config, ours)):
        item = m.get(result["results"][0]["id"])
        assert item["user_id"] == "carol" and "role" not in item
        assert [h["event"] for h in m.history(item["id"])] == ["ADD"]
