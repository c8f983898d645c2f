"""LongMemEval_S retrieval benchmark (the paper's protocol; docs/benchmarks.md).

Per question: a fresh AgentBase database built from its haystack through the public API
(:func:`agentbase.datasets.ingest_conversation`: sessions in order, their dates as message times), then
``find(question, reference_time=question_date)``. Scored at session level (gold = ``answer_session_ids``) and at
turn level (gold = turns with ``has_answer``), ``recall_any@k``, ``recall_all@k``, ``ndcg_any@k`` for k in
1, 3, 5, 10, overall and per ``question_type``, over non-abstention questions (ids ending ``_abs`` are built and
timed but not scored).

Mapping results to units: every result entry maps to its session (``entry.session_id``). At turn level a turn
entry maps to its message's ``turn_index``, a fact entry to its source message (``metadata["message_id"]``) and
a summary to no turn (it takes no turn slot). The ranked units are de-duplicated (first occurrence wins) before
the cut at k, see :mod:`benchmarks.metrics`. Each query asks for ``--top-k`` (50) results and the metrics are
computed at k from that list; a second ``find(top_k=10)`` call gives the latency and context size an agent
would see.

Usage::

    python -m benchmarks.longmemeval --limit 10 --embedder onnx
    python -m benchmarks.longmemeval --compare --out results/longmemeval.json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from .common import (use_server, add_retrieval_args, run_main, build_embedder, build_settings, config_snapshot, console, default_data, dist,
                     git_info, load_average, machine_info, markdown_table, now_iso, open_cache, out_console, progress, table,
                     write_json)
from .llm_bench import add_llm_args, apply_llm, read_llm_args
from .metrics import mean, ndcg_any_at_k, recall_all_at_k, recall_any_at_k
from .systems import BM25System, Doc, Mem0System, QueryRun, build_agentbase, tokenize_whitespace

KS = (1, 3, 5, 10)
LEVELS = ("session", "turn")
METRICS = ("recall_any", "recall_all", "ndcg_any")
DEFAULT_DATA = "longmemeval/longmemeval_s_dev.json.xz"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.longmemeval", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=default_data(*DEFAULT_DATA.split("/")),
                   help="LongMemEval JSON (.json or .json.xz); default ../shared/data/" + DEFAULT_DATA)
    p.add_argument("--limit", type=int, default=None, help="first N questions only")
    add_retrieval_args(p, "question")
    p.add_argument("--compare-limit", type=int, default=10,
                   help="questions in the mem0 comparison subset (stratified over question types; default 10)")
    p.add_argument("--stratified", action="store_true",
                   help="with --limit: take N questions round-robin over the question types instead of the "
                        "first N (the file is ordered by type)")
    p.add_argument("--question", action="append", default=None, help="only this question id (repeatable)")
    add_llm_args(p)
    args = p.parse_args(argv)
    if not args.data:
        p.error("--data is required (LongMemEval_S JSON; see docs/benchmarks.md for where to download it)")
    read_llm_args(p, args)
    return args


# ---------------------------------------------------------------------------------------------- scoring
def score(run: QueryRun, gold_sessions: set[str], gold_turns: set[str],
          levels: tuple[str, ...] = LEVELS) -> dict[str, dict[str, float | None]]:
    ranked = {"session": [h.session_id for h in run.hits], "turn": [h.turn for h in run.hits]}
    gold = {"session": gold_sessions, "turn": gold_turns}
    out: dict[str, dict[str, float | None]] = {}
    for level in levels:
        m: dict[str, float | None] = {}
        for k in KS:
            m[f"recall_any@{k}"] = recall_any_at_k(ranked[level], gold[level], k)
            m[f"recall_all@{k}"] = recall_all_at_k(ranked[level], gold[level], k)
            m[f"ndcg_any@{k}"] = ndcg_any_at_k(ranked[level], gold[level], k)
        out[level] = m
    return out


def first_gold_rank(units: list[str | None], gold: set[str]) -> int | None:
    from .metrics import dedup_ranked

    for rank, u in enumerate(dedup_ranked(units), start=1):
        if u in gold:
            return rank
    return None


def aggregate(rows: list[dict[str, Any]], system: str, qids: set[str] | None = None) -> dict[str, Any]:
    """Mean metrics of ``system`` over the scored questions (optionally only ``qids``): overall and per type."""
    scored = [r for r in rows if r["scored"] and system in r["systems"] and (qids is None or r["question_id"] in qids)]
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in scored:
        groups["overall"].append(r)
        groups[r["question_type"]].append(r)
    out: dict[str, Any] = {}
    for name, rs in groups.items():
        g: dict[str, Any] = {"n": len(rs)}
        for level in LEVELS:
            vals = [r["systems"][system]["metrics"].get(level) for r in rs]
            vals = [v for v in vals if v]
            g[level] = {key: mean(v[key] for v in vals) for key in (vals[0] if vals else {})}
            g[level]["n"] = sum(1 for v in vals if v.get("recall_any@1") is not None)
        out[name] = g
    return out


def timing(rows: list[dict[str, Any]], system: str) -> dict[str, Any]:
    rs = [r["systems"][system] for r in rows if system in r["systems"]]
    return {
        "latency_ms_k10": dist([s.get("wall_ms_k10") for s in rs]),
        "latency_ms_topk": dist([s.get("wall_ms") for s in rs]),
        "trace_total_ms_k10": dist([s.get("trace_total_ms_k10") for s in rs]),
        "embed_query_ms_k10": dist([s.get("embed_query_ms_k10") for s in rs]),
        "find_minus_embed_ms_k10": dist([s.get("non_embed_ms_k10") for s in rs]),
        "context_tokens_k10": dist([s.get("tokens_k10") for s in rs]),
    }


# ---------------------------------------------------------------------------------------------- run
def stratified(records: list[dict[str, Any]], n: int) -> list[str]:
    """Round-robin over question types (file order within a type), non-abstention questions only."""
    by_type: dict[str, list[str]] = defaultdict(list)
    for r in records:
        if not r["question_id"].endswith("_abs"):
            by_type[r["question_type"]].append(r["question_id"])
    picked: list[str] = []
    types = sorted(by_type)
    i = 0
    while len(picked) < n and any(by_type.values()):
        t = types[i % len(types)]
        if by_type[t]:
            picked.append(by_type[t].pop(0))
        i += 1
    return picked


def turn_key(session_id: str, meta: dict[str, Any]) -> str | None:
    idx = meta.get("turn_index")
    return None if idx is None else f"{session_id}#{idx}"


def system_record(run: QueryRun, run10: QueryRun | None, gold_s: set[str], gold_t: set[str],
                  levels: tuple[str, ...] = LEVELS) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "metrics": score(run, gold_s, gold_t, levels),
        "wall_ms": run.wall_ms,
        "first_gold_session_rank": first_gold_rank([h.session_id for h in run.hits], gold_s),
        "first_gold_turn_rank": first_gold_rank([h.turn for h in run.hits], gold_t),
        "top_sessions": [h.session_id for h in run.hits[:10]],
        "top_kinds": [h.kind for h in run.hits[:10]],
        "top_matched_by": [h.matched_by for h in run.hits[:10]],
    }
    r10 = run10 or run
    rec.update(wall_ms_k10=r10.wall_ms, tokens_k10=r10.tokens(10), trace_total_ms_k10=r10.trace_total_ms,
               embed_query_ms_k10=r10.embed_query_ms, non_embed_ms_k10=r10.non_embed_ms, steps_k10=r10.steps)
    return rec


async def run(args: argparse.Namespace) -> dict[str, Any]:
    use_server(getattr(args, "db", None))
    from agentbase.datasets import load_json, longmemeval_conversation
    from agentbase.timeutil import parse_time

    settings = apply_llm(build_settings(args.config, args.embedder, args.model_path),
                         args.llm["llm"] if getattr(args, "llm", None) else None)
    console.print(f"loading {args.data} ...")
    records = load_json(args.data)
    if args.question:
        records = [r for r in records if r["question_id"] in set(args.question)]
    if args.limit and args.stratified:
        keep = set(stratified(records, args.limit))
        records = [r for r in records if r["question_id"] in keep]
    elif args.limit:
        records = records[: args.limit]
    embedder = build_embedder(settings)
    cache = open_cache(args.cache, embedder)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if embedder is None:
        modes = [m for m in modes if m != "vector"]
    compare_ids = set(stratified(records, args.compare_limit)) if args.compare else set()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="agentbase-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    mem0 = Mem0System(embedder, settings.embedder.max_chars, cache, workdir) \
        if args.compare and not args.no_mem0 and embedder is not None else None
    console.print(f"{len(records)} questions, embedder={getattr(embedder, 'model_id', None)}, modes={modes}, "
                  f"cache={cache.path if cache else None} ({cache.rows(embedder.model_id) if cache else 0} rows), "
                  f"workdir={workdir}")
    payload: dict[str, Any] = {
        "benchmark": "longmemeval_s_retrieval", "data": str(Path(args.data).resolve()), "started_at": now_iso(),
        "machine": machine_info(), "git": git_info(), "config": config_snapshot(settings, embedder, args),
        "protocol": {"ks": KS, "top_k": args.top_k, "tokens": "len(text)/4 per result (ceil), summed over top 10",
                     "dedup": "units de-duplicated, first occurrence kept, before the cut at k",
                     "turn_gold": "turns with has_answer (any role)", "session_gold": "answer_session_ids",
                     "ndcg_discount": "1/log2(rank+1), ideal over min(k, |gold|)"},
        "compare_subset": sorted(compare_ids),
    }
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with progress() as bar:
        task = bar.add_task("LongMemEval", total=len(records), info="")
        for i, rec in enumerate(records):
            qid = rec["question_id"]
            conv = longmemeval_conversation(rec)
            qa = conv.qa[0]
            ref_time = parse_time(qa["question_date"])
            gold_s = set(qa["answer_session_ids"])
            gold_t = {f"{sid}#{j}" for sid, sess in zip(rec["haystack_session_ids"], rec["haystack_sessions"])
                      for j, t in enumerate(sess) if t.get("has_answer")}
            row: dict[str, Any] = {"question_id": qid, "question_type": rec["question_type"],
                                   "scored": not qid.endswith("_abs"), "n_gold_sessions": len(gold_s),
                                   "n_gold_turns": len(gold_t), "systems": {}}
            bar.update(task, info=f"{qid}: ingest")
            built = await build_agentbase(workdir / f"{qid}.db", settings, embedder, conv, cache=cache, scope=qid,
                                          turn_key=turn_key, reuse=args.reuse_dbs,
                                          pause_worker=not args.concurrent_embedding)
            row["build"] = built.build
            try:
                runs = {}
                for mode in modes:
                    bar.update(task, info=f"{qid}: find {mode}")
                    r = await built.query(qa["question"], mode=mode, top_k=args.top_k, reference_time=ref_time)
                    r10 = await built.query(qa["question"], mode=mode, top_k=10, reference_time=ref_time)
                    runs["agentbase" if mode == "hybrid" else f"agentbase-{mode}"] = (r, r10)
                await built.load_traces([x for pair in runs.values() for x in pair])
                for name, (r, r10) in runs.items():
                    row["systems"][name] = system_record(r, r10, gold_s, gold_t)
                if settings.llm.configured:  # the file's LLM token totals after ingest and these queries
                    row["llm"], row["finds"] = (await built.db.stats())["llm"], 2 * len(modes)
            finally:
                await built.close(cache, qid, keep=args.keep_dbs)
            if args.compare:
                bar.update(task, info=f"{qid}: bm25")
                row["baseline_build"] = {}
                all_turns = [(s, t) for s in conv.sessions for t in s.turns]
                turn_docs = [Doc(t["content"], s.session_id, f"{s.session_id}#{t['metadata']['turn_index']}")
                             for s, t in all_turns]
                user_docs = [d for d, (_, t) in zip(turn_docs, all_turns) if t["role"] == "user"]
                session_docs = [Doc(" ".join(t["content"] for t in s.turns if t["role"] == "user"), s.session_id,
                                    None) for s in conv.sessions]
                for name, docs in (("bm25-turn", user_docs), ("bm25-turn-all", turn_docs),
                                   ("bm25-session", session_docs)):
                    bm = BM25System(docs, tokenize_whitespace)
                    r = bm.query(qa["question"], args.top_k)
                    row["systems"][name] = system_record(r, None, gold_s, gold_t,
                                                         ("session",) if name == "bm25-session" else LEVELS)
                    row["systems"][name]["index_build_ms"] = bm.build_s * 1000
                if mem0 is not None and qid in compare_ids:
                    bar.update(task, info=f"{qid}: mem0")
                    row["baseline_build"]["mem0"] = mem0.build(turn_docs, [t["role"] for _, t in all_turns],
                                                               [t.get("name") for _, t in all_turns], scope=qid)
                    r = mem0.query(qa["question"], args.top_k)
                    r10 = mem0.query(qa["question"], 10)
                    row["systems"]["mem0"] = system_record(r, r10, gold_s, gold_t)
            rows.append(row)
            h = [x["systems"].get("agentbase", {}).get("metrics", {}).get("session", {}).get("recall_all@5")
                 for x in rows if x["scored"]]
            info = f"S recall_all@5={mean(h) or 0:.3f} build={built.build['total_s']:.1f}s"
            bar.update(task, advance=1, info=info)
            if not console.is_terminal:
                console.print(f"[{i + 1}/{len(records)}] {qid} {rec['question_type']} {info} "
                              f"elapsed={time.perf_counter() - started:.0f}s")
            if args.out and (i + 1) % 10 == 0:
                write_json(args.out, {**payload, "complete": False, "questions": rows})
    if mem0 is not None:
        mem0.cleanup()
    systems = list(dict.fromkeys(s for r in rows for s in r["systems"]))
    payload["elapsed_s"] = time.perf_counter() - started
    payload["n_questions"] = len(rows)
    payload["n_scored"] = sum(r["scored"] for r in rows)
    payload["question_types"] = dict(Counter(r["question_type"] for r in rows if r["scored"]))
    payload["build"] = {key: dist([r["build"][key] for r in rows]) for key in
                        ("ingest_s", "flush_s", "total_s", "seed_s", "entries", "embeddings", "embedded_now",
                         "cache_hits", "messages")}
    payload["build"]["total_build_s"] = sum(r["build"]["total_s"] for r in rows)
    if mem0 is not None:
        m0 = [r["baseline_build"]["mem0"] for r in rows if "mem0" in r.get("baseline_build", {})]
        payload["build_mem0"] = {key: dist([b[key] for b in m0]) for key in
                                 ("total_s", "embed_s", "add_s", "embedded_now", "cache_hits")}
    payload["results"] = {s: {"all": aggregate(rows, s), "timing": timing(rows, s)} for s in systems}
    if compare_ids:
        payload["compare"] = {s: {"all": aggregate(rows, s, compare_ids),
                                  "timing": timing([r for r in rows if r["question_id"] in compare_ids], s)}
                              for s in systems}
    payload["signals"] = signal_summary(rows)
    payload["complete"] = True
    payload["loadavg_end"] = load_average()
    payload["questions"] = rows
    if cache is not None:
        cache.close()
    return payload


def signal_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Where the hybrid ranking's top 10 comes from, and how often each mode alone beats it (session recall_all@5)."""
    out: dict[str, Any] = {}
    hy = [r["systems"]["agentbase"] for r in rows if r["scored"] and "agentbase" in r["systems"]]
    if not hy:
        return out
    out["top10_kinds"] = dict(Counter(k for s in hy for k in s["top_kinds"]))
    out["top10_matched_by"] = dict(Counter(m for s in hy for m in s["top_matched_by"]))
    for other in ("agentbase-fts", "agentbase-vector", "bm25-turn"):
        wins = losses = 0
        for r in rows:
            if not r["scored"] or other not in r["systems"] or "agentbase" not in r["systems"]:
                continue
            a = r["systems"]["agentbase"]["metrics"]["session"]["recall_all@5"]
            b = r["systems"][other]["metrics"]["session"]["recall_all@5"]
            wins += a > b
            losses += a < b
        out[f"hybrid_vs_{other}_session_recall_all@5"] = {"hybrid_better": wins, "hybrid_worse": losses}
    return out


