"""AgentBase: the async core and composition root.

Every public coroutine runs on the engine loop (see :mod:`agentbase._loop`), so it can be awaited from any event
loop; :class:`~agentbase.sync.SyncAgentBase` gives each one a blocking twin.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import operator
import os
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

from ._loop import bridged, flush_at_exit
from .api.checkpoints import CheckpointsAPI
from .api.debug import DebugAPI
from .api.entries import EntriesAPI
from .api.knowledge import KnowledgeAPI
from .api.sessions import SessionsAPI
from .config import Settings, load_settings
from .embeddings import create_embedder
from .graph import RELATIONS_JOB
from .errors import ConfigError, DimensionMismatchError, StorageError, UsageError, ValidationError
from .index.matrix import VectorMatrix
from .ingest.worker import EmbeddingWorker, EnrichmentWorker, pending_jobs
from .llm.usage import load_usage
from .models import SearchResult, Trace, TraceStep, utcnow
from .ner import create_extractor
from .observability import TraceBuffer, load_trace
from .retrieval.filters import filters_from_kwargs as _filters
from .retrieval.pipeline import FindParams, run_find
from .storage import Database, open_database
from .storage.entries import row_to_entry
from .storage.postgres.connection import is_postgres_url, redact_url
from .timeutil import parse_time, to_db_time
from .validation import check_bool, check_id, check_limit, check_path

__all__ = ["AgentBase"]

CLOSE_WAIT_S = 30.0  # seconds close() waits for find() calls still running before it writes their traces


def _check_settings(settings: Any, config_file: Any) -> Settings | None:
    """None, a :class:`Settings`, or a mapping of sections (``{"retrieval": {"rrf_k": 60}}``) loaded like
    :func:`load_settings` overrides; anything else raises ConfigError."""
    if settings is None or isinstance(settings, Settings):
        return settings
    if isinstance(settings, Mapping):
        if not all(isinstance(k, str) for k in settings):
            raise ConfigError("settings keys must be section names (strings)")
        return load_settings(config_file, **settings)
    raise ConfigError(f"settings must be a Settings, a dict of sections or None, got {type(settings).__name__}")


def _check_embedder(embedder: Any) -> None:
    """An embedder object needs ``model_id`` and callable ``embed_documents`` / ``embed_query`` (``dims`` is read
    on open: an OpenAI-compatible embedder may learn it from a request)."""
    if embedder is None or isinstance(embedder, str):
        return
    missing = [name for name in ("embed_documents", "embed_query") if not callable(getattr(embedder, name, None))]
    if not hasattr(embedder, "model_id"):
        missing.append("model_id")
    if missing:
        raise ConfigError(f"embedder must be a provider name or an object with model_id, dims, embed_documents "
                          f"and embed_query; {type(embedder).__name__} lacks {', '.join(missing)}")


def _check_reranker(reranker: Any) -> Any:
    """Return ``reranker`` (None or a callable); anything else raises ValidationError."""
    if reranker is not None and not callable(reranker):
        raise ValidationError(f"reranker must be callable, got {type(reranker).__name__}")
    return reranker


class _DefaultPath(str):
    """The type of :data:`DEFAULT_PATH`: a str of its own, so ``path is DEFAULT_PATH`` is true only when the caller
    gave no path (an explicit ``"agentbase.db"`` is another object and keeps meaning that file)."""


DEFAULT_PATH = _DefaultPath("agentbase.db")  # opened when neither a path, a url nor storage.url is given


class AgentBase(EntriesAPI, SessionsAPI, KnowledgeAPI, DebugAPI, CheckpointsAPI):
    """A context database in one SQLite file.

    Args:
        path: the database file (created if missing); ``":memory:"`` is not supported (use a temp file).
        settings: a :class:`~agentbase.config.Settings`, or a dict of sections passed to
            :func:`~agentbase.config.load_settings` (``{"retrieval": {"rrf_k": 60}}``); default:
            :func:`~agentbase.config.load_settings`.
        embedder: an embedder object (``model_id``, ``dims``, ``embed_documents``, ``embed_query``) or a provider
            name (``"local"``, ``"onnx"``, ``"openai"``, ``"hash"``, ``"none"``) overriding the settings.
        config_file: optional YAML settings file.
        reranker: optional :class:`~agentbase.retrieval.rerank.Reranker`, a callable
            ``(query, [(entry_id, text), ...]) -> [score, ...]`` (a cross-encoder, an LLM judge) applied by every
            ``find()`` after the heuristic rerank to the head of the ranking (``max(3 x top_k, 30)`` candidates);
            ``find(reranker=...)`` overrides it per call. It runs in a worker thread. None ships by default.

    Example:
        >>> async with AgentBase(path="./my_agent.db") as db:          # doctest: +SKIP
        ...     await db.add_memory("User prefers Python 3.12", category="preference", user_id="alice")
        ...     results = await db.find("Python preferences", top_k=5, user_id="alice")
    """

    def __init__(self, path: str | Path = DEFAULT_PATH, *, settings: Settings | Mapping[str, Any] | None = None,
                 embedder: Any = None, config_file: str | Path | None = None, reranker: Any = None,
                 url: str | None = None):
        """Args:
            path: the SQLite file (created if absent), or a ``postgresql://user:password@host/db`` URL for the
                PostgreSQL engine (docs/scale_out.md). Not given: ``url``, else ``storage.url`` of the settings,
                else ``agentbase.db``.
            url: the same as a URL ``path`` (give one of the two).

        Raises:
            ConfigError: ``path`` is not a str or path, is empty, names a directory or asks for an in-memory
                database (``":memory:"``; a name starting ``file:`` is a file of that name), both ``path`` and ``url``
                are given, ``url`` is not a ``postgresql://`` URL, ``settings`` is neither a Settings nor a mapping of
                valid sections, ``embedder`` is neither a known provider name nor an embedder object.
            ValidationError: ``reranker`` is not callable."""
        settings = _check_settings(settings, config_file)
        if url is not None:
            if path is not DEFAULT_PATH:
                raise ConfigError("give path or url, not both")
            if not is_postgres_url(url):
                raise ConfigError(f"url must be a postgresql:// URL, got {url!r}")
            path = url
        if path is DEFAULT_PATH:
            path = (settings or load_settings(config_file)).storage.url or str(DEFAULT_PATH)
        #: the PostgreSQL URL (with its password, as given) when this AgentBase runs on PostgreSQL, else None
        self.url: str | None = str(path).strip() if is_postgres_url(path) else None
        if self.url is None:
            name = str(check_path(path, error=ConfigError, empty_hint="name the database file (e.g. 'agentbase.db')"))
            if name == ":memory:" or name.startswith("file::memory:"):
                raise ConfigError("an in-memory database is not supported: name a file (a temporary one for tests)")
            if Path(path).is_dir():
                raise ConfigError(f"path {str(path)!r} is a directory: name the database file inside it")
        _check_embedder(embedder)
        #: the SQLite file, or the PostgreSQL URL as given (``location`` is the form safe to show)
        self.path: Any = Path(path) if self.url is None else self.url
        self.reranker = _check_reranker(reranker)
        if isinstance(embedder, str):
            settings = (settings or load_settings(config_file)).model_copy(deep=True)
            settings.embedder.provider = embedder  # type: ignore[assignment]
            embedder = None
        self.settings = settings or load_settings(config_file)
        self._embedder_arg = embedder
        self.embedder: Any = None
        self.extractor: Any = None
        self.query_extractor: Any = None
        self.regex_extractor: Any = None
        self.db: Database | None = None
        self.worker: EmbeddingWorker | None = None
        self.enricher: EnrichmentWorker | None = None  # runs commit_session(wait=False)'s queued enrichment
        self.relator: EnrichmentWorker | None = None  # extracts graph relations from add_memory's memories
        self.llm: Any = None  # the optional model's client (agentbase.llm.LLMClient), None unless configured
        self.llm_worker: Any = None  # runs the ``llm`` jobs (agentbase/llm/ingest.py) when a model is configured
        self._llm_calls: list[Any] = []  # LLM call records not yet added to the file's totals (stats()["llm"])
        self._last_write = 0.0  # engine loop time of the last session write (the enricher yields to these)
        self.matrix: VectorMatrix | None = None
        self.vector_error: DimensionMismatchError | None = None
        self._init_lock: asyncio.Lock | None = None
        self._closed = False
        self._sync: Any = None
        self.traces: TraceBuffer | None = None  # find()'s traces and recall counts, written in batches
        self._finds: set[Any] = set()  # find() calls running on the engine loop
        # The largest entry rowid seen by the last keyword search (None: not yet): an upper bound on the rows that
        # lets find() skip counting terms when the postings budget cannot be exceeded.
        self.max_rid_hint: int | None = None
        self._rerank_threads: ThreadPoolExecutor | None = None  # rerankers' own threads (see rerank_executor)
        self._pid = os.getpid()  # the process that opened the file (see _ensure)

    async def _drain_background(self) -> None:
        """Write the queued traces and recall counts now (readers of traces and ``close`` call this)."""
        if self.traces is not None:
            await self.traces.flush()
        if self._llm_calls and self.db is not None:
            from .llm.usage import save_usage

            calls, self._llm_calls = self._llm_calls, []
            try:
                await save_usage(self.db, calls)
            except Exception:  # noqa: BLE001 - counts only: kept for the next try
                self._llm_calls[:0] = calls

    def count_llm_call(self, call: Any) -> None:
        """Add an LLM call made by a client of the caller's own (the Responses route's) to this file's token totals
        (``stats()["llm"]``, written with the traces); callable from any thread, returns at once.

        Args:
            call: the :class:`~agentbase.llm.client.LLMCall` an ``LLMClient`` listener receives.
        """
        from ._loop import engine_loop

        engine_loop().loop.call_soon_threadsafe(lambda: self._llm_calls.append(call))  # swapped on that loop

    def trace_llm_calls(self, query: str, params: dict[str, Any], calls: list[Any]) -> None:
        """Record LLM calls made by a client of the caller's own (the Responses route's) as one trace beside
        find()'s (when ``retrieval.trace`` is on and the database is open): ``query`` and ``params`` as given, one
        ``llm_call`` step per call (:meth:`~agentbase.llm.client.LLMCall.as_dict`: purpose, model, prompt and
        completion tokens, latency in ms, outcome, attempts, error). Callable from any thread; returns at once.

        Args:
            query: the trace's label, e.g. ``"llm responses"``. params: JSON-ready details (ids, never text).
            calls: the :class:`~agentbase.llm.client.LLMCall` records (``LLMClient.collect()`` gives them); an
                empty list records nothing.
        """
        if not calls or not self.settings.retrieval.trace:
            return
        from ._loop import engine_loop

        steps = [TraceStep(name="llm_call", latency_ms=round(c.latency_s * 1000, 3), details=c.as_dict())
                 for c in calls]
        trace = Trace(id=str(uuid.uuid4()), query=query, created_at=utcnow(), params=dict(params), steps=steps,
                      total_ms=round(sum(s.latency_ms for s in steps), 3), result_ids=[])

        def add() -> None:
            if self.traces is not None:
                self.traces.add(trace, None)

        engine_loop().loop.call_soon_threadsafe(add)

    async def _at_exit(self) -> None:
        """Interpreter exit without ``close()``: write the queued traces and recall counts, and hand embedding jobs
        still claimed back to the queue (due at once, no attempt counted) instead of leaving them claimed until
        their lease expires."""
        await self._drain_background()
        if self.db is not None and self._pid == os.getpid():
            for worker in (self.enricher, self.relator, self.llm_worker, self.worker):
                if worker is not None:
                    await worker.abandon()

    # ------------------------------------------------------------------ lifecycle
    @bridged
    async def initialize(self) -> AgentBase:
        """Open the file, apply migrations, choose the embedder and NER extractor, start the job worker.

        Idempotent; every other method calls it on first use.

        Returns:
            ``self``.

        Raises:
            SchemaVersionError: the file was written by a newer AgentBase.
            StorageError: the file cannot be opened.
            ConfigError / MissingDependencyError: the configured embedder cannot be built.
        """
        return await self._ensure()

    def _ensure_extractors(self) -> None:
        """Create the NER extractors (``ner``, the regex one, ``retrieval.query_ner``) once. Validation-first calls
        (``add_memory``, ``update``) tag their text before the file is opened, so they call this too: the first
        ``add_memory`` of a new instance had no entity tags."""
        if self.extractor is None:
            extractor = create_extractor(self.settings.ner)
            self.regex_extractor = extractor if extractor.name == "regex" else create_extractor("regex")
            qner = self.settings.retrieval.query_ner
            self.query_extractor = extractor if qner == extractor.name else create_extractor(qner)
            self.extractor = extractor

    async def _ensure(self) -> AgentBase:
        if self._closed:
            raise UsageError("this AgentBase is closed; create a new one")
        if self.db is not None:
            if self._pid != os.getpid():
                raise UsageError("this AgentBase was opened in the parent of this forked process, whose "
                                 "connections and threads do not exist here; open a new AgentBase in this process")
            return self
        if self._init_lock is None:
            self._init_lock = asyncio.Lock()
        async with self._init_lock:
            if self.db is not None:
                return self
            embedder = self._embedder_arg or create_embedder(self.settings.embedder)
            if embedder is not None:
                dims = getattr(embedder, "dims", None)
                try:
                    ok = not isinstance(dims, bool) and operator.index(dims) >= 1
                except TypeError:
                    ok = False
                if not ok:
                    raise ConfigError(f"embedder.dims must be a positive int, got {dims!r}")
            self.embedder = embedder
            self._ensure_extractors()
            storage = self.settings.storage
            if self.url is not None:
                from .storage.postgres.connection import open_postgres

                db = await open_postgres(self.url, busy_timeout_s=storage.busy_timeout_s,
                                         pool_min=storage.pool_min_size, pool_max=storage.pool_max_size)
            else:
                db = await open_database(self.path, busy_timeout_s=storage.busy_timeout_s,
                                         vector_engine=storage.vector_engine, synchronous=storage.synchronous,
                                         mmap_mb=storage.mmap_mb)
            self.db = db
            self._pid = os.getpid()
            self.traces = TraceBuffer(db)
            flush_at_exit(self)
            ingest = self.settings.ingest
            self.enricher = EnrichmentWorker(db, self._enrich_job, idle_s=ingest.enrich_idle_s,
                                             max_wait_s=ingest.enrich_max_wait_s, last_write=lambda: self._last_write)
            self.enricher.start()
            self.relator = EnrichmentWorker(db, self._relations_job, kind=RELATIONS_JOB, idle_s=ingest.enrich_idle_s,
                                            max_wait_s=ingest.enrich_max_wait_s, last_write=lambda: self._last_write)
            self.relator.start()
            if self.settings.llm.configured:
                from .llm import LLMClient
                from .llm.ingest import LLMJobWorker

                self.llm = LLMClient.from_settings(self.settings.llm)
                self.llm.add_listener(lambda call: self._llm_calls.append(call))  # the list is swapped on save
                self.llm_worker = LLMJobWorker(db, self, batch_size=2 * self.settings.llm.max_concurrency)
                self.llm_worker.start()
            if self.embedder is not None:
                await self._check_dims()
                cache_mb = self.settings.storage.vector_cache_mb
                # the in-process matrix reads SQLite's vector log; PostgreSQL searches its HNSW index instead
                self.matrix = VectorMatrix(cache_mb * 1024 * 1024) if cache_mb > 0 and db.engine == "sqlite" else None
                self.worker = EmbeddingWorker(db, self.embedder, batch_size=self.settings.embedder.batch_size,
                                              max_chars=self.settings.embedder.max_chars,
                                              max_chunks=self.settings.embedder.max_chunks,
                                              ingest=lambda: self.settings.ingest)
                self.worker.enabled = self.vector_error is None
                self.worker.start()
        return self

    async def _enrich_job(self, session_id: str) -> bool | None:
        """The enrichment worker's handler; None once :meth:`close` has begun (the job goes back to the queue)."""
        from .ingest.commit import enrich_session

        if self._closed:
            return None
        try:
            complete = await enrich_session(self, session_id)
        except UsageError:
            if self._closed:  # closed while it ran: nothing was written (one transaction)
                return None
            raise
        self._notify()  # the new facts and summary have embedding jobs
        return complete

    async def _relations_job(self, entry_id: str) -> bool | None:
        """The relation worker's handler: graph relations from one memory (see :func:`graph.relations_job`);
        None once :meth:`close` has begun (the job goes back to the queue)."""
        from .graph import relations_job

        if self._closed:
            return None
        try:
            return await relations_job(self, entry_id)
        except UsageError:
            if self._closed:
                return None
            raise

    async def _check_dims(self) -> None:
        """Record the embedder's dimension on first use and create the vector table; flag a mismatch."""
        assert self.db is not None
        rows = await self.db.ops.meta.vector_meta(self.db)
        stored = int(rows["vector_dims"]) if "vector_dims" in rows else None
        dims = int(self.embedder.dims)
        self.vector_error = None
        if stored is not None and stored != dims:
            self.vector_error = DimensionMismatchError(stored, dims, rows.get("vector_model", ""),
                                                       self.embedder.model_id)
            return
        vec_table = self.db.vector_engine == "numpy" or await self.db.ops.meta.vec_table_exists(self.db)
        if stored is not None and "vector_model" in rows and vec_table:
            return  # nothing to write: opening a file another process is writing to does not wait for its lock
        async with self.db.transaction() as conn:
            await conn.ops.meta.record_vector_model(conn, dims, self.embedder.model_id)
            if self.db.vector_engine != "numpy":  # sqlite-vec's table, pgvector's HNSW index
                await conn.ops.vectors.create_index(conn, dims)

    @property
    def location(self) -> str:
        """Where the data lives, safe to show: the SQLite file's path, or the PostgreSQL URL with its password
        replaced by ``***``."""
        return str(self.path) if self.url is None else redact_url(self.url)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has been called (a closed AgentBase refuses further calls)."""
        return self._closed

    async def _open(self) -> Database:
        await self._ensure()
        assert self.db is not None
        return self.db

    @bridged
    async def close(self) -> None:
        """Stop the worker and close the file (idempotent). Pending embedding jobs stay queued in the file."""
        self._closed = True
        if self._pid != os.getpid():  # opened by the parent of this forked process: its threads are not here
            self.db = self.worker = self.enricher = self.relator = self.llm_worker = self.llm = None
            return
        if self._finds:
            await asyncio.wait(list(self._finds), timeout=CLOSE_WAIT_S)
        await self._drain_background()
        for attr in ("enricher", "relator"):
            if getattr(self, attr) is not None:
                await getattr(self, attr).stop()
                setattr(self, attr, None)
        if self.llm_worker is not None:
            await self.llm_worker.stop()
            self.llm_worker = None
        if self.llm is not None:
            await self._drain_background()  # the LLM calls of the jobs that just ended
            with contextlib.suppress(Exception):
                await self.llm.aclose()
            self.llm = None
        if self.worker is not None:
            await self.worker.stop()
            self.worker = None
        if self.db is not None:
            await self.db.close()
            self.db = None
        if self._rerank_threads is not None:
            self._rerank_threads.shutdown(wait=False)
            self._rerank_threads = None

    def rerank_executor(self) -> ThreadPoolExecutor:
        """The threads user rerankers run on (2, created on first use): a slow cross-encoder then cannot hold the
        loop's default threads, which the query embedding of every other ``find()`` needs."""
        if self._rerank_threads is None:
            self._rerank_threads = ThreadPoolExecutor(max_workers=2, thread_name_prefix="agentbase-rerank")
        return self._rerank_threads

    async def __aenter__(self) -> AgentBase:
        await self.initialize()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    @property
    def sync(self) -> Any:
        """A :class:`~agentbase.sync.SyncAgentBase` view of this database (blocking twins of every method)."""
        if self._sync is None:
            from .sync import SyncAgentBase

            self._sync = SyncAgentBase(db=self)
        return self._sync

    # ------------------------------------------------------------------ retrieval
    @bridged
    async def find(self, query: str, *, top_k: int = 10, mode: str = "hybrid", strategy: str = "auto",
                   token_budget: int | None = None, reference_time: datetime | str | None = None,
                   trace: bool | None = None, reranker: Any = None, **filters: Any) -> list[SearchResult]:
        """Hybrid retrieval: FTS5 BM25 + vector KNN + entity tags, fused by weighted RRF (ARCHITECTURE.md §6).

        Args:
            query: user text; any string is safe (operators are searched as words). Empty -> ``[]``
                without an embedding call.
            top_k: results to return (1..1000).
            mode: ``"hybrid"``, ``"fts"`` or ``"vector"``.
            strategy: ``"auto"`` (query-type strategies), ``"flat"`` (no strategy) or ``"hierarchical"``
                (rank on L0, then L1, then load L2 for the final results).
            token_budget: stop adding results once their text would exceed this many tokens (len/4 rule).
            reference_time: "now" for temporal expressions, relative ``date_from`` / ``date_to`` ("last week") and
                freshness (UTC); default the current time.
            trace: persist a retrieval trace (default from settings).
            reranker: a :class:`~agentbase.retrieval.rerank.Reranker` for this call (default: the one given to
                :class:`AgentBase`, if any); its scores reorder the head of the ranking and appear in
                ``score_parts["reranker"]``.
            **filters: keyword arguments of :class:`~agentbase.retrieval.filters.Filters` (context_type,
                category, tags, scope, user_id, agent_id, project_id, session_id, metadata, date_from, date_to).

        Returns:
            Up to ``top_k`` :class:`SearchResult`, best first.

        Raises:
            ValidationError: bad top_k, mode, strategy or filters, a query longer than
                ``retrieval.max_query_chars`` (10,000), or a reranker that is not callable.
            UsageError: the reranker returned another number of scores than candidates, or a non-number.
            DimensionMismatchError: ``mode="vector"`` while the stored vectors have another dimension.
            UsageError: ``mode="vector"`` with no embedder configured.
            EmbeddingError: the embedder's query vector holds NaN or infinity (both engines).
        """
        if mode not in ("hybrid", "fts", "vector"):
            raise ValidationError("mode must be 'hybrid', 'fts' or 'vector'")
        if strategy not in ("auto", "flat", "hierarchical"):
            raise ValidationError("strategy must be 'auto', 'flat' or 'hierarchical'")
        check_limit(top_k, "top_k", maximum=1000)
        max_chars = self.settings.retrieval.max_query_chars
        if isinstance(query, str) and len(query) > max_chars:
            raise ValidationError(f"query is {len(query):,} characters; at most retrieval.max_query_chars = "
                                  f"{max_chars:,} are searched (a question, not a document)")
        _check_reranker(reranker)
        if trace is not None:
            check_bool(trace, "trace")
        if token_budget is not None:
            check_limit(token_budget, "token_budget", maximum=10_000_000)
        now = parse_time(reference_time) or utcnow()
        f = _filters(filters, now=now)
        f.where()  # validate before any work
        await self._ensure()  # opening reads the stored vector dimension: vector_error is known after it
        if mode == "vector" and self.vector_error is not None:
            raise self.vector_error
        if mode == "vector" and self.embedder is None:
            raise UsageError("mode='vector' needs an embedder and none is configured (embedder provider 'none'): "
                             "use mode='hybrid' or 'fts' (keyword search), or configure an embedder")
        params = FindParams(query=query, top_k=top_k, mode=mode, strategy=strategy, token_budget=token_budget,
                            reference_time=now, filters=f,
                            trace=self.settings.retrieval.trace if trace is None else trace,
                            reranker=reranker if reranker is not None else self.reranker)
        task = asyncio.current_task()
        self._finds.add(task)  # close() lets running finds finish, so their traces are queued before the flush
        try:
            return await run_find(self, params)
        finally:
            self._finds.discard(task)

    @bridged
    async def get_trace(self, trace_id: str) -> Trace:
        """Load a persisted retrieval trace with its steps.

        Raises:
            NotFoundError: unknown id.
        """
        db = await self._open()
        await self._drain_background()
        return await load_trace(db, check_id(trace_id, "trace_id"))

    # ------------------------------------------------------------------ maintenance
    @bridged
    async def flush(self, timeout: float | None = None) -> int:
        """Wait until every queued job is done or failed: session enrichment (``commit_session(wait=False)``) first,
        then graph relations of added memories, then the LLM jobs (with a model configured), then embeddings
        (which include the ones of the facts and summaries the enrichment wrote).

        Args:
            timeout: seconds (a finite int or float >= 0) for each kind of job, checked between batches (a batch
                in progress, or a wait for another process's write lock of up to ``storage.busy_timeout_s``, can
                run past it); None waits as long as jobs make progress.

        Returns:
            Number of jobs still pending: 0 unless the timeout expired, or no embedder can run the embedding jobs
            (none configured, or the file's vectors have another dimension; they then wait for one that fits, at
            once), or Python is shutting down (the main thread has ended: thread pools refuse new work; the jobs
            stay queued for the next process).

        Raises:
            ValidationError: a timeout that is not a finite number >= 0.
            UsageError: this AgentBase was closed while waiting.
        """
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or not math.isfinite(timeout) or timeout < 0):
            raise ValidationError(f"timeout must be None or a finite number of seconds >= 0, got {timeout!r}")
        await self._ensure()
        left = 0
        for kind, attr in (("enrich", "enricher"), (RELATIONS_JOB, "relator"), ("llm", "llm_worker"),
                           ("embed", "worker")):
            worker = getattr(self, attr)
            if kind == "llm" and worker is None:  # no model configured: its jobs (if any) wait for one
                continue
            if worker is None or not worker.enabled:
                left += await pending_jobs(self.db, kind)
            else:
                left += await self._drain(attr, timeout)
        return left

    async def _drain(self, attr: str, timeout: float | None) -> int:
        """Run the worker ``self.<attr>`` until its jobs are done (see :meth:`flush`); returns the pending count."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            worker = getattr(self, attr)
            if worker is None or self._closed:
                raise UsageError("this AgentBase was closed while flush() was waiting")
            try:
                done = await worker.run_once()
                pending = await worker.pending()
            except StorageError:
                if self._closed:
                    raise UsageError("this AgentBase was closed while flush() was waiting") from None
                raise
            if pending == 0 or (deadline is not None and loop.time() > deadline) or worker.exiting:
                return pending
            if done == 0:
                await asyncio.sleep(0.05)

    @bridged
    async def stats(self) -> dict[str, Any]:
        """Counts and engine facts.

        Returns:
            ``{"path" (the file, or the URL without its password), "engine" ("sqlite" or "postgres"),
            "schema_version", "driver", "vector_engine", "degrade_reason", "embedder", "vector_dims",
            "ner", "entries" (by context_type), "sessions", "messages", "embeddings", "jobs" (by status),
            "vector_cache" ({"rows", "mb"} of the in-process vector matrix, or None), "traces", "size_bytes" (the
            file's, or the PostgreSQL database's),
            "llm"}``; ``"llm"`` is ``{"configured", "model", "by_purpose": {purpose: {"calls", "errors",
            "prompt_tokens", "completion_tokens", "latency_ms"}}, "total": {"calls", "errors", "prompt_tokens",
            "completion_tokens"}}``: the LLM calls recorded in this file by every process (docs/llm.md; tokens
            as the server counted them). ``jobs`` counts ``deferred`` LLM jobs (endpoint unreachable) apart.
        """
        db = await self._open()
        await self._drain_background()
        counts = await db.ops.meta.counts(db)
        by_type = counts["entries"]
        jobs = await db.ops.jobs.counts_by_status(db)
        return {
            "path": self.location, "engine": db.engine, "schema_version": counts["schema_version"],
            "driver": db.driver, "vector_engine": db.vector_engine if self.embedder is not None else None,
            "degrade_reason": self.degrade_reason(),
            "embedder": getattr(self.embedder, "model_id", None),
            "vector_dims": counts["vector_dims"],
            "ner": getattr(self.extractor, "name", None), "entries": by_type,
            "entries_total": sum(by_type.values()),
            "sessions": counts["sessions"], "messages": counts["messages"], "embeddings": counts["embeddings"],
            "jobs": jobs,
            "vector_cache": {"rows": self.matrix.rows, "mb": round(self.matrix.nbytes / 1048576, 2)}
            if self.matrix is not None else None,
            "traces": counts["traces"],
            "size_bytes": counts.get("size_bytes", 0) if self.url is not None else
            (self.path.stat().st_size if self.path.exists() else 0),
            "llm": {"configured": self.settings.llm.configured, "model": self.settings.llm.model,
                    **await load_usage(db, self._llm_calls)},
        }

    @property
    def embedding_enabled(self) -> bool:
        """Whether queued embedding jobs run in this process: an embedder is configured and fits the file's vectors
        (False before :meth:`initialize`). While False, :meth:`flush` returns the queued count at once."""
        return self.worker is not None and self.worker.enabled

    def degrade_reason(self) -> str | None:
        """Why vector search is reduced or off, or None when it runs at full strength."""
        if self.embedder is None:
            return "no embedder configured (install agentbase[local] or set embedder.provider); keyword search only"
        if self.vector_error is not None:
            return str(self.vector_error)
        return self.db.degrade_reason if self.db is not None else None

    @bridged
    async def reindex(self) -> dict[str, int]:
        """Rebuild every derived index from the entries: FTS5, and vectors with the configured embedder.

        Drops the vector table and stored vectors (so a new embedder of another dimension can take over),
        records the new model, and queues an embedding job per entry; ``flush()`` waits for them.

        Returns:
            ``{"entries": n, "jobs": n}``.
        """
        db = await self._open()
        from .index.fts import fts_document  # noqa: F401 - fts_text is recomputed through the entries repo
        from .storage.entries import _fts_source

        rows = await db.ops.entries.all_rows(db)
        now = to_db_time(utcnow())
        async with db.transaction() as conn:
            await conn.ops.meta.rebuild_keyword_index(conn, [(row[0], _fts_source(row_to_entry(row))) for row in rows])
            jobs = 0
            if self.embedder is not None:
                await conn.ops.meta.reset_vectors(conn, self.embedder.dims, self.embedder.model_id)
                if db.vector_engine != "numpy":
                    await conn.ops.vectors.create_index(conn, int(self.embedder.dims))
                for row in rows:
                    await conn.ops.jobs.enqueue(conn, "embed", row[1], now)
                    jobs += 1
        if self.embedder is not None:
            self.vector_error = None
            if self.worker is not None:
                self.worker.enabled = True
                self._notify()
        return {"entries": len(rows), "jobs": jobs}
