"""FTS5 keyword index: text normalisation for indexing and safe MATCH-expression building.

The index uses ``porter unicode61`` (English stemming: "works" matches "work"). ``unicode61`` treats a run of CJK
characters as one token, so ``部署`` would never match ``明天讨论部署方案``. We therefore index a derived column (``entries.fts_text``) in which every run of Han, Kana
or Hangul characters is rewritten as its overlapping character bigrams plus unigrams, and ASCII glued to CJK is
split off (``修复gen-abc后`` -> ``修 复 修复 gen-abc 后``). Queries go through the same function, so both sides
agree. This is the bigram approach used by Lucene's CJKAnalyzer.

MATCH expressions are built only from double-quoted tokens joined by ``OR`` (under the postings budget, two such
groups joined by our own ``AND``/``NOT``), so operators typed by a user (``AND``, ``NOT``, ``-draft``,
``status:done``, a stray quote or parenthesis) are searched as words and can never cause an FTS5 syntax error.
"""

from __future__ import annotations

import itertools
import math
import re
import unicodedata
from typing import Any

__all__ = ["BM25_K1", "STOPWORDS", "bm25_upper_bound", "common_terms_queries", "document_frequencies",
           "dropped_only_query", "fold", "fts_document", "groups_expression", "match_expression", "maxscore_groups",
           "maxscore_restriction", "query_tokens", "select_terms"]

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
# A token is a run of letters/digits (unicode61's notion of a token character) or a CJK run.
_TOKEN = re.compile(f"[{_CJK}]+|[^\\W_{_CJK}]+", re.UNICODE)

