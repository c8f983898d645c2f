"""The keyword leg of ``find()`` on SQLite: FTS5 BM25 over ``entries_fts`` (``porter unicode61``).

Terms come in already tokenised and folded (:func:`agentbase.index.fts.query_tokens`); the operations turn them
into FTS5 MATCH expressions (double-quoted terms only, with the helpers of :mod:`agentbase.index.fts`, which also
name them in traces), so callers never write engine text and a typed operator can never reach FTS5 as syntax. Scores are FTS5's ``bm25()``
(negative: lower is better), rounded to 1e-9 so ties stay ties and are broken by rid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...index.fts import common_terms_queries, dropped_only_query, groups_expression

# bm25() adds the terms' parts in the order of the MATCH expression, so the budget's split halves can give two
# entries that tie under the plain OR query scores 1 ulp apart, and swap them. Scores are compared as integers
# of 1e-9 (ties stay ties, broken by rid); SQLite's round() formats each value as text and cost 50 % more.
_BM25_SCALE = 1e9
_BM25 = f"CAST(bm25(entries_fts) * {_BM25_SCALE:.0f} AS INTEGER)"


async def _leg(c: Any, matches: list[str], where: str, params: Sequence[Any], n: int,
               within: str | None = None) -> tuple[list[tuple[int, float]], int | None]:
    """The ``n`` best BM25 matches of the union of ``matches`` that pass the filter, exactly, and the file's
    largest entry rowid when the first statement returned rows (else None).

    Joining every match to ``entries`` to test the filter costs more than BM25 itself on large files (53 vs
    16 ms for 15k matches at 100k entries), so one statement ranks the best ``4n`` matches without the join and
    checks the filter on those alone; only when fewer than ``n`` pass while more matches exist is the joined query
    run. The filtered top ``n`` is a prefix of the unfiltered order, so both paths return the same rows.
    ``matches`` holds one expression, or the two disjoint halves from :func:`common_terms_queries`.
    """
    # ``within`` narrows the rows without being scored; the unary + keeps SQLite from handing the IN list to FTS5
    # as rowid lookups (one MATCH evaluation per rowid: 100x slower).
    def narrow(rowid: str) -> str:
        return f" AND +{rowid} IN (SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?)" if within else ""

    match_params = [(m, within) if within else (m,) for m in matches]
    union = " UNION ALL ".join(f"SELECT rowid AS rid, {_BM25} AS s FROM entries_fts "
                               f"WHERE entries_fts MATCH ?{narrow('rowid')}" for _ in matches)
    rows = await c.fetchall(
        f"WITH head AS MATERIALIZED (SELECT rid, s FROM ({union}) ORDER BY s, rid LIMIT ?) "
        f"SELECT h.rid, h.s, (SELECT count(*) FROM head), (SELECT COALESCE(MAX(rid), 0) FROM entries) "
        f"FROM head h JOIN entries e ON e.rid = h.rid WHERE {where} ORDER BY h.s, h.rid LIMIT ?",
        [x for mp in match_params for x in mp] + [4 * n, *params, n])
    max_rid = int(rows[0][3]) if rows else None
    if len(rows) >= n or (rows and rows[0][2] < 4 * n):
        return [(int(r[0]), r[1] / _BM25_SCALE) for r in rows], max_rid
    joined = " UNION ALL ".join(
        f"SELECT e.rid AS rid, {_BM25} AS s FROM entries_fts JOIN entries e ON e.rid = entries_fts.rowid "
        f"WHERE entries_fts MATCH ?{narrow('entries_fts.rowid')} AND {where}" for _ in matches)
    rows = await c.fetchall(f"SELECT rid, s FROM ({joined}) ORDER BY s, rid LIMIT ?",
                            [x for mp in match_params for x in (*mp, *params)] + [n])
    return [(int(r[0]), r[1] / _BM25_SCALE) for r in rows], max_rid


async def search(c: Any, terms: Sequence[str], where_sql: str, params: Sequence[Any], limit: int, *,
                 common: Sequence[str] = (),
                 doc_freqs: Mapping[str, int] | None = None) -> tuple[list[tuple[int, float]], int | None]:
    """The keyword leg: the ``limit`` best entries holding at least one of ``terms`` that pass the filter.

    Contract: a ranked list of ``(rid, score)``, lower score = better (FTS5 ``bm25()``, negative, to 1e-9), ties
    by ascending rid, filters applied inside the engine before the cut (exact: the filtered top ``limit``). Every
    entry is scored by all of ``terms`` and ``common`` together, exactly as the plain OR of them all would score
    it; ``common`` (the frequent terms :func:`~agentbase.index.fts.select_terms` dropped) only adds to the score
    of entries that already hold one of ``terms``, so they cost no postings walk of their own.

    Args:
        c: a reader (``Database``) or an open ``Writer``.
        terms: query terms, tokenised and folded (:func:`~agentbase.index.fts.query_tokens`); ``[]`` finds nothing.
        where_sql: the filter on ``entries`` aliased ``e`` (``db.ops.filters.where``); ``params`` its values.
        limit: the most rows returned (``n`` candidates).
        common: further scoring terms, disjoint from ``terms``.
        doc_freqs: ``{term: entries holding it}`` as :func:`document_counts` counted them earlier in the same
            ``find()``, or None. An engine that keeps no document frequencies of its own (PostgreSQL) reuses them
            instead of counting again; FTS5 reads its own, so this engine ignores them.

    Returns:
        ``(ranked, max_rid)``: ``max_rid`` is the file's largest entry rid (an upper bound on the indexed rows)
        when the first statement returned rows, else None.

    Raises:
        StorageError: the query failed.
    """
    matches = common_terms_queries(list(terms), list(common))
    if not matches:
        return [], None
    return await _leg(c, matches, where_sql, params, limit)


async def search_common_only(c: Any, terms: Sequence[str], common: Sequence[str], where_sql: str,
                             params: Sequence[Any], limit: int, *,
                             groups: Sequence[Sequence[str]] | None = None,
                             doc_freqs: Mapping[str, int] | None = None) -> list[tuple[int, float]]:
    """The rest of the keyword leg: the ``limit`` best entries holding a term of ``common`` and none of ``terms``.

    Together with :func:`search` (same ``terms`` and ``common``) it covers every entry of the plain OR of all the
    terms exactly once, and each entry here is scored by the ``common`` terms alone, which is what the plain OR
    gives it too. Contract as :func:`search`: ``(rid, score)``, lower = better, ties by rid, filter applied before
    the cut.

    Args:
        c: a reader or an open ``Writer``.
        terms: the query's rare (kept) terms, non-empty. common: its common (dropped) terms, non-empty.
        where_sql, params: the filter on ``entries e`` and its values.
        limit: the most rows returned.
        groups: restrict (without scoring) to entries holding every term of at least one group (the MaxScore
            sets of :func:`~agentbase.index.fts.maxscore_groups`); None: no restriction.
        doc_freqs: as :func:`search` (ignored here).

    Returns:
        The ranked list.

    Raises:
        ValueError: ``terms`` or ``common`` is empty. StorageError: the query failed.
    """
    within = groups_expression(groups) if groups else None
    rows, _ = await _leg(c, [dropped_only_query(list(terms), list(common))], where_sql, params, limit, within)
    return rows


async def document_counts(c: Any, terms: Sequence[str], budget: int = 0) -> tuple[dict[str, int], int]:
    """How many indexed entries contain each term (the engine's own stemming applies: "doing" counts "do").

    One statement per 200 terms; counting a term's documents walks its postings without scoring them, about 30
    times cheaper per posting than ``bm25()`` (measured at 100k entries: 1.1 ms vs 26 ms for a term in 22k
    entries). With a ``budget``, nothing is counted when even every entry holding every term would fit in it
    (``max(rid) x len(terms) <= budget``, one index lookup).

    Args:
        c: a reader or an open ``Writer``.
        terms: tokenised, folded terms.
        budget: a postings budget; 0 always counts.

    Returns:
        ``({term: document count}, max_rid)``: the counts are all 0 when the budget cannot be exceeded; ``max_rid``
        (the largest entry rid, 0 for an empty file) bounds the number of indexed entries from above.

    Raises:
        StorageError: the query failed.
    """
    out: dict[str, int] = {}
    max_rid = 0
    for start in range(0, len(terms), 200):  # SQLite allows 2,000 result columns; a long query is chunked
        part = terms[start:start + 200]
        # The bound is computed once; CASE evaluates a count only when it says the budget could be exceeded.
        cols = ", ".join("CASE WHEN skip THEN 0 ELSE (SELECT count(*) FROM entries_fts WHERE entries_fts MATCH ?) "
                         "END" for _ in part)
        row = await c.fetchone(
            f"WITH b(max_rid, skip) AS (SELECT m, m * ? <= ? FROM (SELECT COALESCE(MAX(rid), 0) AS m FROM entries)) "
            f"SELECT max_rid, {cols} FROM b", [len(terms), budget, *(f'"{t}"' for t in part)])
        max_rid = int(row[0]) if row else 0
        out.update((t, int(n)) for t, n in zip(part, row[1:] if row else [0] * len(part)))
    return out, max_rid
