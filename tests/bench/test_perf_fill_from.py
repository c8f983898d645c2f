"""``benchmarks.perf --fill-from``: the find() database starts as a copy of a given AgentBase file (SQLite: the
file copied; ``--db``: migrated into PostgreSQL and its HNSW index rebuilt and timed), and the figures are
measured over its rows."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentbase import AgentBase
from agentbase.embeddings import HashEmbedder
from benchmarks import perf


async def _seed(path) -> int:
    ab = AgentBase(path, embedder=HashEmbedder(dims=384))
    await ab.initialize()
    for i in range(40):
        await ab.add_memory(f"note {i}: the courier reached depot {i % 5}", user_id="perf")
    await ab.flush()
    n = (await ab.stats())["entries_total"]
    await ab.close()
    return n


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_find_is_measured_over_the_seeded_rows(tmp_path, engine, request):
    seed = tmp_path / "seed.db"
    entries = asyncio.run(_seed(seed))
    out = tmp_path / "perf.json"
    args = ["--embedder", "hash", "--sizes", str(entries), "--skip", "ingest,embed,busy", "--queries", "3",
            "--fill-from", str(seed), "--workdir", str(tmp_path / "work"), "--out", str(out)]
    if engine == "postgres":
        args += ["--db", request.getfixturevalue("pg_admin_url")]
    assert perf.main(args) == 0
    found = json.loads(out.read_text())["find"]
    assert found["sizes"][str(entries)]["entries"] == entries  # nothing filled beyond the copy
    assert found["fill_from"]["copy_s"] >= 0
    if engine == "postgres":
        assert found["fill_from"]["vectors"] == 40 and found["fill_from"]["hnsw_build_s"] >= 0


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_a_rerun_reuses_the_database_and_fills_on(tmp_path, engine, request):
    """A second run on the same workdir (SQLite) or with ``--reuse-db`` (PostgreSQL) starts from the rows the
    first left, and its fill's new sessions do not collide with the earlier ones."""
    seed = tmp_path / "seed.db"
    entries = asyncio.run(_seed(seed))
    base = ["--embedder", "hash", "--skip", "ingest,embed,busy", "--queries", "2", "--session-size", "4",
            "--workdir", str(tmp_path / "work")]
    if engine == "postgres":
        base += ["--db", request.getfixturevalue("pg_admin_url")]
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    assert perf.main([*base, "--sizes", str(entries), "--fill-from", str(seed), "--out", str(first)]) == 0
    assert perf.main([*base, "--reuse-db", "--sizes", str(entries + 30), "--out", str(second)]) == 0
    grown = json.loads(second.read_text())["find"]["sizes"][str(entries + 30)]["entries"]
    assert grown >= entries + 30  # the seeded 40 memories were kept, and the fill added sessions on top
    assert perf.main([*base, "--sizes", str(entries), "--out", str(first)]) == 0  # without --reuse-db: fresh
    fresh = json.loads(first.read_text())["find"]["sizes"][str(entries)]["entries"]
    if engine == "postgres":
        assert entries <= fresh < grown  # dropped and filled from nothing up to the size
    else:
        assert fresh == grown  # SQLite files in one workdir are always reopened
