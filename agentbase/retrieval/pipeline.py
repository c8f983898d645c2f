"""The ``find()`` pipeline (ARCHITECTURE.md section 6), each step timed into the trace.

1 normalise -> 2 analyse (intents, time range) -> 3 decompose -> 4 candidates (FTS5 BM25 and vector KNN,
filters inside the SQL; optional legs: BM25 inside the question's own date range, the temporal graph) ->
5 weighted RRF -> 6 NER and speaker boosts -> 7 query-type strategy -> 8 session co-retrieval, replies to question
turns and the speaker's next turn, penalty for turns that only ask -> 9 heuristic rerank (+ optional pluggable
reranker) -> 10 level, token budget, top_k.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

import numpy as np

from ..errors import EmbeddingError
from ..graph import graph_candidates
from ..index.fts import (STOPWORDS, bm25_upper_bound, common_terms_queries, document_frequencies, groups_expression,
                         maxscore_groups, query_tokens, select_terms)
from ..index.vector import knn
from ..models import SearchResult
from ..ner import NON_TAG_LABELS
from ..observability import Tracer
from ..storage.entries import EntryView
from ..validation import clean_query
from .filters import Filters
from .fusion import max_rrf_score, ner_boost, norm_name, weighted_rrf
from .intent import analyze_query
from .names import names_in_query, owner_names, vector_query_text
from .rerank import apply_reranker, estimate_tokens, freshness, heuristic_score
from .strategies import (addresses_assistant, apply_strategies, asks_question, assistant_turns, co_retrieval,
                         continuations, only_asks, reply_scores, speaker_boost)

__all__ = ["FindParams", "run_find"]

A = TypeVar("A")
B = TypeVar("B")


@dataclass
class FindParams:
    """Arguments of one ``find()`` call after validation."""

    query: str
    top_k: int
    mode: str
    strategy: str
    token_budget: int | None
    reference_time: datetime
    filters: Filters
    trace: bool
    reranker: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


TEMPORAL_LEG_MAX_SPAN = timedelta(days=366)  # longest date range the temporal legs search (a year)
# People tell of a day's events that evening or the next day ("Last week we went to a military memorial", said on
# 3 August for "the week before August 3"), so the legs also search the day after the named range.
TEMPORAL_LEG_REPORT_LAG = timedelta(days=1)


def _ranged(filters: Filters, tr: Any) -> Filters:
    """``filters`` narrowed to the query's time range and the day after it (``TEMPORAL_LEG_REPORT_LAG``)."""
    return dataclasses.replace(filters, date_from=max(filter(None, (filters.date_from, tr.date_from))),
                               date_to=min(filter(None, (filters.date_to, tr.date_to + TEMPORAL_LEG_REPORT_LAG))))


# The function characters of a Chinese "what did I do" question (我上周做了什么, 我昨天干了啥): a CJK token made of
# them alone asks about nothing, as English stop words do; 去 ("go"), 吃 ("eat") or 会议 ("meeting") do ask.
_ZH_FUNCTION_CHARS = frozenset("我你他她它们咱做干了过什么啥的是有都呢吗嘛在")


def _asks_nothing(token: str) -> bool:
    """A query token that names nothing to look for: an English stop word or Chinese function characters only."""
    return token in STOPWORDS or all(c in _ZH_FUNCTION_CHARS for c in token)


