"""The keyword leg's postings budget (common terms left out on large files) and batched trace writes."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3

import pytest

from agentbase import AgentBase, load_settings
from agentbase.embeddings import HashEmbedder
from agentbase.index.fts import (bm25_upper_bound, common_terms_queries, document_frequencies, maxscore_restriction,
                                 select_terms)

from tests.conftest import make_db


@contextlib.asynccontextmanager
async def budget_db(path, budget, embedder=None):
    """An AgentBase on ``path`` with ``retrieval.fts_max_postings = budget`` and the regex NER, closed on exit."""
    settings = load_settings(ner="regex")
    settings.retrieval.fts_max_postings = budget
    ab = AgentBase(path, settings=settings, embedder=embedder)
    await ab.initialize()
    try:
        yield ab
    finally:
        await ab.close()


def test_select_terms_keeps_rarest_within_budget():
    dfs = {"doing": 1045, "road": 511, "bike": 511, "march": 1154}
    assert select_terms(dfs, 2000) == (["road", "bike"], ["doing", "march"])  # 511 + 511 + 1045 > 2000
    assert select_terms(dfs, 5000) == (["doing", "road", "bike", "march"], [])  # total 3221 fits
    assert select_terms(dfs, 0) == (list(dfs), [])  # 0 = off


def test_select_terms_always_keeps_the_rarest_term():
    assert select_terms({"last": 22123, "week": 11281}, 2000) == (["week"], ["last"])
    # Ties in document frequency keep query order.
    assert select_terms({"b": 10, "a": 10, "c": 10}, 20) == (["b", "a"], ["c"])
    # A term absent from the index (a typo) costs nothing and is kept, but the rarest term that occurs is kept too.
    assert select_terms({"teh": 0, "meeting": 5000}, 100) == (["teh", "meeting"], [])
    assert common_terms_queries(["a"], ["b", "c"]) == ['("a") AND ("b" OR "c")', '("a") NOT ("b" OR "c")']
    assert common_terms_queries(["a", "b"], []) == ['"a" OR "b"'] and common_terms_queries([], ["b"]) == []
    assert select_terms({"teh": 0, "rare": 5, "meeting": 5000}, 100) == (["teh", "rare"], ["meeting"])
    assert select_terms({"a": 0, "b": 0}, 1) == (["a", "b"], [])


def test_select_terms_is_fast_on_very_long_queries():
    dfs = {f"w{i}": i % 50 for i in range(40_000)}
    kept, dropped = select_terms(dfs, 2000)  # was quadratic (list.index in the sort key)
    assert len(kept) + len(dropped) == 40_000 and len(kept) > 1000


async def test_document_frequencies_count_stemmed_matches(db):
    await db.add_memory("I was doing the dishes", dedup=False)
    await db.add_memory("She does yoga", dedup=False)
    await db.add_memory("We do taxes in April", dedup=False)
    dfs, max_rid = await document_frequencies(db.db, ["doing", "april", "zebra"])
    # Porter stemming: "doing" and "do" share the stem "do" ("does" stems to "doe").
    assert dfs == {"doing": 2, "april": 1, "zebra": 0} and max_rid == 3


async def test_common_terms_are_dropped_only_above_the_budget(db_path):
    async with budget_db(db_path, 30, HashEmbedder(dims=32)) as ab:
        for i in range(40):
            await ab.add_memory(f"weekly note {i}: the team met again", dedup=False)
        target = await ab.add_memory("the team adopted a pangolin named Biscuit", dedup=False)
        results = await ab.find("team pangolin", top_k=3, mode="fts")
        assert results[0].entry.id == target.id
        trace = await ab.get_trace(results[0].trace_id)
        normalize = next(s for s in trace.steps if s.name == "normalize")
        assert normalize.details["dropped_terms"] == ["team"]  # 41 postings > 30; "pangolin" has 1
        # Candidates must contain the rare term; every term still scores them (two disjoint halves).
        assert normalize.details["match"] == '("pangolin") AND ("team") | ("pangolin") NOT ("team")'

        ab.settings.retrieval.fts_max_postings = 0  # off: every term is scored
        results = await ab.find("team pangolin", top_k=3, mode="fts")
        trace = await ab.get_trace(results[0].trace_id)
        normalize = next(s for s in trace.steps if s.name == "normalize")
        assert normalize.details["dropped_terms"] == [] and normalize.details["match"] == '"team" OR "pangolin"'
        assert results[0].entry.id == target.id and len(results) == 3
        unbudgeted = [(r.entry.id, r.score_parts["bm25"]) for r in results]
        ab.settings.retrieval.fts_max_postings = 30
        budgeted = await ab.find("team pangolin", top_k=3, mode="fts")
        # Entries holding the rare term get exactly the BM25 score of the plain OR query.
        assert (budgeted[0].entry.id, budgeted[0].score_parts["bm25"]) == unbudgeted[0]


async def test_single_common_term_query_is_never_emptied(db_path):
    async with budget_db(db_path, 5, HashEmbedder(dims=32)) as ab:
        for i in range(12):
            await ab.add_memory(f"standup number {i}", dedup=False)
        results = await ab.find("standup", top_k=20, mode="fts")
        assert len(results) == 12


async def test_traces_and_recalls_of_many_finds_are_all_stored(db_path):
    ab = make_db(db_path)
    try:
        e = await ab.add_memory("The staging keys rotate every Monday")
        ids = []
        for _ in range(7):
            results = await ab.find("staging keys", top_k=1)
            ids.append(results[0].trace_id)
        assert len(set(ids)) == 7
        for trace_id in ids:  # readable at once: get_trace writes what is queued first
            assert (await ab.get_trace(trace_id)).result_ids == [e.id]
        assert (await ab.get(e.id)).access_count == 7
    finally:
        await ab.close()


async def test_queued_traces_are_written_by_close(db_path):
    ab = make_db(db_path)
    await ab.add_memory("Lunch order: two falafel wraps")
    results = await ab.find("falafel", top_k=1)
    await ab.close()  # right after find: the queued trace and recall must reach the file
    con = sqlite3.connect(db_path)
    try:
        assert con.execute("SELECT COUNT(*) FROM retrieval_traces WHERE id = ?",
                           (results[0].trace_id,)).fetchone()[0] == 1
        assert con.execute("SELECT access_count FROM entries WHERE id = ?",
                           (results[0].entry.id,)).fetchone()[0] == 1
    finally:
        con.close()


async def test_concurrent_finds_lose_no_trace(db):
    await db.add_memory("Deploy window is Thursday 14:00 UTC")
    results = await asyncio.gather(*(db.find("deploy window", top_k=1) for _ in range(12)))
    trace_ids = {r[0].trace_id for r in results}
    assert len(trace_ids) == 12
    listed = {t["id"] for t in await db.list_traces(limit=100)}
    assert trace_ids <= listed


async def test_non_durable_transaction_restores_full_sync(db):
    async with db.db.transaction(durable=False) as conn:
        assert (await conn.execute("PRAGMA synchronous")).rows[0][0] == 1  # NORMAL inside
    async with db.db.transaction() as conn:
        assert (await conn.execute("PRAGMA synchronous")).rows[0][0] == 2  # FULL again for user writes


@pytest.mark.parametrize("mmap_mb", [0, 64])
async def test_mmap_setting_reaches_both_connections(tmp_path, mmap_mb):
    settings = load_settings(ner="regex")
    settings.storage.mmap_mb = mmap_mb
    ab = AgentBase(tmp_path / "m.db", settings=settings, embedder=HashEmbedder(dims=16))
    try:
        await ab.initialize()
        assert (await ab.db.fetchone("PRAGMA mmap_size"))[0] == mmap_mb * 1024 * 1024
        async with ab.db.transaction() as conn:
            assert (await conn.execute("PRAGMA mmap_size")).rows[0][0] == mmap_mb * 1024 * 1024
    finally:
        await ab.close()


async def test_query_with_thousands_of_terms_is_counted_in_chunks(db):
    target = await db.add_memory("word1999 appears once", dedup=False)
    query = " ".join(f"word{i}" for i in range(2500))  # more terms than SQLite's 2,000 result columns
    dfs, _ = await document_frequencies(db.db, [f"word{i}" for i in range(2500)])
    assert len(dfs) == 2500 and dfs["word1999"] == 1 and sum(dfs.values()) == 1
    db.settings.retrieval.max_query_chars = 50_000  # 21,389 characters
    results = await db.find(query, top_k=1, mode="fts")
    assert results[0].entry.id == target.id


async def test_ids_with_prefix_is_a_bounded_range_lookup(db):
    a = await db.add_memory("alpha", entry_id="abcdef12-0001")
    b = await db.add_memory("beta", entry_id="abcdef12-0002")
    c = await db.add_memory("gamma", entry_id="abcdef13-0001")
    assert await db.ids_with_prefix("abcdef12") == [a.id, b.id]
    assert await db.ids_with_prefix("abcdef12", limit=1) == [a.id]
    assert await db.ids_with_prefix("abcdef13") == [c.id]
    assert await db.ids_with_prefix("abcdef1%") == []  # LIKE wildcards are plain characters here
    assert await db.ids_with_prefix("zzz") == []
    from agentbase.errors import ValidationError
    with pytest.raises(ValidationError):
        await db.ids_with_prefix("abc", limit=0)


async def test_typo_next_to_a_common_word_still_finds_the_common_word(tmp_path):
    async with budget_db(tmp_path / "b.db", 20) as ab:
        for i in range(30):
            await ab.add_memory(f"team meeting number {i}", dedup=False)
        results = await ab.find("meeting teh", top_k=5, mode="fts")
        assert len(results) == 5 and all("meeting" in r.entry.content for r in results)


async def test_budget_never_starves_a_filtered_search(tmp_path):
    async with budget_db(tmp_path / "b.db", 20) as ab:
        for i in range(30):
            await ab.add_memory(f"weekly meeting {i}", user_id="alice" if i % 3 == 0 else "bob", dedup=False)
        for i in range(3):
            await ab.add_memory(f"zebracorn sighting {i}", user_id="bob", dedup=False)
        # "zebracorn" is the rare term but only bob has it: alice must still get her meetings.
        results = await ab.find("zebracorn meeting", top_k=10, mode="fts", user_id="alice")
        assert len(results) == 10 and {r.entry.user_id for r in results} == {"alice"}
        trace = await ab.get_trace(results[0].trace_id)
        assert any(s.name == "candidates_fts_common_terms" for s in trace.steps)


async def test_budget_ranks_entries_with_a_rare_term_exactly_as_without_it(tmp_path):
    async with budget_db(tmp_path / "b.db", 25) as ab:
        for i in range(40):
            await ab.add_memory(f"deploy note {i}", dedup=False)
        for i in range(12):
            await ab.add_memory(f"python script {i}", dedup=False)
        for i in range(3):
            await ab.add_memory(f"python deploy checklist {i}", dedup=False)
        budgeted = await ab.find("python deploy", top_k=15, mode="fts")
        trace = await ab.get_trace(budgeted[0].trace_id)
        assert next(s for s in trace.steps if s.name == "normalize").details["dropped_terms"] == ["deploy"]
        ab.settings.retrieval.fts_max_postings = 0
        plain = await ab.find("python deploy", top_k=15, mode="fts")
        # The 15 entries with "python" come first either way, in the same order with the same BM25 scores.
        assert [(r.entry.id, r.score_parts["bm25"]) for r in budgeted] == \
            [(r.entry.id, r.score_parts["bm25"]) for r in plain]
        assert all("python" in r.entry.content for r in budgeted)


async def test_ids_with_prefix_edge_cases(db):
    top = "\U0010ffff"
    a = await db.add_memory("one", entry_id=f"abcdefgh{top}")
    b = await db.add_memory("two", entry_id=f"abcdefgh{top}zz")
    c = await db.add_memory("three", entry_id="abcdefgi")
    assert await db.ids_with_prefix("abcdefgh") == [a.id, b.id]  # ids continuing with U+10FFFF are found
    assert await db.ids_with_prefix(f"abcdefgh{top}") == [a.id, b.id]
    assert await db.ids_with_prefix("abcdefgi") == [c.id]
    from agentbase.errors import ValidationError
    for bad in (2 ** 63, 10_001, True, "2"):
        with pytest.raises(ValidationError):
            await db.ids_with_prefix("abcdefgh", limit=bad)


async def test_write_lock_held_elsewhere_raises_storage_error_and_changes_nothing(tmp_path):
    import subprocess
    import sys

    from agentbase.errors import StorageError

    settings = load_settings(ner="regex")
    settings.storage.busy_timeout_s = 0.3
    ab = AgentBase(tmp_path / "l.db", settings=settings, embedder=None)
    await ab.initialize()
    # Another process holds the write lock (POSIX locks do not separate connections inside one process).
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
        "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); sys.stdin.readline(); c.execute('ROLLBACK')"),
        str(tmp_path / "l.db")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(StorageError, match="busy_timeout_s"):
            await ab.add_memory("written while another process holds the lock")
        holder.communicate("\n", timeout=30)
        assert await ab.count() == 0
        await ab.add_memory("written after the lock is gone")
        assert await ab.count() == 1
    finally:
        holder.kill()
        await ab.close()


async def test_a_reader_opens_and_searches_while_another_process_holds_the_write_lock(tmp_path):
    # Opening ran a migration transaction and recorded the vector dimension in one even when nothing changed, so
    # a process that only reads (agentbase find, stats, get) waited for another's long write and then failed.
    import subprocess
    import sys


    async with AgentBase(tmp_path / "r.db", settings=load_settings(ner="regex"), embedder=HashEmbedder(dims=64)) as ab:
        e = await ab.add_memory("the quarterly report is due on Friday")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
        "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); sys.stdin.readline(); c.execute('ROLLBACK')"),
        str(tmp_path / "r.db")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    settings = load_settings(ner="regex", retrieval={"trace": False, "count_recalls": False})
    settings.storage.busy_timeout_s = 0.3
    ab = AgentBase(tmp_path / "r.db", settings=settings, embedder=HashEmbedder(dims=64))
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert [r.entry.id for r in await ab.find("quarterly report", top_k=1)] == [e.id]
        assert (await ab.get(e.id)).l2_full == "the quarterly report is due on Friday"
    finally:
        holder.communicate("\n", timeout=30)
        await ab.close()


async def test_close_waits_for_running_finds_and_stores_their_traces(db_path):
    ab = make_db(db_path)
    for i in range(200):
        await ab.add_memory(f"release checklist item {i}", dedup=False)
    finds = [asyncio.ensure_future(ab.find("release checklist", top_k=5)) for _ in range(8)]
    await asyncio.sleep(0)
    await ab.close()
    done = [f.result() for f in finds if not f.exception()]
    assert done  # the finds that were running completed
    con = sqlite3.connect(db_path)
    try:
        stored = {r[0] for r in con.execute("SELECT id FROM retrieval_traces")}
    finally:
        con.close()
    assert {r[0].trace_id for r in done} <= stored


def test_script_ending_without_close_still_writes_its_traces(tmp_path):
    import subprocess
    import sys
    import textwrap

    path = tmp_path / "exit.db"
    script = textwrap.dedent(f"""
        from agentbase import AgentBase, SyncAgentBase, load_settings
        from agentbase.embeddings import HashEmbedder
        db = SyncAgentBase(db=AgentBase({str(path)!r}, settings=load_settings(ner="regex"), embedder=HashEmbedder(16)))
        db.add_memory("the office wifi password rotates monthly")
        print(db.find("wifi password", top_k=1)[0].trace_id)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    trace_id = out.stdout.strip().splitlines()[-1]
    con = sqlite3.connect(path)
    try:
        assert con.execute("SELECT COUNT(*) FROM retrieval_traces WHERE id = ?", (trace_id,)).fetchone()[0] == 1
        assert con.execute("SELECT access_count FROM entries").fetchone()[0] == 1
    finally:
        con.close()


