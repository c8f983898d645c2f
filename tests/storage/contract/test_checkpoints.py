"""Checkpoint operations (``ops.checkpoints``) on both engines: bytes round-trip exactly, newest-first order is
byte order, metadata filters follow Python equality, deletes and prunes drop exactly the rows nothing points at."""

from __future__ import annotations

import asyncio

import pytest

ALL_BYTES = bytes(range(256)) * 3


async def put(store, thread="t", cid="c1", *, ns="", parent=None, payload=b"cp", metadata=None, versions=None,
              blobs=(), run_id=None, created_at="2026-01-01T00:00:00.000000Z"):
    await store.ops.checkpoints.put_checkpoint(
        store, thread_id=thread, checkpoint_ns=ns, checkpoint_id=cid, parent_checkpoint_id=parent, type_="msgpack",
        checkpoint=payload, metadata=metadata or {}, channel_versions=versions or {}, run_id=run_id,
        blobs=list(blobs), created_at=created_at)


async def count(store, table: str) -> int:
    return (await store.fetchone(f"SELECT COUNT(*) FROM {table}"))[0]


async def ids(store, **kw) -> list[str]:
    args = {"thread_id": None, "checkpoint_ns": None, "checkpoint_id": None, "before_id": None,
            "metadata_filter": {}, "limit": None, **kw}
    return [r["checkpoint_id"] for r in await store.ops.checkpoints.list_checkpoints(store, **args)]


async def test_bytes_round_trip_exactly_with_blobs_and_writes(store):
    big = bytes((i * 7919) % 256 for i in range(1 << 20))  # 1 MiB, every byte value
    await put(store, payload=ALL_BYTES, metadata={"source": "loop", "step": 1, "näme": "üñí'\"%s%%"},
              versions={"messages": "00001.5", "empty": "2"},
              blobs=[("messages", "00001.5", "msgpack", big), ("empty", "2", "empty", b"")])
    await store.ops.checkpoints.put_writes(store, thread_id="t", checkpoint_ns="", checkpoint_id="c1", writes=[
        ("task-b", 0, "ch", "bytes", b"\x00\xff\x00", "p1"), ("task-a", 1, "ch", "bytes", b"\x00", "p1"),
        ("task-a", 0, "ch2", "null", b"", "")])
    got = await store.ops.checkpoints.get_checkpoint(store, "t", "", "c1")
    assert got["checkpoint"] == ALL_BYTES and type(got["checkpoint"]) is bytes
    assert got["blobs"] == {"messages": ("msgpack", big), "empty": ("empty", b"")}
    assert all(type(v) is bytes for _t, v in got["blobs"].values())
    assert got["writes"] == [("task-a", 0, "ch2", "null", b"", ""), ("task-a", 1, "ch", "bytes", b"\x00", "p1"),
                             ("task-b", 0, "ch", "bytes", b"\x00\xff\x00", "p1")]
    assert got["metadata"] == {"source": "loop", "step": 1, "näme": "üñí'\"%s%%"}
    assert got["channel_versions"] == {"messages": "00001.5", "empty": "2"}
    assert (got["thread_id"], got["checkpoint_ns"], got["parent_checkpoint_id"], got["type"], got["created_at"]) == (
        "t", "", None, "msgpack", "2026-01-01T00:00:00.000000Z")


async def test_get_newest_unknown_and_replace(store):
    assert await store.ops.checkpoints.get_checkpoint(store, "t", "", None) is None
    await put(store, cid="c1")
    await put(store, cid="c2", parent="c1", payload=b"two")
    await put(store, cid="c1", ns="sub", payload=b"other ns")
    newest = await store.ops.checkpoints.get_checkpoint(store, "t", "", None)
    assert (newest["checkpoint_id"], newest["parent_checkpoint_id"], newest["checkpoint"]) == ("c2", "c1", b"two")
    assert await store.ops.checkpoints.get_checkpoint(store, "t", "", "nope") is None
    assert await store.ops.checkpoints.get_checkpoint(store, "other", "", None) is None
    await put(store, cid="c2", parent=None, payload=b"replaced", metadata={"v": 2})  # same key: replaced
    again = await store.ops.checkpoints.get_checkpoint(store, "t", "", "c2")
    assert (again["checkpoint"], again["parent_checkpoint_id"], again["metadata"]) == (b"replaced", None, {"v": 2})
    assert await count(store, "checkpoints") == 3


