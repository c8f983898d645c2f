"""What the BM25 postings budget (``retrieval.fts_max_postings``) costs in recall and saves in time, on real text.

The per-question LongMemEval haystacks are too small for the budget to act (at most ~460 postings per query), so
this script writes **every** haystack session of the file into **one** database (each distinct session once,
with its date, through the public API; one owner), about 50k messages, and asks every non-abstention question
against all of it in FTS-only mode (the budget acts on the keyword leg only; no embedder is loaded, so the
file builds in about three minutes). For each ``--budgets`` value it prints session ``recall_any@5/10``,
``recall_all@10`` and ``ndcg_any@10`` over the answer sessions, how many queries the budget changed (terms
dropped from the required set), how many of the timed ``find(top_k=10)`` calls also had to score the entries
holding only the common terms (one of them could have outscored the 10th candidate), and their latency p50/p95
(FTS-only: no query embedding). Budget 0 is plain BM25 over every query term.

Usage::

    python -m benchmarks.fts_budget --budgets 0,4000,2000,1000,500 --out benchmarks/results/fts_budget.json
    python -m benchmarks.fts_budget --workdir DIR --reuse   # query again a file an earlier run built in DIR
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import (build_settings, console, default_data, dist, git_info, load_average, machine_info,
                     markdown_table, now_iso, open_agentbase, out_console, progress, run_main, table)
from .metrics import mean, ndcg_any_at_k, recall_all_at_k, recall_any_at_k

DEFAULT_DATA = ("longmemeval", "longmemeval_s_dev.json.xz")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fts_budget", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=default_data(*DEFAULT_DATA), help="LongMemEval JSON (.json or .json.xz)")
    p.add_argument("--budgets", default="0,4000,2000,1000,500",
                   help="comma list of fts_max_postings values (0 = no budget)")
    p.add_argument("--config", default=None, help="AgentBase settings YAML")
    p.add_argument("--ner", default="regex", choices=("regex", "config"),
                   help="NER while building (default regex, to save time; 'config' = the configured one)")
    p.add_argument("--repeat", type=int, default=2, help="timed find(top_k=10) calls per question and budget")
    p.add_argument("--workdir", default=None)
    p.add_argument("--reuse", action="store_true",
                   help="open the all-haystacks file an earlier run left in --workdir instead of building it again")
    p.add_argument("--out", default=None, help="JSON output (a .md with the tables next to it)")
    args = p.parse_args(argv)
    if not args.data:
        p.error("--data is required (LongMemEval_S JSON)")
    try:
        args.budget_list = [int(b) for b in args.budgets.split(",") if b.strip()]
    except ValueError:
        p.error("--budgets must be integers")
    return args


async def build(db: Any, records: list[dict[str, Any]]) -> dict[str, Any]:
    """Write each distinct haystack session once (first occurrence wins), with its date."""
    from agentbase.datasets import Conversation, ingest_conversation, longmemeval_conversation

    seen: set[str] = set()
    counts = {"sessions": 0, "messages": 0, "entries": 0}
    t = time.perf_counter()
    with progress() as bar:
        task = bar.add_task("ingest", total=len(records), info="")
        for rec in records:
            conv = longmemeval_conversation(rec)
            fresh = [s for s in conv.sessions if s.session_id not in seen]
            seen.update(s.session_id for s in fresh)
            got = await ingest_conversation(db, Conversation("all", fresh, []), user_id="bench")
            for key in counts:
                counts[key] += got[key]
            bar.update(task, advance=1, info=f"{counts['messages']} messages")
    counts["ingest_s"] = time.perf_counter() - t
    return counts


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from agentbase.datasets import load_json
    from agentbase.timeutil import parse_time

    settings = build_settings(args.config, "none")
    if args.ner == "regex":
        settings.ner = "regex"
    records = load_json(args.data)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="agentbase-fts-budget-"))
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "all-haystacks.db"
    marker = Path(str(path) + ".built.json")
    if args.reuse and marker.exists():
        db = open_agentbase(path, settings, None)
        await db.initialize()
        built = {**json.loads(marker.read_text()), "reused": True}
    else:
        for suffix in ("", "-wal", "-shm", ".built.json"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        db = open_agentbase(path, settings, None)
        await db.initialize()
        built = await build(db, records)
        marker.write_text(json.dumps(built))
    stats = await db.stats()
    built["entries_total"] = stats["entries_total"]
    console.print(f"built {path}: {built['sessions']} sessions, {built['messages']} messages, "
                  f"{stats['entries_total']} entries in {built['ingest_s']:.0f} s")
    questions = [r for r in records if not r["question_id"].endswith("_abs")]
    results: dict[str, Any] = {}
    for budget in args.budget_list:
        db.settings.retrieval.fts_max_postings = budget
        rows, lat, dropped, timed_ids = [], [], 0, []
        for rec in questions:
            ref = parse_time(rec["question_date"])
            gold = set(rec["answer_session_ids"])
            res = await db.find(rec["question"], top_k=50, mode="fts", user_id="bench", reference_time=ref,
                                trace=True)
            trace = await db.get_trace(res[0].trace_id) if res else None
            if trace is not None and any(s.name == "normalize" and s.details.get("dropped_terms")
                                         for s in trace.steps):
                dropped += 1
            ranked = [r.entry.session_id for r in res]
            rows.append({"any5": recall_any_at_k(ranked, gold, 5), "any10": recall_any_at_k(ranked, gold, 10),
                         "all10": recall_all_at_k(ranked, gold, 10), "ndcg10": ndcg_any_at_k(ranked, gold, 10)})
            for _ in range(args.repeat):
                t = time.perf_counter()
                timed = await db.find(rec["question"], top_k=10, mode="fts", user_id="bench", reference_time=ref,
                                      trace=True)
                lat.append((time.perf_counter() - t) * 1000)
                timed_ids.extend(r.trace_id for r in timed[:1])
        # Traces are read after the timed loop: reading one writes the queue, which would slow the next query.
        passes = 0
        for trace_id in timed_ids:
            trace = await db.get_trace(trace_id)
            passes += any(s.name == "candidates_fts_common_terms" for s in trace.steps)
        results[str(budget)] = {
            "recall_any@5": mean([r["any5"] for r in rows]), "recall_any@10": mean([r["any10"] for r in rows]),
            "recall_all@10": mean([r["all10"] for r in rows]), "ndcg_any@10": mean([r["ndcg10"] for r in rows]),
            "queries_with_dropped_terms": dropped, "questions": len(rows), "find_ms": dist(lat),
            "timed_queries_common_term_pass": passes, "timed_queries": len(timed_ids)}
        console.print(f"budget {budget}: any@5 {results[str(budget)]['recall_any@5']:.3f}, "
                      f"{dropped}/{len(rows)} queries budgeted, p50 {results[str(budget)]['find_ms']['p50']:.1f} ms")
    await db.close()
    return {"benchmark": "fts_budget", "data": args.data, "started_at": now_iso(), "machine": machine_info(),
            "git": git_info(), "build": built, "results": results, "loadavg_end": load_average(),
            "args": {k: v for k, v in vars(args).items()}}


def report(payload: dict[str, Any]) -> str:
    cols = ["fts_max_postings", "S any@5", "S any@10", "S all@10", "S ndcg@10", "queries budgeted",
            "top_k=10 with common-term pass", "find p50 ms", "find p95 ms"]
    rows = []
    for budget, r in payload["results"].items():
        rows.append([budget if budget != "0" else "0 (no budget)", r["recall_any@5"], r["recall_any@10"],
                     r["recall_all@10"], r["ndcg_any@10"], f"{r['queries_with_dropped_terms']}/{r['questions']}",
                     f"{r['timed_queries_common_term_pass']}/{r['timed_queries']}",
                     f"{r['find_ms']['p50']:.1f}", f"{r['find_ms']['p95']:.1f}"])
    b = payload["build"]
    title = (f"FTS-only over all haystacks in one file ({b['sessions']} sessions, {b['messages']} messages, "
             f"{b['entries_total']} entries)")
    out_console.print(table(title, cols, rows))
    return f"{title}\n\n{markdown_table(cols, rows)}"


def main(argv: list[str] | None = None) -> int:
    return run_main(argv, parse_args, run, report)


if __name__ == "__main__":
    raise SystemExit(main())