async def test_document_frequencies_skip_counting_when_the_budget_cannot_be_exceeded(db):
    for i in range(5):
        await db.add_memory(f"kettle descaling step {i}", dedup=False)
    assert await document_frequencies(db.db, ["kettle", "step"]) == ({"kettle": 5, "step": 5}, 5)
    # 5 entries x 2 terms = 10 postings at most: within a budget of 10 nothing is counted.
    assert await document_frequencies(db.db, ["kettle", "step"], budget=10) == ({"kettle": 0, "step": 0}, 5)
    assert await document_frequencies(db.db, ["kettle", "step"], budget=9) == ({"kettle": 5, "step": 5}, 5)


def test_bm25_upper_bound_by_hand():
    # idf = ln((1000 - 10 + 0.5) / (10 + 0.5)) = 4.5468; times (k1 + 1) = 2.2
    assert bm25_upper_bound([10], 1000) == pytest.approx(10.003, abs=1e-3)
    assert bm25_upper_bound([10, 10], 1000) == pytest.approx(20.006, abs=1e-3)
    assert bm25_upper_bound([900], 1000) == pytest.approx(2.2e-6)  # idf <= 0 counts as 1e-6, as in FTS5
    assert bm25_upper_bound([], 1000) == 0.0 and bm25_upper_bound([3], 0) == pytest.approx(2.2e-6)


