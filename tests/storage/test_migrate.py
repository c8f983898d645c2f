"""``migrate_to_postgres`` (agentbase migrate): a real SQLite file copied into a real PostgreSQL database."""

from __future__ import annotations

import numpy as np
import pytest

from agentbase.errors import StorageError
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
    with pytest.raises(StorageError, match="does not exist"):
        await migrate_to_postgres(tmp_path / "absent.db", pg_url)
    assert not (tmp_path / "absent.db").exists()
