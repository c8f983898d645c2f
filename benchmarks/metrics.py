"""Retrieval metrics for the benchmarks (pure functions, no I/O).

Conventions shared by every function:

* ``ranked`` is the system's ranked list of *unit ids* (session ids, turn ids or LoCoMo dialog ids), best first.
  A list of retrieved entries is mapped to units by the caller; entries that map to no unit (e.g. a session
  summary at turn level) are passed as ``None``.
* :func:`dedup_ranked` is applied first: ``None`` is dropped and each unit keeps only its **first** occurrence,
  then the list is cut at ``k``. So "top 5 sessions" means the first five *distinct* sessions of the ranked
  entries, as in LongMemEval's ``evaluate_retrieval_turn2session`` (which widens k until k distinct sessions
  are in the window). Duplicates therefore never count twice and never take a slot.
* ``gold`` is a collection of relevant unit ids (binary relevance). An empty gold set is not scorable; the
  functions return ``None`` for it and the caller leaves that item out of the averages.

Definitions (k >= 1):

* ``recall_any@k`` = 1 if any gold unit is in the top k, else 0.
* ``recall_all@k`` = 1 if every gold unit is in the top k, else 0 (LongMemEval's "Recall@k").
* ``ndcg_any@k`` = DCG@k / IDCG@k with binary gains and the standard discount ``1 / log2(rank + 1)``
  (rank 1-based); IDCG puts ``min(k, |gold|)`` relevant units at ranks 1.. . Note: LongMemEval's own
  ``eval_utils.dcg`` uses the older variant where ranks 1 and 2 both get discount 1 (``rel[0] + sum(rel[i] /
  log2(i + 1))`` for 0-based ``i >= 1``), so its NDCG values differ slightly from these whenever a gold unit sits
  at rank 2 or later.
* ``evidence_recall@k`` (LoCoMo) = |gold in top k| / |gold|, the fraction of the item's evidence found.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence

__all__ = ["dedup_ranked", "evidence_recall_at_k", "mean", "ndcg_any_at_k", "percentile", "recall_all_at_k",
           "recall_any_at_k"]


def dedup_ranked(ranked: Iterable[Hashable | None], k: int | None = None) -> list[Hashable]:
    """Drop ``None`` and repeated ids (keeping the first occurrence), then keep the first ``k``.

    Args:
        ranked: unit ids, best first; ``None`` marks a result that maps to no unit.
        k: cut-off (``None`` keeps all).

    Returns:
        The distinct ids in rank order, at most ``k`` of them.
    """
    if k is not None and k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    seen: set[Hashable] = set()
    out: list[Hashable] = []
    for unit in ranked:
        if unit is None or unit in seen:
            continue
        seen.add(unit)
        out.append(unit)
        if k is not None and len(out) >= k:
            break
    return out


def recall_any_at_k(ranked: Sequence[Hashable | None], gold: Iterable[Hashable], k: int) -> float | None:
    """1.0 if any gold unit is among the first ``k`` distinct units, else 0.0; ``None`` for empty gold."""
    gold_set = set(gold)
    if not gold_set:
        return None
    top = dedup_ranked(ranked, k)
    return 1.0 if any(u in gold_set for u in top) else 0.0


def recall_all_at_k(ranked: Sequence[Hashable | None], gold: Iterable[Hashable], k: int) -> float | None:
    """1.0 if every gold unit is among the first ``k`` distinct units, else 0.0; ``None`` for empty gold."""
    gold_set = set(gold)
    if not gold_set:
        return None
    top = set(dedup_ranked(ranked, k))
    return 1.0 if gold_set <= top else 0.0


def ndcg_any_at_k(ranked: Sequence[Hashable | None], gold: Iterable[Hashable], k: int) -> float | None:
    """Binary-relevance NDCG@k with discount ``1/log2(rank+1)``; ideal DCG over ``min(k, |gold|)`` hits.

    Returns ``None`` for empty gold.
    """
    gold_set = set(gold)
    if not gold_set:
        return None
    top = dedup_ranked(ranked, k)
    dcg = sum(1.0 / math.log2(rank + 1) for rank, u in enumerate(top, start=1) if u in gold_set)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(k, len(gold_set)) + 1))
    return dcg / ideal


def evidence_recall_at_k(ranked: Sequence[Hashable | None], gold: Iterable[Hashable], k: int) -> float | None:
    """LoCoMo evidence recall: fraction of the gold ids among the first ``k`` distinct ids; ``None`` if no gold."""
    gold_set = set(gold)
    if not gold_set:
        return None
    top = set(dedup_ranked(ranked, k))
    return len(gold_set & top) / len(gold_set)


def mean(values: Iterable[float | None]) -> float | None:
    """Mean of the non-``None`` values, ``None`` when there are none."""
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0..100) with linear interpolation between closest ranks (numpy's default).

    Returns ``None`` for an empty sequence.
    """
    if not values:
        return None
    data = sorted(values)
    if len(data) == 1:
        return float(data[0])
    pos = (len(data) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return float(data[lo] + (data[hi] - data[lo]) * (pos - lo))