# ---------------------------------------------------------------------------------------------- report
SUMMARY_COLS = ["system", "n", "S any@1", "S any@5", "S all@5", "S ndcg@10", "T any@5", "T all@10", "T ndcg@10",
                "p50 ms", "p95 ms"]


def summary_rows(results: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for name, res in results.items():
        o = res["all"].get("overall", {})
        s, t = o.get("session", {}), o.get("turn", {})
        lat = res["timing"]["latency_ms_k10"]
        rows.append([name, o.get("n"), s.get("recall_any@1"), s.get("recall_any@5"), s.get("recall_all@5"),
                     s.get("ndcg_any@10"), t.get("recall_any@5"), t.get("recall_all@10"), t.get("ndcg_any@10"),
                     lat["p50"], lat["p95"]])
    return rows


def detail_rows(res: dict[str, Any], level: str) -> list[list[Any]]:
    o = res["all"]["overall"][level]
    return [[m] + [o.get(f"{m}@{k}") for k in KS] for m in METRICS]


def type_rows(res: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for name, g in sorted(res["all"].items(), key=lambda kv: (kv[0] != "overall", kv[0])):
        s, t = g["session"], g["turn"]
        rows.append([name, g["n"], s.get("recall_any@1"), s.get("recall_any@5"), s.get("recall_all@5"),
                     s.get("recall_all@10"), s.get("ndcg_any@10"), t.get("recall_any@5"), t.get("recall_all@10"),
                     t.get("ndcg_any@10")])
    return rows


TYPE_COLS = ["question_type", "n", "S any@1", "S any@5", "S all@5", "S all@10", "S ndcg@10", "T any@5", "T all@10",
             "T ndcg@10"]


def mode_type_rows(results: dict[str, Any], metric: tuple[str, str]) -> tuple[list[str], list[list[Any]]]:
    systems = list(results)
    types = sorted({t for r in results.values() for t in r["all"]}, key=lambda t: (t != "overall", t))
    rows = [[t] + [results[s]["all"].get(t, {}).get(metric[0], {}).get(metric[1]) for s in systems] for t in types]
    return ["question_type"] + systems, rows


def timing_rows(payload: dict[str, Any]) -> list[list[Any]]:
    b = payload["build"]
    rows = [["build s/question (ingest+flush)", b["total_s"]["mean"], b["total_s"]["p50"], b["total_s"]["p95"]],
            ["  ingest s (create/add/commit)", b["ingest_s"]["mean"], b["ingest_s"]["p50"], b["ingest_s"]["p95"]],
            ["  flush s (remaining embeddings)", b["flush_s"]["mean"], b["flush_s"]["p50"], b["flush_s"]["p95"]],
            ["entries/question", b["entries"]["mean"], b["entries"]["p50"], b["entries"]["p95"]],
            ["vectors/question", b["embeddings"]["mean"], b["embeddings"]["p50"], b["embeddings"]["p95"]],
            ["  embedded now (cache misses)", b["embedded_now"]["mean"], b["embedded_now"]["p50"],
             b["embedded_now"]["p95"]]]
    for name, res in payload["results"].items():
        if not name.startswith("agentbase") and name != "mem0":
            continue
        t = res["timing"]
        rows.append([f"{name}: find(top_k=10) wall ms", t["latency_ms_k10"]["mean"], t["latency_ms_k10"]["p50"],
                     t["latency_ms_k10"]["p95"]])
        if name.startswith("agentbase"):
            rows.append(["  trace total ms", t["trace_total_ms_k10"]["mean"], t["trace_total_ms_k10"]["p50"],
                         t["trace_total_ms_k10"]["p95"]])
            rows.append(["  embed_query ms", t["embed_query_ms_k10"]["mean"], t["embed_query_ms_k10"]["p50"],
                         t["embed_query_ms_k10"]["p95"]])
            rows.append(["  find minus embed_query ms", t["find_minus_embed_ms_k10"]["mean"],
                         t["find_minus_embed_ms_k10"]["p50"], t["find_minus_embed_ms_k10"]["p95"]])
        rows.append(["  context tokens @10 (len/4)", t["context_tokens_k10"]["mean"], t["context_tokens_k10"]["p50"],
                     t["context_tokens_k10"]["p95"]])
    return rows


COMPARE_METRICS = [("session", "recall_any@1"), ("session", "recall_any@5"), ("session", "recall_all@5"),
                   ("session", "ndcg_any@10"), ("turn", "recall_any@5"), ("turn", "recall_all@10"),
                   ("turn", "ndcg_any@10")]


def compare_rows(payload: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    comp = payload.get("compare") or {}
    base = comp.get("agentbase")
    cols = ["system", "n"] + [f"{'S' if lv == 'session' else 'T'} {m}" for lv, m in COMPARE_METRICS] + \
        ["p50 ms", "p95 ms", "tokens@10"]
    rows = []
    for name, res in comp.items():
        o = res["all"].get("overall")
        if not o:
            continue
        row: list[Any] = [name, o["n"]]
        for lv, m in COMPARE_METRICS:
            v = o[lv].get(m)
            b = base["all"]["overall"][lv].get(m) if base else None
            if name == "agentbase" or v is None or b is None:
                row.append(v)
            else:
                row.append(f"{v:.3f} (x{b / v:.2f})" if v else f"{v:.3f} (-)")
        t = res["timing"]
        row += [t["latency_ms_k10"]["p50"], t["latency_ms_k10"]["p95"], t["context_tokens_k10"]["mean"]]
        rows.append(row)
    return cols, rows


def report(payload: dict[str, Any]) -> str:
    """Print the tables; return them as Markdown."""
    md: list[str] = []

    def emit(title: str, cols: list[str], rows: list[list[Any]]) -> None:
        out_console.print(table(title, cols, rows))
        md.extend([f"**{title}**", "", markdown_table(cols, rows), ""])

    res = payload["results"]
    emit(f"LongMemEval_S: {payload['n_scored']} scored questions of {payload['n_questions']} "
         f"(S = session level, T = turn level)", SUMMARY_COLS, summary_rows(res))
    if "agentbase" in res:
        for level in LEVELS:
            emit(f"AgentBase hybrid, {level} level", ["metric"] + [f"@{k}" for k in KS],
                 detail_rows(res["agentbase"], level))
        emit("AgentBase hybrid by question type", TYPE_COLS, type_rows(res["agentbase"]))
    for metric in (("session", "recall_all@5"), ("turn", "recall_all@10")):
        cols, rows = mode_type_rows(res, metric)
        emit(f"{metric[0]} {metric[1]} by question type and system", cols, rows)
    emit("Timing and context size (per question)", ["figure", "mean", "p50", "p95"], timing_rows(payload))
    if payload.get("compare"):
        cols, rows = compare_rows(payload)
        emit(f"Comparison on {len(payload['compare_subset'])} questions (stratified subset; "
             f"(xR) = AgentBase hybrid / system)", cols, rows)
    return "\n".join(md)


def main(argv: list[str] | None = None) -> int:
    from . import llm_bench

    argv = list(sys.argv[1:] if argv is None else argv)
    if "--qa" in argv:
        return run_main(argv, parse_args, lambda a: llm_bench.run_qa(a, "longmemeval"), llm_bench.qa_report)
    if any(a == "--llm-config" or a.startswith("--llm-config=") for a in argv):
        return run_main(argv, parse_args, lambda a: llm_bench.run_retrieval_pair(a, run),
                        lambda p: llm_bench.pair_report(p, report, pair_metrics))
    return run_main(argv, parse_args, run, report)



def pair_metrics(payload: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """Side-by-side rows of ``--llm-config`` runs: hybrid session/turn recall at 5 and 10, zero-LLM vs LLM."""
    def get(p: dict[str, Any], level: str, key: str) -> Any:
        return p["results"].get("agentbase", {}).get("all", {}).get("overall", {}).get(level, {}).get(key)
    return [(f"{level} {key}", get(payload["zero_llm"], level, key), get(payload["llm"], level, key))
            for level in LEVELS for key in ("recall_any@5", "recall_all@5", "recall_all@10")]


if __name__ == "__main__":
    sys.exit(main())
