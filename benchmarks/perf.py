"""Core performance: ingest throughput, embedding throughput through the job queue, find() latency at scale.

Four measurements (docs/benchmarks.md):

1. **Ingest**: messages/s through ``add_messages`` + ``commit_session`` (turn entries, facts, summary, FTS rows,
   entity tags) into a fresh file, with no embedder (``none``: the database and NER only), with the regex NER
   instead of spaCy (to separate NER from the database), and with the ``hash`` embedder (the job queue and
   vector writes with a near-zero-cost model; ``flush`` included). The ``wait=False`` rows commit turns and FTS
   rows only and queue the enrichment; their ``flush s`` is the queued enrichment (and the "incl. flush" rate the
   whole job), run after the burst, as the background worker does once writes pause (``ingest.enrich_idle_s``).
2. **Embedding**: the embedder's raw batch throughput (``embed_long_documents`` on the same texts, same batch
   size and ``max_chars``) next to embeddings/s through the durable job queue (entries added with the worker
   paused, then ``flush()`` timed: claim, cache lookup, model, cache/embeddings/vec0 writes).
3. **find() right after a commit** (``busy``): the wall time of a hybrid ``find()`` 50 ms after a session commit,
   while the embedding worker embeds that commit's turns; the query embedding shares the embedder with it.
4. **find() latency** at each ``--sizes`` entry count (the database grows from one size to the next): p50/p95
   of the wall time of ``find(top_k=10)`` in hybrid, FTS-only and vector-only mode, split with the trace steps
   into query embedding (``embed_query``) and the rest (on PostgreSQL, whose keyword and vector legs run at once,
   the rest subtracts only the part of the embedding on the longer leg's path: ``embedding_on_path``). To make
   100k entries affordable the stored vectors come
   from ``--fill-embedder`` (default ``hash``, 384-d, same dimension as the real models) while the *query* is
   embedded by ``--embedder``: the vector leg then costs exactly what it would with real vectors (sqlite-vec
   brute-force KNN over every row), but its ranking is meaningless. Use ``--fill-embedder same`` to embed
   everything with the real model (slow).

Texts are synthetic chat turns generated deterministically (seeded), or user turns sampled from LongMemEval
(``--text longmemeval``).

Usage::

    python -m benchmarks.perf --sizes 10000,100000 --embedder local --out benchmarks/results/perf.json
"""

from __future__ import annotations

import argparse
import asyncio
import random
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import (add_db_arg, on_server, target, use_server, run_main, EMBEDDERS, build_embedder, build_settings, config_snapshot, console, default_data, dist,
                     git_info, load_average, machine_info, markdown_table, now_iso, open_agentbase, out_console,
                     table)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.perf", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10000,100000", help="entry counts for the find() latency (default 10000,100000)")
    p.add_argument("--embedder", choices=EMBEDDERS, default=None,
                   help="the real embedder: embedding throughput and query embedding (default: the config's)")
    p.add_argument("--fill-embedder", default="hash", choices=("hash", "same", "none"),
                   help="what embeds the stored entries of the large databases (default hash, 384-d)")
    p.add_argument("--fill-ner", default="regex", choices=("regex", "spacy", "auto", "config"),
                   help="NER used while filling the large databases (default regex, to save time; 'config' = the "
                        "configured one). Queries always run with the configured NER (the file is reopened).")
    p.add_argument("--model-path", default=None, help="onnx model folder")
    p.add_argument("--config", default=None, help="AgentBase settings YAML")
    p.add_argument("--ingest-messages", type=int, default=2000, help="messages per ingest-throughput run")
    p.add_argument("--embed-texts", type=int, default=300, help="texts for the embedding-throughput run")
    p.add_argument("--queries", type=int, default=100, help="find() calls per size and mode")
    p.add_argument("--session-size", type=int, default=20, help="messages per session")
    p.add_argument("--text", choices=("synthetic", "longmemeval"), default="synthetic")
    p.add_argument("--data", default=default_data("longmemeval", "longmemeval_s_dev.json.xz"),
                   help="LongMemEval file for --text longmemeval")
    p.add_argument("--skip", default="", help="comma list of parts to skip: ingest,embed,busy,find")
    p.add_argument("--fill-from", default=None, metavar="FILE",
                   help="start the find() database from this AgentBase SQLite file (copied; with --db, copied into "
                        "PostgreSQL by agentbase migrate, then its HNSW index rebuilt and timed), so both engines "
                        "are measured on the same rows; filling goes on from there up to each size")
    p.add_argument("--reuse-db", action="store_true",
                   help="with --db: measure on the databases an earlier run left on the server (filled on up to "
                        "each size) instead of dropping them, as a rerun with the same --workdir reuses its files")
    p.add_argument("--workdir", default=None)
    p.add_argument("--out", default=None, help="JSON output (a .md with the tables next to it)")
    p.add_argument("--seed", type=int, default=7)
    add_db_arg(p)
    return p.parse_args(argv)