async def test_newest_is_byte_order_of_ids(store):
    # byte order: '1' < 'B' < '_' < 'a' < 'é' (a locale collation orders these differently)
    for cid in ("a", "_", "B", "é", "1"):
        await put(store, cid=cid)
    assert await ids(store, thread_id="t") == sorted(["a", "_", "B", "é", "1"], reverse=True)
    assert (await store.ops.checkpoints.get_checkpoint(store, "t", "", None))["checkpoint_id"] == "é"
    assert await ids(store, thread_id="t", before_id="a") == ["_", "B", "1"]


async def test_shared_blob_is_stored_once_and_replaced_by_a_new_value(store):
    await put(store, cid="c1", versions={"ch": "1"}, blobs=[("ch", "1", "json", b"first")])
    await put(store, cid="c2", versions={"ch": "1"})
    assert (await store.ops.checkpoints.get_checkpoint(store, "t", "", "c2"))["blobs"] == {"ch": ("json", b"first")}
    await put(store, cid="c3", versions={"ch": "1"}, blobs=[("ch", "1", "bytes", b"second")])
    assert await count(store, "checkpoint_blobs") == 1
    assert (await store.ops.checkpoints.get_checkpoint(store, "t", "", "c1"))["blobs"] == {"ch": ("bytes", b"second")}


async def test_writes_keep_non_negative_and_replace_negative_indexes(store):
    w = store.ops.checkpoints.put_writes
    await w(store, thread_id="t", checkpoint_ns="", checkpoint_id="c1", writes=[
        ("task", 0, "a", "json", b"old", ""), ("task", -1, "__error__", "json", b"err1", "")])
    await w(store, thread_id="t", checkpoint_ns="", checkpoint_id="c1", writes=[
        ("task", 0, "a", "json", b"new", ""), ("task", -1, "__error__", "json", b"err2", "x")])
    await w(store, thread_id="t", checkpoint_ns="", checkpoint_id="c1", writes=[])
    await put(store, cid="c1")  # the writes came first: the checkpoint need not exist yet
    got = await store.ops.checkpoints.get_checkpoint(store, "t", "", "c1")
    # ordered by task path, task id, index
    assert got["writes"] == [("task", 0, "a", "json", b"old", ""), ("task", -1, "__error__", "json", b"err2", "x")]


async def test_list_filters_scopes_and_limits(store):
    await put(store, thread="t1", cid="c1", metadata={"source": "input", "step": -1})
    await put(store, thread="t1", cid="c2", metadata={"source": "loop", "step": 0, "flag": True})
    await put(store, thread="t2", cid="c2", metadata={"source": "loop", "step": 1.0, "flag": False})
    await put(store, thread="t2", cid="c3", ns="child", metadata={"source": "loop", "step": 1, "extra": None})
    rows = await store.ops.checkpoints.list_checkpoints(store, thread_id=None, checkpoint_ns=None, checkpoint_id=None,
                                                        before_id=None, metadata_filter={}, limit=None)
    assert [(r["thread_id"], r["checkpoint_ns"], r["checkpoint_id"]) for r in rows] == [
        ("t2", "child", "c3"), ("t1", "", "c2"), ("t2", "", "c2"), ("t1", "", "c1")]
    assert all({"blobs", "writes"} <= set(r) for r in rows)
    assert await ids(store, thread_id="t1") == ["c2", "c1"]
    assert await ids(store, checkpoint_ns="") == ["c2", "c2", "c1"]
    assert await ids(store, checkpoint_id="c2") == ["c2", "c2"]
    assert await ids(store, before_id="c2") == ["c1"]
    assert await ids(store, limit=2) == ["c3", "c2"]
    assert await ids(store, limit=0) == []
    assert await ids(store, metadata_filter={"source": "loop"}) == ["c3", "c2", "c2"]
    # Python equality: 1 == 1.0 == True, 0 == False; a missing key equals None
    assert await ids(store, metadata_filter={"step": 1}) == ["c3", "c2"]
    assert await ids(store, metadata_filter={"step": 1.0, "source": "loop"}) == ["c3", "c2"]
    assert await ids(store, metadata_filter={"step": True}) == ["c3", "c2"]
    assert await ids(store, metadata_filter={"flag": 1}) == ["c2"]
    assert await ids(store, metadata_filter={"flag": False}) == ["c2"]
    assert [r["thread_id"] for r in await store.ops.checkpoints.list_checkpoints(
        store, thread_id=None, checkpoint_ns=None, checkpoint_id=None, before_id=None,
        metadata_filter={"flag": False}, limit=None)] == ["t2"]
    assert await ids(store, metadata_filter={"extra": None}) == ["c3", "c2", "c2", "c1"]
    assert await ids(store, metadata_filter={"flag": None}) == ["c3", "c1"]
    assert await ids(store, metadata_filter={"step": "1"}) == []
    assert await ids(store, metadata_filter={"source": "loop", "step": -1}) == []
    assert await ids(store, metadata_filter={"nope": "x"}) == []