async def test_bm25_upper_bound_holds_for_real_fts5_scores(tmp_path):
    async with budget_db(tmp_path / "b.db", 0) as ab:
        texts = ["kiwi"] * 3 + ["kiwi kiwi kiwi kiwi kiwi"] + [f"filler number {i} text" for i in range(40)]
        for t in texts:
            await ab.add_memory(t, dedup=False)
        dfs, max_rid = await document_frequencies(ab.db, ["kiwi"])
        best = -(await ab.db.fetchone("SELECT bm25(entries_fts) AS s FROM entries_fts WHERE entries_fts MATCH ? "
                                      "ORDER BY s LIMIT 1", ('"kiwi"',)))[0]
        assert 0 < best <= bm25_upper_bound([dfs["kiwi"]], max_rid)


async def test_budget_never_hides_a_better_entry_holding_only_common_terms(tmp_path):
    """The obvious best match holds only the common terms: the MaxScore check reruns the leg with every term."""
    async with budget_db(tmp_path / "p.db", 30) as ab:
        for i in range(40):
            await ab.add_memory(f"Notes about the project number {i}", user_id="alice", dedup=False)
            await ab.add_memory(f"The status of printer {i} is fine", user_id="alice", dedup=False)
        for i in range(10):
            await ab.add_memory(f"Weekly log {i}: " + "lots of unrelated words here " * 20 + "one update",
                                user_id="alice", dedup=False)
        for i in range(400):  # project and status in ~10 % of the entries: common, yet far from stop words
            await ab.add_memory(f"grocery list item {i} milk bread", user_id="alice", dedup=False)
        target = await ab.add_memory("Project status: green, all milestones on track.", user_id="alice")
        for kwargs in ({}, {"user_id": "alice"}):  # unfiltered and owner-filtered keyword leg
            results = await ab.find("project status update", top_k=5, mode="fts", trace=True, **kwargs)
            assert results[0].entry.id == target.id
            steps = [s.name for s in (await ab.get_trace(results[0].trace_id)).steps]
            assert "candidates_fts_common_terms" in steps


