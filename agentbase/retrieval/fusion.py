"""Weighted reciprocal rank fusion and the NER boost (ARCHITECTURE.md section 6, steps 5 and 6)."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, TypeVar

from ..errors import ConfigError
from ..ner.base import mention_pattern, unsegmented

if TYPE_CHECKING:
    from ..config import RetrievalSettings

__all__ = ["FusedScore", "max_rrf_score", "ner_boost", "norm_name", "signal_label", "weighted_rrf"]

_PRIMARY = ("fts", "vector")
Id = TypeVar("Id", bound=Hashable)


@dataclass
class FusedScore:
    """The fused score of one candidate.

    Attributes:
        score: ``sum(w_s / (k + rank_s))`` over the signals that returned the candidate (higher is better).
        ranks: 1-based rank in each signal that returned the candidate, e.g. ``{"fts": 3, "vector": 1}``.
        matched_by: which signals found it (see :func:`signal_label`), e.g. ``"hybrid"`` or ``"fts"``.
    """

    score: float
    ranks: dict[str, int] = field(default_factory=dict)
    matched_by: str = ""


def signal_label(signals: Iterable[str]) -> str:
    """Name the signals that found a candidate.

    Args:
        signals: signal names such as ``{"vector", "fts", "ner"}``.

    Returns:
        The names joined with ``"+"`` in a fixed order: ``fts``, ``vector``, then the others alphabetically;
        ``fts`` and ``vector`` together become ``hybrid``. ``{"vector", "fts", "ner"} -> "hybrid+ner"``,
        ``{"graph", "fts"} -> "fts+graph"``, no signal -> ``""``.
    """
    names = set(signals)
    head = ["hybrid"] if names >= set(_PRIMARY) else [s for s in _PRIMARY if s in names]
    return "+".join(head + sorted(names - set(_PRIMARY)))


def weighted_rrf(rankings: dict[str, list[Id]], weights: dict[str, float],
                 k: int = 60) -> dict[Id, FusedScore]:
    """Fuse ranked lists with weighted reciprocal rank fusion.

    ``score(d) = sum over signals s that returned d of weights[s] / (k + rank_s(d))`` with 1-based ranks. This
    is RRF (Cormack, Clarke & Buettcher, "Reciprocal Rank Fusion outperforms Condorcet and individual Rank
    Learning Methods", SIGIR 2009, which uses k = 60) with a weight per signal. Only ranks are used, so BM25
    and cosine scores never have to be put on one scale.

    Args:
        rankings: signal name (``"fts"``, ``"vector"``, ...) -> entry ids (any hashable, comparable type: the
            pipeline passes rowids), best first. A repeated id keeps its
            best (first) rank; empty lists are allowed.
        weights: signal name -> weight (>= 0), e.g. ``{"fts": 0.4, "vector": 0.6}``; every signal in
            ``rankings`` needs one.
        k: the RRF constant (>= 0); larger values flatten the difference between top and lower ranks.

    Returns:
        id -> :class:`FusedScore`, ordered by descending score (ties: the better best rank, then the id).

    Raises:
        ConfigError: a signal without a weight, a negative weight, or a negative ``k``.
    """
    if k < 0:
        raise ConfigError(f"rrf k must be >= 0, got {k}")
    fused: dict[Id, FusedScore] = {}
    for signal, ids in rankings.items():
        if signal not in weights:
            raise ConfigError(f"no weight for retrieval signal {signal!r}; weights has {sorted(weights)}")
        weight = float(weights[signal])
        if weight < 0:
            raise ConfigError(f"weight of signal {signal!r} must be >= 0, got {weight}")
        for rank, entry_id in enumerate(ids, start=1):
            item = fused.setdefault(entry_id, FusedScore(0.0))
            if signal in item.ranks:
                continue
            item.ranks[signal] = rank
            item.score += weight / (k + rank)
    labels: dict[tuple[str, ...], str] = {}  # few distinct signal sets: name each once
    for item in fused.values():
        key = tuple(item.ranks)
        label = labels.get(key)
        if label is None:
            label = labels[key] = signal_label(key)
        item.matched_by = label
    order = sorted(fused.items(), key=lambda kv: (-kv[1].score, min(kv[1].ranks.values()), kv[0]))
    return dict(order)


def max_rrf_score(weights: dict[str, float], k: int = 60, signals: list[str] | None = None) -> float:
    """Return the highest fused score possible: rank 1 in every signal, ``sum(w) / (k + 1)``.

    Divide a :class:`FusedScore` ``score`` by this to get the ``rrf`` input of the heuristic rerank in [0, 1].

    Args:
        weights: signal name -> weight, as given to :func:`weighted_rrf`.
        k: the RRF constant.
        signals: only count these signals (e.g. the legs that actually ran); default all of ``weights``.

    Returns:
        The maximum score (0.0 when no weight counts).
    """
    names = weights if signals is None else [s for s in signals if s in weights]
    return sum(float(weights[s]) for s in names) / (k + 1)


@lru_cache(maxsize=8192)  # the same few hundred tags come back on every query
def norm_name(name: str) -> str:
    """A person or entity name as entity matching compares it: case-folded, ``_`` and runs of spaces as one space,
    typographic apostrophes as ``'`` (as in tags, ner/base.py tag_for: a query's "O’Brien" is the tag
    ner_O'Brien). ``"Mary_Ann"`` and ``" mary  ann "`` both give ``"mary ann"``."""
    return " ".join(name.replace("_", " ").replace("\u2019", "'").replace("\u02bc", "'").casefold().split())


def _partial(a: str, b: str) -> bool:
    """Whether one name is a whole-word part of the other ("alice" / "alice smith"); CJK: a substring."""
    if unsegmented(a) or unsegmented(b):
        return a in b or b in a
    return f" {a} " in f" {b} " or f" {b} " in f" {a} "


def ner_boost(query_entities: set[str], entry_tags: list[str], content: str,
              settings: RetrievalSettings | None = None) -> tuple[float, str]:
    """Multiplier for a fused result whose entity tags or text mention the query's entities.

    Reading of ARCHITECTURE.md section 6 step 6 ("strong (tag match) x1.3, medium (tag + content) x1.24,
    weak (content) x1.15"), first level that applies wins:

    * ``strong``: a query entity equals one of the entry's ``ner_`` tags (case-insensitive, ``_`` = space),
      whether or not the text also mentions it: the ingest-time NER already vouched for it.
    * ``medium``: a tag only partially matches a query entity (one name is a whole-word part of the other,
      "Alice" vs ``ner_Alice_Smith``) *and* the content mentions that entity: two weaker signals agree.
    * ``weak``: the content mentions a query entity (whole words, case-insensitive; substring for CJK), or a
      tag partially matches without a mention.

    Args:
        query_entities: entity names found in the query; normalised here (case, ``_``, spaces), so
            ``{"alice", "new york"}`` and ``{"Alice", "New_York"}`` are the same.
        entry_tags: the entry's tags; only ``ner_<Entity>`` tags count (other tags are ignored).
        content: the entry text to look for mentions in (usually ``l2_full``).
        settings: the multipliers ``ner_boost_strong/medium/weak``; defaults to ``RetrievalSettings()``.

    Returns:
        ``(multiplier, level)`` with level ``"strong"``, ``"medium"``, ``"weak"`` or ``"none"`` (1.0).
    """
    if settings is None:
        from ..config import RetrievalSettings

        settings = RetrievalSettings()
    entities = {n for n in map(norm_name, query_entities) if n}
    if not entities:
        return 1.0, "none"
    tags = {norm_name(t[4:]) for t in entry_tags if t[:4].lower() == "ner_"} - {""}
    if entities & tags:
        return settings.ner_boost_strong, "strong"
    text, weak = content.casefold(), False
    for entity in entities:
        partial = any(_partial(entity, t) for t in tags)
        mentioned = entity.split()[0] in text and mention_pattern(entity).search(text) is not None  # fast path
        if partial and mentioned:
            return settings.ner_boost_medium, "medium"
        weak = weak or partial or mentioned
    return (settings.ner_boost_weak, "weak") if weak else (1.0, "none")