async def test_metadata_filter_on_hard_values(store):
    odd = "it's \"quoted\" 100% %s ü 𝄞 \x00 nul"
    await put(store, cid="c1", metadata={"s": odd, "f": 0.30000000000000004, "big": 2 ** 62, "obj": {"a": [1, 2]}})
    await put(store, cid="c2", metadata={"s": "plain", "f": 0.3, "big": 2 ** 62 + 1, "obj": {"a": [1]}})
    assert await ids(store, metadata_filter={"s": odd}) == ["c1"]
    assert await ids(store, metadata_filter={"s": "it's"}) == []
    assert await ids(store, metadata_filter={"f": 0.1 + 0.2}) == ["c1"]
    assert await ids(store, metadata_filter={"f": 0.3}) == ["c2"]
    assert await ids(store, metadata_filter={"big": 2 ** 62 + 1}) == ["c2"]
    assert await ids(store, metadata_filter={"obj": {"a": [1, 2]}}) == ["c1"]  # compared in Python
    assert await ids(store, metadata_filter={"obj": {"a": [1]}}, limit=1) == ["c2"]
    assert await ids(store, metadata_filter={"big": 2 ** 70}) == []
    assert await ids(store, metadata_filter={"f": float("nan")}) == []
    assert await ids(store, metadata_filter={"quote's %s": 1}) == []


async def test_delete_checkpoints_collects_unreferenced_blobs(store):
    await put(store, cid="c1", versions={"a": "1", "b": "1"}, blobs=[("a", "1", "j", b"a1"), ("b", "1", "j", b"b1")])
    await put(store, cid="c2", versions={"a": "2", "b": "1"}, blobs=[("a", "2", "j", b"a2")])
    await put(store, cid="c1", ns="n", versions={"a": "1"}, blobs=[("a", "1", "j", b"n-a1")])
    await store.ops.checkpoints.put_writes(store, thread_id="t", checkpoint_ns="", checkpoint_id="c1",
                                           writes=[("task", 0, "a", "j", b"w", "")])
    assert await store.ops.checkpoints.delete_checkpoints(store, "t", "", ["c1", "c1", "missing"]) == 1
    assert await store.ops.checkpoints.delete_checkpoints(store, "t", "", []) == 0
    assert await count(store, "checkpoint_writes") == 0
    rows = await store.fetchall("SELECT checkpoint_ns, channel, version FROM checkpoint_blobs "
                                "ORDER BY checkpoint_ns, channel, version")
    assert [tuple(r) for r in rows] == [("", "a", "2"), ("", "b", "1"), ("n", "a", "1")]
    assert (await store.ops.checkpoints.get_checkpoint(store, "t", "", None))["blobs"] == {
        "a": ("j", b"a2"), "b": ("j", b"b1")}


