"""LoCoMo evidence-retrieval benchmark (docs/benchmarks.md).

One AgentBase database per conversation, built from all its sessions through the public API (speaker as the
message name, session date as time; :func:`agentbase.datasets.locomo_conversations`). Every QA item is queried
with its ``question`` (``reference_time`` = the conversation's last session date, as if asked right after it).
A retrieved turn is a hit when its ``dia_id`` is in the item's evidence (parsed with the regex ``D\\d+:\\d+``;
malformed entries are tolerated and ids like ``D30:05`` are normalised to ``D30:5``). Metrics: evidence
recall@k = fraction of the item's evidence ids among the first k distinct turns, k in 5, 10, 25; session
recall@5 = fraction of the evidence's sessions among the first 5 distinct sessions. Reported for categories 1-4
together and each (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop), category 5 (adversarial) separately,
and 1-5 together (the LoCoMo paper's overall figure). Items without a parsable evidence id are not scored.

Usage::

    python -m benchmarks.locomo --embedder onnx
    python -m benchmarks.locomo --compare --out benchmarks/results/locomo.json
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from .common import (use_server, add_retrieval_args, run_main, build_embedder, build_settings, config_snapshot, console, default_data, dist,
                     git_info, load_average, machine_info, markdown_table, now_iso, open_cache, out_console,
                     progress, table, write_json)
from .llm_bench import add_llm_args, apply_llm, read_llm_args
from .metrics import dedup_ranked, evidence_recall_at_k, mean
from .systems import BM25System, Doc, Mem0System, QueryRun, build_agentbase, tokenize_words

KS = (5, 10, 25)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
GROUPS = {"cat 1-4": (1, 2, 3, 4), **{f"{c} {n}": (c,) for c, n in CATEGORIES.items()}, "cat 1-5": (1, 2, 3, 4, 5)}
DIA = re.compile(r"D(\d+):(\d+)")
DEFAULT_DATA = "locomo/locomo_dev.json"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.locomo", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=default_data(*DEFAULT_DATA.split("/")),
                   help="LoCoMo JSON (locomo10.json or a subset); default ../shared/data/" + DEFAULT_DATA)
    p.add_argument("--limit", type=int, default=None, help="first N conversations only")
    p.add_argument("--qa-limit", type=int, default=None, help="first N QA items per conversation only")
    p.add_argument("--sessions", type=int, default=None,
                   help="first N sessions of each conversation only, scoring the QA items whose evidence all lies "
                        "in them (a small haystack, e.g. for --llm-config with the LLM ingest uses on)")
    add_retrieval_args(p, "conversation")
    add_llm_args(p)
    args = p.parse_args(argv)
    if not args.data:
        p.error("--data is required (LoCoMo JSON; see docs/benchmarks.md for where to download it)")
    read_llm_args(p, args)
    return args


def norm_dia(text: str) -> list[str]:
    """Every ``D<session>:<turn>`` in ``text`` as ``D<int>:<int>`` (``D30:05`` -> ``D30:5``)."""
    return [f"D{int(a)}:{int(b)}" for a, b in DIA.findall(text or "")]


def parse_evidence(evidence: Any) -> tuple[list[str], int]:
    """Evidence ids of a QA item and the number of list entries that were not a single clean id."""
    items = evidence if isinstance(evidence, list) else [evidence]
    ids: list[str] = []
    malformed = 0
    for item in items:
        found = norm_dia(str(item))
        if len(found) != 1 or not re.fullmatch(r"D\d+:\d+", str(item).strip()):
            malformed += 1
        ids.extend(found)
    return list(dict.fromkeys(ids)), malformed


def session_of(conv_id: str, dia: str) -> str:
    return f"{conv_id}:session_{dia[1:].split(':')[0]}"


def first_sessions(conv: Any, n: int) -> Any:
    """``conv`` cut to its first ``n`` sessions, with the QA items whose parsed evidence all lies in them (items
    without parsable evidence are dropped too: they could not be scored)."""
    kept = conv.sessions[:n]
    ids = {s.session_id for s in kept}
    qa = [q for q in conv.qa if (ev := parse_evidence(q.get("evidence", []))[0])
          and all(session_of(conv.conversation_id, d) in ids for d in ev)]
    return dataclasses.replace(conv, sessions=kept, qa=qa)


def turn_key(_session_id: str, meta: dict[str, Any]) -> str | None:
    found = norm_dia(str(meta.get("dia_id") or ""))
    return found[0] if found else None


def score(run: QueryRun, evidence: list[str], sessions: set[str]) -> dict[str, float | None]:
    turns = [h.turn for h in run.hits]
    m: dict[str, float | None] = {f"evidence_recall@{k}": evidence_recall_at_k(turns, evidence, k) for k in KS}
    m["evidence_any@5"] = None if m["evidence_recall@5"] is None else float(m["evidence_recall@5"] > 0)
    m["session_recall@5"] = evidence_recall_at_k([h.session_id for h in run.hits], sessions, 5)
    return m


def system_record(run: QueryRun, run10: QueryRun | None, evidence: list[str], sessions: set[str]) -> dict[str, Any]:
    r10 = run10 or run
    ranked = dedup_ranked([h.turn for h in run.hits])
    return {"metrics": score(run, evidence, sessions), "wall_ms": run.wall_ms, "wall_ms_k10": r10.wall_ms,
            "evidence_ranks": [ranked.index(e) + 1 if e in ranked else None for e in evidence],
            "tokens_k10": r10.tokens(10), "trace_total_ms_k10": r10.trace_total_ms,
            "embed_query_ms_k10": r10.embed_query_ms, "non_embed_ms_k10": r10.non_embed_ms,
            "top_turns": [h.turn for h in run.hits[:10]], "top_kinds": [h.kind for h in run.hits[:10]],
            "top_matched_by": [h.matched_by for h in run.hits[:10]]}


def aggregate(items: list[dict[str, Any]], system: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, cats in GROUPS.items():
        rs = [it["systems"][system]["metrics"] for it in items
              if it["scored"] and it["category"] in cats and system in it["systems"]]
        g: dict[str, Any] = {"n": len(rs)}
        for key in (rs[0] if rs else {}):
            g[key] = mean(r[key] for r in rs)
        out[name] = g
    return out


def timing(items: list[dict[str, Any]], system: str) -> dict[str, Any]:
    rs = [it["systems"][system] for it in items if system in it["systems"]]
    return {"latency_ms_k10": dist([s["wall_ms_k10"] for s in rs]),
            "latency_ms_topk": dist([s["wall_ms"] for s in rs]),
            "trace_total_ms_k10": dist([s["trace_total_ms_k10"] for s in rs]),
            "embed_query_ms_k10": dist([s["embed_query_ms_k10"] for s in rs]),
            "find_minus_embed_ms_k10": dist([s["non_embed_ms_k10"] for s in rs]),
            "context_tokens_k10": dist([s["tokens_k10"] for s in rs])}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    use_server(getattr(args, "db", None))
    from agentbase.datasets import load_json, locomo_conversations

    settings = apply_llm(build_settings(args.config, args.embedder, args.model_path),
                         args.llm["llm"] if getattr(args, "llm", None) else None)
    data = load_json(args.data)
    if args.limit:
        data = data[: args.limit]
    convs = list(locomo_conversations(data))
    if getattr(args, "sessions", None):
        convs = [first_sessions(c, args.sessions) for c in convs]
    embedder = build_embedder(settings)
    cache = open_cache(args.cache, embedder)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if embedder is None:
        modes = [m for m in modes if m != "vector"]
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="agentbase-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    mem0 = Mem0System(embedder, settings.embedder.max_chars, cache, workdir) \
        if args.compare and not args.no_mem0 and embedder is not None else None
    payload: dict[str, Any] = {
        "benchmark": "locomo_evidence_retrieval", "data": str(Path(args.data).resolve()), "started_at": now_iso(),
        "machine": machine_info(), "git": git_info(), "config": config_snapshot(settings, embedder, args),
        "protocol": {"ks": KS, "top_k": args.top_k, "tokens": "len(text)/4 per result (ceil), summed over top 10",
                     "dedup": "units de-duplicated, first occurrence kept, before the cut at k",
                     "reference_time": "last session date of the conversation", "categories": CATEGORIES},
    }
    items: list[dict[str, Any]] = []
    builds: dict[str, Any] = {}
    started = time.perf_counter()
    total = sum(min(len(c.qa), args.qa_limit or len(c.qa)) for c in convs)
    console.print(f"{len(convs)} conversations, {total} QA items, embedder={getattr(embedder, 'model_id', None)}, "
                  f"modes={modes}, workdir={workdir}")
    with progress() as bar:
        task = bar.add_task("LoCoMo", total=total, info="")
        for conv in convs:
            cid = conv.conversation_id
            qa = conv.qa[: args.qa_limit] if args.qa_limit else conv.qa
            ref_time = max(s.date for s in conv.sessions)
            bar.update(task, info=f"{cid}: ingest")
            built = await build_agentbase(workdir / f"{cid}.db", settings, embedder, conv, cache=cache, scope=cid,
                                          turn_key=turn_key, reuse=args.reuse_dbs,
                                          pause_worker=not args.concurrent_embedding)
            builds[cid] = {"agentbase": built.build}
            conv_items: list[dict[str, Any]] = []
            for q in qa:
                evidence, malformed = parse_evidence(q.get("evidence", []))
                conv_items.append({"conversation": cid, "question": q["question"], "category": q.get("category"),
                                   "evidence": evidence, "malformed_evidence_entries": malformed,
                                   "scored": bool(evidence),
                                   "evidence_sessions": sorted({session_of(cid, d) for d in evidence}),
                                   "systems": {}})
            try:
                runs = []
                for it in conv_items:
                    for mode in modes:
                        r = await built.query(it["question"], mode=mode, top_k=args.top_k, reference_time=ref_time)
                        r10 = await built.query(it["question"], mode=mode, top_k=10, reference_time=ref_time)
                        runs.append((it, "agentbase" if mode == "hybrid" else f"agentbase-{mode}", r, r10))
                    bar.update(task, advance=1 if not args.compare else 0.5, info=f"{cid}: queries")
                await built.load_traces([x for _, _, r, r10 in runs for x in (r, r10)])
                for it, name, r, r10 in runs:
                    it["systems"][name] = system_record(r, r10, it["evidence"], set(it["evidence_sessions"]))
                if settings.llm.configured and conv_items:  # LLM totals of this file, on its first item
                    conv_items[0]["llm"] = (await built.db.stats())["llm"]
                    conv_items[0]["finds"] = 2 * len(modes) * len(conv_items)
                    conv_items[0]["messages"] = built.build["messages"]
            finally:
                await built.close(cache, cid, keep=args.keep_dbs)
            if args.compare:
                turns = [(s, t) for s in conv.sessions for t in s.turns]
                docs = [Doc(f"{t.get('name') or t['role']}: {t['content']}", s.session_id,
                            turn_key(s.session_id, t.get("metadata") or {})) for s, t in turns]
                bm = BM25System(docs, tokenize_words)
                builds[cid]["bm25_build_ms"] = bm.build_s * 1000
                # The same turns without the "speaker: " prefix: exactly the text AgentBase indexes per turn.
                bm_text = BM25System([Doc(t["content"], d.session_id, d.turn) for d, (_, t) in zip(docs, turns)],
                                     tokenize_words)
                if mem0 is not None:
                    bar.update(task, info=f"{cid}: mem0 ingest")
                    raw = [Doc(t["content"], d.session_id, d.turn) for d, (_, t) in zip(docs, turns)]
                    builds[cid]["mem0"] = mem0.build(raw, [t["role"] for _, t in turns],
                                                     [t.get("name") for _, t in turns], scope=f"mem0:{cid}")
                for it in conv_items:
                    sessions = set(it["evidence_sessions"])
                    it["systems"]["bm25"] = system_record(bm.query(it["question"], args.top_k), None,
                                                          it["evidence"], sessions)
                    it["systems"]["bm25-text"] = system_record(bm_text.query(it["question"], args.top_k), None,
                                                               it["evidence"], sessions)
                    if mem0 is not None:
                        r = mem0.query(it["question"], args.top_k)
                        r10 = mem0.query(it["question"], 10)
                        it["systems"]["mem0"] = system_record(r, r10, it["evidence"], sessions)
                    bar.update(task, advance=0.5, info=f"{cid}: baselines")
            items.extend(conv_items)
            if not console.is_terminal:
                console.print(f"{cid}: {len(conv_items)} items, build {built.build['total_s']:.1f}s, "
                              f"elapsed {time.perf_counter() - started:.0f}s")
            if args.out:
                write_json(args.out, {**payload, "complete": False, "items": items})
    if mem0 is not None:
        mem0.cleanup()
    systems = list(dict.fromkeys(s for it in items for s in it["systems"]))
    payload.update(
        elapsed_s=time.perf_counter() - started, n_conversations=len(convs), n_items=len(items),
        n_scored=sum(it["scored"] for it in items),
        n_unscored_no_evidence=sum(not it["scored"] for it in items),
        n_malformed_evidence_entries=sum(it["malformed_evidence_entries"] for it in items),
        categories_count=dict(Counter(str(it["category"]) for it in items if it["scored"])),
        build=builds,
        build_summary={key: dist([b["agentbase"][key] for b in builds.values()]) for key in
                       ("ingest_s", "flush_s", "total_s", "entries", "embeddings", "embedded_now", "messages")},
        results={s: {"groups": aggregate(items, s), "timing": timing(items, s)} for s in systems},
        signals=signal_summary(items), complete=True, loadavg_end=load_average(), items=items)
    if cache is not None:
        cache.close()
    return payload


def signal_summary(items: list[dict[str, Any]]) -> dict[str, Any]:
    hy = [it["systems"]["agentbase"] for it in items if it["scored"] and "agentbase" in it["systems"]]
    if not hy:
        return {}
    out: dict[str, Any] = {"top10_kinds": dict(Counter(k for s in hy for k in s["top_kinds"])),
                           "top10_matched_by": dict(Counter(m for s in hy for m in s["top_matched_by"]))}
    for other in ("agentbase-fts", "agentbase-vector", "bm25"):
        wins = losses = 0
        by_cat: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for it in items:
            if not it["scored"] or other not in it["systems"] or "agentbase" not in it["systems"]:
                continue
            a = it["systems"]["agentbase"]["metrics"]["evidence_recall@10"]
            b = it["systems"][other]["metrics"]["evidence_recall@10"]
            wins += a > b
            losses += a < b
            by_cat[str(it["category"])][0] += a > b
            by_cat[str(it["category"])][1] += a < b
        out[f"hybrid_vs_{other}_evidence_recall@10"] = {"hybrid_better": wins, "hybrid_worse": losses,
                                                        "by_category": dict(by_cat)}
    return out


# ---------------------------------------------------------------------------------------------- report
def report(payload: dict[str, Any]) -> str:
    md: list[str] = []

    def emit(title: str, cols: list[str], rows: list[list[Any]]) -> None:
        out_console.print(table(title, cols, rows))
        md.extend([f"**{title}**", "", markdown_table(cols, rows), ""])

    res = payload["results"]
    cols = ["system"] + [f"{g} R@{k}" for g in ("cat 1-4",) for k in KS] + ["cat 1-4 sessR@5", "cat 5 R@10",
                                                                             "cat 1-5 R@5", "cat 1-5 R@10",
                                                                             "p50 ms", "p95 ms", "tokens@10"]
    rows = []
    base = res.get("agentbase")
    for name, r in res.items():
        g = r["groups"]
        vals = [g["cat 1-4"].get(f"evidence_recall@{k}") for k in KS] + [
            g["cat 1-4"].get("session_recall@5"), g["5 adversarial"].get("evidence_recall@10"),
            g["cat 1-5"].get("evidence_recall@5"), g["cat 1-5"].get("evidence_recall@10")]
        if base is not None and name != "agentbase":
            bg = base["groups"]
            bvals = [bg["cat 1-4"].get(f"evidence_recall@{k}") for k in KS] + [
                bg["cat 1-4"].get("session_recall@5"), bg["5 adversarial"].get("evidence_recall@10"),
                bg["cat 1-5"].get("evidence_recall@5"), bg["cat 1-5"].get("evidence_recall@10")]
            vals = [f"{v:.3f} (x{b / v:.2f})" if v and b is not None else v for v, b in zip(vals, bvals)]
        t = r["timing"]
        rows.append([name] + vals + [t["latency_ms_k10"]["p50"], t["latency_ms_k10"]["p95"],
                                     t["context_tokens_k10"]["mean"]])
    emit(f"LoCoMo evidence recall: {payload['n_scored']} scored items in {payload['n_conversations']} conversations "
         f"((xR) = AgentBase hybrid / system)", cols, rows)
    for name, r in res.items():
        g = r["groups"]
        emit(f"{name} by category", ["group", "n"] + [f"R@{k}" for k in KS] + ["any@5", "sessR@5"],
             [[gname, gv["n"]] + [gv.get(f"evidence_recall@{k}") for k in KS] +
              [gv.get("evidence_any@5"), gv.get("session_recall@5")] for gname, gv in g.items()])
    b = payload["build_summary"]
    trows = [["build s/conversation (ingest+flush)", b["total_s"]["mean"], b["total_s"]["p50"], b["total_s"]["max"]],
             ["  ingest s", b["ingest_s"]["mean"], b["ingest_s"]["p50"], b["ingest_s"]["max"]],
             ["  flush s", b["flush_s"]["mean"], b["flush_s"]["p50"], b["flush_s"]["max"]],
             ["messages/conversation", b["messages"]["mean"], b["messages"]["p50"], b["messages"]["max"]],
             ["entries/conversation", b["entries"]["mean"], b["entries"]["p50"], b["entries"]["max"]],
             ["vectors/conversation", b["embeddings"]["mean"], b["embeddings"]["p50"], b["embeddings"]["max"]]]
    for name, r in res.items():
        t = r["timing"]
        trows.append([f"{name}: query wall ms (top_k=10)", t["latency_ms_k10"]["mean"], t["latency_ms_k10"]["p50"],
                      t["latency_ms_k10"]["p95"]])
        if name.startswith("agentbase"):
            trows.append(["  embed_query ms", t["embed_query_ms_k10"]["mean"], t["embed_query_ms_k10"]["p50"],
                          t["embed_query_ms_k10"]["p95"]])
            trows.append(["  find minus embed_query ms", t["find_minus_embed_ms_k10"]["mean"],
                          t["find_minus_embed_ms_k10"]["p50"], t["find_minus_embed_ms_k10"]["p95"]])
    emit("Timing and context size (mean / p50 / p95; build rows: mean / p50 / max)",
         ["figure", "mean", "p50", "p95|max"], trows)
    return "\n".join(md)


def main(argv: list[str] | None = None) -> int:
    from . import llm_bench

    argv = list(sys.argv[1:] if argv is None else argv)
    if "--qa" in argv:
        return run_main(argv, parse_args, lambda a: llm_bench.run_qa(a, "locomo"), llm_bench.qa_report)
    if any(a == "--llm-config" or a.startswith("--llm-config=") for a in argv):
        return run_main(argv, parse_args, lambda a: llm_bench.run_retrieval_pair(a, run),
                        lambda p: llm_bench.pair_report(p, report, pair_metrics))
    return run_main(argv, parse_args, run, report)



def pair_metrics(payload: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """Side-by-side rows of ``--llm-config`` runs: hybrid evidence recall (cat 1-4) at 5/10/25, zero-LLM vs LLM."""
    def get(p: dict[str, Any], key: str) -> Any:
        return p["results"].get("agentbase", {}).get("groups", {}).get("cat 1-4", {}).get(key)
    return [(f"cat 1-4 {key}", get(payload["zero_llm"], key), get(payload["llm"], key))
            for key in ("evidence_recall@5", "evidence_recall@10", "evidence_recall@25")]


if __name__ == "__main__":
    sys.exit(main())