# ---------------------------------------------------------------------------------------------- text
_NAMES = ["Alice", "Bob", "Carmen", "Deepak", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Keiko", "Liam",
          "Maya", "Nora", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tariq"]
_PLACES = ["Lisbon", "Berlin", "Tokyo", "Denver", "Nairobi", "Oslo", "Austin", "Seoul", "Lyon", "Toronto", "Porto",
           "Madrid", "Boston", "Kyoto", "Dublin"]
_THINGS = ["road bike", "sourdough starter", "vinyl collection", "yoga class", "photography course", "garden",
           "Python project", "marathon training", "piano lessons", "camping trip", "book club", "pottery workshop",
           "coffee grinder", "Spanish lessons", "board game night", "kitchen renovation", "job interview",
           "tax return", "wedding plans", "podcast", "aquarium", "chess club", "hiking boots", "budget spreadsheet"]
_VERBS = ["started", "finished", "cancelled", "postponed", "signed up for", "bought", "sold", "recommended",
          "borrowed", "organised", "planned", "enjoyed", "struggled with", "upgraded"]
_TIMES = ["last week", "yesterday", "two months ago", "in March", "over the weekend", "this morning",
          "last summer", "on Friday", "a few days ago", "in 2022"]
_FILLER = ["I think it went well overall.", "It took longer than I expected.", "Do you have any tips?",
           "My sister thinks I should try again.", "It cost about {n} dollars.", "I want to keep it up.",
           "Honestly I am not sure it was worth it.", "Can you suggest a schedule for next month?",
           "I spent around {n} hours on it.", "It reminded me of my trip to {place}."]
_ASSIST = ["That sounds like a great step.", "Here are a few suggestions you could try:",
           "Consistency usually matters more than intensity.", "You could break it into smaller weekly goals.",
           "Many people find it helps to track progress in a notebook.",
           "It may be worth comparing a couple of options before deciding.",
           "Let me know if you want a more detailed plan.", "Budgeting a little extra time is usually wise."]


class TextGen:
    """Deterministic synthetic chat turns (user: personal events; assistant: generic advice)."""

    def __init__(self, seed: int, pool: list[str] | None = None):
        self.rng = random.Random(seed)
        self.pool = pool

    def user(self) -> str:
        if self.pool:
            return self.rng.choice(self.pool)
        r = self.rng
        s = (f"I {r.choice(_VERBS)} the {r.choice(_THINGS)} with {r.choice(_NAMES)} in {r.choice(_PLACES)} "
             f"{r.choice(_TIMES)}.")
        extra = " ".join(r.choice(_FILLER).format(n=r.randint(2, 400), place=r.choice(_PLACES))
                         for _ in range(r.randint(0, 3)))
        return f"{s} {extra}".strip()

    def assistant(self) -> str:
        r = self.rng
        return " ".join(r.choice(_ASSIST) for _ in range(r.randint(2, 6)))

    def query(self) -> str:
        r = self.rng
        return r.choice([f"When did I {r.choice(_VERBS)} the {r.choice(_THINGS)}?",
                         f"What did {r.choice(_NAMES)} and I do in {r.choice(_PLACES)}?",
                         f"How much did the {r.choice(_THINGS)} cost?",
                         f"What have I been doing about my {r.choice(_THINGS)} {r.choice(_TIMES)}?"])

    def session(self, n: int) -> list[dict[str, Any]]:
        return [{"role": "user" if i % 2 == 0 else "assistant",
                 "content": self.user() if i % 2 == 0 else self.assistant()} for i in range(n)]


def sample_pool(path: str | None, n: int, seed: int) -> list[str]:
    from agentbase.datasets import load_json

    if not path:
        raise SystemExit("--text longmemeval needs --data")
    data = load_json(path)
    texts = list(dict.fromkeys(t["content"] for r in data for s in r["haystack_sessions"] for t in s
                               if t["role"] == "user" and t["content"].strip()))
    random.Random(seed).shuffle(texts)
    return texts[: max(n, 1)]


# ---------------------------------------------------------------------------------------------- parts
async def ingest_messages(db: Any, gen: TextGen, n_messages: int, session_size: int, prefix: str, *,
                          wait: bool = True) -> dict[str, Any]:
    t0 = time.perf_counter()
    done = 0
    i = 0
    while done < n_messages:
        sid = f"{prefix}-{i}"
        await db.create_session(session_id=sid, user_id="perf")
        msgs = gen.session(min(session_size, n_messages - done))
        await db.add_messages(sid, msgs)
        await db.commit_session(sid, wait=wait)
        done += len(msgs)
        i += 1
    return {"messages": done, "sessions": i, "seconds": time.perf_counter() - t0}


async def part_ingest(args: argparse.Namespace, settings: Any, workdir: Path, pool: list[str] | None) -> dict[str, Any]:
    from agentbase.embeddings import HashEmbedder

    out: dict[str, Any] = {}
    variants = [("none (spaCy/auto NER)", None, settings.ner, True), ("none, regex NER", None, "regex", True),
                ("hash embedder, 384-d", HashEmbedder(384), settings.ner, True),
                ("wait=False, none (spaCy/auto NER)", None, settings.ner, False),
                ("wait=False, none, regex NER", None, "regex", False)]
    for label, emb, ner, wait in variants:
        s = settings.model_copy(deep=True)
        s.ner = ner
        path = workdir / f"ingest-{len(out)}.db"
        db = open_agentbase(path, s, emb)
        await db.initialize()
        res = await ingest_messages(db, TextGen(args.seed, pool), args.ingest_messages, args.session_size, "ing",
                                    wait=wait)
        t = time.perf_counter()
        pending = await db.flush()
        res["flush_s"] = time.perf_counter() - t
        stats = await db.stats()
        res.update(entries=stats["entries_total"], embeddings=stats["embeddings"], pending=pending,
                   ner=getattr(db.extractor, "name", None), size_bytes=stats["size_bytes"])
        res["messages_per_s"] = res["messages"] / res["seconds"]
        res["entries_per_s"] = res["entries"] / (res["seconds"] + res["flush_s"])  # wait=False: written by flush
        res["messages_per_s_incl_flush"] = res["messages"] / (res["seconds"] + res["flush_s"])
        await db.close()
        out[label] = res
        console.print(f"ingest {label}: {res['messages_per_s']:.1f} msg/s ({res['entries']} entries)")
    return out


async def part_embed(args: argparse.Namespace, settings: Any, embedder: Any, workdir: Path,
                     pool: list[str] | None) -> dict[str, Any]:
    from agentbase.embeddings import embed_long_documents

    gen = TextGen(args.seed + 1, pool)
    texts = list(dict.fromkeys(gen.user() for _ in range(args.embed_texts * 3)))[: args.embed_texts]
    chars = sum(len(t) for t in texts)
    t = time.perf_counter()
    embed_long_documents(embedder, texts, settings.embedder.max_chars, batch_size=settings.embedder.batch_size)
    raw_s = time.perf_counter() - t
    path = workdir / "embed.db"
    db = open_agentbase(path, settings, embedder)
    await db.initialize()
    db.worker.enabled = False  # benchmark only: queue every job first, then time the drain alone
    t = time.perf_counter()
    for text in texts:
        await db.add_memory(text, user_id="perf", dedup=False)
    add_s = time.perf_counter() - t
    db.worker.enabled = True
    t = time.perf_counter()
    pending = await db.flush()
    queue_s = time.perf_counter() - t
    stats = await db.stats()
    await db.close()
    res = {"model_id": embedder.model_id, "texts": len(texts), "chars": chars, "mean_chars": chars / len(texts),
           "raw_s": raw_s, "raw_texts_per_s": len(texts) / raw_s, "raw_chars_per_s": chars / raw_s,
           "add_memory_s": add_s, "queue_s": queue_s, "queue_texts_per_s": len(texts) / queue_s,
           "queue_overhead_pct": 100 * (queue_s - raw_s) / raw_s, "embeddings": stats["embeddings"],
           "pending": pending, "batch_size": settings.embedder.batch_size}
    console.print(f"embed: raw {res['raw_texts_per_s']:.1f}/s, queue {res['queue_texts_per_s']:.1f}/s")
    return res


async def part_busy(args: argparse.Namespace, settings: Any, embedder: Any, workdir: Path,
                    pool: list[str] | None, rounds: int = 12) -> dict[str, Any]:
    """find() right after a commit, while the embedding worker embeds that commit's turns: the query embedding
    shares the embedder with the worker, so this is the wait an agent sees on its next memory lookup."""
    db = open_agentbase(workdir / "busy.db", settings, embedder)
    await db.initialize()
    gen = TextGen(args.seed + 2, pool)
    await db.find("warm up", user_id="perf")
    wall, emb = [], []
    for i in range(rounds):
        sid = f"busy-{i}"
        await db.create_session(session_id=sid, user_id="perf")
        await db.add_messages(sid, gen.session(args.session_size))
        await db.commit_session(sid)
        await asyncio.sleep(0.05)  # the worker has claimed the commit's embedding jobs
        t = time.perf_counter()
        results = await db.find(gen.query(), user_id="perf", top_k=10)
        wall.append((time.perf_counter() - t) * 1000)
        trace = await db.get_trace(results[0].trace_id) if results else None
        emb.append(sum(s.latency_ms for s in trace.steps if s.name == "embed_query") if trace else 0.0)
        await db.flush()
    await db.close()
    res = {"rounds": rounds, "session_size": args.session_size, "wall_ms": dist(wall), "embed_query_ms": dist(emb)}
    console.print(f"find right after a commit: p50 {res['wall_ms']['p50']:.1f} ms "
                  f"(embed_query p50 {res['embed_query_ms']['p50']:.1f} ms)")
    return res


class SplitEmbedder:
    """Stored vectors from ``fill``, query vectors from ``real`` (same dimension): realistic cost, no semantics."""

    def __init__(self, fill: Any, real: Any):
        if int(fill.dims) != int(real.dims):
            raise SystemExit(f"fill embedder has {fill.dims} dims but the real one {real.dims}")
        self.fill, self.real = fill, real
        self.model_id = f"{fill.model_id}+query:{real.model_id}"
        self.dims = int(real.dims)

    def embed_documents(self, texts: list[str]) -> Any:
        return self.fill.embed_documents(texts)

    def embed_query(self, text: str) -> Any:
        return self.real.embed_query(text)


async def seed_from(source: Path, path: Path, emb: Any, settings: Any) -> dict[str, Any]:
    """Make the find() database a copy of ``source``: the file copied, or with ``--db`` migrated into PostgreSQL
    (``agentbase migrate``) and its HNSW index rebuilt; ``{"copy_s", "hnsw_build_s" (PostgreSQL)}``."""
    if not source.is_file():
        raise SystemExit(f"--fill-from: {source} is not a file")
    t = time.perf_counter()
    if not on_server():
        shutil.copyfile(source, path)
        return {"copy_s": round(time.perf_counter() - t, 1)}
    from agentbase.storage import migrate_to_postgres

    where = target(path)
    await migrate_to_postgres(source, where)
    copied = time.perf_counter() - t
    db = open_agentbase(path, settings, emb)
    await db.initialize()
    try:
        t = time.perf_counter()
        if emb is not None:
            async with db.db.transaction() as conn:
                await conn.ops.vectors.rebuild_index(conn, int(emb.dims))
        built = time.perf_counter() - t
        vectors = (await db.stats())["embeddings"]
    finally:
        await db.close()
    return {"copy_s": round(copied, 1), "hnsw_build_s": round(built, 1), "vectors": vectors}


_KEYWORD_BRANCH = ("candidates_fts", "candidates_fts_common_terms")
_VECTOR_BRANCH = ("query_names", "embed_query", "candidates_vector")


def embedding_on_path(steps: list[Any], embed_ms: float, parallel: bool) -> float:
    """How much of a find()'s wall time the query embedding (``embed_ms``) accounts for: all of it when the legs
    run one after the other; with ``parallel`` legs (PostgreSQL: retrieval/pipeline.py ``_both``) only what it adds
    to the longer branch, ``max(kw, vec) - max(kw, vec - embed_ms)``, as the keyword leg may hide it."""
    if not parallel:
        return embed_ms
    kw = sum(s.latency_ms for s in steps if s.name in _KEYWORD_BRANCH)
    vec = sum(s.latency_ms for s in steps if s.name in _VECTOR_BRANCH)
    return max(kw, vec) - max(kw, vec - embed_ms)


async def part_find(args: argparse.Namespace, settings: Any, embedder: Any, workdir: Path,
                    pool: list[str] | None) -> dict[str, Any]:
    from agentbase.embeddings import HashEmbedder

    sizes = sorted(int(x) for x in args.sizes.split(",") if x.strip())
    if embedder is None or args.fill_embedder == "none":
        emb = None
    elif args.fill_embedder == "same":
        emb = embedder
    else:
        emb = SplitEmbedder(HashEmbedder(int(embedder.dims)), embedder)
    fill_settings = settings.model_copy(deep=True)
    if args.fill_ner != "config":
        fill_settings.ner = args.fill_ner
    path = workdir / "find.db"
    gen = TextGen(args.seed + 2, pool)
    qgen = TextGen(args.seed + 3)
    queries = [qgen.query() for _ in range(args.queries)]
    modes = ["hybrid", "fts"] + (["vector"] if emb is not None else [])
    out: dict[str, Any] = {"fill_embedder": getattr(emb, "model_id", None), "fill_ner": fill_settings.ner,
                           "query_ner": settings.ner, "modes": modes, "sizes": {}}
    built_s = 0.0
    n_sess = 0
    if args.fill_from:
        out["fill_from"] = await seed_from(Path(args.fill_from), path, emb, fill_settings)
        console.print(f"  seeded from {args.fill_from}: {out['fill_from']}")
    prefix = "f"
    if args.fill_from or args.reuse_db or path.exists():  # the fill's new sessions must not take existing ids
        prefix = f"f-{secrets.token_hex(4)}"
    for size in sizes:
        db = open_agentbase(path, fill_settings, emb)
        await db.initialize()
        t = time.perf_counter()
        last = time.perf_counter()
        while (await db.stats())["entries_total"] < size:
            for _ in range(25):
                sid = f"{prefix}-{n_sess}"
                n_sess += 1
                await db.create_session(session_id=sid, user_id="perf")
                await db.add_messages(sid, gen.session(args.session_size))
                await db.commit_session(sid)
            await db.flush()
            if time.perf_counter() - last > 30:
                last = time.perf_counter()
                console.print(f"  filling to {size}: {(await db.stats())['entries_total']} entries, "
                              f"{time.perf_counter() - t:.0f}s")
        built_s += time.perf_counter() - t
        await db.close()
        db = open_agentbase(path, settings, emb)
        await db.initialize()
        stats = await db.stats()
        res: dict[str, Any] = {"entries": stats["entries_total"], "vectors": stats["embeddings"],
                               "size_bytes": stats["size_bytes"], "fill_s_cumulative": built_s, "modes": {}}
        for q in queries[:3]:  # warm the page cache and the model
            await db.find(q, top_k=10, user_id="perf")
        for mode in modes:
            wall, total, emb_ms, rest, steps, trace_ids = [], [], [], [], {}, []
            for q in queries:
                t0 = time.perf_counter()
                results = await db.find(q, top_k=10, mode=mode, user_id="perf", trace=True)
                wall.append((time.perf_counter() - t0) * 1000)
                if results and results[0].trace_id:
                    trace_ids.append(results[0].trace_id)
            # Traces are read after the loop: reading one writes the queued traces first (TraceBuffer), and a
            # user's query loop has no write between its queries.
            for trace_id in trace_ids:
                tr = await db.get_trace(trace_id)
                total.append(tr.total_ms)
                e = sum(s.latency_ms for s in tr.steps if s.name == "embed_query")
                emb_ms.append(e)
                rest.append(tr.total_ms - embedding_on_path(tr.steps, e, db.db.parallel_reads))
                for s in tr.steps:
                    steps.setdefault(s.name, []).append(s.latency_ms)
            res["modes"][mode] = {"wall_ms": dist(wall), "trace_total_ms": dist(total), "embed_query_ms": dist(emb_ms),
                                  "rest_ms": dist(rest), "steps_ms": {k: dist(v) for k, v in steps.items()}}
        out["sizes"][str(size)] = res
        h = res["modes"]["hybrid"]
        console.print(f"find @ {res['entries']} entries: hybrid p50 {h['wall_ms']['p50']:.1f} ms, "
                      f"p95 {h['wall_ms']['p95']:.1f} ms (embed_query p50 {h['embed_query_ms']['p50'] or 0:.1f})")
        await db.close()
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    use_server(getattr(args, "db", None), reuse=args.reuse_db)
    settings = build_settings(args.config, args.embedder, args.model_path)
    embedder = build_embedder(settings)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="agentbase-perf-"))
    workdir.mkdir(parents=True, exist_ok=True)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    pool = sample_pool(args.data, 20000, args.seed) if args.text == "longmemeval" else None
    payload: dict[str, Any] = {"benchmark": "perf", "started_at": now_iso(), "machine": machine_info(),
                               "git": git_info(), "config": config_snapshot(settings, embedder, args),
                               "workdir": str(workdir)}
    if "ingest" not in skip:
        payload["ingest"] = await part_ingest(args, settings, workdir, pool)
    if "embed" not in skip and embedder is not None:
        payload["embed"] = await part_embed(args, settings, embedder, workdir, pool)
    if "busy" not in skip and embedder is not None:
        payload["busy"] = await part_busy(args, settings, embedder, workdir, pool)
    if "find" not in skip:
        payload["find"] = await part_find(args, settings, embedder, workdir, pool)
    payload["loadavg_end"] = load_average()
    return payload