async def test_delete_threads_and_runs(store):
    await put(store, thread="t1", cid="c1", run_id="r1", versions={"a": "1"}, blobs=[("a", "1", "j", b"x")])
    await put(store, thread="t1", cid="c2", run_id="r2", versions={"a": "1"})
    await put(store, thread="t2", cid="c1", run_id="r1", versions={"a": "1"}, blobs=[("a", "1", "j", b"y")])
    await put(store, thread="t3", cid="c1")
    for thread in ("t1", "t2"):
        await store.ops.checkpoints.put_writes(store, thread_id=thread, checkpoint_ns="", checkpoint_id="c1",
                                               writes=[("task", 0, "a", "j", b"w", "")])
    assert await store.ops.checkpoints.delete_runs(store, []) == 0
    assert await store.ops.checkpoints.delete_runs(store, ["r1", "unknown"]) == 2
    assert await ids(store) == ["c2", "c1"]
    assert await count(store, "checkpoint_writes") == 0
    # t1's blob is still pointed at by c2 (run r2); t2's went with its last checkpoint
    assert [tuple(r) for r in await store.fetchall("SELECT thread_id FROM checkpoint_blobs")] == [("t1",)]
    assert await store.ops.checkpoints.delete_threads(store, []) == 0
    assert await store.ops.checkpoints.delete_threads(store, ["t1", "t3", "nope"]) == 2
    assert (await count(store, "checkpoints"), await count(store, "checkpoint_blobs")) == (0, 0)


async def test_copy_thread_replaces_existing_keys(store):
    await put(store, thread="src", cid="c1", payload=ALL_BYTES, versions={"a": "1"}, blobs=[("a", "1", "j", b"v")],
              run_id="r")
    await put(store, thread="src", cid="c2", ns="n")
    await store.ops.checkpoints.put_writes(store, thread_id="src", checkpoint_ns="", checkpoint_id="c1",
                                           writes=[("task", 0, "a", "j", b"w", "p")])
    await put(store, thread="dst", cid="c1", payload=b"to be replaced")
    assert await store.ops.checkpoints.copy_thread(store, "src", "dst") == 2
    got = await store.ops.checkpoints.get_checkpoint(store, "dst", "", "c1")
    assert (got["checkpoint"], got["blobs"], got["writes"]) == (ALL_BYTES, {"a": ("j", b"v")},
                                                                [("task", 0, "a", "j", b"w", "p")])
    assert await store.ops.checkpoints.copy_thread(store, "src", "dst") == 2  # again: replaced, not duplicated
    assert await store.ops.checkpoints.copy_thread(store, "nothing", "dst") == 0
    assert await count(store, "checkpoints") == 4
    assert await store.ops.checkpoints.delete_runs(store, ["r"]) == 2  # the copy keeps its run id


async def test_prune_keeps_the_newest_of_each_namespace(store):
    for cid in ("c1", "c2", "c3"):
        await put(store, thread="t", cid=cid, versions={"a": cid}, blobs=[("a", cid, "j", cid.encode())])
        await store.ops.checkpoints.put_writes(store, thread_id="t", checkpoint_ns="", checkpoint_id=cid,
                                               writes=[("task", 0, "a", "j", cid.encode(), "")])
    await put(store, thread="t", cid="c1", ns="n")
    await put(store, thread="u", cid="c1")
    await put(store, thread="u", cid="c2")
    await store.ops.checkpoints.put_writes(store, thread_id="t", checkpoint_ns="", checkpoint_id="c9",
                                           writes=[("task", 0, "a", "j", b"orphan", "")])
    assert await store.ops.checkpoints.prune_threads(store, [], keep_latest=True) == 0
    assert await store.ops.checkpoints.prune_threads(store, ["t", "nope"], keep_latest=True) == 2
    rows = await store.fetchall("SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints "
                                "ORDER BY thread_id, checkpoint_ns, checkpoint_id")
    assert [tuple(r) for r in rows] == [("t", "", "c3"), ("t", "n", "c1"), ("u", "", "c1"), ("u", "", "c2")]
    assert [tuple(r) for r in await store.fetchall("SELECT checkpoint_id FROM checkpoint_writes")] == [("c3",)]
    assert [tuple(r) for r in await store.fetchall("SELECT version FROM checkpoint_blobs")] == [("c3",)]
    assert await store.ops.checkpoints.prune_threads(store, ["t"], keep_latest=True) == 0
    assert await store.ops.checkpoints.prune_threads(store, ["u"], keep_latest=False) == 2
    assert await count(store, "checkpoints") == 2