async def test_budgeted_top_k_equals_the_unbudgeted_top_k(tmp_path):
    """With the MaxScore check the budget changes the cost of the keyword leg, never its first top_k."""
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "zeta"]
    texts = [" ".join(words[(i * j) % 8] for j in range(1, 2 + i % 5)) + f" item{i % 13}" for i in range(300)]
    queries = ["alpha beta item3", "gamma omega", "sigma kappa zeta item7", "delta item1 item2", "beta"]
    found = {}
    for budget in (0, 40):
        async with budget_db(tmp_path / f"e{budget}.db", budget) as ab:
            for t in texts:
                await ab.add_memory(t, dedup=False)
            found[budget] = [[r.entry.l2_full for r in await ab.find(q, top_k=5, mode="fts", strategy="flat")]
                             for q in queries]
    assert found[40] == found[0] and all(found[0])


def test_maxscore_restriction_by_hand():
    # n_rows 1000: bound("a", df 10) = 2.2 ln(990.5 / 10.5) = 10.003; bound(df 100) = 2.2 ln(900.5 / 100.5) = 4.824
    dfs = {"a": 10, "b": 100, "c": 100}
    assert maxscore_restriction(dfs, 1000, 9.0) == '("a") OR ("b" AND "c")'  # b + c = 9.648 >= 9
    assert maxscore_restriction(dfs, 1000, 15.0) == '("a" AND "b" AND "c")'  # a + b = 14.827 < 15
    assert maxscore_restriction(dfs, 1000, 14.0) == '("a" AND "b") OR ("a" AND "c")'  # b + c = 9.648 < 14
    assert maxscore_restriction(dfs, 1000, 4.0) is None  # every term alone can reach it: nothing to narrow
    assert maxscore_restriction({"a": 10, "b": 0}, 1000, 9.0) is None  # b occurs nowhere; a alone is all
    assert maxscore_restriction({f"t{i}": 100 for i in range(11)}, 1000, 30.0) is None  # too many terms
    assert maxscore_restriction({f"t{i}": 100 for i in range(10)}, 1000, 20.0, max_groups=5) is None


