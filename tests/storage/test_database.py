"""Schema migrations, concurrent first opens, dimension changes, the sync facade, and close() while another task
writes."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from agentbase import AgentBase, DimensionMismatchError, SchemaVersionError, SyncAgentBase, UsageError, load_settings
from agentbase.storage import SCHEMA_VERSION, open_database

from tests._helpers import _db
from tests.conftest import make_db


async def test_older_schema_upgrades_once(db_path):
    old = await open_database(db_path, migrate_to=1)
    async with old.transaction() as conn:
        await conn.execute("INSERT INTO meta(key, value) VALUES ('marker', 'v1')")
    await old.close()
    for _ in range(3):
        ab = make_db(db_path)
        await ab.initialize()
        await ab.close()
    con = sqlite3.connect(db_path)
    assert [r[0] for r in con.execute("SELECT version FROM schema_version ORDER BY version")] == \
        list(range(1, SCHEMA_VERSION + 1))
    assert con.execute("SELECT value FROM meta WHERE key='marker'").fetchone() == ("v1",)
    assert con.execute("SELECT COUNT(*) FROM sqlite_master WHERE name='relations'").fetchone() == (1,)
    con.close()


async def test_newer_schema_is_refused(db_path):
    ab = make_db(db_path)
    await ab.initialize()
    await ab.close()
    con = sqlite3.connect(db_path)
    con.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION + 1,))
    con.commit()
    con.close()
    with pytest.raises(SchemaVersionError, match="newer"):
        await make_db(db_path).initialize()


async def test_another_programs_sqlite_file_is_refused_and_left_unchanged(db_path):
    """`agentbase stats --db their.db` used to add AgentBase's 70 schema objects to another program's database and
    switch it to WAL for good; an empty file (size 0) is still a new database."""
    from agentbase import StorageError

    con = sqlite3.connect(db_path)
    con.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    con.commit()
    con.close()
    before = Path(db_path).read_bytes()
    with pytest.raises(StorageError, match="not an AgentBase database.*users"):
        await make_db(db_path).initialize()
    assert Path(db_path).read_bytes() == before
    con = sqlite3.connect(db_path)
    assert con.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    con.close()
    # a table name that only starts like SQLite's own, a migration tool's schema_version, a file of views only
    for i, ddl in enumerate(["CREATE TABLE SqliteCache (k TEXT)",
                             "CREATE TABLE users (id); CREATE TABLE schema_version (version INTEGER)",
                             "CREATE VIEW v AS SELECT 1"]):
        other = Path(db_path).with_name(f"other{i}.db")
        con = sqlite3.connect(other)
        con.executescript(ddl)
        con.close()
        before = other.read_bytes()
        with pytest.raises(StorageError, match="not an AgentBase database"):
            await make_db(other).initialize()
        assert other.read_bytes() == before, ddl
    empty = Path(db_path).with_name("empty.db")
    empty.touch()
    ab = make_db(empty)
    await ab.initialize()
    assert (await ab.stats())["entries_total"] == 0
    await ab.close()


async def test_five_concurrent_first_calls_create_schema_once(db_path):
    dbs = [make_db(db_path) for _ in range(5)]
    await asyncio.gather(*(d.add_memory(f"note {i}", user_id="u") for i, d in enumerate(dbs)))
    for d in dbs:
        await d.close()
    con = sqlite3.connect(db_path)
    assert con.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == SCHEMA_VERSION
    assert con.execute("SELECT COUNT(*) FROM entries").fetchone()[0] == 5
    con.close()


async def test_the_first_vector_search_after_opening_reports_another_dimension(db_path):
    # find() checked the mismatch before opening the file, so the first vector search of a fresh AgentBase
    # returned [] and only the second raised
    first = make_db(db_path, dims=64)
    await first.add_memory("the blue whale is the largest animal")
    await first.close()
    second = make_db(db_path, dims=32)
    try:
        with pytest.raises(DimensionMismatchError):
            await second.find("whale", mode="vector")
    finally:
        await second.close()


async def test_other_dimension_gives_typed_error_and_keyword_search_works(db_path):
    first = make_db(db_path, dims=64)
    e = await first.add_memory("the blue whale is the largest animal", user_id="u")
    await first.flush()
    await first.close()
    second = make_db(db_path, dims=32)
    await second.initialize()
    with pytest.raises(DimensionMismatchError) as info:
        await second.find("whale", mode="vector")
    message = str(info.value)
    assert "64" in message and "32" in message and "agentbase reindex" in message
    assert [r.entry.id for r in await second.find("whale", mode="fts")] == [e.id]
    hybrid = await second.find("whale")
    assert hybrid[0].entry.id == e.id
    assert "agentbase reindex" in (await second.stats())["degrade_reason"]
    assert (await second.get(e.id)).l2_full.startswith("the blue whale")
    # written while the dimensions disagree: its embedding job waits instead of being dropped
    late = await second.add_memory("the octopus has three hearts", user_id="u")
    assert (await second.stats())["jobs"].get("pending") == 1
    out = await second.reindex()
    assert out["entries"] == 2
    await second.flush()
    assert (await second.find("largest animal whale", mode="vector"))[0].entry.id == e.id
    assert (await second.find("octopus three hearts", mode="vector"))[0].entry.id == late.id
    await second.close()


def test_sync_facade_outside_and_inside_a_running_loop(db_path):
    sdb = SyncAgentBase(db=make_db(db_path))
    e = sdb.add_memory("sync works", user_id="u")
    assert sdb.get(e.id).l2_full == "sync works"

    async def main():
        # a sync call inside async def main() must not fail with "event loop is running"
        hit = sdb.find("sync works", user_id="u", mode="fts")
        assert hit[0].entry.id == e.id
        # and the async API from this loop too
        assert (await sdb.aio.get(e.id)).id == e.id

    asyncio.run(main())
    sdb.close()


async def test_closed_database_raises_usage_error(db_path):
    ab = make_db(db_path)
    await ab.initialize()
    await ab.close()
    await ab.close()  # idempotent
    with pytest.raises(UsageError):
        await ab.add_memory("x")


async def test_async_context_manager_and_integrity(db_path):
    async with AgentBase(db_path, embedder="hash") as ab:
        await ab.add_memory("context managed")
        stats = await ab.stats()
        assert stats["entries_total"] == 1 and stats["driver"] in ("sqlite3", "sqlean")
    con = sqlite3.connect(db_path)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()



def _make_version(con: sqlite3.Connection, version: int) -> None:
    """Make the file look as schema ``version`` (< 8) left it: later versions unrecorded, and what versions 7 (the
    enriched_seq column and its index), 8 (the turn-order index), 9 (messages.committed), 10 (the checkpoint
    tables) and 11 (the superseded-facts index) added removed;
    commits and closes ``con``."""
    con.execute("DELETE FROM schema_version WHERE version > ?", (version,))
    con.execute("DROP INDEX IF EXISTS ix_entries_superseded_facts")  # version 11 (12 drops it again)
    for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):  # version 10
        con.execute(f"DROP TABLE {table}")
    con.execute("DROP INDEX ix_links_turn_seq")
    con.execute("ALTER TABLE messages DROP COLUMN committed")
    if version < 7:
        con.execute("DROP INDEX ix_sessions_pending")
        con.execute("ALTER TABLE sessions DROP COLUMN enriched_seq")
    con.commit()
    con.close()


async def test_upgrade_to_v5_refolds_keyword_text_of_existing_entries(db_path):
    ab = make_db(db_path)
    await ab.initialize()
    wide = await ab.add_memory("Ｄｅｐｌｏｙ ｔｈｅ ｓｔａｇｉｎｇ ｃｌｕｓｔｅｒ 周五", user_id="u")
    plain = await ab.add_memory("deploy notes in plain ASCII", user_id="u")
    await ab.close()
    # Make the file what schema version 4 wrote: keyword text not NFKC-folded, version 5 not recorded.
    con = sqlite3.connect(db_path)
    con.execute("UPDATE entries SET fts_text = l2_full WHERE id = ?", (wide.id,))
    _make_version(con, 4)
    ab = make_db(db_path)
    try:
        await ab.initialize()
        hits = await ab.find("staging cluster", user_id="u", mode="fts")
        assert [r.entry.id for r in hits] == [wide.id]
        assert {r.entry.id for r in await ab.find("deploy", user_id="u", mode="fts")} == {wide.id, plain.id}
    finally:
        await ab.close()
    con = sqlite3.connect(db_path)
    assert con.execute("SELECT fts_text FROM entries WHERE id = ?", (wide.id,)).fetchone()[0].startswith(
        "Deploy the staging cluster")
    assert con.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == SCHEMA_VERSION >= 5
    con.close()


async def test_upgrade_to_v6_rewrites_values_whose_rules_changed(db_path):
    """A file written before version 6 (found by a helper opening files of older commits): named speakers' facts
    keyed without the speaker (Ann's new city did not replace her old one, and Bob's had replaced Ann's), content
    hashes of the old normalisation (re-adding "Ship it on Friday 🚀" made a duplicate), profile facts without
    their description, entity tags with a typographic apostrophe."""
    ab = make_db(db_path)
    s = await ab.create_session(user_id="bob")
    await ab.add_message(s.id, role="user", name="Ann", content="I live in Boston.")
    await ab.add_message(s.id, role="user", name="Bob", content="I live in Seattle.")
    await ab.commit_session(s.id)
    await ab.clear_messages(s.id)  # Bob's speaker is then known from his turn entry only
    rocket = await ab.add_memory("Ship it on Friday 🚀", user_id="bob")
    tagged = await ab.add_memory("Lunch with Seamus O'Brien", user_id="bob")
    facts = {e.l2_full: e for e in await ab.list(user_id="bob", category="profile")}
    await ab.close()
    ann, bob = facts["Ann lives in Boston"], facts["Bob lives in Seattle"]
    # Make the file what version 5 wrote.
    con = sqlite3.connect(db_path)
    con.execute("UPDATE entries SET fact_key = 'residence', description = NULL WHERE id IN (?, ?)", (ann.id, bob.id))
    con.execute("UPDATE entries SET superseded_by = ? WHERE id = ?", (bob.id, ann.id))
    con.execute("UPDATE entries SET content_hash = 'old' WHERE id = ?", (rocket.id,))
    con.execute("UPDATE entries SET tags = '[\"ner_Seamus_O’Brien\"]' WHERE id = ?", (tagged.id,))
    con.execute("DELETE FROM entry_tags WHERE rid = (SELECT rid FROM entries WHERE id = ?)", (tagged.id,))
    con.execute("INSERT INTO entry_tags(rid, tag) SELECT rid, 'ner_Seamus_O’Brien' FROM entries WHERE id = ?",
                (tagged.id,))
    con.execute("UPDATE entries SET fts_text = l2_full WHERE id IN (?, ?, ?)", (ann.id, bob.id, tagged.id))
    _make_version(con, 5)
    for _ in range(2):  # the second open changes nothing
        ab = make_db(db_path)
        try:
            await ab.initialize()
            keys = {e.l2_full: (e.metadata["fact_key"], e.superseded_by)
                    for e in await ab.list(user_id="bob", category="profile", exclude_superseded=False)}
            assert keys == {"Ann lives in Boston": ("residence", None), "Bob lives in Seattle": ("residence", None)}
            assert (await ab.add_memory("Ship it on Friday 🚀", user_id="bob")).id == rocket.id
            assert [e.id for e in await ab.list(user_id="bob", tags=["ner_Seamus_O'Brien"])] == [tagged.id]
            hits = await ab.find("home city", user_id="bob", mode="fts")
            assert {r.entry.id for r in hits} == {ann.id, bob.id}
        finally:
            await ab.close()
    con = sqlite3.connect(db_path)
    assert dict(con.execute("SELECT id, fact_key FROM entries WHERE id IN (?, ?)", (ann.id, bob.id))) == \
        {ann.id: "ann|residence", bob.id: "bob|residence"}
    assert con.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == SCHEMA_VERSION
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()
    # and Ann's move now replaces Ann's city only
    ab = make_db(db_path)
    try:
        s2 = await ab.create_session(user_id="bob")
        await ab.add_message(s2.id, role="user", name="Ann", content="We just moved to Austin.")
        assert (await ab.commit_session(s2.id))["facts_superseded"] == 1
        current = {e.l2_full for e in await ab.list(user_id="bob", category="profile")}
        assert current == {"Ann just moved to Austin", "Bob lives in Seattle"}
    finally:
        await ab.close()


async def test_upgrade_to_v7_marks_earlier_commits_enriched(db_path):
    """Before version 7 every commit wrote its facts inline: the upgrade records those sessions as enriched, so
    no enrichment runs twice, and the next commit of the session extracts only its new messages' facts."""
    ab = make_db(db_path)
    s = await ab.create_session(user_id="u")
    await ab.add_message(s.id, role="user", content="I live in Boston.")
    await ab.commit_session(s.id)
    await ab.close()
    con = sqlite3.connect(db_path)
    _make_version(con, 6)
    for _ in range(2):  # the second open changes nothing
        ab = make_db(db_path)
        try:
            got = await ab.get_session(s.id)
            assert (got.committed_seq, got.enriched_seq) == (1, 1)
        finally:
            await ab.close()
    con = sqlite3.connect(db_path)
    assert con.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'ix_sessions_pending'").fetchone() == (1,)
    con.close()
    ab = make_db(db_path)
    try:
        await ab.add_message(s.id, role="user", content="We just moved to Austin.")
        out = await ab.commit_session(s.id, wait=False)
        assert (out["turns"], out["facts_added"], out["enriched"]) == (1, 0, False)
        assert await ab.flush() == 0
        facts = await ab.list(user_id="u", category="profile", exclude_superseded=False)
        assert sorted((e.l2_full, e.superseded_by is None) for e in facts) == [
            ("User just moved to Austin", True), ("User lives in Boston", False)]
    finally:
        await ab.close()


async def test_upgrade_to_v8_indexes_turn_order_for_the_neighbours_lookup(db_path):
    """Version 8 adds the (session, message order) index of turn links; find()'s neighbours step reads the turns
    after its best ones through it instead of scanning all the session's links."""
    ab = make_db(db_path)
    s = await ab.create_session(user_id="u")
    await ab.add_messages(s.id, [{"role": "user", "name": n, "content": t} for n, t in (
        ("Ann", "We visited the zirconium observatory."), ("Bob", "Crowded?"), ("Ann", "It was truly lovely."))])
    await ab.commit_session(s.id)
    await ab.close()
    _make_version(sqlite3.connect(db_path), 7)
    ab = make_db(db_path)
    try:
        got = await ab.find("zirconium observatory", user_id="u", mode="fts", category="turn")
        lovely = [r for r in got if r.entry.l2_full == "It was truly lovely."]
        # lifted by the neighbours step (the reply to "Crowded?", whose key holds Ann's turn, outbids Ann's own
        # continuation: only the applied part is named)
        assert got[0].entry.l2_full == "We visited the zirconium observatory."
        assert {"reply_to_question", "continuation"} & set(lovely[0].score_parts) == {"reply_to_question"}
    finally:
        await ab.close()
    con = sqlite3.connect(db_path)
    try:
        assert con.execute("SELECT MAX(version) FROM schema_version").fetchone() == (SCHEMA_VERSION,)
        plan = " ".join(str(r) for r in con.execute(
            "EXPLAIN QUERY PLAN SELECT MIN(message_seq) FROM session_memory_links "
            "WHERE session_id = ? AND kind = 'turn' AND message_seq > ?", (s.id, 1)))
        assert "ix_links_turn_seq" in plan
    finally:
        con.close()


async def test_a_process_refuses_writes_after_a_newer_version_upgraded_the_file(db_path):
    """During a rolling upgrade, a process of the older code still running must not go on writing rows in its
    formats (they would not match the upgraded file's rules): its next write is refused and changes nothing."""
    old = make_db(db_path)
    await old.add_memory("written before the upgrade", user_id="u")
    newer = await open_database(db_path)  # another connection, as a newer process's upgrade would be
    async with newer.transaction() as conn:
        await conn.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION + 1,))
    await newer.close()
    try:
        with pytest.raises(SchemaVersionError, match="upgraded to schema version .* restart"):
            await old.add_memory("written after the upgrade", user_id="u")
        assert [e.l2_full for e in await old.list(user_id="u")] == ["written before the upgrade"]
    finally:
        await old.close()


