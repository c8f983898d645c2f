"""The retrieval systems a benchmark runs: AgentBase (hybrid / FTS-only / vector-only), plain BM25 and mem0 OSS.

Every system returns, per query, a ranked list of :class:`Hit` (session id, turn key, text) so the scripts can
score them identically. A turn key is whatever identifies a gold turn in the dataset (LongMemEval:
``"<session_id>#<turn_index>"``, LoCoMo: the ``dia_id``); ``None`` means the hit is not a turn (a session
summary, or a fact whose source message is unknown).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .common import EmbeddingCache, context_tokens, open_agentbase


@dataclass
class Hit:
    session_id: str | None
    turn: str | None
    text: str
    kind: str = "turn"  # turn | fact/preference/... (entry category) | summary
    matched_by: str = ""


@dataclass
class QueryRun:
    hits: list[Hit]
    wall_ms: float
    trace_total_ms: float | None = None
    embed_query_ms: float | None = None
    steps: dict[str, float] = field(default_factory=dict)
    trace_id: str | None = None

    @property
    def non_embed_ms(self) -> float | None:
        if self.trace_total_ms is None:
            return None
        return self.trace_total_ms - (self.embed_query_ms or 0.0)

    def tokens(self, k: int) -> int:
        return context_tokens(h.text for h in self.hits[:k])


# ---------------------------------------------------------------------------------------------- AgentBase
TurnKeyFn = Callable[[str, dict[str, Any]], "str | None"]


@dataclass
class AgentBaseDB:
    """One benchmark database: the open AgentBase, its file, message metadata and build figures."""

    db: Any
    path: Path
    msg_meta: dict[tuple[str, str], dict[str, Any]]
    build: dict[str, Any]
    turn_key: TurnKeyFn
    user_id: str

    def hit(self, result: Any) -> Hit:
        e = result.entry
        sid = e.session_id
        turn = None
        if e.category != "summary":
            mid = e.metadata.get("message_id")
            meta = self.msg_meta.get((sid, mid)) if sid and mid else None
            if meta is not None:
                turn = self.turn_key(sid, meta)
        return Hit(sid, turn, result.text, e.category, result.matched_by)

    async def query(self, question: str, *, mode: str, top_k: int, reference_time: Any) -> QueryRun:
        start = time.perf_counter()
        results = await self.db.find(question, top_k=top_k, mode=mode, user_id=self.user_id,
                                     reference_time=reference_time, trace=True)
        wall = (time.perf_counter() - start) * 1000
        return QueryRun([self.hit(r) for r in results], wall, trace_id=results[0].trace_id if results else None)

    async def load_traces(self, runs: list[QueryRun]) -> None:
        """Fill the trace figures of ``runs``. Call it after a batch of queries, not between them: reading a trace
        writes the queued ones first, and a write between two queries is not what a user's loop does."""
        for run in runs:
            if run.trace_id:
                trace = await self.db.get_trace(run.trace_id)
                run.trace_total_ms = trace.total_ms
                run.steps = {s.name: s.latency_ms for s in trace.steps}
                run.embed_query_ms = run.steps.get("embed_query", 0.0)

    async def close(self, cache: EmbeddingCache | None, scope: str, keep: bool = False) -> None:
        model_id = getattr(self.db.embedder, "model_id", None)
        await self.db.close()
        from .common import on_server

        if cache is not None and model_id and not self.build.get("reused") and not on_server():
            self.build["cache_rows_added"] = cache.write_back(self.path, model_id, scope)
        if not keep:
            for suffix in ("", "-wal", "-shm", ".done"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)