async def test_restricted_fallback_keeps_the_unbudgeted_top_k(tmp_path):
    """Common terms whose bounds must add up: only entries holding enough of them are scored, same top_k."""
    import random

    rng = random.Random(5)
    common = ["river", "stone", "cloud", "amber", "maple", "harbor"]  # each in ~45 % of the entries
    texts = [" ".join(w for w in common if rng.random() < 0.45) + f" note{i % 50}" for i in range(600)]
    # rarer terms in long entries (lower BM25): the top_k-th score needs several common terms to be reached
    texts += [f"marker{i % 3} " + " ".join(f"pad{i}x{j}" for j in range(6 + 6 * (i % 2))) for i in range(36)]
    queries = ["marker1 river stone cloud amber maple harbor", "marker2 river stone cloud", "marker0 amber maple",
               "marker1 river stone cloud"]
    found, restricted = {}, 0
    for budget in (0, 20):
        async with budget_db(tmp_path / f"r{budget}.db", budget) as ab:
            for i, t in enumerate(texts):  # one entry in 7 tagged: a filter most candidates fail (joined query)
                await ab.add_memory(t, dedup=False, tags=["keep"] if i % 7 == 0 else None)
            found[budget] = []
            for q in queries:
                for kwargs in ({}, {"tags": ["keep"]}):
                    results = await ab.find(q, top_k=10, mode="fts", strategy="flat", trace=True, **kwargs)
                    found[budget].append([r.entry.l2_full for r in results])
                    steps = (await ab.get_trace(results[0].trace_id)).steps
                    restricted += any(s.details.get("restricted_to") for s in steps)
    assert restricted >= 2  # the narrowed fallback really ran
    assert found[20] == found[0] and all(len(f) == 10 for f in found[0])