def _without_spans(text: str, spans: tuple[tuple[int, int], ...]) -> str:
    """``text`` with the characters of ``spans`` (the time expressions) replaced by spaces."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


async def _superseded_sources(db: Any, cands: dict[int, dict[str, Any]], filters: Any, factor: float) -> int:
    """Multiply by ``factor`` the candidate turns, and session summaries, that state a value a later message
    replaced, in place; returns how many.

    "Where does Maya live?" found "Hi! I live in Toronto ..." (and its session's summary, "Facts: User lives in
    Toronto") above "User just moved to Vancouver last week": the fact was superseded, the texts that stated it
    were not. A text is demoted when the fact now holding the value (the active, not superseded fact of the
    same key and owners: user, agent, project) is a candidate scoring at least half its score, so the query is
    about that value; a summary also lists its own session's facts, so one whose session states the new value is
    left alone. The sources are the superseded fact's session links (the message that stated it, and any that
    stated it again).
    Only the candidates' sessions and the candidate facts are read, so the cost follows the candidates, not the
    owner's history: reading every superseded fact of the owner and walking their ``superseded_by`` chains took
    107 ms (SQLite) and 128 ms (PostgreSQL) per find() at 1M entries (6,140 such facts, 8,789 links, chains of
    hundreds; ``python -m benchmarks.perf --sizes 1000000``)."""
    turns = {(c["entry"].session_id, c["entry"].message_seq()): c for c in cands.values()
             if c["entry"].category == "turn"}
    summaries = {c["entry"].session_id: c for c in cands.values() if c["entry"].category == "summary"}
    if not turns and not summaries:
        return 0
    owners = {k: getattr(filters, k) for k in ("user_id", "agent_id", "project_id") if getattr(filters, k)}
    sessions = sorted({sid for sid, _ in turns if sid is not None} | {sid for sid in summaries if sid is not None})
    links = await db.ops.retrieval.superseded_fact_links(db, sessions, owners)
    if not links:
        return 0
    # the fact holding each key's value now, where it is a candidate (the best-scoring one, should a damaged
    # file hold two)
    by_rid = {rid: c for rid, c in cands.items() if c["entry"].category not in ("turn", "summary")}
    # keyed by (fact_key, user_id, agent_id, project_id): a fact supersedes only its own owners' facts
    now_of: dict[tuple, dict[str, Any]] = {}
    for rid, *key in await db.ops.retrieval.current_fact_keys(db, sorted(by_rid)):
        c = by_rid[rid]
        k = tuple(key)
        if k not in now_of or c["score"] > now_of[k]["score"]:
            now_of[k] = c
    stale: dict[int, dict[str, Any]] = {}
    for _, *key, sid, seq in links:
        now = now_of.get(tuple(key))
        if now is None:
            continue
        for c in (turns.get((sid, seq)), summaries.get(sid)):
            if c is None or now["score"] < 0.5 * c["score"]:
                continue
            if c["entry"].category == "summary" and now["entry"].session_id == sid:
                continue
            stale[id(c)] = c
    for c in stale.values():
        c["score"] *= factor
        c["parts"]["superseded_source"] = factor
    return len(stale)


async def _both(db: Any, first: Callable[[], Awaitable[A]], second: Callable[[], Awaitable[B]]) -> tuple[A, B]:
    """``(await first(), await second())``: at once when the engine serves concurrent reads (``db.parallel_reads``:
    PostgreSQL, each statement on a pooled connection of its own), else one after the other (SQLite runs every
    statement on the engine loop's thread, so there is nothing to overlap). Either's exception propagates (the
    first's when both fail), once both have finished, so no statement is left running after the call."""
    if db.parallel_reads:
        a, b = await asyncio.gather(first(), second(), return_exceptions=True)
        for outcome in (a, b):
            if isinstance(outcome, BaseException):
                raise outcome
        return a, b  # type: ignore[return-value]
    return await first(), await second()


async def _query_vector(ab: Any, text: str) -> Any:
    """The embedder's query vector for ``text`` (embedded in a thread), checked finite before any engine sees it.

    Raises:
        EmbeddingError: the vector holds NaN or infinity (on both engines: pgvector refuses such a vector,
            SQLite's distances would be NaN and rank nothing).
    """
    vec = await asyncio.to_thread(ab.embedder.embed_query, text)
    if not np.isfinite(np.asarray(vec, dtype=np.float64)).all():
        raise EmbeddingError(f"embedder {getattr(ab.embedder, 'model_id', '?')!r} returned a non-finite query "
                             "vector (NaN or infinity)")
    return vec


async def run_find(ab: Any, p: FindParams) -> list[SearchResult]:
    """Execute the pipeline for ``ab`` (an initialised AgentBase); see :meth:`AgentBase.find`."""
    cfg = ab.settings.retrieval
    db = ab.db
    query = clean_query(p.query)
    tracer = Tracer(query, {"top_k": p.top_k, "mode": p.mode, "strategy": p.strategy,
                            "token_budget": p.token_budget, "reference_time": p.reference_time.isoformat()})
    tokens = query_tokens(query)
    if not tokens:
        tracer.step("normalize", match="")
        return []
    kept, dropped = tokens, []
    counted: dict[str, int] | None = None  # document frequencies when the budget counted them (keyword.search reuses)
    dropped_bound = 0.0  # the best BM25 score an entry holding only dropped terms can reach
    # The budget can only act when the file may hold more postings than it: every entry holding every term. The
    # row bound comes from this process's last keyword search; a stale one (rows added since) can only skip the
    # budget, never change the results, and the next search refreshes it.
    may_exceed = ab.max_rid_hint is None or ab.max_rid_hint * len(tokens) > cfg.fts_max_postings
    if cfg.fts_max_postings > 0 and len(tokens) > 1 and p.mode in ("hybrid", "fts") and may_exceed:
        dfs, rows_bound = await document_frequencies(db, tokens, cfg.fts_max_postings)
        ab.max_rid_hint = rows_bound
        if rows_bound * len(tokens) > cfg.fts_max_postings:  # else document_counts counted nothing (all 0)
            counted = dfs
        kept, dropped = select_terms(dfs, cfg.fts_max_postings)
        dropped_bound = bm25_upper_bound([dfs[t] for t in dropped], rows_bound)
    matches = common_terms_queries(kept, dropped)
    tracer.step("normalize", match=" | ".join(matches), dropped_terms=dropped)

    analysis = analyze_query(query, p.reference_time)
    tracer.step("intent", intents=sorted(analysis.intents),
                time_range=[analysis.time_range.date_from.isoformat(), analysis.time_range.date_to.isoformat()]
                if analysis.time_range else None)
    tracer.step("decompose", sub_queries=analysis.sub_queries, keywords=analysis.keywords)
    llm_subs: list[dict[str, str]] = []
    if p.strategy == "hierarchical" and getattr(ab, "llm", None) is not None and ab.settings.llm.use("decompose"):
        from ..llm.query import llm_sub_queries

        llm_subs, details = await llm_sub_queries(ab.llm, query)
        tracer.step("llm_decompose", sub_queries=llm_subs, **details)

    top_k = p.top_k
    if "aggregation" in analysis.intents or "multi_session" in analysis.intents:
        top_k_pool = int(math.ceil(top_k * cfg.aggregation_top_k_factor))
    else:
        top_k_pool = top_k
    n = max(cfg.min_candidates, cfg.overfetch * top_k_pool)
    where, params = p.filters.where("e", db.ops)
    tr = analysis.time_range
    in_span = tr is not None and tr.date_to - tr.date_from <= TEMPORAL_LEG_MAX_SPAN
    time_only = in_span and all(_asks_nothing(t) for t in query_tokens(_without_spans(query, tr.spans)))
    if time_only:
        # Only the time is asked about ("what did I do last week"): its words match any text that says "last" or
        # "week", so both legs search inside the range instead, when it holds anything the filters pass.
        r_where, r_params = _ranged(p.filters, tr).where("e", db.ops)
        if await db.ops.retrieval.any_passing(db, r_where, r_params):
            where, params = r_where, r_params
        tracer.step("time_only", range_used=where == r_where)
    rankings: dict[str, list[int]] = {}
    degrade = ab.degrade_reason()
    use_vector = p.mode in ("hybrid", "vector") and ab.embedder is not None and ab.vector_error is None

    async def keyword_leg() -> list[tuple[int, float]]:
        if p.mode not in ("hybrid", "fts"):
            return []
        trace = tracer.fork()
        fts, max_rid = await db.ops.keyword.search(db, kept, where, params, n, common=dropped, doc_freqs=counted)
        if max_rid is not None:
            ab.max_rid_hint = max_rid
        trace.step("candidates_fts", candidates_out=len(fts), limit=n)
        if dropped and (len(fts) < top_k_pool or -fts[top_k_pool - 1][1] <= dropped_bound):
            # Also score the entries holding only common terms when too few entries with a rare term pass the
            # filter (the rare term is another owner's), or when one of them could outscore the top_k-th candidate
            # (MaxScore bound): merged, the leg is then exactly the plain OR query's, so the budget never changes
            # the first top_k.
            # Only the entries whose common terms could add up to the top_k-th score need scoring.
            groups = None if len(fts) < top_k_pool else \
                maxscore_groups({t: dfs[t] for t in dropped}, rows_bound, -fts[top_k_pool - 1][1])
            within = groups_expression(groups) if groups else None
            rest = await db.ops.keyword.search_common_only(db, kept, dropped, where, params, n, groups=groups,
                                                           doc_freqs=counted)
            fts = sorted(fts + rest, key=lambda pair: (pair[1], pair[0]))[:n]
            trace.step("candidates_fts_common_terms", candidates_out=len(fts), limit=n,
                       dropped_bound=round(dropped_bound, 3), restricted_to=within)
        return fts

    async def vector_leg() -> tuple[Any, set[str], Any, list[tuple[int, float]]]:
        trace = tracer.fork()
        query_ents = ab.query_extractor.extract(query)
        owners = await owner_names(db, p.filters) if p.filters.user_id else set()
        if not use_vector:
            return query_ents, owners, None, []
        vector_text, dropped_names = await vector_query_text(db, query, query_ents, p.filters,
                                                             share=cfg.vector_name_share,
                                                             sample=cfg.vector_name_sample)
        trace.step("query_names", owner_names=len(owners))
        qvec = await _query_vector(ab, vector_text)
        trace.step("embed_query", dims=int(len(qvec)), text=vector_text if dropped_names else None,
                   dropped_names=dropped_names)
        vec, engine = await knn(db, db.vector_engine, qvec, n, where, params, ab.matrix)
        trace.step("candidates_vector", candidates_out=len(vec), limit=n, engine=engine)
        return query_ents, owners, qvec, vec

    # The two legs read nothing of each other: an engine that serves concurrent reads (PostgreSQL: one pooled
    # connection each) runs them at once; SQLite runs its statements on this thread, so one after the other.
    fts, (query_ents, owners, qvec, vec) = await _both(db, keyword_leg, vector_leg)
    tracer.join()
    if p.mode in ("hybrid", "fts"):
        rankings["fts"] = [rid for rid, _ in fts]
    bm25: dict[int, float] = dict(fts)
    if use_vector:
        rankings["vector"] = [rid for rid, _ in vec]
    distances: dict[int, float] = dict(vec)
    if not use_vector and p.mode != "fts":
        tracer.degrade_reason = degrade
    if p.mode == "hybrid" and degrade:
        tracer.degrade_reason = degrade
    # A name the user goes by ("Which marathon is Erin running?" asked of Erin's memory) marks the user's own
    # turns, which say "I": it leaves the entity boost and lends the speaker boost to them. (The embedded text
    # keeps it: the mem0 adapter's threshold reads the cosine of the query as mem0 embeds it.)
    # A user's name typed in lower case ("what does bob like") names the user too, though no entity is found.
    named = {norm_name(e.text) for e in query_ents if e.label not in NON_TAG_LABELS}  # not "May" the month
    self_named = (named & owners) | names_in_query(query, owners)

    def entity_names() -> set[str]:  # the query's entities the boosts read: all but the user's own names
        return {e.text.casefold() for e in query_ents if norm_name(e.text) not in self_named}

    if cfg.weight_temporal > 0 and in_span and tr.absolute and not time_only and p.mode in ("hybrid", "fts"):
        # A calendar date the question names ("on 3 June, 2023", "the week before August 3, 2023", "between May
        # and June 2023") narrows a keyword leg and (with an embedder) a vector leg to that range and the day
        # after it, so turns of that day reach the candidates even when other days match better. Relative words
        # alone ("recently", "last weekend") only re-weight (strategies): how far back they reach is a guess. An
        # open or long range ("before 2020", "in 2021 and in 2023") narrows nothing worth a third and fourth search.
        r_where, r_params = _ranged(p.filters, tr).where("e", db.ops)

        async def keyword_in_range() -> list[tuple[int, float]]:
            return (await db.ops.keyword.search(db, tokens, r_where, r_params, n))[0]

        async def vector_in_range() -> list[tuple[int, float]] | None:
            if qvec is None:
                return None
            return (await knn(db, db.vector_engine, qvec, n, r_where, r_params, ab.matrix))[0]

        in_range, vec_in_range = await _both(db, keyword_in_range, vector_in_range)
        rankings["temporal"] = [rid for rid, _ in in_range]
        if vec_in_range is not None:
            rankings["temporal_vector"] = [rid for rid, _ in vec_in_range]
        tracer.step("candidates_temporal", candidates_out=len(in_range), limit=n,
                    vector_candidates_out=len(rankings.get("temporal_vector", ())))

    q_entities = entity_names()
    if cfg.weight_graph > 0 and q_entities:
        rankings["graph"] = await graph_candidates(ab, q_entities, p.filters, limit=n)
        tracer.step("candidates_graph", candidates_out=len(rankings["graph"]), entities=sorted(q_entities))

    weights = {"fts": cfg.weight_fts, "vector": cfg.weight_vector_preference if "preference" in analysis.intents
               else cfg.weight_vector, "graph": cfg.weight_graph,
               "temporal": cfg.weight_temporal, "temporal_vector": cfg.weight_temporal}
    if llm_subs:  # the model's sub-queries: one keyword or vector leg each (docs/llm.md)
        from ..llm.query import SUB_QUERY_WEIGHT

        legs = {}
        for i, sub in enumerate(llm_subs):
            sub_tokens = query_tokens(clean_query(sub["text"]))
            if sub["type"] == "semantic" and use_vector:
                svec = await _query_vector(ab, sub["text"])
                found, _ = await knn(db, db.vector_engine, svec, n, where, params, ab.matrix)
                leg, weight = f"llm_vector_{i}", weights["vector"] * SUB_QUERY_WEIGHT
            elif sub_tokens and p.mode in ("hybrid", "fts"):
                found, _ = await db.ops.keyword.search(db, sub_tokens, where, params, n)
                leg, weight = f"llm_fts_{i}", cfg.weight_fts * SUB_QUERY_WEIGHT
            else:
                continue
            rankings[leg] = [rid for rid, _ in found]
            weights[leg] = weight
            legs[leg] = len(found)
        tracer.step("candidates_llm_sub_queries", candidates_out=sum(legs.values()), legs=legs)
    fused = weighted_rrf(rankings, weights, k=cfg.rrf_k)
    tracer.step("fusion_rrf", candidates_in=sum(len(v) for v in rankings.values()), candidates_out=len(fused),
                k=cfg.rrf_k, weights=weights)
    if not fused:
        tracer.step("final", candidates_out=0)
        await _persist(ab, p, tracer, [])
        return []

    # Boosts multiply scores by at most ~2.6, so only the head of the fused list can reach the top_k: load and
    # shape at most `rerank_pool` candidates.
    pool = max(cfg.rerank_pool, 5 * top_k_pool)
    rids = list(fused)[:pool]  # weighted_rrf returns the best first
    rows = await db.ops.retrieval.entry_rows(db, rids)
    entries = {row[0]: EntryView(row) for row in rows}
    # the scale: the legs that ran, but not a bonus leg (temporal, graph) that found nothing
    max_rrf = max_rrf_score(weights, cfg.rrf_k, [leg for leg, ids in rankings.items()
                                                 if ids or leg in ("fts", "vector")])
    cands: dict[int, dict[str, Any]] = {}
    for rid in rids:
        fs = fused[rid]
        if rid not in entries:
            continue
        parts = {"rrf": fs.score, "rrf_norm": fs.score / max_rrf if max_rrf else 0.0}
        for signal, rank in fs.ranks.items():
            parts[f"{signal}_rank"] = float(rank)
        if rid in bm25:
            parts["bm25"] = bm25[rid]
        if rid in distances:
            parts["cosine_similarity"] = 1.0 - distances[rid]
        cands[rid] = {"entry": entries[rid], "score": fs.score, "matched_by": fs.matched_by, "parts": parts}
    tracer.step("load_entries", candidates_in=len(fused), candidates_out=len(cands), pool=pool)

    if self_named:
        # the user is one of a conversation's named speakers ("Melanie" talking with Caroline): her turns carry
        # her name, so the name keeps its usual boosts
        speakers = {norm_name(c["entry"].name) for c in cands.values() if c["entry"].category == "turn"
                    and c["entry"].name}
        if self_named & speakers:
            self_named -= speakers
            q_entities = entity_names()

    # 6. NER boost on fused results only.
    boosted = 0
    for c in cands.values():
        mult, level = ner_boost(q_entities, c["entry"].tags, c["entry"].l2_full, cfg)
        if mult != 1.0:
            boosted += 1
            c["score"] *= mult
            c["parts"]["ner_boost"] = mult
            c["matched_by"] = f"ner+{c['matched_by']}"
    speaker_boosted = speaker_boost(cands, q_entities, cfg.speaker_boost, user_turns=bool(self_named))
    tracer.step("ner_boost", candidates_in=len(cands), candidates_out=len(cands), query_entities=sorted(q_entities),
                boosted=boosted, speaker_boosted=speaker_boosted, user_named=sorted(self_named))

    # 7. query-type strategies.
    if p.strategy != "flat":
        applied = apply_strategies(cands, analysis, p.reference_time, cfg)
        tracer.step("strategy", candidates_in=len(cands), candidates_out=len(cands), applied=applied)

    # 8. session co-retrieval.
    if cfg.co_retrieval and p.strategy != "flat":
        added = co_retrieval(cands)
        tracer.step("co_retrieval", candidates_in=len(cands), candidates_out=len(cands), boosted=added)

    # 8b. the best turns lend to the reply after a question and to the speaker's next turn.
    if (cfg.reply_boost > 0 or cfg.continuation_boost > 0) and p.strategy != "flat":
        await _neighbours(db, cands, p.filters, cfg, tracer)

    # 8c. turns that only ask, once they have lent their score to their replies.
    if cfg.question_penalty != 1.0 and p.strategy != "flat":
        demoted = 0
        for c in cands.values():
            if c["entry"].category == "turn" and only_asks(c["entry"].l2_full, cfg.question_statement_chars):
                c["score"] *= cfg.question_penalty
                c["parts"]["question_penalty"] = cfg.question_penalty
                demoted += 1
        tracer.step("question_penalty", candidates_in=len(cands), candidates_out=len(cands), demoted=demoted)

    # 8d. assistant turns, unless the query speaks to the assistant.
    if cfg.assistant_turn_factor != 1.0 and p.strategy != "flat" and not addresses_assistant(query):
        demoted = assistant_turns(cands, cfg.assistant_turn_factor)
        tracer.step("assistant_turns", candidates_in=len(cands), candidates_out=len(cands), demoted=demoted)

    # 8e. texts stating a value a later message replaced ("I live in Toronto" once "we moved to Vancouver").
    if cfg.superseded_source_factor != 1.0 and p.strategy != "flat":
        demoted = await _superseded_sources(db, cands, p.filters, cfg.superseded_source_factor)
        tracer.step("superseded_sources", candidates_in=len(cands), candidates_out=len(cands), demoted=demoted)

    # 9. heuristic rerank.
    scored = _rerank(cands, p, cfg)
    if p.reranker is not None:
        head = scored[: max(top_k_pool * 3, 30)]
        by_id = {cands[r]["entry"].id: r for r in head}
        ranked = await asyncio.get_running_loop().run_in_executor(
            ab.rerank_executor(), apply_reranker, p.reranker, query,
            [(cands[r]["entry"].id, cands[r]["entry"].l2_full) for r in head])
        for entry_id, score in ranked:
            cands[by_id[entry_id]]["parts"]["reranker"] = score
        scored = [by_id[entry_id] for entry_id, _ in ranked] + scored[len(head):]
    elif getattr(ab, "llm", None) is not None and ab.settings.llm.use("rerank") and scored:
        # the model as the reranker, through the same seam: its order becomes scores (llm/query.py)
        from ..llm.query import RERANK_POOL, llm_order_scores

        head = scored[:RERANK_POOL]
        by_id = {cands[r]["entry"].id: r for r in head}
        pairs = [(cands[r]["entry"].id, cands[r]["entry"].l2_full) for r in head]
        llm_scores, details = await llm_order_scores(ab.llm, query, pairs)
        if llm_scores is not None:
            ranked = apply_reranker(lambda _q, _c: llm_scores, query, pairs)
            for entry_id, score in ranked:
                cands[by_id[entry_id]]["parts"]["llm_rerank"] = score
            scored = [by_id[entry_id] for entry_id, _ in ranked] + scored[len(head):]
        tracer.step("llm_rerank", candidates_in=len(head), candidates_out=len(head),
                    kept_fused_order=llm_scores is None, **details)
    tracer.step("rerank", candidates_in=len(cands), candidates_out=len(scored),
                weights={"rrf": cfg.rerank_rrf, "freshness": cfg.rerank_freshness,
                         "confidence": cfg.rerank_confidence, "scope": cfg.rerank_scope, "type": cfg.rerank_type},
                custom=p.reranker is not None)

    # 10. level, budget, top_k.
    collapsed: list[str] = []
    results = _finalize(scored, cands, p, top_k, tracer.id if p.trace else None,
                        collapsed if cfg.collapse_sources and p.strategy != "flat" else None)
    tracer.step("final", candidates_in=len(scored), candidates_out=len(results),
                tokens=sum(estimate_tokens(r.text) for r in results), collapsed=collapsed,
                why=[{"id": r.entry.id, "score": round(r.score, 6), "matched_by": r.matched_by,
                      "parts": {k: round(v, 5) for k, v in r.score_parts.items()}} for r in results])
    await _persist(ab, p, tracer, [r.entry.id for r in results])
    return results


async def _neighbours(db: Any, cands: dict[int, dict[str, Any]], filters: Filters, cfg: Any,
                      tracer: Tracer) -> None:
    """Step 8b: the best candidates lend part of their score to the turns that follow them in their session.

    - a reply: each of the best ``reply_pool`` candidates that is a turn asking a question lends ``reply_boost`` x
      its score to the next turn of its session;
    - a continuation: each of the best ``continuation_pool`` turns of a person (role ``user``) that does not only
      ask (a question lends to its reply instead) lends ``continuation_boost`` x its score to the same speaker's
      next turn (same ``name`` and role), when at most one other turn comes between.

    Only a person's turn (role ``user``) is lifted, and it keeps the highest of its own score and what it earns
    (loaded when it was not a candidate); its ``parts`` name the one that was applied (``reply_to_question`` or
    ``continuation``). Targets are looked up with the query's filters, so they can only be
    entries the query may see. Both lists are taken from the ranking before this step.
    """
    order = sorted(cands, key=lambda r: -cands[r]["score"])
    questions = [r for r in order[:cfg.reply_pool] if cands[r]["entry"].category == "turn"
                 and asks_question(cands[r]["entry"].l2_full)] if cfg.reply_boost > 0 else []
    # only a person's turn can lend (its continuation is a person's turn too), so only those take a pool slot;
    # read lazily: the role (JSON metadata) and the question check run only until the pool is full
    lenders = (r for r in order if cands[r]["entry"].category == "turn" and cands[r]["entry"].role() == "user"
               and not only_asks(cands[r]["entry"].l2_full, cfg.question_statement_chars))
    speakers = list(itertools.islice(lenders, cfg.continuation_pool)) if cfg.continuation_boost > 0 else []
    sources = list(dict.fromkeys(questions + speakers))
    if not sources:
        tracer.step("neighbours", candidates_in=len(cands), candidates_out=len(cands), questions=0, speakers=0,
                    lifted=0)
        return
    where, params = filters.where("e", db.ops)
    # The two turns after each source (positions 1 and 2), when a person wrote them (role user: both speakers of a
    # conversation between people, the user of an assistant) and the query may see them; an assistant's answer
    # is not lifted (on LongMemEval it only added long replies: tokens@10 1,410 -> 1,610). A position is counted
    # before the role filter, so an assistant's turn between two user turns still counts as the turn between.
    rows = await db.ops.retrieval.following_user_turns(db, sources, where, params)
    views: dict[int, EntryView] = {}
    replies: dict[int, int] = {}
    following: dict[int, list[tuple[bool, int]]] = {}
    for row in rows:
        src, first, rid = int(row[0]), bool(row[1]), int(row[2])
        views[rid] = cands[rid]["entry"] if rid in cands else EntryView(row[2:])
        if first:
            replies[src] = rid
        following.setdefault(src, []).append((first, rid))
    asked = set(questions)
    earned = {"reply_to_question": reply_scores(cands, {q: r for q, r in replies.items() if q in asked},
                                                cfg.reply_boost),
              "continuation": reply_scores(cands, continuations(cands, speakers, following, views),
                                           cfg.continuation_boost)}
    best: dict[int, tuple[float, str]] = {}  # target -> the higher of what it earns as a reply and a continuation
    for part, scores in earned.items():
        for rid, score in scores.items():
            if score > best.get(rid, (0.0, ""))[0]:
                best[rid] = (score, part)
    n_in, lifted = len(cands), 0
    for rid, (score, part) in best.items():
        if rid not in cands:  # a target that was not a candidate joins with the row already read
            cands[rid] = {"entry": views[rid], "score": 0.0, "matched_by": part, "parts": {"rrf": 0.0}}
        if score > cands[rid]["score"]:
            cands[rid]["score"] = score
            cands[rid]["parts"][part] = round(score, 6)
            lifted += 1
    tracer.step("neighbours", candidates_in=n_in, candidates_out=len(cands), questions=len(questions),
                speakers=len(speakers), lifted=lifted)


def _rerank(cands: dict[int, dict[str, Any]], p: FindParams, cfg: Any) -> list[int]:
    best = max((c["score"] for c in cands.values()), default=1.0) or 1.0
    wanted_types = p.filters.context_type
    for c in cands.values():
        e = c["entry"]
        fresh = freshness(e.event_time or e.created_at, p.reference_time, cfg.freshness_half_life_days)
        scope_match = 1.0 if (p.filters.session_id and e.session_id == p.filters.session_id) or \
            (p.filters.agent_id and e.agent_id == p.filters.agent_id) else 0.5
        type_match = 1.0 if (not wanted_types or e.context_type.value in wanted_types) and \
            e.category != "summary" else 0.5
        final = heuristic_score(c["score"] / best, fresh, e.confidence, scope_match, type_match, cfg)
        c["parts"].update(freshness=fresh, final=final)
        c["final"] = final
    return sorted(cands, key=lambda r: (-cands[r]["final"], r))


def _turn_key(entry: Any) -> tuple[str, str] | None:
    """(session, message id) of a turn; of a fact, the turn it was read from (``commit_session`` records the
    message id and the session); None for other entries."""
    mid = entry.metadata.get("message_id")
    if not isinstance(mid, str) or not entry.session_id:
        return None
    if entry.category == "turn" or entry.metadata.get("source") == "session":
        return entry.session_id, mid
    return None


def _finalize(order: list[int], cands: dict[int, dict[str, Any]], p: FindParams, top_k: int,
              trace_id: str | None, collapsed: list[str] | None) -> list[SearchResult]:
    """The first ``top_k`` of ``order`` as results, within the token budget. With ``collapsed`` (a list), a fact
    whose source turn is already returned whole (it says everything the fact says) is skipped and its id
    appended there; a turn is never skipped for its facts (a message may say more than one fact holds)."""
    results: list[SearchResult] = []
    used = 0
    turns_shown: set[tuple[str, str]] = set()
    for rid in order:
        if len(results) >= top_k:
            break
        c = cands[rid]
        full = c["entry"].entry()
        key = _turn_key(full) if collapsed is not None else None
        if key is not None and full.category != "turn" and key in turns_shown:
            collapsed.append(full.id)
            continue
        level = "l2"
        text = full.l2_full
        if p.strategy == "hierarchical" and p.token_budget is not None:
            remaining = p.token_budget - used
            if estimate_tokens(text) > remaining:
                level, text = ("l1", full.l1_overview) if estimate_tokens(full.l1_overview) <= remaining else \
                    ("l0", full.l0_abstract)
        cost = estimate_tokens(text)
        if p.token_budget is not None and used + cost > p.token_budget:
            if results:
                break
            continue
        used += cost
        if key is not None and full.category == "turn" and level == "l2":
            turns_shown.add(key)
        results.append(SearchResult(entry=full, score=c["final"], matched_by=c["matched_by"], score_parts=c["parts"],
                                    level=level, text=text, trace_id=trace_id))
    return results


async def _persist(ab: Any, p: FindParams, tracer: Tracer, ids: list[str]) -> None:
    """Queue the trace and the recall counts; they are written in batches after the call returns (``get_trace``,
    ``stats`` and ``close`` wait for them)."""
    recalled = ids if ab.settings.retrieval.count_recalls else None
    if p.trace or recalled:
        ab.traces.add(tracer.finish(ids) if p.trace else None, recalled)
