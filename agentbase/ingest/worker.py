"""The durable job queue workers: ``embed`` jobs (vectors) and ``enrich`` jobs (a session's facts, entity tags,
relations and summary after ``commit_session(wait=False)``).

A write commits the entry, its FTS rows and an ``embed`` job in one transaction and returns; this worker then
claims due jobs (with a lease, so a crashed process's jobs are picked up again), embeds the texts in a thread,
and writes cache rows, ``embeddings`` rows and vec0 rows and marks the jobs done, again in one transaction.
Failures retry with exponential backoff (``2 ** attempts`` seconds, capped at 300 s) and end as ``failed`` with the
last error after ``max_attempts``; nothing is dropped. Identical text is embedded once per model: the
``embedding_cache`` is keyed by ``(model_id, sha256(text))``. :class:`JobWorker` holds what both kinds share
(claiming with a lease, backoff, release on exit); each kind only says how to process a claimed batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import numpy as np

from .._loop import interpreter_exiting
from ..config import IngestSettings
from ..errors import StorageError
from ..embeddings.base import embed_long_documents
from ..index.matrix import LOG_KEEP
from ..models import utcnow
from ..storage.entries import SESSION_SUMMARY
from ..timeutil import to_db_time
from ._text import cut_text

__all__ = ["EmbeddingWorker", "EnrichmentWorker", "JobWorker", "embed_text", "pending_jobs"]

log = logging.getLogger("agentbase.jobs")

LEASE_S = 30  # seconds a claimed batch stays reserved; a crashed process's jobs return after this (a batch
#   embeds in a few seconds; an expired lease at worst embeds a batch twice, and the write is idempotent)
STOP_WAIT_S = 30.0  # stop() waits this long for the batch in progress, then cancels it
MAX_ATTEMPTS = 6
MAX_BACKOFF_S = 300
DEFER_S = 0.5  # a session summary waiting for its turns' vectors (ingest.summary_vector) is tried again after this


def embed_text(name: str | None, description: str | None, l2_full: str, *, category: str = "",
               turn_context_chars: int | None = None, turn_text_chars: int | None = None) -> str:
    """The text embedded for an entry: its name (a skill's, a resource's title, a turn's speaker), its description,
    then the full text, joined by newlines.

    Args:
        name, description, l2_full: the entry's columns (``None`` or empty parts are left out).
        category: the entry's category; for ``"turn"`` the description is the turn it replies to
            (``"Speaker: text"``).
        turn_context_chars: for a turn, cut that description to about this many characters
            (:func:`~agentbase.ingest._text.cut_text`; ``ingest.turn_context_embed_chars``); 0 leaves it out,
            ``None`` keeps it whole.
        turn_text_chars: for a turn, cut its own text to about this many characters (``cut_text``;
            ``ingest.turn_embed_chars``); ``None`` keeps it whole. Other categories are never cut here.

    Returns:
        The string to embed.
    """
    if category == "turn" and description and turn_context_chars is not None:
        description = cut_text(description, turn_context_chars) if turn_context_chars > 0 else None
    if category == "turn" and turn_text_chars is not None:
        l2_full = cut_text(l2_full, turn_text_chars)
    return "\n".join(p for p in (name, description, l2_full) if p)


async def pending_jobs(db: Any, kind: str) -> int:
    """Number of jobs of ``kind`` (``"embed"``, ``"enrich"``, ``"relations"``, ``"llm"``) in the file not yet done or
    failed (``pending`` or ``running``).

    Raises:
        StorageError: the query failed.
    """
    return await db.ops.jobs.open_count(db, kind)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


async def _mean_turn_vector(conn: Any, session_id: str, model_id: str, dims: int) -> np.ndarray | None:
    """The normalised mean of the vectors (of ``model_id``) of session ``session_id``'s turn entries; None when
    it has none."""
    vectors = await conn.ops.embeddings.turn_vectors(conn, session_id, model_id, dims)
    if not len(vectors):
        return None
    mean = vectors.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return (mean / norm).astype(np.float32) if norm > 0 else None


class JobWorker:
    """Drains one kind of job for one database on the engine loop; subclasses implement :meth:`_process`.

    Args:
        db: an open :class:`~agentbase.storage.Database`.
        kind: the ``jobs.kind`` it claims.
        batch_size: jobs claimed per batch.
    """

    claim_statuses: tuple[str, ...] = ("pending", "running")  # job statuses a batch claims once due
    stop_wait_s: float | None = None  # stop() waits this long for the batch in progress (None: STOP_WAIT_S)

    def __init__(self, db: Any, kind: str, *, batch_size: int):
        self.db = db
        self.kind = kind
        self.batch_size = batch_size
        self.enabled = True
        self._stopping = False
        self._wake = asyncio.Event()
        self._stop_event = asyncio.Event()  # set by stop() and abandon(): ends waits in _before_batch at once
        self._task: asyncio.Task | None = None
        self._claimed: list[int] = []  # job ids of the batch in flight
        self.exiting = False  # Python is shutting down: no job can start in this process any more

    def start(self) -> None:
        """Start the background drain task on the current (engine) loop."""
        if self._task is None:
            self._stopping = False
            self._stop_event.clear()
            self._task = asyncio.get_running_loop().create_task(self._loop())

    def notify(self) -> None:
        """Wake the background task after new jobs were queued."""
        self._wake.set()

    async def stop(self) -> None:
        """Stop the background task after its current batch (pending jobs stay queued in the file).

        Stopping is a flag plus a wake-up, not only a cancellation: ``asyncio.wait_for`` on Python 3.11 can swallow
        a cancel that races with its inner wait finishing (a write's ``notify``), which left the task running and
        ``close()`` waiting forever.
        """
        task, self._task = self._task, None
        if task is None:
            return
        self._stopping = True
        self._stop_event.set()
        self._wake.set()
        try:
            await asyncio.wait_for(asyncio.shield(task),
                                   timeout=STOP_WAIT_S if self.stop_wait_s is None else self.stop_wait_s)
        except (asyncio.CancelledError, Exception):  # noqa: BLE001 - timeout or a failed batch; cancel below
            in_flight = list(self._claimed)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            await self.release(in_flight)

    async def abandon(self) -> int:
        """The process is exiting: claim no more jobs and hand the claimed ones back (see :meth:`release`).

        Returns:
            number of jobs released.

        Raises:
            StorageError: the update failed.
        """
        self._stopping = self.exiting = True
        self._stop_event.set()
        return await self.release()

    async def release(self, job_ids: list[int] | None = None) -> int:
        """Return claimed jobs to ``pending``, due now, without counting an attempt, so the next process (or this
        one) picks them up at once instead of after their lease (``LEASE_S``). Used when a batch is abandoned:
        ``stop()`` gave up waiting for it, or the process is exiting.

        Args:
            job_ids: the jobs to release; default the batch in flight.

        Returns:
            number of jobs released (those still ``running``).

        Raises:
            StorageError: the update failed.
        """
        ids = list(self._claimed if job_ids is None else job_ids)
        if not ids or self.db.closed:
            return 0
        now = to_db_time(utcnow())
        async with self.db.transaction() as conn:
            return await conn.ops.jobs.release(conn, ids, now)

    async def _before_batch(self) -> None:
        """Hook run by the background task before each batch (not by ``flush()``): wait while it should yield."""

    def _queue_empty(self) -> None:
        """Hook run by the background task when a batch found nothing due."""

    async def _loop(self) -> None:
        while not self._stopping:
            try:
                await self._before_batch()
                done = await self.run_once()
            except asyncio.CancelledError:
                raise
            except StorageError as exc:  # typically another process holding the write lock: try again later
                log.warning("%s worker: %s", self.kind, exc)
                done = 0
            except Exception:  # noqa: BLE001 - the worker must survive; the error is on the job rows
                log.exception("%s batch failed", self.kind)
                done = 0
            if done == 0 and not self._stopping:
                self._queue_empty()
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=1.0)

    async def pending(self) -> int:
        """Number of this worker's kind of jobs not yet done or failed."""
        return await pending_jobs(self.db, self.kind)

    async def run_once(self) -> int:
        """Claim and process one batch of due jobs.

        Returns:
            Number of jobs processed (done or failed-and-rescheduled); 0 when nothing was due.
        """
        if not self.enabled or self.exiting or self.db.closed:
            return 0
        now = utcnow()
        lease = to_db_time(now + timedelta(seconds=LEASE_S))
        # A read first: an idle worker polls every second, and taking the file's write lock for nothing would make
        # other processes' writers wait.
        if not await self.db.ops.jobs.any_due(self.db, self.kind, self.claim_statuses, to_db_time(now)):
            return 0
        async with self.db.transaction() as conn:
            claimed = list(await conn.ops.jobs.claim(conn, self.kind, self.claim_statuses, to_db_time(now), lease,
                                                     self.batch_size))
        if not claimed:
            return 0
        self._claimed = [c[0] for c in claimed]
        try:
            return await self._process(claimed)
        finally:
            self._claimed = []

    async def _process(self, claimed: list[tuple]) -> int:
        """Process a claimed batch of ``(job id, target, attempts)``; return how many jobs it handled."""
        raise NotImplementedError

    async def _fail(self, claimed: list[tuple], exc: Exception) -> None:
        now = utcnow()
        log.warning("%s failed for %d jobs: %s", self.kind, len(claimed), exc)
        async with self.db.transaction() as conn:
            for job_id, _target, attempts in claimed:
                attempts += 1
                status = "failed" if attempts >= MAX_ATTEMPTS else "pending"
                delay = min(2 ** attempts, MAX_BACKOFF_S)
                await conn.ops.jobs.set_attempt(conn, job_id, status=status, attempts=attempts,
                                                next_run_at=to_db_time(now + timedelta(seconds=delay)),
                                                error=f"{type(exc).__name__}: {exc}"[:2000], now=to_db_time(now))


class EmbeddingWorker(JobWorker):
    """Drains ``embed`` jobs for one database and embedder.

    Args:
        db: an open :class:`~agentbase.storage.Database`.
        embedder: the configured embedder (``model_id``, ``dims``, ``embed_documents``).
        batch_size: jobs claimed per batch.
        max_chars: texts longer than this are chunked and their vectors averaged.
        max_chunks: chunks embedded per text (its first ``max_chars`` x ``max_chunks`` characters).
        ingest: returns the current :class:`~agentbase.config.IngestSettings`, read for every batch (a setting
            changed on an open AgentBase applies to the next batch): ``turn_context_embed_chars`` (how much of
            the turn a turn replies to joins its embedded text), ``turn_embed_chars`` (how much of its own text),
            ``summary_vector`` (``turn_mean``: a summary's vector is the normalised mean of its session's turn
            vectors, and it waits for those turns' pending embedding jobs). None: the defaults.
    """

    def __init__(self, db: Any, embedder: Any, *, batch_size: int = 64, max_chars: int = 2000,
                 max_chunks: int | None = 16, ingest: Callable[[], Any] | None = None):
        super().__init__(db, "embed", batch_size=batch_size)
        self._ingest = ingest or IngestSettings
        self.embedder = embedder
        self.max_chars = max_chars
        self.max_chunks = max_chunks
        self.embedded = 0
        self.cache_hits = 0

    async def _process(self, claimed: list[tuple]) -> int:
        ids = [c[1] for c in claimed]
        rows = await self.db.ops.embeddings.entries_to_embed(self.db, ids, SESSION_SUMMARY)
        by_id = {r[0]: r for r in rows}
        means: set[str] = set()  # summaries that get their session's mean turn vector
        ingest = self._ingest()
        summary_turn_mean = ingest.summary_vector == "turn_mean"
        if summary_turn_mean:
            means, waiting = await self._turn_mean_plan(by_id, set(ids))
            if waiting:  # their sessions' turns are still being embedded (by another batch): try again then
                await self._defer({c[0]: waiting[c[1]] for c in claimed if c[1] in waiting})
                claimed = [c for c in claimed if c[1] not in waiting]
        texts = {eid: embed_text(r[2], r[3], r[4], category=r[6], turn_context_chars=ingest.turn_context_embed_chars,
                                 turn_text_chars=ingest.turn_embed_chars)
                 for eid, r in by_id.items() if eid not in means}
        try:
            vectors, non_finite = await self._vectors(list(dict.fromkeys(texts.values())))
        except Exception as exc:  # noqa: BLE001 - recorded on the job rows
            if interpreter_exiting(exc):
                # The script has ended and Python is shutting down, which makes thread pools refuse
                # work ("cannot schedule new futures after shutdown"): not the jobs' fault, so no attempt is
                # counted and they are due again at once for the next process.
                await self.abandon()
                return 0
            await self._fail(claimed, exc)
            return len(claimed)
        model_id, dims = self.embedder.model_id, int(self.embedder.dims)
        stamp = to_db_time(utcnow())
        async with self.db.transaction() as conn:
            await self._ensure_dims(conn, dims, model_id)
            # summaries last: their mean reads the turn vectors this batch writes
            for job_id, target, attempts in sorted(claimed, key=lambda c: c[1] in means):
                if target not in means and texts.get(target) in non_finite:
                    # The embedder's answer for this text is not a vector (NaN or infinity): it fails at once (a
                    # retry would embed the same text again), recorded on the job; nothing is stored.
                    await conn.ops.jobs.set_attempt(
                        conn, job_id, status="failed", attempts=attempts + 1, next_run_at=stamp,
                        error=f"EmbeddingError: embedder {model_id!r} returned a non-finite vector (NaN or "
                              "infinity) for this entry's text", now=stamp)
                    continue
                row = by_id.get(target)
                if row is not None:
                    current = await conn.ops.embeddings.content_hash_at(conn, row[1])
                    vec = vectors.get(texts.get(target)) if target not in means else \
                        await _mean_turn_vector(conn, row[7], model_id, dims)
                    if current is not None and current == row[5] and vec is not None:
                        await conn.ops.embeddings.put_embedding(conn, row[1], model_id, dims, row[5], vec, stamp)
                        await conn.ops.vectors.upsert(conn, self.db.vector_engine, row[1], vec)
                await conn.ops.jobs.finish(conn, job_id, stamp)
            if summary_turn_mean:  # the mean follows the turns (a later commit, an edited turn)
                done = {c[1] for c in claimed}
                await conn.ops.entries.requeue_session_summaries(
                    conn, {by_id[t][7] for t in done if t in by_id and by_id[t][6] == "turn" and by_id[t][7]},
                    stamp, skip=done)
            await conn.ops.embeddings.trim_vector_log(conn, LOG_KEEP)
        return len(claimed)

    async def _turn_mean_plan(self, by_id: dict[str, tuple], batch: set[str]) -> tuple[set[str], dict[str, str]]:
        """Which summaries of the batch get their session's mean turn vector, and which must wait: ``(means,
        {summary id: when to try again (database time)})``. A summary waits while a turn of its session has an
        embedding job outside this batch that is not done (the batch claimed before it, still embedding, or a turn
        whose embedding failed and waits to retry), else it would average a partial session; it is embedded from
        its text when its session has no turn that has or will get a vector (``ingest.embed_roles``)."""
        sessions = {r[7] for r in by_id.values() if r[6] == "summary" and r[7] and r[8]}
        if not sessions:
            return set(), {}
        rows = await self.db.ops.embeddings.turn_embedding_states(self.db, list(sessions))
        soon = to_db_time(utcnow() + timedelta(seconds=DEFER_S))
        # session -> when to look again: soon while a batch embeds its turns ("running"; their next_run_at is the
        # lease's end), else when its latest pending turn job is due (a failed embedding's backoff)
        due: dict[str, str] = {}
        for sid, eid, status, next_run_at in rows:
            if status in ("pending", "running") and eid not in batch:
                due[sid] = max(due.get(sid, soon), (next_run_at or soon) if status == "pending" else soon)
        with_turns = {row[0] for row in rows}
        means = {eid for eid, r in by_id.items() if r[6] == "summary" and r[8] and r[7] in with_turns}
        return means, {eid: due[by_id[eid][7]] for eid in means if by_id[eid][7] in due}

    async def _defer(self, due: dict[int, str]) -> None:
        """Return claimed jobs to ``pending`` without counting an attempt, due at the given database times."""
        now = to_db_time(utcnow())
        async with self.db.transaction() as conn:
            await conn.ops.jobs.put_back(conn, list(due.items()), now)

    async def _ensure_dims(self, conn: Any, dims: int, model_id: str) -> None:
        await conn.ops.embeddings.ensure_vector_meta(conn, dims, model_id)
        if self.db.vector_engine != "numpy":  # sqlite-vec's table, pgvector's HNSW index
            await conn.ops.vectors.create_index(conn, dims)

    async def _vectors(self, texts: list[str]) -> tuple[dict[str, np.ndarray], set[str]]:
        """``({text: vector}, texts whose vector is not finite)``: cached vectors, the others embedded (in a
        thread) and cached. A vector holding NaN or infinity (a broken embedder, an overflow in float32) is never
        cached nor returned, on either engine (pgvector would refuse it, SQLite would store it and rank it
        nowhere), so every engine fails its job the same way."""
        model_id = self.embedder.model_id
        hashes = {t: _sha(t) for t in texts}
        cached = await self.db.ops.embeddings.cached_vectors(self.db, model_id, [hashes[t] for t in texts])
        found: dict[str, np.ndarray] = {t: cached[hashes[t]] for t in texts
                                        if hashes[t] in cached and np.isfinite(cached[hashes[t]]).all()}
        missing = [t for t in texts if t not in found]
        self.cache_hits += len(texts) - len(missing)
        bad: set[str] = set()
        if missing:
            matrix = await asyncio.to_thread(embed_long_documents, self.embedder, missing, self.max_chars,
                                           max_chunks=self.max_chunks)
            matrix = np.asarray(matrix, dtype=np.float32)
            finite = np.isfinite(matrix).all(axis=1) if matrix.ndim == 2 else np.zeros(len(missing), dtype=bool)
            bad = {t for i, t in enumerate(missing) if not finite[i]}
            good = [(i, t) for i, t in enumerate(missing) if finite[i]]
            if good:
                async with self.db.transaction() as conn:
                    await conn.ops.embeddings.cache_vectors(conn, model_id, matrix.shape[1],
                                                            [(hashes[t], matrix[i]) for i, t in good])
            for i, t in good:
                found[t] = matrix[i]
            self.embedded += len(good)
            if bad:
                log.warning("embedder %r returned a non-finite vector for %d text(s): their jobs fail",
                            model_id, len(bad))
        return found, bad


class EnrichmentWorker(JobWorker):
    """Drains enrichment jobs one target at a time: ``enrich`` jobs name a session whose committed turns still
    need facts, entity tags, relations and a summary (see :mod:`agentbase.ingest.commit`); ``relations`` jobs
    name a memory written by ``add_memory`` whose graph relations are still to be extracted.

    Args:
        db: an open :class:`~agentbase.storage.Database`.
        enrich: ``async (target) -> bool | None``; True when the target is fully enriched, False when another
            commit landed meanwhile (the job then runs again at once), None when the engine is closing (the
            batch's jobs go back to the queue, no attempt counted).
        kind: the ``jobs.kind`` it claims (``"enrich"`` or ``"relations"``).
        batch_size: jobs claimed per batch (each is one session, in its own transaction).
        idle_s: the background task runs a batch only after no foreground write for this many seconds
            (``ingest.enrich_idle_s``); ``flush()`` does not wait.
        max_wait_s: ... or once it has waited this long since it last found the queue empty
            (``ingest.enrich_max_wait_s``).
        last_write: the event loop time (``loop.time()``, seconds) of the last foreground write.
    """

    def __init__(self, db: Any, enrich: Callable[[str], Awaitable[bool | None]], *, batch_size: int = 8,
                 idle_s: float = 0.0, max_wait_s: float = 10.0, last_write: Callable[[], float] = lambda: 0.0,
                 kind: str = "enrich"):
        super().__init__(db, kind, batch_size=batch_size)
        self._enrich = enrich
        self.idle_s = idle_s
        self.max_wait_s = max_wait_s
        self._last_write = last_write
        self._waiting_since: float | None = None

    async def _before_batch(self) -> None:
        """Wait until no foreground write for ``idle_s`` seconds, or until ``max_wait_s`` have passed since the
        worker last found the queue empty (then it runs regardless, so a steady stream of writes cannot starve
        the queue)."""
        loop = asyncio.get_running_loop()
        if self._waiting_since is None:
            self._waiting_since = loop.time()
        while not self._stopping:
            quiet = loop.time() - self._last_write()
            if quiet >= self.idle_s or loop.time() - self._waiting_since >= self.max_wait_s:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop_event.wait(), timeout=self.idle_s - quiet)

    def _queue_empty(self) -> None:
        self._waiting_since = None

    async def _process(self, claimed: list[tuple]) -> int:
        for n, job in enumerate(claimed):
            job_id, session_id, _attempts = job
            try:
                complete = await self._enrich(session_id)
            except Exception as exc:  # noqa: BLE001 - recorded on the job row
                if interpreter_exiting(exc):
                    await self.abandon()
                    return n
                await self._fail([job], exc)
                continue
            if complete is None:  # the engine is closing: hand this job and the rest back
                await self.release([j[0] for j in claimed[n:]])
                return n
            stamp = to_db_time(utcnow())
            async with self.db.transaction() as conn:
                # A commit that re-queued this session while it ran set the row back to 'pending': leave it so.
                await conn.ops.jobs.finish(conn, job_id, stamp, status="done" if complete else "pending")
        return len(claimed)
