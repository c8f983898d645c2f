"""The keyword leg of ``find()`` on PostgreSQL: BM25 over ``entries.fts`` (a ``tsvector`` with a GIN index).

Same contract and scores as ``storage/sqlite/keyword.py``: terms arrive tokenised and folded
(:func:`agentbase.index.fts.query_tokens`); each becomes the lexeme FTS5 would search for it
(:func:`~.tokens.query_lexemes`), quoted into a ``tsquery`` so no user text is ever read as an operator; scores are
FTS5's ``bm25()`` computed in SQL (:mod:`.bm25`: negative, lower is better, truncated to 1e-9 as the SQLite leg
does), ties broken by rid; filters are applied inside the statement, before the cut.

Differences from FTS5 that remain: a term FTS5 would read as a phrase of several tokens (rare: the query
tokenizer already splits at punctuation) is searched as its tokens OR-ed; document frequencies are counted
through the GIN index on each search rather than read from an FTS5 segment.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from .bm25 import corpus_counts, doc_counts, idf, match_counts, ranked
from .tokens import query_lexemes, tsquery_literal

_SCALE = 1e9  # the SQLite leg's quantisation of bm25() (storage/sqlite/keyword.py)


def _lexemes(terms: Sequence[str]) -> list[str]:
    return query_lexemes(list(terms))


async def _weights(c: Any, terms: Sequence[str],
                   doc_freqs: Mapping[str, int] | None) -> tuple[dict[str, float], float]:
    """``({lexeme: idf x times the query names it}, avgdl)``: FTS5 adds a phrase's part once per phrase, so two
    terms with one stem ("running", "runs") count that stem twice. A term of ``doc_freqs`` that is one lexeme
    gives that lexeme's count (``document_counts`` counted it on the lexeme); the others are counted here, in the
    statement that reads the corpus totals."""
    times = Counter(x for term in terms for x in dict.fromkeys(query_lexemes([term])))
    known: dict[str, int] = {}
    for term, count in (doc_freqs or {}).items():
        lexemes = query_lexemes([term])
        if len(lexemes) == 1:
            known[lexemes[0]] = int(count)
    n_rows, avgdl, counted = await corpus_counts(c, [x for x in times if x not in known])
    dfs = {**known, **counted}
    return {x: idf(n_rows, dfs[x]) * k for x, k in times.items()}, avgdl


async def _max_rid(c: Any) -> int:
    row = await c.fetchone("SELECT COALESCE(MAX(rid), 0) FROM entries")
    return int(row[0]) if row else 0


async def search(c: Any, terms: Sequence[str], where_sql: str, params: Sequence[Any], limit: int, *,
                 common: Sequence[str] = (),
                 doc_freqs: Mapping[str, int] | None = None) -> tuple[list[tuple[int, float]], int | None]:
    """The keyword leg: the ``limit`` best entries holding at least one of ``terms`` that pass the filter, each
    scored by ``terms`` and ``common`` together. Arguments, contract and return value as the SQLite engine's
    ``keyword.search`` (``(ranked [(rid, score)], max_rid or None)``); ``doc_freqs`` (counted by
    :func:`document_counts` earlier in the same ``find()``) spares counting those terms again.

    Raises:
        StorageError: the query failed.
    """
    match = _lexemes(terms)
    if not match:
        return [], None
    weights, avgdl = await _weights(c, [*terms, *common], doc_freqs)
    rows, max_rid = await ranked(c, weights, tsquery_literal(match), where_sql, list(params), int(limit), avgdl,
                                 _SCALE)
    return [(rid, s / _SCALE) for rid, s in rows], max_rid


async def search_common_only(c: Any, terms: Sequence[str], common: Sequence[str], where_sql: str,
                             params: Sequence[Any], limit: int, *,
                             groups: Sequence[Sequence[str]] | None = None,
                             doc_freqs: Mapping[str, int] | None = None) -> list[tuple[int, float]]:
    """The rest of the keyword leg: the ``limit`` best entries holding a term of ``common`` and none of
    ``terms`` (restricted, unscored, to entries holding every term of one of ``groups`` when given), scored by
    ``common``. As the SQLite engine's ``keyword.search_common_only``; ``doc_freqs`` as :func:`search`.

    Raises:
        ValueError: ``terms`` or ``common`` is empty. StorageError: the query failed.
    """
    if not terms or not common:
        raise ValueError("search_common_only needs kept and dropped terms")
    kept, dropped = _lexemes(terms), _lexemes(common)
    if not dropped:
        return []
    within = None
    if groups:
        parts = [tsquery_literal(_lexemes(g), "&") for g in groups if _lexemes(g)]
        within = " | ".join(f"({p})" for p in parts) or None
    weights, avgdl = await _weights(c, list(common), doc_freqs)
    rows, _ = await ranked(c, weights, tsquery_literal(dropped), where_sql, list(params), int(limit), avgdl, _SCALE,
                        within=within, exclude=tsquery_literal(kept) if kept else None)
    return [(rid, s / _SCALE) for rid, s in rows]


async def document_counts(c: Any, terms: Sequence[str], budget: int = 0) -> tuple[dict[str, int], int]:
    """How many entries hold each term (counted on its lexeme), and the largest entry rid. With a ``budget``,
    nothing is counted when ``max_rid x len(terms) <= budget``. As the SQLite engine's ``keyword.document_counts``.

    Raises:
        StorageError: the query failed.
    """
    max_rid = await _max_rid(c)
    if not terms:
        return {}, max_rid
    if budget and max_rid * len(terms) <= budget:
        return {t: 0 for t in terms}, max_rid
    per_term = {t: query_lexemes([t]) for t in terms}
    lexemes = list(dict.fromkeys(x for xs in per_term.values() for x in xs))
    if any(len(xs) > 1 for xs in per_term.values()):  # a multi-token term: count entries holding any of them
        counts = await match_counts(c, [tsquery_literal(per_term[t]) if per_term[t] else "''" for t in terms])
        return {t: (n if per_term[t] else 0) for t, n in zip(terms, counts)}, max_rid
    dfs = await doc_counts(c, lexemes)
    return {t: (dfs[per_term[t][0]] if per_term[t] else 0) for t in terms}, max_rid
