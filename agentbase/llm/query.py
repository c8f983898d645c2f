"""The query uses of the LLM (docs/llm.md): typed sub-queries for ``find(strategy="hierarchical")``
(``llm.decompose``) and a listwise rerank of the fused candidates (``llm.rerank``). Both are off unless turned on;
any failure or malformed answer keeps the rule-based behaviour and says so in the trace.
"""

from __future__ import annotations

from typing import Any

from ..errors import LLMError, LLMOutputError
from .client import LLMClient, parse_json_answer
from .prompts import decompose_messages, rerank_messages

__all__ = ["MAX_SUB_QUERIES", "RERANK_POOL", "SUB_QUERY_WEIGHT", "llm_order_scores", "llm_sub_queries",
           "parse_ranking", "parse_sub_queries"]

MAX_SUB_QUERIES = 3
# Each sub-query leg is fused with this share of its index's weight (retrieval.weight_fts / weight_vector): the
# original query's legs stay the strongest voice. A design choice, not a measured optimum.
SUB_QUERY_WEIGHT = 0.5
RERANK_POOL = 20  # candidates shown to the judge (about 20 x 100 tokens of text)
RERANK_TEXT_CHARS = 400  # each candidate's text is cut to this many characters in the prompt


def parse_sub_queries(data: Any, limit: int = MAX_SUB_QUERIES) -> list[dict[str, str]]:
    """Validate a decomposition answer ``{"queries": [{"type": "keyword"|"semantic", "text": str}, ...]}``.

    Returns:
        Up to ``limit`` ``{"type", "text"}`` dicts, blank and repeated texts dropped (an unknown type counts as
        ``"semantic"``).

    Raises:
        LLMOutputError: not that shape, or no usable query.
    """
    items = data.get("queries") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise LLMOutputError("the answer has no list 'queries'", purpose="decompose")
    out: list[dict[str, str]] = []
    seen: set[str] = set()
    for item in items:
        if isinstance(item, str):
            item = {"type": "semantic", "text": item}
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise LLMOutputError(f"a query is not {{'type', 'text'}}: {item!r}"[:200], purpose="decompose")
        text = " ".join(item["text"].split())[:500]
        kind = item.get("type") if item.get("type") in ("keyword", "semantic") else "semantic"
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            out.append({"type": kind, "text": text})
    if not out:
        raise LLMOutputError("the answer holds no query", purpose="decompose")
    return out[:limit]


async def llm_sub_queries(client: LLMClient, query: str) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """Ask the model for typed sub-queries of ``query``.

    Returns:
        ``(sub-queries, trace details)``; on any failure ``([], details)`` where ``details["fallback"]`` names
        the reason (the rule-based decomposition is used alone). ``details["llm_calls"]`` lists the call records.
    """
    with LLMClient.collect() as calls:
        try:
            result = await client.chat(decompose_messages(query, MAX_SUB_QUERIES), purpose="decompose",
                                       json_mode=True, max_tokens=min(client.max_tokens, 200))
            subs = parse_sub_queries(parse_json_answer(result.text, purpose="decompose"))
            fallback = None
        except LLMError as exc:
            subs, fallback = [], f"{type(exc).__name__}: {exc}"[:300]
    return subs, {"llm_calls": [c.as_dict() for c in calls], "fallback": fallback}


def parse_ranking(data: Any, n: int) -> list[int]:
    """Validate a listwise answer ``{"ranking": [index, ...]}`` (or a bare list) for ``n`` candidates.

    Returns:
        The indices in the model's order, repeats dropped (integers or digit strings in ``[0, n)``).

    Raises:
        LLMOutputError: not a list of indices, an index out of range, or an empty list.
    """
    items = data.get("ranking", data.get("order")) if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise LLMOutputError("the answer has no non-empty list 'ranking'", purpose="rerank")
    order: list[int] = []
    for item in items:
        if isinstance(item, str) and item.strip().lstrip("[").rstrip("]").isdigit():
            item = int(item.strip().lstrip("[").rstrip("]"))
        if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item < n:
            raise LLMOutputError(f"the ranking holds {item!r}, not an index in 0..{n - 1}", purpose="rerank")
        if item not in order:
            order.append(item)
    return order


async def llm_order_scores(client: LLMClient, query: str,
                           candidates: list[tuple[str, str]]) -> tuple[list[float] | None, dict[str, Any]]:
    """Ask the model to order ``candidates`` (``(entry id, text)``, in fused order) for ``query``.

    Returns:
        ``(scores, trace details)``: one score per candidate for :func:`~agentbase.retrieval.rerank.apply_reranker`
        (the ``k``-th index the model lists scores ``len(order) - k``, unlisted candidates 0, so they follow in
        their fused order), or ``(None, details)`` with ``details["fallback"]`` naming why the fused order is
        kept (an error, or a malformed answer). ``details["order"]`` is the model's index list.
    """
    with LLMClient.collect() as calls:
        try:
            result = await client.chat(rerank_messages(query, [t for _, t in candidates], RERANK_TEXT_CHARS),
                                       purpose="rerank", json_mode=True, max_tokens=min(client.max_tokens, 200))
            order = parse_ranking(parse_json_answer(result.text, purpose="rerank"), len(candidates))
        except LLMError as exc:
            return None, {"llm_calls": [c.as_dict() for c in calls], "fallback": f"{type(exc).__name__}: {exc}"[:300]}
    scores = [0.0] * len(candidates)
    for pos, index in enumerate(order):
        scores[index] = float(len(order) - pos)
    return scores, {"llm_calls": [c.as_dict() for c in calls], "fallback": None, "order": order}
