"""AgentBaseSaver beyond the conformance kit: the sync methods (the kit drives only the async ones), LangGraph's
errors for bad configs with nothing written, metadata rules, versions, reopening, sharing a path, and that the
saver's rows stay out of AgentBase's memories."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, TypedDict

import pytest
from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import ERROR

from agentbase.testing import database_for
from agentbase.adapters import AgentBaseSaver
from agentbase.adapters.langgraph_checkpoint import CheckpointConfigError
from agentbase.errors import ValidationError


def _cfg(thread: str, ns: str = "", checkpoint_id: str | None = None) -> dict:
    conf = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def _checkpoint(values: dict, version=1) -> dict:
    cp = empty_checkpoint()
    cp["channel_values"] = dict(values)
    cp["channel_versions"] = {k: version for k in values}
    return cp


def _chain(saver, thread: str, n: int, ns: str = "", run_id: str | None = None) -> list[dict]:
    configs, parent, version = [], None, None
    for i in range(n):
        config = _cfg(thread, ns, parent["configurable"]["checkpoint_id"] if parent else None)
        md = {"source": "loop", "step": i, "parents": {}, **({"run_id": run_id} if run_id else {})}
        version = saver.get_next_version(version, None)
        parent = saver.put(config, _checkpoint({"n": i}, version), md, {"n": version})
        configs.append(parent)
    return configs


def _state(saver) -> list[tuple]:
    """Everything a saver holds, as comparable data (list(None) orders threads and namespaces differently:
    ours newest first over all of them, InMemorySaver thread by thread)."""
    return sorted(((t.config["configurable"]["thread_id"], t.config["configurable"]["checkpoint_ns"],
                    t.checkpoint["channel_values"], t.metadata["step"], t.pending_writes) for t in saver.list(None)),
                  key=repr)


def test_sync_methods_round_trip(db) -> None:
    saver = AgentBaseSaver(db)
    configs = _chain(saver, "s", 3)
    saver.put_writes(configs[-1], [("ch", {"x": 1}), (ERROR, "boom")], "task-1", task_path="~a")
    latest = saver.get_tuple(_cfg("s"))
    assert latest.checkpoint["channel_values"] == {"n": 2} and latest.metadata["step"] == 2
    assert latest.parent_config == configs[1]
    assert sorted(latest.pending_writes) == [("task-1", "__error__", "boom"), ("task-1", "ch", {"x": 1})]
    assert saver.get(configs[0])["channel_values"] == {"n": 0}
    assert [t.metadata["step"] for t in saver.list(_cfg("s"))] == [2, 1, 0]
    assert [t.metadata["step"] for t in saver.list(_cfg("s"), before=configs[2], limit=1)] == [1]
    assert [t.metadata["step"] for t in saver.list(_cfg("s"), filter={"step": 0})] == [0]
    assert list(saver.list(_cfg("s"), limit=0)) == []
    saver.copy_thread("s", "s2")
    assert [t.checkpoint["id"] for t in saver.list(_cfg("s2"))] == [t.checkpoint["id"] for t in saver.list(_cfg("s"))]
    saver.prune(["s"], strategy="keep_latest")
    assert [t.metadata["step"] for t in saver.list(_cfg("s"))] == [2]
    assert saver.get_tuple(_cfg("s")).checkpoint["channel_values"] == {"n": 2}
    saver.delete_thread("s2")
    assert saver.get_tuple(_cfg("s2")) is None
    _chain(saver, "r", 2, run_id="run-9")
    saver.delete_for_runs(["run-9"])
    assert list(saver.list(_cfg("r"))) == []


def test_same_calls_give_same_state_as_in_memory_saver(db) -> None:
    """One script of sync calls on both savers: namespaces, writes, a repeated write, a special-channel write,
    a thread delete."""
    results = []
    for saver in (InMemorySaver(), AgentBaseSaver(db)):
        root = _chain(saver, "t1", 3)
        child = _chain(saver, "t1", 2, ns="child:1")
        _chain(saver, "t2", 2)
        saver.put_writes(root[-1], [("a", 1), ("b", [2])], "task")
        saver.put_writes(root[-1], [("a", 99)], "task")  # same (task, idx): kept once, first value wins
        saver.put_writes(child[-1], [(ERROR, "e1")], "task")
        saver.put_writes(child[-1], [(ERROR, "e2")], "task")  # special channel: replaced
        saver.delete_thread("t2")
        steps = [t.metadata["step"] for t in saver.list(_cfg("t1"), filter={"source": "loop"})]
        results.append((_state(saver), steps))
    assert results[0] == results[1]
    assert any(w == [("task", "a", 1), ("task", "b", [2])] for *_, w in results[1][0])
    assert any(w == [("task", "__error__", "e2")] for *_, w in results[1][0])


def test_missing_thread_id_raises_key_error_and_writes_nothing(db) -> None:
    saver = AgentBaseSaver(db)
    cp = _checkpoint({"k": "v"})
    md = {"source": "input", "step": -1}
    for bad in ({}, {"configurable": {}}, {"configurable": {"checkpoint_ns": ""}}):
        # InMemorySaver raises KeyError for the same configs; ours is also an AgentBase ValidationError
        with pytest.raises(KeyError):
            InMemorySaver().put(bad, cp, md, {"k": 1})
        with pytest.raises(CheckpointConfigError) as info:
            saver.put(bad, cp, md, {"k": 1})
        assert isinstance(info.value, KeyError) and isinstance(info.value, ValidationError)
        with pytest.raises(KeyError):
            saver.get_tuple(bad)
        with pytest.raises(KeyError):
            saver.put_writes(bad, [("ch", 1)], "task")
    with pytest.raises(KeyError) as info:
        saver.put_writes(_cfg("t"), [("ch", 1)], "task")  # no checkpoint_id: nothing to attach writes to
    assert info.value.key == "checkpoint_id"
    assert list(saver.list(None)) == []
    assert db.sync.list_checkpoints() == []


async def test_bad_input_on_the_async_path_writes_nothing(db) -> None:
    saver = AgentBaseSaver(db)
    with pytest.raises(CheckpointConfigError):
        await saver.aput({"configurable": {}}, _checkpoint({}), {}, {})
    with pytest.raises(ValidationError):  # not JSON: refused before writing, as the SQL savers refuse it
        await saver.aput(_cfg("t"), _checkpoint({}), {"source": "loop", "obj": object()}, {})
    with pytest.raises(ValidationError):
        await saver.aprune(["t"], strategy="everything")
    with pytest.raises(ValidationError):
        await saver.adelete_for_runs("run-1")  # a string is not a list of run ids
    assert [t async for t in saver.alist(None)] == []


def test_metadata_is_json_and_config_keys_are_copied(db) -> None:
    saver = AgentBaseSaver(db)
    config = {"configurable": {"thread_id": "m", "checkpoint_ns": "", "user": "ann", "langgraph_step": 3},
              "metadata": {"tenant": "acme", "score": 1.5, "obj": object()}}
    md = {"source": "loop", "step": 1, "parents": {}, "counters_since_delta_snapshot": {"c": (1, 2)}}
    saver.put(config, _checkpoint({}), md, {})
    got = saver.get_tuple(_cfg("m")).metadata
    # tuples come back as lists (JSON, as in LangGraph's SQL savers); str/number config values are copied,
    # LangGraph's own keys and non-scalar values are not
    assert got == {"source": "loop", "step": 1, "parents": {}, "counters_since_delta_snapshot": {"c": [1, 2]},
                   "user": "ann", "tenant": "acme", "score": 1.5}
    assert [t.metadata["user"] for t in saver.list(None, filter={"tenant": "acme", "score": 1.5})] == ["ann"]
    assert list(saver.list(None, filter={"counters_since_delta_snapshot": {"c": [1, 2]}}))
    assert not list(saver.list(None, filter={"step": "1"}))  # a string never equals a number


def test_versions_increase_as_text() -> None:
    saver = AgentBaseSaver.__new__(AgentBaseSaver)
    v = None
    seen = []
    for _ in range(12):
        v = saver.get_next_version(v, None)
        seen.append(v)
    assert seen == sorted(seen) and len(set(seen)) == 12
    assert int(seen[-1].split(".")[0]) == 12
    assert saver.get_next_version(5, None).startswith(f"{6:032}.")


def test_reopened_file_and_path_sharing(db_path: Path, opener) -> None:
    db = opener(db_path)
    saver = AgentBaseSaver(db)
    configs = _chain(saver, "p", 2)
    saver.put_writes(configs[-1], [("ch", "v")], "task")
    db.sync.close()
    # a path opens the file itself (default settings) and hands it back on close / at the end of a with block
    with AgentBaseSaver(str(database_for(db_path))) as by_path, AgentBaseSaver(database_for(db_path)) as again:
        assert by_path._db is again._db  # one engine per file per process, as for the other adapters
        tup = by_path.get_tuple(_cfg("p"))
        assert tup.checkpoint["channel_values"] == {"n": 1} and tup.pending_writes == [("task", "ch", "v")]
        assert [t.metadata["step"] for t in again.list(_cfg("p"))] == [1, 0]
        assert by_path._db.sync.count() == 0  # checkpoints are not entries
    assert by_path._db.closed


def test_thread_ids_may_be_ints(db) -> None:
    saver = AgentBaseSaver(db)
    stored = saver.put({"configurable": {"thread_id": 42, "checkpoint_ns": ""}}, _checkpoint({"x": 1}), {}, {"x": 1})
    assert stored["configurable"]["thread_id"] == "42"
    assert saver.get_tuple({"configurable": {"thread_id": 42}}).checkpoint["channel_values"] == {"x": 1}
    saver.delete_thread(42)
    assert saver.get_tuple(_cfg("42")) is None


def test_allowlist_clone_shares_the_file_and_never_closes_it(db_path: Path) -> None:
    """Compiled graphs may clone the saver with a stricter msgpack allowlist (``with_allowlist``)."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    saver = AgentBaseSaver(str(database_for(db_path)), serde=JsonPlusSerializer(allowed_msgpack_modules=None))
    clone = saver.with_allowlist([("my_package", "MyType")])
    assert clone is not saver and clone._db is saver._db
    clone.close()
    assert not saver._db.closed
    stored = saver.put(_cfg("a"), _checkpoint({"x": [1, 2]}), {"source": "loop", "step": 0}, {"x": 1})
    assert clone.get_tuple(stored).checkpoint["channel_values"] == {"x": [1, 2]}
    saver.close()
    assert saver._db.closed


