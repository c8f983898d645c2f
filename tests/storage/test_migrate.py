"""``migrate_to_postgres`` (agentbase migrate): a real SQLite file copied into a real PostgreSQL database."""

from __future__ import annotations

import asyncio
import sqlite3

import numpy as np
import pytest

from agentbase.errors import StorageError, ValidationError
from agentbase.storage.migrate import migrate_to_postgres
from agentbase.storage.postgres.connection import open_postgres
from tests.conftest import make_db


async def _filled(path):
    db = make_db(path)
    await db.initialize()
    await db.add_memory("Dana works at Acme since March 2023", user_id="dana", event_time="2023-03-01")
    await db.add_memory("O'Brien's café serves 100% arabica", user_id="dana", tags=["coffee"])
    s = await db.create_session(user_id="dana")
    await db.add_messages(s.id, [{"role": "user", "content": "I moved to Lisbon last week"},
                                 {"role": "assistant", "content": "How is Lisbon treating you?"}])
    await db.commit_session(s.id)
    await db.flush()
    await db.find("where does Dana work", user_id="dana")
    await db.flush()
    stats = await db.stats()
    await db.close()
    return stats


async def test_every_table_is_copied_with_equal_counts_and_vectors_intact(tmp_path, pg_url):
    stats = await _filled(tmp_path / "a.db")
    counts = await migrate_to_postgres(tmp_path / "a.db", pg_url)
    assert all(src == dst for src, dst in counts.values())
    assert counts["entries"][0] == sum(stats["entries"].values()) and counts["embeddings"][0] == stats["embeddings"] > 0
    assert counts["messages"][0] == 2 and counts["retrieval_traces"][0] >= 1 and counts["entry_history"][0] >= 2
    pg = await open_postgres(pg_url)
    try:
        dims, vec = await pg.fetchone("SELECT dims, vector FROM embeddings ORDER BY rid LIMIT 1")
        assert len(vec.to_numpy()) == dims == 64 and np.isclose(np.linalg.norm(vec.to_numpy()), 1.0)
        # the keyword index holds the stems FTS5 indexed, with this entry's token count
        rid, doc_len = await pg.fetchone("SELECT rid, doc_len FROM entries WHERE fts @@ %s::tsquery",
                                         ("'arabica' & 'o' & 'brien'",))
        assert doc_len > 5
        total = await pg.fetchone("SELECT SUM(docs), SUM(tokens) FROM keyword_stats")
        assert total[0] == counts["entries"][0] and total[1] == (await pg.fetchone("SELECT SUM(doc_len) FROM entries"))[0]
        # new rows get ids after the copied ones
        async with pg.transaction() as c:
            new = await c.fetchone("INSERT INTO jobs(kind, target, next_run_at, created_at, updated_at) "
                                   "VALUES ('x', 'y', '', '', '') RETURNING id")
        assert new[0] > max(r[0] for r in await pg.fetchall("SELECT id FROM jobs WHERE kind <> 'x'") or [(0,)])
    finally:
        await pg.close()


async def test_a_second_run_refuses_and_changes_nothing(tmp_path, pg_url):
    await _filled(tmp_path / "a.db")
    first = await migrate_to_postgres(tmp_path / "a.db", pg_url)
    with pytest.raises(StorageError, match="already holds AgentBase data .*entries"):
        await migrate_to_postgres(tmp_path / "a.db", pg_url)
    pg = await open_postgres(pg_url)
    try:
        assert (await pg.fetchone("SELECT COUNT(*) FROM entries"))[0] == first["entries"][1]
    finally:
        await pg.close()


async def test_a_missing_source_is_refused(tmp_path, pg_url):
    with pytest.raises(ValidationError, match="does not exist"):
        await migrate_to_postgres(tmp_path / "absent.db", pg_url)
    assert not (tmp_path / "absent.db").exists()


async def test_a_directory_is_refused_as_a_directory(tmp_path, pg_url):
    with pytest.raises(ValidationError, match="is a directory") as err:
        await migrate_to_postgres(tmp_path, pg_url)
    assert "does not exist" not in str(err.value)