async def build_agentbase(path: Path, settings: Any, embedder: Any, conv: Any, *, cache: EmbeddingCache | None,
                          scope: str, turn_key: TurnKeyFn, reuse: bool = False,
                          pause_worker: bool = True) -> AgentBaseDB:
    """Fresh database at ``path``; seed the embedding cache; ingest ``conv`` through the public API; flush.

    ``build`` holds ``ingest_s`` (create/add/commit of every session, with the embedding worker running
    concurrently), ``flush_s`` (waiting for the remaining embedding jobs), ``total_s``, ``seed_s``, entry and
    embedding counts and the cache hits. With ``reuse``, a database left by an earlier ``--keep-dbs`` run (marked
    complete by a ``.done`` file) is opened instead: retrieval-only experiments (other weights) then skip ingest;
    its build figures are those recorded then.
    """
    import json

    from agentbase.datasets import ingest_conversation

    from .common import on_server

    if on_server():  # PostgreSQL (--db): no file to reuse, and the embedding cache seeds SQLite files only
        reuse, cache = False, None
    marker = Path(str(path) + ".done")
    if reuse and path.exists() and marker.exists():
        db = open_agentbase(path, settings, embedder)
        await db.initialize()
        build = {**json.loads(marker.read_text()), "reused": True}
        return AgentBaseDB(db, path, await _message_meta(db, conv), build, turn_key, conv.user_id)
    for suffix in ("", "-wal", "-shm", ".done"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    db = open_agentbase(path, settings, embedder)
    await db.initialize()
    build: dict[str, Any] = {"seeded": 0, "seed_s": 0.0}
    if cache is not None and embedder is not None:
        # Seed while no AgentBase connection is open: the cache connection uses Python's sqlite3, the engine may
        # use another SQLite library (sqlean), and two SQLite copies must never hold the same file open at once
        # (closing one's descriptor drops the other's POSIX locks; sqlite.org/howtocorrupt.html section 2.2).
        t = time.perf_counter()
        await db.close()
        build["seeded"] = cache.seed(path, embedder.model_id, scope,
                                     (t["content"] for s in conv.sessions for t in s.turns))
        db = open_agentbase(path, settings, embedder)
        await db.initialize()
        build["seed_s"] = time.perf_counter() - t
    # Benchmark-only: the embedding worker is paused while the sessions are written and drained by flush()
    # afterwards, so the timing splits cleanly (ingest_s = database + NER, flush_s = embedding) instead of two
    # CPU-bound tasks sharing the cores. (Before commit aa75fab the concurrent worker could also make the shared
    # reader connection serve a stale snapshot, failing create_session's read-back; --concurrent-embedding runs
    # the worker during ingest as an application would.)
    worker = getattr(db, "worker", None)
    if worker is not None and pause_worker:
        worker.enabled = False
    t0 = time.perf_counter()
    try:
        counts = await ingest_conversation(db, conv)
    finally:
        if worker is not None:
            worker.enabled = db.vector_error is None
    t1 = time.perf_counter()
    pending = await db.flush()
    t2 = time.perf_counter()
    stats = await db.stats()
    build.update(pause_worker=pause_worker, ingest_s=t1 - t0, flush_s=t2 - t1, total_s=t2 - t0, pending_jobs=pending,
                 sessions=counts["sessions"], messages=counts["messages"], entries=stats["entries_total"],
                 embeddings=stats["embeddings"], embedded_now=getattr(worker, "embedded", 0),
                 cache_hits=getattr(worker, "cache_hits", 0), jobs=stats["jobs"], size_bytes=stats["size_bytes"])
    marker.write_text(json.dumps(build, default=str))
    return AgentBaseDB(db, path, await _message_meta(db, conv), build, turn_key, conv.user_id)


async def _message_meta(db: Any, conv: Any) -> dict[tuple[str, str], dict[str, Any]]:
    """(session id, message id) -> message metadata, read once after ingest."""
    msg_meta: dict[tuple[str, str], dict[str, Any]] = {}
    for s in conv.sessions:
        for m in await db.get_messages(s.session_id):
            msg_meta[(s.session_id, m.id)] = m.metadata
    return msg_meta


# ---------------------------------------------------------------------------------------------- BM25
def tokenize_whitespace(text: str) -> list[str]:
    """LongMemEval paper BM25: whitespace split (here lower-cased, as in REFERENCE_NUMBERS.md section 5)."""
    return text.lower().split()


_WORD = re.compile(r"\w+")


def tokenize_words(text: str) -> list[str]:
    """Lower-cased ``\\w+`` word tokens (the LoCoMo BM25 baseline of REFERENCE_NUMBERS.md section 5)."""
    return _WORD.findall(text.lower())


@dataclass
class Doc:
    text: str
    session_id: str | None
    turn: str | None


class BM25System:
    """``rank_bm25.BM25Okapi`` over a list of documents (turns or sessions), default parameters."""

    def __init__(self, docs: Sequence[Doc], tokenizer: Callable[[str], list[str]]):
        from rank_bm25 import BM25Okapi

        start = time.perf_counter()
        self.docs = list(docs)
        self.tokenizer = tokenizer
        corpus = [tokenizer(d.text) or ["\x00"] for d in self.docs]
        self.bm25 = BM25Okapi(corpus) if corpus else None
        self.build_s = time.perf_counter() - start

    def query(self, question: str, top_k: int) -> QueryRun:
        start = time.perf_counter()
        if self.bm25 is None:
            return QueryRun([], 0.0)
        scores = self.bm25.get_scores(self.tokenizer(question))
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:top_k]
        hits = [Hit(self.docs[i].session_id, self.docs[i].turn, self.docs[i].text) for i in order]
        return QueryRun(hits, (time.perf_counter() - start) * 1000)


