"""Heuristic rerank, the pluggable reranker seam and the token budget (ARCHITECTURE.md section 6, 9-10)."""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..errors import ConfigError, UsageError

if TYPE_CHECKING:
    from ..config import RetrievalSettings

__all__ = ["Reranker", "apply_reranker", "estimate_tokens", "freshness", "heuristic_score"]


def _utc(ts: datetime) -> datetime:
    return ts.replace(tzinfo=timezone.utc) if ts.tzinfo is None else ts


def freshness(ts: datetime, now: datetime, half_life_days: float) -> float:
    """Exponential decay of relevance with age: ``0.5 ** (age_days / half_life_days)``.

    Args:
        ts: when the entry happened or was written (aware; naive is taken as UTC).
        now: the reference time (aware; naive is taken as UTC).
        half_life_days: age in days at which the value halves (> 0); the defaults live in
            ``RetrievalSettings``: ``freshness_half_life_days`` 30, ``temporal_half_life_days`` 7,
            ``knowledge_update_half_life_days`` 14.

    Returns:
        A value in (0, 1]: 1.0 at age 0 and for timestamps in the future, 0.5 at one half-life, 0.25 at two.

    Raises:
        ConfigError: ``half_life_days`` is not positive.
    """
    if not half_life_days > 0:
        raise ConfigError(f"half_life_days must be > 0, got {half_life_days}")
    age_days = (_utc(now) - _utc(ts)).total_seconds() / 86400.0
    return 1.0 if age_days <= 0 else 0.5 ** (age_days / half_life_days)


def _unit(x: float) -> float:
    return 0.0 if math.isnan(x) else min(1.0, max(0.0, float(x)))


def heuristic_score(rrf_norm: float, freshness: float, confidence: float, scope_match: float,
                    type_match: float, settings: RetrievalSettings | None = None) -> float:
    """The heuristic rerank score, a weighted sum of five signals in [0, 1].

    ``rerank_rrf * rrf_norm + rerank_freshness * freshness + rerank_confidence * confidence
    + rerank_scope * scope_match + rerank_type * type_match``; with the defaults (0.6, 0.15, 0.1, 0.1, 0.05,
    ARCHITECTURE.md section 6 step 9) the result is also in [0, 1].

    Args:
        rrf_norm: the fused (and boosted) score divided by the best one in the result set, in [0, 1].
        freshness: :func:`freshness` of the entry, in [0, 1].
        confidence: the entry's confidence, in [0, 1].
        scope_match: 1.0 when the entry's scope is the most specific one requested (e.g. the same session),
            lower for broader scopes; in [0, 1].
        type_match: 1.0 when the entry's context type or category is the one the query wants, in [0, 1].
        settings: the ``rerank_*`` weights; defaults to ``RetrievalSettings()``.

    Returns:
        The score (higher is better). Inputs outside [0, 1] are clipped and NaN counts as 0, so a bad signal
        cannot dominate the ranking.
    """
    if settings is None:
        from ..config import RetrievalSettings

        settings = RetrievalSettings()
    return (settings.rerank_rrf * _unit(rrf_norm) + settings.rerank_freshness * _unit(freshness)
            + settings.rerank_confidence * _unit(confidence) + settings.rerank_scope * _unit(scope_match)
            + settings.rerank_type * _unit(type_match))


@runtime_checkable
class Reranker(Protocol):
    """An optional second-stage reranker (cross-encoder, LLM judge ...) run after the heuristic rerank.

    Implementations are plain callables; AgentBase ships none by default (no model download at run time).
    """

    def __call__(self, query: str, candidates: Sequence[tuple[str, str]]) -> list[float]:
        """Score candidates for a query.

        Args:
            query: the normalised query.
            candidates: ``(entry_id, text)`` pairs in the current order.

        Returns:
            One score per candidate, in the same order (higher is better; any scale).
        """
        ...


def apply_reranker(reranker: Reranker, query: str,
                   candidates: Sequence[tuple[str, str]]) -> list[tuple[str, float]]:
    """Run ``reranker`` and reorder the candidates by its scores.

    The reranker gets its own copy of the candidates (a tuple of tuples), so it cannot change what is ranked.

    Args:
        reranker: any :class:`Reranker` (a plain callable; coroutine functions are not supported).
        query: the normalised query.
        candidates: ``(entry_id, text)`` pairs in the current order.

    Returns:
        ``(entry_id, score)`` by descending score; ties keep the current order (stable sort); NaN last.

    Raises:
        UsageError: the reranker raised (any exception, chained as the cause), returned an awaitable, something
            that is not a sequence of one real number per candidate (strings and mappings are refused), or a
            number too large for a float.
    """
    if not candidates:
        return []
    frozen = tuple((str(entry_id), str(text)) for entry_id, text in candidates)
    try:
        out = reranker(query, frozen)
    except BaseException as exc:  # noqa: BLE001 - user code: StopIteration or SystemExit must not escape a worker
        raise UsageError(f"reranker raised {type(exc).__name__}: {exc}") from exc
    if inspect.isawaitable(out):
        if inspect.iscoroutine(out):
            out.close()
        raise UsageError("the reranker returned an awaitable: async rerankers are not supported, pass a plain "
                         "function")
    if isinstance(out, (str, bytes, Mapping)) or not isinstance(out, Iterable):
        raise UsageError(f"reranker must return one score per candidate, got {type(out).__name__}")
    try:
        scores = list(out)
    except BaseException as exc:  # noqa: BLE001 - a generator of user code
        raise UsageError(f"reranker raised {type(exc).__name__} while its scores were read: {exc}") from exc
    if len(scores) != len(frozen):
        raise UsageError(f"reranker returned {len(scores)} scores for {len(frozen)} candidates")
    pairs: list[tuple[str, float]] = []
    for (entry_id, _), score in zip(frozen, scores):
        if isinstance(score, (str, bytes)):
            raise UsageError(f"reranker returned a string score {score!r}; scores must be numbers")
        try:
            pairs.append((entry_id, float(score)))
        except (TypeError, ValueError, OverflowError) as exc:
            raise UsageError(f"reranker returned a score that is not a real number: {exc}") from exc
    return sorted(pairs, key=lambda p: math.inf if math.isnan(p[1]) else -p[1])  # NaN last


def estimate_tokens(text: str) -> int:
    """Estimate the tokens of ``text`` with the len/4 rule: ``ceil(len(text) / 4)``.

    Four characters per token is OpenAI's rule of thumb for English text ("What are tokens and how to count
    them?", OpenAI help center). It needs no tokenizer, but it undercounts CJK text (about one token per
    character) and overcounts long runs of spaces; treat budgets as approximate.

    Args:
        text: any string.

    Returns:
        Estimated token count (0 for an empty string).
    """
    return math.ceil(len(text) / 4)