# English function words dropped from queries (not from the index): they carry no BM25 signal and widen OR
# queries. A short list in the spirit of the classic SMART/Lucene stop lists.
STOPWORDS = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the their then there these
    they this to was will with i me my we our you your he him his she her it its what which who whom when where
    why how do does did have has had am been being can could would should shall may might must about
    over under again further once here all any both each few more most other some own same so than too very
    just also s t don now up down out off from ago get got tell told say said know let us please""".split()
)


def _cjk_grams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    grams = list(run)
    grams.extend(run[i : i + 2] for i in range(len(run) - 1))
    return grams


def fold(text: str) -> str:
    """Unicode NFKC normalisation (https://unicode.org/reports/tr15/), applied to indexed text and queries alike.

    It folds the compatibility forms CJK input methods produce into the characters people search with:
    fullwidth Latin letters and digits (``ｐｒｏｊｅｃｔ２０２４`` -> ``project2024``), halfwidth katakana
    (``ｶﾀｶﾅ`` -> ``カタカナ``), ligatures (``ﬁle`` -> ``file``) and CJK compatibility ideographs. ASCII text is
    returned unchanged without work.
    """
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def fts_document(text: str) -> str:
    """Rewrite ``text`` for the FTS5 column: NFKC-folded (:func:`fold`), then CJK runs become unigrams + bigrams;
    everything else is kept.

    Args:
        text: any Unicode text.

    Returns:
        The text to store in ``entries.fts_text`` (the same words for non-CJK scripts).
    """
    text = fold(text)
    if not _CJK_RUN.search(text):
        return text
    return _CJK_RUN.sub(lambda m: " " + " ".join(_cjk_grams(m.group())) + " ", text)


def query_tokens(query: str, *, drop_stopwords: bool = True) -> list[str]:
    """Split a user query into index tokens (lower-cased, deduplicated, in order).

    The query is NFKC-folded like the index (:func:`fold`). CJK runs become bigrams (a single CJK character stays a
    unigram), so a two-character query matches. Stop words are dropped unless that would leave nothing.

    Args:
        query: raw user text.
        drop_stopwords: drop English function words when other tokens remain.

    Returns:
        Tokens such as ``["todo", "rotate"]``; ``[]`` for an empty or punctuation-only query.
    """
    tokens: list[str] = []
    for match in _TOKEN.finditer(fold(query)):
        word = match.group()
        if _CJK_RUN.fullmatch(word):
            tokens.extend([word] if len(word) == 1 else [word[i : i + 2] for i in range(len(word) - 1)])
        else:
            # lower(), not casefold(): FTS5's unicode61 folds case one character at a time, so "straße" is indexed
            # as "straße"; casefold() would search "strasse" and never find it.
            tokens.append(word.lower())
    seen: dict[str, None] = dict.fromkeys(tokens)
    tokens = list(seen)
    if drop_stopwords:
        kept = [t for t in tokens if t not in STOPWORDS]
        if kept:
            tokens = kept
    return tokens


def match_expression(tokens: list[str]) -> str | None:
    """Join tokens from :func:`query_tokens` into ``"a" OR "b"``; ``None`` for an empty list."""
    if not tokens:
        return None
    # Tokens contain only letter/digit characters, so no quote can appear inside; quoting makes each a string.
    return " OR ".join(f'"{t}"' for t in tokens)


def common_terms_queries(kept: list[str], dropped: list[str]) -> list[str]:
    """MATCH expressions for :func:`select_terms`'s split, whose union is every entry containing a kept term.

    ``(kept) AND (dropped)`` and ``(kept) NOT (dropped)``: each query term appears once in each expression, so
    ``bm25()`` gives every such entry exactly the score the plain OR of all terms gives it (FTS5 computes each
    term's IDF over the whole table either way), while only entries with a rare term are scored. Without dropped
    terms: the plain OR of ``kept``.

    Returns:
        One or two expressions (``[]`` when ``kept`` is empty).
    """
    if not kept:
        return []
    if not dropped:
        return [match_expression(kept)]  # type: ignore[list-item]
    k, d = match_expression(kept), match_expression(dropped)
    return [f"({k}) AND ({d})", f"({k}) NOT ({d})"]


def dropped_only_query(kept: list[str], dropped: list[str]) -> str:
    """The MATCH expression for the entries :func:`common_terms_queries` leaves out: ``(dropped) NOT (kept)``.

    Together with the two halves it covers every entry of the plain OR query exactly once, and each of its
    entries is scored by the dropped terms alone, which is what the plain OR gives it too.
    """
    if not kept or not dropped:
        raise ValueError("dropped_only_query needs kept and dropped terms")
    return f"({match_expression(dropped)}) NOT ({match_expression(kept)})"


async def document_frequencies(db: Any, tokens: list[str], budget: int = 0) -> tuple[dict[str, int], int]:
    """How many indexed entries contain each token (FTS5 applies its own stemming, so "doing" counts "do").

    Counting a token's documents walks its postings without scoring them, about 30 times cheaper per posting than
    ``bm25()``. With a ``budget``, nothing is counted when even every entry holding every token would fit in it
    (``max(rid) x len(tokens) <= budget``, one index lookup): small files pay no counting at all. The storage
    engine's ``keyword.document_counts`` operation does the reading.

    Args:
        db: the storage ``Database`` (reader connection).
        tokens: tokens from :func:`query_tokens`.
        budget: the postings budget of :func:`select_terms`; 0 always counts.

    Returns:
        ``({token: document count}, max_rid)``: the counts are all 0 when the budget cannot be exceeded;
        ``max_rid`` (the largest entry rowid, 0 for an empty file) bounds the number of indexed entries from above.
    """
    return await db.ops.keyword.document_counts(db, tokens, budget)


#: FTS5's bm25() constants (sqlite.org/fts5.html section 5.1.1, ``fts5_aux.c``): k1 = 1.2, b = 0.75.
BM25_K1 = 1.2


def bm25_upper_bound(dfs: list[int], n_rows: int) -> float:
    """The highest BM25 score (as a positive number) an entry containing only these terms can reach in FTS5.

    FTS5 scores an entry ``sum over terms of idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen))`` with
    ``idf = log((N - n + 0.5) / (n + 0.5))`` (at least 1e-6), N the indexed rows and n the rows with the term.
    Each fraction is below ``k1 + 1`` for any term frequency and length, so ``sum(idf) * (k1 + 1)`` bounds the
    score from above: the per-term maximum score of MaxScore pruning (Turtle & Flood, "Query evaluation:
    strategies and optimizations", IP&M 1995). A larger ``n_rows`` only raises the bound, so an upper bound on N
    (the largest rowid) is safe.

    Args:
        dfs: document frequency of each term.
        n_rows: the number of indexed rows, or an upper bound on it.

    Returns:
        The bound (0.0 for no terms).
    """
    return sum(_term_bound(n, n_rows) for n in dfs)


def _term_bound(df: int, n_rows: int) -> float:
    """One term's share of :func:`bm25_upper_bound`: ``idf * (k1 + 1)``."""
    ratio = (n_rows - df + 0.5) / (df + 0.5)
    return (math.log(ratio) if ratio > 1.0 else 1e-6) * (BM25_K1 + 1.0)


def maxscore_groups(dfs: dict[str, int], n_rows: int, threshold: float, *, max_terms: int = 10,
                    max_groups: int = 64) -> list[list[str]] | None:
    """The minimal sets of these (dropped) terms an entry must hold all of to be able to score ``threshold``.

    An entry whose query terms are a set ``S`` of them scores at most ``sum over S`` of each term's bound
    (:func:`bm25_upper_bound`), so it can reach ``threshold`` (the ``top_k``-th best score found so far) only if
    it contains every term of some set whose bounds add up to ``threshold``: the MaxScore idea (Turtle & Flood
    1995) applied to term subsets. Used as a row filter, never for scoring (``bm25()`` would count a term
    repeated across groups twice).

    Args:
        dfs: ``{term: document frequency}`` of the terms to restrict.
        n_rows: the number of indexed rows or an upper bound on it (a larger value only loosens the bounds).
        threshold: the score (as a positive number) an entry must be able to reach.
        max_terms: above this many terms no restriction is computed (subsets grow as ``2 ** terms``).
        max_groups: above this many minimal sets the restriction is not worth it.

    Returns:
        The sets (each in the order of ``dfs``), or ``None`` when they would not narrow anything (every single
        term can reach the threshold) or the limits are exceeded: the caller then scores every entry holding one
        of the terms.
    """
    terms = [t for t in dfs if dfs[t] > 0]
    if not terms or len(terms) > max_terms:
        return None
    bound = {t: _term_bound(dfs[t], n_rows) for t in terms}
    need = threshold * (1.0 - 1e-9) - 1e-12  # float slack: never exclude an entry that could tie
    groups: list[frozenset[str]] = []
    for size in range(1, len(terms) + 1):  # ascending size: a set is minimal if no smaller chosen set is inside it
        for combo in itertools.combinations(terms, size):
            chosen = frozenset(combo)
            if sum(bound[t] for t in combo) >= need and not any(g <= chosen for g in groups):
                groups.append(chosen)
                if len(groups) > max_groups:
                    return None
    if not groups or all(len(g) == 1 for g in groups) and len(groups) == len(terms):  # none, or every term alone
        return None
    return [[t for t in terms if t in g] for g in groups]


def groups_expression(groups: list[list[str]]) -> str:
    """The FTS5 MATCH expression for :func:`maxscore_groups`: ``("a") OR ("b" AND "c")``."""
    return " OR ".join("(" + " AND ".join(f'"{t}"' for t in g) + ")" for g in groups)


def maxscore_restriction(dfs: dict[str, int], n_rows: int, threshold: float, *, max_terms: int = 10,
                         max_groups: int = 64) -> str | None:
    """:func:`maxscore_groups` as one MATCH expression (:func:`groups_expression`), or ``None`` where it gives
    none; the arguments are the same."""
    groups = maxscore_groups(dfs, n_rows, threshold, max_terms=max_terms, max_groups=max_groups)
    return groups_expression(groups) if groups else None


def select_terms(dfs: dict[str, int], max_postings: int) -> tuple[list[str], list[str]]:
    """Split query terms into the rare ones every candidate must contain and the common ones left out.

    ``bm25()`` costs about 1.5 us per matching entry, so an OR query whose terms each occur in thousands of
    entries is the slowest part of ``find()`` on a large file. The commonest terms also carry the least BM25
    weight (lowest IDF), which is the idea behind Lucene's common-terms query: candidates must contain one of the
    rarer terms, and all terms still score them. The rarest term that occurs is always kept, then terms in
    ascending document frequency while the running total stays within the budget; a term found nowhere costs
    nothing and is kept, but never counts as "the rarest".

    Args:
        dfs: ``{token: document frequency}`` in query order.
        max_postings: the budget in postings (matching entries summed over terms); ``<= 0`` keeps every term.

    Returns:
        ``(kept, dropped)``, each in query order; ``dropped`` is empty when everything fits.
    """
    tokens = list(dfs)
    if max_postings <= 0 or sum(dfs.values()) <= max_postings:
        return tokens, []
    order = {t: i for i, t in enumerate(tokens)}
    keep = {t for t in tokens if dfs[t] == 0}
    total = 0
    kept_one = False
    for t in sorted((t for t in tokens if dfs[t] > 0), key=lambda t: (dfs[t], order[t])):
        if kept_one and total + dfs[t] > max_postings:
            break
        keep.add(t)
        total += dfs[t]
        kept_one = True
    return [t for t in tokens if t in keep], [t for t in tokens if t not in keep]