def report(payload: dict[str, Any]) -> str:
    md: list[str] = []

    def emit(title: str, cols: list[str], rows: list[list[Any]]) -> None:
        out_console.print(table(title, cols, rows))
        md.extend([f"**{title}**", "", markdown_table(cols, rows), ""])

    if "ingest" in payload:
        emit("Ingest throughput (add_messages + commit_session; flush separately)",
             ["variant", "messages", "entries", "msg/s", "entries/s incl. flush", "flush s", "msg/s incl. flush"],
             [[k, v["messages"], v["entries"], v["messages_per_s"], v["entries_per_s"], v["flush_s"],
               v["messages_per_s_incl_flush"]] for k, v in payload["ingest"].items()])
    if "embed" in payload:
        e = payload["embed"]
        emit(f"Embedding throughput ({e['model_id']}, {e['texts']} texts, mean {e['mean_chars']:.0f} chars)",
             ["path", "seconds", "texts/s", "chars/s"],
             [["raw embed_long_documents", e["raw_s"], e["raw_texts_per_s"], e["raw_chars_per_s"]],
              ["job queue (flush)", e["queue_s"], e["queue_texts_per_s"], e["chars"] / e["queue_s"]]])
    if "busy" in payload:
        b = payload["busy"]
        emit(f"find() right after a commit of {b['session_size']} messages ({b['rounds']} rounds; the embedding "
             f"worker is embedding its turns)", ["figure", "p50 ms", "p95 ms"],
             [["find wall", b["wall_ms"]["p50"], b["wall_ms"]["p95"]],
              ["embed_query step", b["embed_query_ms"]["p50"], b["embed_query_ms"]["p95"]]])
    if "find" in payload:
        rows = []
        for size, res in payload["find"]["sizes"].items():
            for mode, m in res["modes"].items():
                rows.append([f"{res['entries']} entries, {mode}", m["wall_ms"]["p50"], m["wall_ms"]["p95"],
                             m["embed_query_ms"]["p50"], m["embed_query_ms"]["p95"], m["rest_ms"]["p50"],
                             m["rest_ms"]["p95"]])
        emit(f"find(top_k=10) latency ms (stored vectors: {payload['find']['fill_embedder']})",
             ["database, mode", "wall p50", "wall p95", "embed_query p50", "embed_query p95", "rest p50",
              "rest p95"], rows)
        srows = []
        for size, res in payload["find"]["sizes"].items():
            steps = res["modes"]["hybrid"]["steps_ms"]
            srows.append([f"{res['entries']} entries"] + [steps.get(s, {}).get("p50") for s in
                                                           ("candidates_fts", "embed_query", "candidates_vector",
                                                            "fusion_rrf", "ner_boost", "rerank", "final")])
        emit("hybrid find() step p50 ms (trace)", ["database", "fts", "embed_query", "vector knn", "rrf", "ner",
                                                   "rerank", "final"], srows)
        seeded = payload["find"].get("fill_from")
        if seeded:
            emit("find() database seeded from a file (--fill-from)", ["figure", "value"],
                 [[k, v] for k, v in seeded.items()])
    return "\n".join(md)


def main(argv: list[str] | None = None) -> int:
    return run_main(argv, parse_args, run, report)


if __name__ == "__main__":
    sys.exit(main())