def test_delta_channel_state_matches_in_memory_saver(db_path: Path, opener) -> None:
    """LangGraph's (beta) DeltaChannel stores writes and periodic snapshots and rebuilds its value by walking the
    parent chain (get_delta_channel_history); after seven steps and a reopened file it equals InMemorySaver's."""
    def extend(state, batches):
        out = list(state or [])
        for batch in batches:
            out.extend(batch)
        return out

    def build(checkpointer):
        graph = StateGraph(TypedDict("State", {"items": Annotated[list, DeltaChannel(extend, list,
                                                                                    snapshot_frequency=3)]}))
        graph.add_node("count", lambda s: {"items": [len(s["items"])]})
        graph.add_edge(START, "count")
        graph.add_edge("count", END)
        return graph.compile(checkpointer=checkpointer)

    config = {"configurable": {"thread_id": "delta"}}
    finals = []
    for make in (InMemorySaver, lambda: AgentBaseSaver(opener(db_path))):
        saver = make()
        graph = build(saver)
        for i in range(7):
            final = graph.invoke({"items": [100 + i]}, config)
        finals.append((final, [s.values for s in graph.get_state_history(config)]))
        if isinstance(saver, AgentBaseSaver):
            saver._db.sync.close()
    assert finals[0] == finals[1]
    assert finals[1][0]["items"] == [100, 1, 101, 3, 102, 5, 103, 7, 104, 9, 105, 11, 106, 13]
    db = opener(db_path)
    try:
        saver = AgentBaseSaver(db)
        graph = build(saver)
        assert graph.get_state(config).values == finals[1][0]
        # prune keeps the newest checkpoint and the ancestors back to the channel's last snapshot, so the value
        # rebuilds the same; a plain keep-latest would have left it empty
        before = len(list(saver.list(config)))
        saver.prune(["delta"])
        after = [t.metadata for t in saver.list(config)]
        assert 1 < len(after) < before
        assert graph.get_state(config).values == finals[1][0]
        final = graph.invoke({"items": [200]}, config)
        assert final["items"] == finals[1][0]["items"] + [200, 15]
    finally:
        db.sync.close()