# ---------------------------------------------------------------------------------------------- mem0
def _install_langchain_shim() -> bool:
    """mem0 2.2.1's ``langchain`` providers import ``langchain.embeddings.base.Embeddings`` and
    ``langchain.chat_models.base.BaseChatModel``. When the ``langchain`` package is absent (only
    ``langchain-core`` is installed), map those two paths to the langchain-core classes that langchain itself
    re-exports. Returns True when the shim was installed."""
    try:
        import langchain.chat_models.base  # noqa: F401
        import langchain.embeddings.base  # noqa: F401
        return False
    except ImportError:
        pass
    from langchain_core.embeddings import Embeddings
    from langchain_core.language_models import BaseChatModel

    pkg = types.ModuleType("langchain")
    pkg.__path__ = []  # type: ignore[attr-defined]
    emb = types.ModuleType("langchain.embeddings")
    emb.__path__ = []  # type: ignore[attr-defined]
    emb_base = types.ModuleType("langchain.embeddings.base")
    emb_base.Embeddings = Embeddings  # type: ignore[attr-defined]
    chat = types.ModuleType("langchain.chat_models")
    chat.__path__ = []  # type: ignore[attr-defined]
    chat_base = types.ModuleType("langchain.chat_models.base")
    chat_base.BaseChatModel = BaseChatModel  # type: ignore[attr-defined]
    sys.modules.update({"langchain": pkg, "langchain.embeddings": emb, "langchain.embeddings.base": emb_base,
                        "langchain.chat_models": chat, "langchain.chat_models.base": chat_base})
    return True


def make_langchain_embeddings(embedder: Any, max_chars: int, cache: EmbeddingCache | None) -> Any:
    """A LangChain ``Embeddings`` around an AgentBase embedder object.

    Documents are embedded exactly as the AgentBase worker embeds them (``embed_long_documents`` with the same
    ``max_chars``, same cache key), so both systems see identical document vectors. mem0's langchain provider
    calls ``embed_query`` for documents *and* queries; ``document_mode`` (set by the harness around ingest)
    routes those calls to the passage side, which matters for asymmetric models such as e5.
    """
    from langchain_core.embeddings import Embeddings

    from agentbase.embeddings import embed_long_documents

    class AgentBaseEmbeddings(Embeddings):
        def __init__(self) -> None:
            self.document_mode = False
            self.memo: dict[str, list[float]] = {}
            self.embedded = 0
            self.cache_hits = 0

        def prefetch(self, texts: Sequence[str], scope: str | None = None) -> None:
            want = [t for t in dict.fromkeys(texts) if t not in self.memo]
            if cache is not None:
                found = cache.get_many(embedder.model_id, want)
                for t, raw in found.items():
                    self.memo[t] = np.frombuffer(raw, dtype=np.float32).tolist()
                self.cache_hits += len(found)
                if scope:
                    cache.put_many(embedder.model_id, [(t, np.asarray(self.memo[t], dtype=np.float32))
                                                       for t in found], scope)
            missing = [t for t in want if t not in self.memo]
            if missing:
                mat = np.asarray(embed_long_documents(embedder, missing, max_chars), dtype=np.float32)
                self.embedded += len(missing)
                for t, v in zip(missing, mat):
                    self.memo[t] = v.tolist()
                if cache is not None:
                    cache.put_many(embedder.model_id, list(zip(missing, mat)), scope)

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            self.prefetch(texts)
            return [self.memo[t] for t in texts]

        def embed_query(self, text: str) -> list[float]:
            if self.document_mode:
                return self.embed_documents([text])[0]
            return np.asarray(embedder.embed_query(text), dtype=np.float32).tolist()

    return AgentBaseEmbeddings()