async def test_row_bound_hint_skips_counting_on_small_files_and_follows_growth(tmp_path):
    async with budget_db(tmp_path / "h.db", 30) as ab:
        for i in range(3):
            await ab.add_memory(f"kettle note {i}", dedup=False)
        await ab.find("kettle note", mode="fts")
        assert ab.max_rid_hint == 3  # 3 rows x 2 terms <= 30: later searches skip the term count
        for i in range(40):
            await ab.add_memory(f"kettle descaling note {i}", dedup=False)
        await ab.add_memory("a rare zebracorn kettle", dedup=False)
        first = await ab.find("zebracorn kettle note", mode="fts", trace=True)  # the keyword leg refreshes the bound
        assert ab.max_rid_hint == 44
        second = await ab.find("zebracorn kettle note", mode="fts", trace=True)
        steps = {s.name: s for s in (await ab.get_trace(second[0].trace_id)).steps}
        assert steps["normalize"].details["dropped_terms"]  # the budget acts once the bound says it can
        assert [r.entry.id for r in first] == [r.entry.id for r in second]  # and the results are the same


async def test_budget_keeps_exact_bm25_ties_in_rid_order(tmp_path):
    """bm25() sums term parts in MATCH-expression order: the split halves scored a plain-OR tie 1 ulp apart and
    swapped it; rounded scores keep it a tie, broken by rid as without the budget."""
    texts = [f"filler text number {i}" for i in range(40)] + ["bravo charlie"] * 9 + \
        ["zulu bravo charlie charlie", "zulu bravo bravo charlie"]
    found = {}
    for budget in (0, 5):
        async with budget_db(tmp_path / f"t{budget}.db", budget) as ab:
            for t in texts:
                await ab.add_memory(t, dedup=False)
            results = await ab.find("bravo charlie zulu", mode="fts", strategy="flat", top_k=2, trace=True)
            found[budget] = [r.entry.l2_full for r in results]
            dropped = {s.name: s.details for s in (await ab.get_trace(results[0].trace_id)).steps}["normalize"]
            assert bool(dropped["dropped_terms"]) == (budget == 5)
            assert results[0].score_parts["bm25"] == results[1].score_parts["bm25"]
    assert found[0] == found[5] == ["zulu bravo charlie charlie", "zulu bravo bravo charlie"]