def _foreign(path):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE notes (body TEXT)")
    con.execute("INSERT INTO notes VALUES ('mine')")
    con.commit()
    con.close()


@pytest.mark.parametrize("kind, match", [("empty", "empty"), ("foreign", "another SQLite database"),
                                         ("corrupt", "not an SQLite database")])
async def test_a_source_that_is_not_an_agentbase_file_is_refused_unchanged(tmp_path, pg_url, kind, match):
    path = tmp_path / "source.db"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "foreign":
        _foreign(path)
    else:
        path.write_bytes(b"this is not a database at all\n" * 200)
    before = path.read_bytes()
    with pytest.raises(ValidationError, match=f"is not an AgentBase database: it is {match}.*left unchanged"):
        await migrate_to_postgres(path, pg_url)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["source.db"]
    pg = await open_postgres(pg_url)
    try:
        assert (await pg.fetchone("SELECT COUNT(*) FROM meta"))[0] == 0
    finally:
        await pg.close()


async def test_two_migrates_into_one_database_at_once_one_copies_the_other_refuses(tmp_path, pg_url):
    await _filled(tmp_path / "a.db")
    results = await asyncio.gather(migrate_to_postgres(tmp_path / "a.db", pg_url),
                                   migrate_to_postgres(tmp_path / "a.db", pg_url), return_exceptions=True)
    failed = [r for r in results if isinstance(r, BaseException)]
    copied = [r for r in results if not isinstance(r, BaseException)]
    assert len(copied) == 1 and len(failed) == 1, results
    assert isinstance(failed[0], StorageError) and "already holds AgentBase data" in str(failed[0])
    assert "duplicate key" not in str(failed[0])
    pg = await open_postgres(pg_url)
    try:
        assert (await pg.fetchone("SELECT COUNT(*) FROM entries"))[0] == copied[0]["entries"][1] > 0
    finally:
        await pg.close()


async def test_rows_written_by_another_writer_during_the_copy_give_the_same_refusal(tmp_path, pg_url):
    """A writer other than migrate holds an uncommitted meta row with a key the source has when the copy checks
    (it sees an empty database); it commits while the copy waits on that key: the copy is refused as holding
    data, not with the raw unique violation."""
    import psycopg

    await _filled(tmp_path / "a.db")
    key = sqlite3.connect(tmp_path / "a.db").execute("SELECT key FROM meta ORDER BY key LIMIT 1").fetchone()[0]
    await (await open_postgres(pg_url)).close()  # the schema
    async with await psycopg.AsyncConnection.connect(pg_url) as other:
        await other.execute("INSERT INTO meta(key, value) VALUES (%s, 'other writer')", (key,))
        copy = asyncio.ensure_future(migrate_to_postgres(tmp_path / "a.db", pg_url))
        for _ in range(200):  # until the copy's insert waits on the uncommitted key
            cur = await other.execute("SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() "
                                      "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()")
            if (await cur.fetchone())[0] or copy.done():
                break
            await asyncio.sleep(0.05)
        await other.commit()
    with pytest.raises(StorageError, match=r"already holds AgentBase data \(meta \(1 rows\)\)"):
        await copy


async def test_a_copy_waits_while_another_holds_the_copy_lock(tmp_path, pg_url):
    import psycopg

    from agentbase.storage.migrate import COPY_LOCK

    await _filled(tmp_path / "a.db")
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as holder:
        await holder.execute("SELECT pg_advisory_lock(%s)", (COPY_LOCK,))
        copy = asyncio.ensure_future(migrate_to_postgres(tmp_path / "a.db", pg_url))
        await asyncio.sleep(1.0)
        assert not copy.done()  # waiting for the lock, before its emptiness check
        await holder.execute("SELECT pg_advisory_unlock(%s)", (COPY_LOCK,))
    counts = await copy
    assert counts["entries"][0] == counts["entries"][1] > 0