class Mem0System:
    """mem0 OSS ``Memory.from_config`` with ``infer=False`` (one raw memory per message, no LLM), our embedder
    through a LangChain wrapper, local Qdrant in a temp folder, telemetry off, spaCy lemmatisation and entity
    extraction disabled (mem0 would try to download ``en_core_web_sm``; its documented fallback is used). BM25
    in mem0 needs fastembed, which is not installed, so mem0's search is its vector path + score threshold.
    """

    def __init__(self, embedder: Any, max_chars: int, cache: EmbeddingCache | None, workdir: Path):
        # mem0 reads MEM0_TELEMETRY (and MEM0_DIR) once, when it is first imported: set both before that, or it
        # tries to send usage events over the network.
        os.environ["MEM0_TELEMETRY"] = "False"
        self.root = Path(tempfile.mkdtemp(prefix="mem0-", dir=workdir))
        os.environ.setdefault("MEM0_DIR", str(self.root / "mem0dir"))
        try:
            import mem0  # noqa: F401 - not an extra of this project: the comparison pins mem0's own versions
        except ImportError:
            raise SystemExit("--compare runs mem0 OSS, which is not installed: pip install -r "
                             "compat_tests/mem0/requirements.txt (the versions the compatibility suite pins), "
                             "or pass --no-mem0") from None
        self.shimmed = _install_langchain_shim()
        import mem0.utils.spacy_models as spacy_models

        spacy_models._load_failed_full = True
        spacy_models._load_failed_lemma = True
        self.embedder = embedder
        self.lc = make_langchain_embeddings(embedder, max_chars, cache)
        self.memory: Any = None
        self.user_id = "user"
        self._n = 0

    def build(self, docs: Sequence[Doc], roles: Sequence[str], names: Sequence[str | None], scope: str,
              user_id: str = "user") -> dict[str, Any]:
        from langchain_core.language_models.fake_chat_models import FakeListChatModel
        from mem0 import Memory

        self.close()
        self._n += 1
        folder = self.root / f"q{self._n}"
        folder.mkdir(parents=True, exist_ok=True)
        self.user_id = user_id
        start = time.perf_counter()
        self.memory = Memory.from_config({
            "llm": {"provider": "langchain", "config": {"model": FakeListChatModel(responses=["{}"])}},
            "embedder": {"provider": "langchain", "config": {"model": self.lc}},
            "vector_store": {"provider": "qdrant", "config": {"collection_name": "bench", "path": str(folder / "qdrant"),
                                                              "embedding_model_dims": int(self.embedder.dims)}},
            "history_db_path": str(folder / "history.db"),
        })
        t_init = time.perf_counter()
        before = (self.lc.embedded, self.lc.cache_hits)
        self.lc.prefetch([d.text for d in docs], scope)
        t_embed = time.perf_counter()
        self.lc.document_mode = True
        try:
            for d, role, name in zip(docs, roles, names):
                msg: dict[str, Any] = {"role": role, "content": d.text}
                if name:
                    msg["name"] = name
                self.memory.add([msg], user_id=user_id, infer=False,
                                metadata={"bench_session": d.session_id, "bench_turn": d.turn})
        finally:
            self.lc.document_mode = False
        end = time.perf_counter()
        return {"init_s": t_init - start, "embed_s": t_embed - t_init, "add_s": end - t_embed,
                "total_s": end - start, "memories": len(docs), "embedded_now": self.lc.embedded - before[0],
                "cache_hits": self.lc.cache_hits - before[1]}

    def query(self, question: str, top_k: int) -> QueryRun:
        start = time.perf_counter()
        res = self.memory.search(question, top_k=top_k, filters={"user_id": self.user_id}, threshold=0.0)
        wall = (time.perf_counter() - start) * 1000
        hits = []
        for r in res.get("results", []):
            meta = r.get("metadata") or {}
            hits.append(Hit(meta.get("bench_session"), meta.get("bench_turn"), r.get("memory", "")))
        return QueryRun(hits, wall)

    def close(self) -> None:
        if self.memory is not None:
            try:
                self.memory.close()
                client = getattr(self.memory.vector_store, "client", None)
                if client is not None and hasattr(client, "close"):
                    client.close()
            except Exception:  # noqa: BLE001 - best effort cleanup of a benchmark store
                pass
            self.memory = None

    def cleanup(self) -> None:
        self.close()
        shutil.rmtree(self.root, ignore_errors=True)