async def test_concurrent_puts_of_one_checkpoint_leave_one_row(store):
    async def one(i: int) -> None:
        await put(store, cid="same", payload=bytes([i]) * 10, versions={"a": "1"}, blobs=[("a", "1", "j", b"v")])
        await store.ops.checkpoints.put_writes(store, thread_id="t", checkpoint_ns="", checkpoint_id="same",
                                               writes=[("task", 0, "a", "j", bytes([i]), ""),
                                                       ("task", -1, "e", "j", bytes([i]), "")])

    await asyncio.gather(*(one(i) for i in range(8)))
    got = await store.ops.checkpoints.get_checkpoint(store, "t", "", "same")
    assert got["checkpoint"] in {bytes([i]) * 10 for i in range(8)}
    assert (await count(store, "checkpoints"), await count(store, "checkpoint_blobs"),
            await count(store, "checkpoint_writes")) == (1, 1, 2)


@pytest.mark.parametrize("thread", ["t'; DROP TABLE checkpoints; --", "100%", "%s", "ünï 𝄞"])
async def test_hostile_names_are_plain_values(store, thread):
    await put(store, thread=thread, cid=thread, ns=thread, versions={thread: thread}, blobs=[(thread, thread, "j", b"v")])
    got = await store.ops.checkpoints.get_checkpoint(store, thread, thread, None)
    assert (got["thread_id"], got["checkpoint_id"], got["blobs"]) == (thread, thread, {thread: ("j", b"v")})
    assert await store.ops.checkpoints.delete_threads(store, [thread]) == 1


async def test_limit_reads_past_candidates_python_turns_down(store):
    # a NUL in stored metadata makes PostgreSQL compare that row in Python: the limit must still find c1
    await put(store, cid="c1", metadata={"k": "x"})
    await put(store, cid="c2", metadata={"s": "\x00", "k": "no"})
    await put(store, cid="c3", metadata={"s": "a\x00b", "k": "no"})
    await put(store, cid="c4", metadata={"s": "\\u0000", "k": "x"})  # a backslash, not a NUL
    assert await ids(store, metadata_filter={"k": "x"}, limit=1) == ["c4"]
    assert await ids(store, metadata_filter={"k": "x"}, before_id="c4", limit=1) == ["c1"]
    assert await ids(store, metadata_filter={"k": "x", "s": None}, limit=5) == ["c1"]
    assert await ids(store, metadata_filter={"s": "a\x00b"}, limit=1) == ["c3"]
    assert await ids(store, metadata_filter={"s": "\x00"}) == ["c2"]
    assert await ids(store, metadata_filter={"k": "none"}, limit=2) == []


async def test_one_call_with_a_key_twice_keeps_what_sqlite_keeps(store):
    # blobs: the last value of a key wins (replace); writes with idx >= 0: the first wins (ignore)
    await put(store, versions={"z": "1", "a": "1"}, blobs=[("z", "1", "j", b"first"), ("a", "1", "j", b"a"),
                                                           ("z", "1", "j", b"last")])
    await store.ops.checkpoints.put_writes(store, thread_id="t", checkpoint_ns="", checkpoint_id="c1", writes=[
        ("task", 0, "ch", "j", b"first", ""), ("task", 0, "ch", "j", b"second", ""),
        ("task", -2, "ch", "j", b"one", ""), ("task", -2, "ch", "j", b"two", "")])
    got = await store.ops.checkpoints.get_checkpoint(store, "t", "", "c1")
    assert got["blobs"] == {"z": ("j", b"last"), "a": ("j", b"a")}
    assert got["writes"] == [("task", -2, "ch", "j", b"two", ""), ("task", 0, "ch", "j", b"first", "")]


async def test_random_filters_give_the_same_checkpoints_on_both_engines(store, engine, tmp_path):
    """Differential: one seeded history of checkpoints and many metadata filters, listed on SQLite and on
    PostgreSQL; every listing must be equal (values, writes and order)."""
    import random

    from agentbase.storage import open_database

    if engine == "sqlite":
        pytest.skip("compares both engines: runs in the postgres leg")
    rng = random.Random(25)
    values = [None, True, False, 0, 1, -1, 1.0, 0.5, 2 ** 40, -(2 ** 63), 2 ** 63 - 1, "", "a", "A", "1", "ü",
              "100%", "it's", "\x00", [1], {"a": 1}, {"a": [1, 2]}]
    keys = ["k", "K", "step", "it's %s", "ü"]
    lite = await open_database(tmp_path / "diff.db")
    try:
        for db in (lite, store):
            r = random.Random(7)
            for i in range(60):
                md = {k: r.choice(values) for k in r.sample(keys, r.randint(0, 4))}
                await put(db, thread=r.choice(["t1", "t2", "T"]), cid=f"{r.randint(0, 40):03d}{r.choice('aB_é')}",
                          ns=r.choice(["", "n"]), metadata=md, versions={"c": str(i % 5)},
                          blobs=[("c", str(i % 5), "j", bytes([i]))])
        found = 0
        for _ in range(150):
            flt = {k: rng.choice(values) for k in rng.sample(keys, rng.randint(1, 2))}
            args = {"thread_id": rng.choice([None, "t1"]), "checkpoint_ns": rng.choice([None, ""]),
                    "checkpoint_id": None, "before_id": rng.choice([None, "020a"]), "metadata_filter": flt,
                    "limit": rng.choice([None, 1, 3])}
            a = await lite.ops.checkpoints.list_checkpoints(lite, **args)
            b = await store.ops.checkpoints.list_checkpoints(store, **args)
            assert a == b, args
            found += bool(a)
        assert found >= 30  # the filters do match things (not 150 empty listings)
    finally:
        await lite.close()


