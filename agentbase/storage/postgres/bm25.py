"""BM25 on PostgreSQL, computed exactly as SQLite's FTS5 ``bm25()`` computes it, from statistics AgentBase keeps.

PostgreSQL's ``ts_rank`` is not BM25 (it has no inverse document frequency), so the keyword leg scores with
FTS5's formula (https://www.sqlite.org/fts5.html#the_bm25_function, ``fts5_aux.c``):

    score(D) = - sum over query terms q of  idf(q) * f(q, D) * (k1 + 1) / (f(q, D) + k1 * (1 - b + b * |D| / avgdl))
    idf(q)   = log((N - n(q) + 0.5) / (n(q) + 0.5)), replaced by 1e-6 when not positive
    k1 = 1.2, b = 0.75

with N the indexed entries, n(q) the entries holding q (``keyword_terms``, below), f(q, D) the term's
positions in the entry's ``tsvector``, |D| = ``entries.doc_len`` and avgdl = total tokens / N from
``keyword_stats``. Lower is better, as in FTS5; the caller's quantisation (``scale``) is applied in SQL the way
the SQLite leg's ``CAST(bm25() * scale AS INTEGER)`` truncates, so ties break on rid identically.

Document frequencies: every write that adds, changes or removes an entry's ``fts`` notes the lexemes that entered
or left it (:func:`note_terms`, from ``tsvector_to_array`` of the stored value, so the counts follow exactly what
the GIN index holds); the transaction adds them to ``keyword_terms`` just before COMMIT (:func:`flush_terms`,
called by ``PgDatabase.transaction``), one upsert in lexeme order, so two writers never wait on each other's rows
in opposite orders, and the counts commit or roll back with the entries.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from .tokens import document_tokens, tsvector_literal

__all__ = ["K1", "B", "LEXEMES", "TERMS_FROM_INDEX", "adjust_stats", "corpus_counts", "doc_counts", "flush_terms",
           "idf", "keyword_document", "match_counts", "note_terms", "ranked", "rebuild_terms"]

K1, B = 1.2, 0.75  # FTS5's bm25() constants (fts5_aux.c)
SHARDS = 16  # rows of keyword_stats (schema.KEYWORD_STAT_SHARDS); keyword_terms uses the same shard per backend
LEXEMES = "tsvector_to_array(fts)"  # what a RETURNING clause reads for note_terms: an entry's distinct lexemes
# Every lexeme's document frequency recounted from the stored tsvectors (schema upgrade, reindex, migrate).
TERMS_FROM_INDEX = ("INSERT INTO keyword_terms(lexeme, shard, docs) "
                    "SELECT u.lexeme, 0, count(*) FROM entries e CROSS JOIN LATERAL unnest(e.fts) AS u GROUP BY u.lexeme")


def keyword_document(fts_text: str) -> tuple[str, int]:
    """``(tsvector input text, token count)`` of an entry's keyword text."""
    tokens = document_tokens(fts_text)
    return tsvector_literal(tokens), len(tokens)


async def adjust_stats(conn: Any, docs: int, tokens: int) -> None:
    """Add ``docs`` entries and ``tokens`` tokens (negative to remove) to this backend's ``keyword_stats`` row,
    inside the caller's transaction: writers on other connections update other rows, so none waits on a counter."""
    if docs or tokens:
        await conn.execute(f"UPDATE keyword_stats SET docs = docs + %s, tokens = tokens + %s "
                           f"WHERE shard = pg_backend_pid() %% {SHARDS}", (docs, tokens))


def note_terms(conn: Any, added: Iterable[Sequence[str] | None] = (),
               removed: Iterable[Sequence[str] | None] = ()) -> None:
    """Count, on the transaction's writer, one more document for each lexeme of each array of ``added`` and one
    fewer for each of ``removed`` (arrays as ``RETURNING`` :data:`LEXEMES` gives them; None is skipped); they reach
    ``keyword_terms`` at COMMIT."""
    deltas = conn.term_deltas
    for lexemes in added:
        deltas.update(lexemes or ())
    for lexemes in removed:
        deltas.subtract(lexemes or ())


async def flush_terms(conn: Any) -> None:
    """Add the writer's noted lexeme changes to its backend's ``keyword_terms`` rows (one statement, rows locked in
    lexeme byte order) and clear them; nothing to do when none changed."""
    changed = [(x, n) for x, n in conn.term_deltas.items() if n]
    conn.term_deltas.clear()
    if changed:
        await conn.execute(
            f"INSERT INTO keyword_terms(lexeme, shard, docs) SELECT t.x, pg_backend_pid() %% {SHARDS}, t.n "
            "FROM unnest(%s::text[], %s::bigint[]) AS t(x, n) ORDER BY t.x COLLATE \"C\" "
            "ON CONFLICT (lexeme, shard) DO UPDATE SET docs = keyword_terms.docs + EXCLUDED.docs",
            ([x for x, _ in changed], [n for _, n in changed]))


async def rebuild_terms(conn: Any) -> None:
    """Recount every lexeme's document frequency from the stored ``fts`` values (after a bulk rewrite of them)."""
    conn.term_deltas.clear()
    await conn.execute("DELETE FROM keyword_terms")
    await conn.execute(TERMS_FROM_INDEX)


