"""Several hosts on one PostgreSQL database: 4 writer processes (separate pools) add memories and commit sessions
while 2 readers search; one writer is SIGKILLed mid-run and restarted. Asserts, and prints: no acknowledged write
lost, no embedding job run twice (a trigger logs every committed embedding write), every vector present after
flush, the per-lexeme document counts equal to the keyword index, and no reader error."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentbase import AgentBase, load_settings
from agentbase.embeddings import HashEmbedder

ROOT = Path(__file__).resolve().parents[2]
PER_WRITER = 60


def _spawn(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.storage.multihost_worker", *args], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "AGENTBASE_EMBEDDER__PROVIDER": "hash"})


def _acks(path: Path) -> list[str]:
    return path.read_text().split("\n")[:-1] if path.exists() else []  # a line without its newline was not acked


@pytest.mark.slow
async def test_four_writers_two_readers_and_a_killed_writer(tmp_path, pg_url):
    ab = AgentBase(pg_url, settings=load_settings(ner="regex"), embedder=HashEmbedder(dims=64))
    await ab.initialize()
    async with ab.db.transaction() as c:  # test instrumentation: one row per committed embedding write
        await c.execute("CREATE TABLE embed_log (rid BIGINT, content_hash TEXT)")
        await c.execute("CREATE FUNCTION log_embed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                        "INSERT INTO embed_log VALUES (NEW.rid, NEW.content_hash); RETURN NEW; END $$")
        await c.execute("CREATE TRIGGER embed_log_t AFTER INSERT OR UPDATE ON embeddings "
                        "FOR EACH ROW EXECUTE FUNCTION log_embed()")
    await ab.close()

    acks = [tmp_path / f"w{i}.acks" for i in range(4)]
    stop = tmp_path / "stop"
    readers = [_spawn("reader", pg_url, str(stop), str(tmp_path / f"r{i}.json")) for i in range(2)]
    writers = [_spawn("writer", pg_url, str(acks[i]), f"w{i}", str(PER_WRITER)) for i in range(4)]
    deadline = time.monotonic() + 120
    while len(_acks(acks[0])) < PER_WRITER // 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    writers[0].send_signal(signal.SIGKILL)  # mid-run: between or inside transactions
    writers[0].wait()
    killed_at = len(_acks(acks[0]))
    restarted = _spawn("writer", pg_url, str(acks[0]), "w0b", str(PER_WRITER // 2))
    for p in [*writers[1:], restarted]:
        assert p.wait(timeout=300) == 0, p.stderr.read()
    stop.write_text("stop")
    reader_errors = []
    for p in readers:
        assert p.wait(timeout=60) == 0, p.stderr.read()
        reader_errors += [line for line in p.stderr.read().splitlines() if line.startswith("reader error")]

    ab = AgentBase(pg_url, settings=load_settings(ner="regex"), embedder=HashEmbedder(dims=64))
    await ab.initialize()
    try:
        await ab.flush()
        acked = [line.split(" ", 1) for path in acks for line in _acks(path)]
        memories = [i for kind, i in acked if kind == "m"]
        sessions = [i for kind, i in acked if kind == "s"]
        lost = [i for i in memories if await ab.get(i) is None]
        lost += [i for i in sessions if not (await ab.get_session(i)).committed_seq]
        rows = await ab.db.fetchall("SELECT rid, content_hash, COUNT(*) FROM embed_log GROUP BY 1, 2 HAVING COUNT(*) > 1")
        # every entry given an embedding job has its vector (assistant turns get none, on either engine)
        missing = await ab.db.fetchone("SELECT COUNT(*) FROM jobs j JOIN entries e ON e.id = j.target "
                                       "WHERE j.kind = 'embed' AND NOT EXISTS "
                                       "(SELECT 1 FROM embeddings v WHERE v.rid = e.rid)")
        # the per-lexeme document counts the writers added at COMMIT equal what the keyword index holds
        truth = dict(await ab.db.fetchall("SELECT u.lexeme, count(*) FROM entries e "
                                          "CROSS JOIN LATERAL unnest(e.fts) AS u GROUP BY 1"))
        kept = dict(await ab.db.fetchall("SELECT lexeme, SUM(docs) FROM keyword_terms GROUP BY 1 HAVING SUM(docs) <> 0"))
        stats = await ab.stats()
        read = [json.loads((tmp_path / f"r{i}.json").read_text()) for i in range(2)]
        print(f"\nmulti-host: {len(memories)} memories and {len(sessions)} sessions acknowledged "
              f"(writer 0 killed after {killed_at} acks, restarted); lost {len(lost)}; embedding jobs run twice "
              f"{len(rows)}; embedded entries without a vector {missing[0]} (of {stats['entries_total']} entries); "
              f"jobs {stats['jobs']}; lexeme document counts equal the index: {kept == truth} ({len(truth)}); "
              f"reader queries {[r['queries'] for r in read]}, errors {[r['errors'] for r in read]}")
        assert lost == [] and rows == [] and missing[0] == 0
        assert {x: int(n) for x, n in kept.items()} == {x: int(n) for x, n in truth.items()} and truth
        assert set(stats["jobs"]) == {"done"}, stats["jobs"]
        assert len(memories) >= 3 * PER_WRITER + killed_at
        assert all(r["errors"] == 0 and r["queries"] > 0 for r in read), reader_errors[:5]
    finally:
        await ab.close()