async def test_prune_on_one_host_never_drops_what_another_host_adds(store, engine):
    """Two connections (two hosts on PostgreSQL, two processes' handles on SQLite): one keeps adding newer
    checkpoints with their writes while the other prunes; the newest and its writes always survive."""
    if engine == "postgres":
        from agentbase.storage.postgres.connection import open_postgres

        other = await open_postgres(store.url)
    else:
        from agentbase.storage import open_database

        other = await open_database(store.path)
    try:
        async def writer() -> None:
            for i in range(40):
                cid = f"c{i:03d}"
                await put(other, cid=cid, versions={"a": cid}, blobs=[("a", cid, "j", cid.encode())])
                await other.ops.checkpoints.put_writes(other, thread_id="t", checkpoint_ns="", checkpoint_id=cid,
                                                       writes=[("task", 0, "a", "j", cid.encode(), "")])

        async def pruner() -> int:
            n = 0
            for _ in range(25):
                n += await store.ops.checkpoints.prune_threads(store, ["t"], keep_latest=True)
                await asyncio.sleep(0)
            return n

        _none, pruned = await asyncio.gather(writer(), pruner())
        pruned += await store.ops.checkpoints.prune_threads(store, ["t"], keep_latest=True)
        assert pruned == 39
        got = await store.ops.checkpoints.get_checkpoint(store, "t", "", None)
        assert (got["checkpoint_id"], got["blobs"], got["writes"]) == (
            "c039", {"a": ("j", b"c039")}, [("task", 0, "a", "j", b"c039", "")])
        assert (await count(store, "checkpoints"), await count(store, "checkpoint_blobs"),
                await count(store, "checkpoint_writes")) == (1, 1, 1)
    finally:
        await other.close()


async def test_delete_waits_for_a_checkpoint_in_flight_that_shares_a_value(store, engine):
    """Host A writes c2, which points at the value c1 stored, and commits late; host B deletes c1 meanwhile. The
    value must survive: c2 points at it once committed (SQLite: B waits for A's write lock)."""
    import contextlib

    if engine == "postgres":
        from agentbase.storage.postgres.connection import open_postgres

        other = await open_postgres(store.url)
    else:
        from agentbase.storage import open_database

        other = await open_database(store.path)
    try:
        await put(store, cid="c1", versions={"a": "1"}, blobs=[("a", "1", "j", b"shared value")])
        plain = other.transaction

        @contextlib.asynccontextmanager
        async def late_commit(**kw):
            async with plain(**kw) as c:
                yield c
                started.set()
                await asyncio.sleep(0.3)  # the write is done, its COMMIT comes later

        started = asyncio.Event()
        other.transaction = late_commit
        writing = asyncio.create_task(put(other, cid="c2", parent="c1", versions={"a": "1"}))
        await started.wait()
        assert await store.ops.checkpoints.delete_checkpoints(store, "t", "", ["c1"]) == 1
        await writing
        got = await store.ops.checkpoints.get_checkpoint(store, "t", "", None)
        assert (got["checkpoint_id"], got["blobs"]) == ("c2", {"a": ("j", b"shared value")})
    finally:
        await other.close()


def test_same_functions_and_signatures_as_the_sqlite_engine():
    from tests.storage.contract.seed import assert_same_interface

    assert_same_interface("checkpoints")