_TOTALS = "(SELECT COALESCE(SUM(docs), 0) FROM keyword_stats), (SELECT COALESCE(SUM(tokens), 0) FROM keyword_stats)"


async def corpus_counts(c: Any, lexemes: list[str]) -> tuple[int, float, dict[str, int]]:
    """``(N, avgdl, {lexeme: entries holding it})`` in one statement: N the indexed entries and avgdl their mean
    tokens (1.0 for an empty index) from ``keyword_stats``, and the counts of :func:`doc_counts`."""
    row = await c.fetchone(
        f"SELECT {_TOTALS}, ARRAY(SELECT COALESCE((SELECT SUM(k.docs) FROM keyword_terms k WHERE k.lexeme = t.x), 0) "
        "FROM unnest(%s::text[]) WITH ORDINALITY AS t(x, i) ORDER BY t.i)", (list(lexemes),))
    n, total = int(row[0]), int(row[1])
    return n, (total / n if n > 0 and total > 0 else 1.0), dict(zip(lexemes, (int(x) for x in row[2])))


async def match_counts(c: Any, queries: list[str]) -> list[int]:
    """Entries matching each tsquery text of ``queries`` (one GIN-index count each, one statement), in order."""
    if not queries:
        return []
    rows = await c.fetchall(
        "SELECT t.i, (SELECT count(*) FROM entries WHERE fts @@ t.q::tsquery) "
        "FROM unnest(%s::text[]) WITH ORDINALITY AS t(q, i)", (queries,))
    counts = {int(i): int(n) for i, n in rows}
    return [counts.get(i, 0) for i in range(1, len(queries) + 1)]


async def doc_counts(c: Any, lexemes: list[str]) -> dict[str, int]:
    """``{lexeme: entries holding it}`` (from ``keyword_terms``: one index read per lexeme)."""
    if not lexemes:
        return {}
    rows = await c.fetchall("SELECT lexeme, SUM(docs) FROM keyword_terms WHERE lexeme = ANY(%s::text[]) "
                            "GROUP BY lexeme", (list(lexemes),))
    counts = {str(x): int(n) for x, n in rows}
    return {x: counts.get(x, 0) for x in lexemes}


def idf(n_rows: int, df: int) -> float:
    """FTS5's inverse document frequency of a term held by ``df`` of ``n_rows`` entries."""
    # The counts come from two statements, so under concurrent writes a term can be counted in more entries than
    # the totals held a moment earlier: N is at least df.
    n_rows = max(n_rows, df)
    value = math.log((n_rows - df + 0.5) / (df + 0.5)) if n_rows > 0 else 0.0
    return value if value > 0 else 1e-6


async def ranked(c: Any, scored: dict[str, float], match: list[str], where: str, params: list[Any], n: int,
                 avgdl: float, scale: float, *, within: list[str] | None = None,
                 exclude: list[str] | None = None) -> tuple[list[tuple[int, int]], int | None]:
    """The ``n`` best entries holding a lexeme of ``match`` (and one of ``within``, and none of ``exclude``, when
    given) that pass the filter ``where``/``params`` (over ``entries AS e``), scored over every lexeme of
    ``scored`` (``{lexeme: idf}``): ``([(rid, truncated score * scale)], max_rid)``, best (lowest) first, ties by
    rid; ``max_rid`` (the largest entry rid, read by the same statement) is None when no row matched."""
    if not match or n <= 0:
        return [], None
    narrow = " AND e.fts @@ %s::tsquery" if within else ""
    drop = " AND NOT (e.fts @@ %s::tsquery)" if exclude else ""
    lexemes = list(scored)
    # Each candidate is scored by a subquery over its query lexemes only: setweight marks them 'A' and ts_filter
    # keeps those (both in C), which halved the statement against unnesting every lexeme of every candidate (68 ->
    # 35 ms, 3.6k rows); each lexeme's idf is read from the array by position, and the candidates are not
    # materialised first: 14 % less time than a join with the (lexeme, idf) pairs over a materialised candidate
    # list (100k entries, 50 queries: 305 against 357 ms). The sum runs in the tsvector's lexeme order either way.
    sql = (
        "SELECT e.rid, (SELECT trunc(-SUM((%s::float8[])[array_position(%s::text[], u.lexeme)] "
        "* cardinality(u.positions) * %s / (cardinality(u.positions) + %s * (1 - %s + %s * e.doc_len / %s))) * %s)"
        "::bigint FROM unnest(ts_filter(setweight(e.fts, 'A', %s::text[]), '{a}')) u) AS s "
        f"FROM entries e WHERE e.fts @@ %s::tsquery{narrow}{drop} AND {where} "
        "ORDER BY s, e.rid LIMIT %s")
    sql = f"SELECT r.rid, r.s, (SELECT COALESCE(MAX(rid), 0) FROM entries) FROM ({sql}) r ORDER BY r.s, r.rid"
    args: list[Any] = [[scored[x] for x in lexemes], lexemes, K1 + 1.0, K1, B, B, float(avgdl), float(scale), lexemes,
                       match]
    if within:
        args.append(within)
    if exclude:
        args.append(exclude)
    args += [*params, int(n)]
    rows = await c.fetchall(sql, args)
    return [(int(r[0]), int(r[1])) for r in rows], (int(rows[0][2]) if rows else None)