async def test_entries_written_without_an_embedder_get_vectors_once_one_is_configured(db_path):
    first = make_db(db_path)
    await first.initialize()
    await first.add_memory("hash era apple", user_id="u")
    await first.flush()
    await first.close()
    keyword_only = AgentBase(db_path, settings=load_settings(ner="regex"), embedder="none")
    await keyword_only.initialize()
    late = await keyword_only.add_memory("keyword era banana", user_id="u")
    assert (await keyword_only.stats())["jobs"] == {"done": 1, "pending": 1}  # queued, nothing runs it
    assert await keyword_only.flush() == 1  # and flush() says so instead of 0
    await keyword_only.close()
    again = make_db(db_path)
    await again.initialize()
    try:
        assert await again.flush() == 0
        hits = await again.find("keyword era banana", user_id="u", mode="vector", top_k=1)
        assert [h.entry.id for h in hits] == [late.id]
        assert (await again.stats())["embeddings"] == 2
    finally:
        await again.close()


def test_cli_import_without_an_embedder_reports_queued_jobs_and_returns(tmp_path):
    import json
    import subprocess
    import sys

    locomo = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev.json"
    if not locomo.exists():
        pytest.skip(f"LoCoMo data not found at {locomo}")
    db = tmp_path / "t.db"
    # --embedder none queues the jobs; the command must not wait for them (it looped forever before).
    out = subprocess.run([sys.executable, "-m", "agentbase.cli", "import", "locomo", str(locomo), "--db", str(db),
                          "--embedder", "none", "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert res["embedding_jobs_queued"] > 0 and res["entries"] >= res["embedding_jobs_queued"]
    out = subprocess.run([sys.executable, "-m", "agentbase.cli", "reindex", "--db", str(db), "--embedder", "none",
                          "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


async def test_vector_mode_without_an_embedder_is_a_usage_error(db_path):
    ab = AgentBase(db_path, settings=load_settings(ner="regex"), embedder="none")
    await ab.initialize()
    try:
        await ab.add_memory("green tea in the morning", user_id="u")
        with pytest.raises(UsageError, match="needs an embedder"):
            await ab.find("green tea", user_id="u", mode="vector")
        assert [r.entry.l2_full for r in await ab.find("green tea", user_id="u")] == ["green tea in the morning"]
    finally:
        await ab.close()


async def test_close_that_gives_up_on_a_slow_batch_hands_it_back_to_the_queue(db_path, monkeypatch):
    """close() waits STOP_WAIT_S for the batch in flight, then cancels it: its jobs must be due again at once with
    no attempt counted (they stayed claimed until the 30 s lease expired)."""
    import threading

    from agentbase.embeddings import HashEmbedder
    from agentbase.ingest import worker

    release = threading.Event()

    class Stuck(HashEmbedder):
        def embed_documents(self, texts):
            release.wait(5)
            return super().embed_documents(texts)

    monkeypatch.setattr(worker, "STOP_WAIT_S", 0.3)
    db = make_db(db_path, embedder=Stuck(dims=16))
    await db.add_memory("a batch that is still embedding at close", user_id="u")
    for _ in range(100):  # until the worker has claimed the job
        if (await db.stats())["jobs"].get("running"):
            break
        await asyncio.sleep(0.02)
    assert (await db.stats())["jobs"] == {"running": 1}
    await db.close()
    release.set()
    with sqlite3.connect(db_path) as con:
        status, attempts, due = con.execute("SELECT status, attempts, next_run_at FROM jobs").fetchone()
        now = con.execute("SELECT strftime('%Y-%m-%dT%H:%M:%f', 'now')").fetchone()[0]
    assert (status, attempts) == ("pending", 0)
    assert due[:23] <= now  # due now, not at the end of the lease
    again = make_db(db_path, dims=16)
    try:
        assert await again.flush(timeout=10) == 0
        assert (await again.stats())["embeddings"] == 1
    finally:
        await again.close()


async def test_close_returns_while_another_task_writes(tmp_path: Path):
    for trial in range(12):
        db = _db(tmp_path / f"c{trial}.db")
        await db.initialize()

        async def writer() -> None:
            for i in range(50):
                try:
                    await db.add_memory(f"note {i} apple")
                except Exception:  # noqa: BLE001 - writes after close fail with UsageError; that is fine here
                    return

        task = asyncio.create_task(writer())
        await asyncio.sleep(0.002 + 0.001 * (trial % 6))
        await asyncio.wait_for(db.close(), 10)
        await task
