"""Benchmark metrics against hand-computed values (benchmarks/metrics.py)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.metrics import (dedup_ranked, evidence_recall_at_k, mean, ndcg_any_at_k,  # noqa: E402
                                percentile, recall_all_at_k, recall_any_at_k)


def test_dedup_keeps_first_occurrence_and_drops_none():
    assert dedup_ranked(["s2", None, "s1", "s2", "s3", "s1"]) == ["s2", "s1", "s3"]
    assert dedup_ranked(["s2", None, "s1", "s2", "s3"], 2) == ["s2", "s1"]
    with pytest.raises(ValueError):
        dedup_ranked(["a"], 0)


def test_recall_any():
    ranked = ["x", "y", "a", "z"]
    assert recall_any_at_k(ranked, {"a", "b"}, 1) == 0.0
    assert recall_any_at_k(ranked, {"a", "b"}, 2) == 0.0
    assert recall_any_at_k(ranked, {"a", "b"}, 3) == 1.0
    assert recall_any_at_k(ranked, set(), 3) is None


def test_recall_all_with_several_gold_sessions():
    # Turn results mapped to sessions: s1 s1 s3 s2 s1 s4 -> distinct sessions s1 s3 s2 s4.
    ranked = ["s1", "s1", "s3", "s2", "s1", "s4"]
    gold = ["s1", "s2", "s4"]
    assert recall_all_at_k(ranked, gold, 1) == 0.0
    assert recall_all_at_k(ranked, gold, 2) == 0.0  # s1 s3
    assert recall_all_at_k(ranked, gold, 3) == 0.0  # s1 s3 s2: s4 missing
    assert recall_all_at_k(ranked, gold, 4) == 1.0  # s1 s3 s2 s4
    assert recall_any_at_k(ranked, gold, 1) == 1.0
    # Without deduplication the top 3 would be s1 s1 s3 and the top 4 would miss s4.
    assert recall_all_at_k(ranked, ["s1", "s2"], 3) == 1.0


def test_ndcg_two_gold_with_a_miss_between():
    # ranks: a (rel) x (not) b (rel); DCG = 1/log2(2) + 1/log2(4) = 1.5; IDCG = 1 + 1/log2(3).
    got = ndcg_any_at_k(["a", "x", "b"], {"a", "b"}, 3)
    assert got == pytest.approx(1.5 / (1 + 1 / math.log2(3)))
    assert got == pytest.approx(0.9197207891)


def test_ndcg_duplicates_count_once():
    # x a a b: deduped x a b. At k=2 only x, a: DCG = 1/log2(3); IDCG (2 gold) = 1 + 1/log2(3).
    ranked = ["x", "a", "a", "b"]
    assert ndcg_any_at_k(ranked, {"a", "b"}, 2) == pytest.approx(0.3868528072)
    # At k=3 b counts at rank 3 (the duplicate a took no slot): DCG = 1/log2(3) + 1/log2(4).
    assert ndcg_any_at_k(ranked, {"a", "b"}, 3) == pytest.approx(
        (1 / math.log2(3) + 0.5) / (1 + 1 / math.log2(3)))


def test_ndcg_ties_in_the_unit_list_and_ideal_over_min_k_gold():
    # Two turns of the same gold session tie for the top: the session counts once, at rank 1.
    assert ndcg_any_at_k(["a", "a", "x"], {"a"}, 3) == pytest.approx(1.0)
    # Three gold units but k=2: the ideal holds only 2 hits, so two hits at ranks 1-2 are perfect.
    assert ndcg_any_at_k(["a", "b", "c"], {"a", "b", "c"}, 2) == pytest.approx(1.0)
    # Three gold, k=5, one hit at rank 1: IDCG = 1 + 1/log2(3) + 1/log2(4).
    assert ndcg_any_at_k(["a", "x", "y", "z", "w"], {"a", "b", "c"}, 5) == pytest.approx(0.4692787260)
    assert ndcg_any_at_k(["x"], {"a"}, 1) == 0.0
    assert ndcg_any_at_k(["x"], [], 1) is None


def test_none_units_take_no_slot():
    ranked = [None, None, "t1"]
    assert recall_any_at_k(ranked, {"t1"}, 1) == 1.0
    assert ndcg_any_at_k(ranked, {"t1"}, 1) == pytest.approx(1.0)


def test_evidence_recall():
    gold = {"D1:3", "D2:5", "D4:1"}
    ranked = ["D1:3", "D9:9", "D1:3", "D4:1", "D2:5"]
    assert evidence_recall_at_k(ranked, gold, 1) == pytest.approx(1 / 3)
    assert evidence_recall_at_k(ranked, gold, 2) == pytest.approx(1 / 3)
    assert evidence_recall_at_k(ranked, gold, 3) == pytest.approx(2 / 3)  # D1:3 D9:9 D4:1
    assert evidence_recall_at_k(ranked, gold, 4) == pytest.approx(1.0)
    assert evidence_recall_at_k(ranked, [], 4) is None


def test_mean_and_percentile():
    assert mean([1.0, None, 0.0]) == 0.5
    assert mean([None]) is None
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == pytest.approx(2.5)
    assert percentile([1.0, 2.0, 3.0, 4.0], 95) == pytest.approx(3.85)
    assert percentile([7.0], 95) == 7.0
    assert percentile([], 50) is None


def test_the_embedding_counts_only_where_it_is_on_the_critical_path():
    from agentbase.models import TraceStep
    from benchmarks.perf import embedding_on_path

    def steps(**ms: float) -> list[TraceStep]:
        return [TraceStep(name=name, latency_ms=v) for name, v in ms.items()]

    both = steps(candidates_fts=10.0, candidates_fts_common_terms=20.0, query_names=1.0, embed_query=4.0,
                 candidates_vector=8.0)
    assert embedding_on_path(both, 4.0, parallel=False) == 4.0  # one leg after the other: all of it
    assert embedding_on_path(both, 4.0, parallel=True) == 0.0  # hidden behind the 30 ms keyword leg
    slow_vector = steps(candidates_fts=10.0, query_names=1.0, embed_query=6.0, candidates_vector=8.0)
    assert embedding_on_path(slow_vector, 6.0, parallel=True) == 5.0  # 15 ms path -> 10 ms without it
