"""The checkpoint API (schema v10): graph-state snapshots, channel values and pending writes on real files.

These are the storage operations behind the LangGraph checkpointer (compat_tests/langgraph); here they are
driven directly, without LangGraph.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from agentbase import ValidationError
from agentbase.storage import SCHEMA_VERSION, open_database

from tests.conftest import make_db


def _put(db, thread: str, cid: str, *, ns: str = "", parent: str | None = None, run_id: str | None = None,
         versions: dict | None = None, blobs=(), **metadata):
    md = {**metadata, **({"run_id": run_id} if run_id else {})}
    return db.sync.put_checkpoint(thread, cid, checkpoint_type="msgpack", checkpoint=f"snap-{cid}".encode(),
                                  checkpoint_ns=ns, parent_checkpoint_id=parent, metadata=md,
                                  channel_versions=versions or {}, blobs=list(blobs))


async def _rows(db, table: str) -> int:
    """Rows of a checkpoint table, read through the engine's own reader connection (a second SQLite library in
    this process, the stdlib's beside sqlean, would not see the other's WAL reliably)."""
    return (await (await db._open()).fetchone(f"SELECT COUNT(*) FROM {table}"))[0]


async def test_put_get_latest_values_and_writes(db):
    _put(db, "t", "c1", versions={"a": 1, "b": 1}, blobs=[("a", 1, "json", b"A1"), ("b", 1, "json", b"B1")],
         step=0)
    _put(db, "t", "c2", parent="c1", versions={"a": 2, "b": 1}, blobs=[("a", 2, "json", b"A2")], step=1)
    db.sync.put_checkpoint_writes("t", "c2", [("task", 1, "x", "json", b"w1", "p"), ("task", 0, "y", "json", b"w0", "p"),
                                              ("other", 0, "z", "json", b"o", "")])
    latest = await db.get_checkpoint("t")
    assert latest.checkpoint_id == "c2" and latest.parent_checkpoint_id == "c1"
    assert latest.checkpoint == b"snap-c2" and latest.type == "msgpack"
    assert latest.blobs == {"a": ("json", b"A2"), "b": ("json", b"B1")}  # b read from c1's version
    # ordered by (task_path, task_id, idx), as LangGraph's writes_sort_key
    assert [(w.task_id, w.idx, w.channel) for w in latest.writes] == [("other", 0, "z"), ("task", 0, "y"),
                                                                       ("task", 1, "x")]
    first = await db.get_checkpoint("t", "c1")
    assert first.blobs == {"a": ("json", b"A1"), "b": ("json", b"B1")} and first.writes == []
    assert await db.get_checkpoint("t", "missing") is None
    assert await db.get_checkpoint("nobody") is None


async def test_writes_keep_regular_and_replace_special(db):
    _put(db, "t", "c1")
    db.sync.put_checkpoint_writes("t", "c1", [("task", 0, "ch", "json", b"first", ""),
                                              ("task", -1, "__error__", "json", b"e1", "")])
    db.sync.put_checkpoint_writes("t", "c1", [("task", 0, "ch", "json", b"second", ""),
                                              ("task", -1, "__error__", "json", b"e2", "")])
    writes = (await db.get_checkpoint("t")).writes
    assert [(w.channel, w.value) for w in writes] == [("__error__", b"e2"), ("ch", b"first")]


async def test_list_filters(db):
    for i, (source, ns) in enumerate([("input", ""), ("loop", ""), ("loop", "child"), ("input", "")]):
        _put(db, "t", f"c{i}", ns=ns, source=source, step=i, flag=bool(i % 2), tags=["x", str(i)])
    _put(db, "u", "c9", source="loop", step=9)
    ids = lambda recs: [r.checkpoint_id for r in recs]  # noqa: E731
    assert ids(await db.list_checkpoints("t")) == ["c3", "c2", "c1", "c0"]
    assert ids(await db.list_checkpoints("t", checkpoint_ns="")) == ["c3", "c1", "c0"]
    assert ids(await db.list_checkpoints()) == ["c9", "c3", "c2", "c1", "c0"]
    assert ids(await db.list_checkpoints("t", before="c2")) == ["c1", "c0"]
    assert ids(await db.list_checkpoints("t", limit=2)) == ["c3", "c2"]
    assert ids(await db.list_checkpoints("t", metadata_filter={"source": "loop"})) == ["c2", "c1"]
    assert ids(await db.list_checkpoints("t", metadata_filter={"source": "loop", "step": 2})) == ["c2"]
    assert ids(await db.list_checkpoints(metadata_filter={"step": 9.0})) == ["c9"]  # 9.0 == 9, as in Python
    assert ids(await db.list_checkpoints(metadata_filter={"step": "9"})) == []
    assert ids(await db.list_checkpoints("t", metadata_filter={"flag": True})) == ["c3", "c1"]
    assert ids(await db.list_checkpoints(metadata_filter={"flag": None})) == ["c9"]  # missing key equals None
    assert ids(await db.list_checkpoints(metadata_filter={"tags": ["x", "2"]})) == ["c2"]  # compared in Python
    assert ids(await db.list_checkpoints(metadata_filter={"tags": ["x", "2"]}, limit=1)) == ["c2"]
    assert ids(await db.list_checkpoints("t", checkpoint_id="c1")) == ["c1"]
    assert ids(await db.list_checkpoints(metadata_filter={"a'b\"c": 1})) == []  # a key is data, not a path


async def test_prune_delete_runs_copy_and_unreferenced_values(db, db_path):
    _put(db, "t", "c1", versions={"m": 1}, blobs=[("m", 1, "json", b"1")], run_id="r1")
    _put(db, "t", "c2", parent="c1", versions={"m": 2}, blobs=[("m", 2, "json", b"2")], run_id="r2")
    _put(db, "t", "k1", ns="child", versions={"m": 1}, blobs=[("m", 1, "json", b"c")], run_id="r1")
    db.sync.put_checkpoint_writes("t", "c1", [("task", 0, "ch", "json", b"old", "")])
    db.sync.put_checkpoint_writes("t", "c2", [("task", 0, "ch", "json", b"new", "")])
    assert db.sync.copy_checkpoint_thread("t", "copy") == 3
    assert db.sync.copy_checkpoint_thread("nobody", "copy2") == 0
    assert await db.delete_checkpoint_runs(["r1"]) == 4  # c1 and k1, in the source and in the copy
    # run r1's checkpoints are gone in every thread; r2's stay with their values
    left = sorted((r.thread_id, r.checkpoint_ns, r.checkpoint_id) for r in await db.list_checkpoints())
    assert left == [("copy", "", "c2"), ("t", "", "c2")]
    assert (await db.get_checkpoint("t")).blobs == {"m": ("json", b"2")}
    assert await _rows(db, "checkpoint_blobs") == 2 and await _rows(db, "checkpoint_writes") == 2
    _put(db, "t", "c3", parent="c2", versions={"m": 2})  # points at c2's value, adds none
    assert await db.prune_checkpoints(["t"]) == 1
    kept = await db.get_checkpoint("t")
    assert kept.checkpoint_id == "c3" and kept.blobs == {"m": ("json", b"2")} and kept.writes == []
    assert await db.prune_checkpoints(["copy"], keep_latest=False) == 1
    _put(db, "t", "c4", parent="c3", versions={"m": 4}, blobs=[("m", 4, "json", b"4")])
    db.sync.put_checkpoint_writes("t", "c4", [("task", 0, "ch", "json", b"w4", "")])
    assert await db.delete_checkpoints("t", ["c4", "unknown"], checkpoint_ns="child") == 0  # other namespace
    assert await db.delete_checkpoints("t", ["c4", "unknown"]) == 1
    assert (await db.get_checkpoint("t")).checkpoint_id == "c3"
    assert await _rows(db, "checkpoint_blobs") == 1 and await _rows(db, "checkpoint_writes") == 0  # m=2 only
    assert await db.delete_checkpoint_threads(["t", "nobody"]) == 1
    assert await db.list_checkpoints() == []
    for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
        assert await _rows(db, table) == 0


async def test_bad_input_writes_nothing(db, db_path):
    good = dict(checkpoint_type="t", checkpoint=b"x")
    bad_calls = [
        lambda: db.put_checkpoint("", "c", **good),
        lambda: db.put_checkpoint("t", "c", checkpoint_type="t", checkpoint="not bytes"),
        lambda: db.put_checkpoint("t", "c", **good, metadata={"x": float("nan")}),
        lambda: db.put_checkpoint("t", "c", **good, metadata={"x": object()}),
        lambda: db.put_checkpoint("t", "c", **good, metadata={1: "int key"}),
        lambda: db.put_checkpoint("t", "c", **good, channel_versions={"a": True}),
        lambda: db.put_checkpoint("t", "c", **good, blobs=[("a", 1, "json", b"ok"), ("a", 2, "json")]),
        lambda: db.put_checkpoint("t\x00", "c", **good),
        lambda: db.put_checkpoint("t", "c\ud800", **good),
        lambda: db.put_checkpoint_writes("t", "c", [("task", 0, "ch", "json", b"ok", ""),
                                                    ("task", "1", "ch", "json", b"v", "")]),
        lambda: db.list_checkpoints(limit=0),
        lambda: db.list_checkpoints(metadata_filter=["not", "a", "dict"]),
        lambda: db.delete_checkpoint_threads("t"),
        lambda: db.delete_checkpoint_runs([None]),
        lambda: db.delete_checkpoints("t", "c1"),
        lambda: db.prune_checkpoints(["t"], keep_latest="yes"),
    ]
    for call in bad_calls:
        with pytest.raises(ValidationError):
            await call()
    for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
        assert await _rows(db, table) == 0


async def test_checkpoints_are_not_memories(db):
    _put(db, "t", "c1", versions={"messages": 1}, blobs=[("messages", 1, "json", b"Ann moved to Lisbon")],
         source="loop", note="Ann moved to Lisbon")
    bob = await db.add_memory("Bob plays chess", user_id="bob")
    await db.flush()
    assert {r.entry.id for r in await db.find("Lisbon Ann", top_k=50)} <= {bob.id}
    assert await db.count() == 1
    assert (await db.stats())["entries_total"] == 1


async def test_a_v9_file_upgrades_and_keeps_its_data(db_path):
    old = await open_database(db_path, migrate_to=9)
    async with old.transaction() as conn:
        await conn.execute("INSERT INTO meta(key, value) VALUES ('marker', 'v9')")
    await old.close()
    ab = make_db(db_path)
    try:
        assert (await ab.stats())["schema_version"] == SCHEMA_VERSION >= 10
        await ab.put_checkpoint("t", "c1", checkpoint_type="t", checkpoint=b"x")
        assert (await ab.get_checkpoint("t")).checkpoint == b"x"
    finally:
        await ab.close()
    con = sqlite3.connect(db_path)
    assert con.execute("SELECT value FROM meta WHERE key='marker'").fetchone() == ("v9",)
    con.close()


async def test_acknowledged_put_is_seen_by_another_process(db, db_path):
    """A put that returned is committed: another process reading the file (while this one keeps it open) sees
    the checkpoint, its value and its write."""
    _put(db, "t", "c1", versions={"a": 1}, blobs=[("a", 1, "json", b"v")])
    db.sync.put_checkpoint_writes("t", "c1", [("task", 0, "ch", "json", b"w", "")])
    script = ("import sqlite3, sys; con = sqlite3.connect(sys.argv[1]); print(repr([con.execute(q).fetchall() for q "
              "in ('SELECT checkpoint_id FROM checkpoints', 'SELECT value FROM checkpoint_blobs', "
              "'SELECT value FROM checkpoint_writes')]))")
    out = subprocess.run([sys.executable, "-c", script, str(db_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == repr([[("c1",)], [(b"v",)], [(b"w",)]])
