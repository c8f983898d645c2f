"""The ingest uses of the LLM, as durable ``llm`` jobs on the job queue (docs/llm.md).

A session's enrichment (``commit_session``, inline or queued) writes the rule-based facts, tiers and summary as
before, and, when a model is configured, queues in the same transaction one ``llm`` job per piece of work
(``jobs.kind = "llm"``; ``jobs.target`` names it):

* ``summary:<session id>``: the session summary and its L0/L1 tiers written by the model (``llm.summaries``);
* ``turn:<entry id>``: a turn's one-line retrieval key, indexed for keyword search next to its text
  (``llm.retrieval_keys``), and its L0 abstract / L1 overview (``llm.summaries``; the overview only for a turn
  longer than 300 characters);
* ``facts:<entry id>``: the facts a user turn states, extracted by the model (``llm.facts``).

The commit is acknowledged without waiting for them; :class:`LLMJobWorker` runs them in the background
(``flush()`` waits for them too). The rule-based output stays in place until the model's replaces it. A handler
reads what it needs, calls the model, then writes in one transaction only if its input is unchanged (same text,
same committed messages), else the job runs again; writing the same answer twice changes nothing, so a job run
twice (an expired lease) neither loses nor duplicates anything.

Failures: :class:`~agentbase.errors.LLMUnavailable` (endpoint unreachable) sets the job ``deferred`` without
counting an attempt, due again after :attr:`LLMJobWorker.defer_s`; :class:`~agentbase.errors.LLMRetryable`
(429 / 5xx / timeouts after the client's retries) counts an attempt and retries with the queue's backoff, then
ends ``failed``; a permanent :class:`~agentbase.errors.LLMError` or an answer that is not the JSON asked for
(:class:`~agentbase.errors.LLMOutputError`) ends ``failed`` at once with the reason in ``last_error``. Either way
the rule-based output is kept.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import timedelta
from typing import Any

from ..errors import LLMError, LLMOutputError, LLMRetryable, LLMUnavailable
from ..ingest.dedup import content_hash
from ..ingest.tiers import L0_MAX_CHARS, L1_MAX_CHARS, _truncate, lead
from ..ingest.worker import JobWorker
from ..models import ContextType, Scope, utcnow
from ..storage.entries import (RETRIEVAL_KEY, RETRIEVAL_KEY_FOR, _fts_source, delete_entry_row,
                               insert_entry, row_to_entry, update_entry_row)
from ..timeutil import to_db_time
from .client import parse_json_answer
from .prompts import facts_messages, summary_messages, turn_messages
from .usage import traced_calls

__all__ = ["LLM_JOB", "LLMJobWorker", "enqueue_llm_jobs", "run_llm_job"]

log = logging.getLogger("agentbase.llm")

LLM_JOB = "llm"  # jobs.kind
DEFER_S = 30.0  # an unreachable endpoint: the job is due again after this many seconds
CHANGED_RETRY_S = 1.0  # a job whose input changed while the model answered runs again after this
SUMMARY_MAX_CHARS = 600  # as the rule-based summary (ingest/summary.py)
KEY_MAX_CHARS = 200
FACT_MAX_CHARS = 300
MAX_FACTS = 8
TRANSCRIPT_MESSAGE_CHARS = 800  # each message of a summary's transcript is cut to this many characters
TRANSCRIPT_MAX_CHARS = 12_000  # and the transcript to this many (its start and end kept): ~3k tokens
_TURN_ROLES = ("user", "assistant")


async def enqueue_llm_jobs(ab: Any, conn: Any, session_id: str, turns: list[tuple[str, str, int]],
                           now: str) -> int:
    """Queue the ``llm`` jobs for a session's newly enriched turns, inside the caller's transaction; nothing when
    no model is configured (the default) or every ingest use is switched off.

    Args:
        ab: the engine (its ``settings.llm`` decides which uses run).
        conn: the writer of the enrichment's open transaction.
        session_id: the session.
        turns: ``(turn entry id, role, text length in characters)`` of the turns just enriched.
        now: the database time the jobs are due.

    Returns:
        Number of jobs queued (or re-armed).
    """
    llm = ab.settings.llm
    if not llm.configured:
        return 0
    targets: list[str] = []
    if llm.use("summaries"):
        targets.append(f"summary:{session_id}")
    for entry_id, role, length in turns:
        if llm.use("retrieval_keys") or (llm.use("summaries") and length > L0_MAX_CHARS):
            targets.append(f"turn:{entry_id}")
        if llm.use("facts") and role == "user":
            targets.append(f"facts:{entry_id}")
    for target in targets:
        await conn.ops.jobs.enqueue(conn, LLM_JOB, target, now)
    return len(targets)


class LLMJobWorker(JobWorker):
    """Drains ``llm`` jobs with the engine's :class:`~agentbase.llm.LLMClient`; the jobs of a batch run
    concurrently (the client bounds the requests in flight).

    Args:
        db: the open database.
        ab: the engine (settings, client, entry building).
        batch_size: jobs claimed per batch.

    Attributes:
        defer_s: seconds a job waits after the endpoint was unreachable (:data:`DEFER_S`).
    """

    claim_statuses = ("pending", "running", "deferred")
    stop_wait_s = 5.0  # close() waits this long for LLM calls in flight, then hands their jobs back

    def __init__(self, db: Any, ab: Any, *, batch_size: int = 8):
        super().__init__(db, LLM_JOB, batch_size=batch_size)
        self.ab = ab
        self.defer_s = DEFER_S

    async def _process(self, claimed: list[tuple]) -> int:
        outcomes = await asyncio.gather(*(self._one(job) for job in claimed), return_exceptions=True)
        for job, outcome in zip(claimed, outcomes):
            if isinstance(outcome, BaseException) and not isinstance(outcome, Exception):
                raise outcome
        return len(claimed)

    async def _one(self, job: tuple) -> None:
        """Run one job; its model calls are one trace (query ``"llm job <target>"``, params ``{"kind": "llm_job",
        "target"}``: :func:`~agentbase.llm.usage.traced_calls`)."""
        async with traced_calls(self.ab, f"llm job {job[1]}", {"kind": "llm_job", "target": job[1]}):
            await self._run_one(job)

    async def _run_one(self, job: tuple) -> None:
        job_id, target, _attempts = job
        try:
            complete = await run_llm_job(self.ab, target)
        except LLMUnavailable as exc:
            await self._set(job_id, "deferred", self.defer_s, f"deferred: {exc}")
            return
        except LLMRetryable as exc:
            delay = exc.retry_after_s
            await self._fail([job], exc)
            if delay:  # the server said when: not sooner than that
                await self._push(job_id, delay)
            return
        except LLMOutputError as exc:
            await self._set(job_id, "failed", 0, f"{type(exc).__name__}: {exc} (rule-based output kept)")
            return
        except LLMError as exc:
            await self._set(job_id, "failed", 0, f"{type(exc).__name__}: {exc} (rule-based output kept)")
            return
        except Exception as exc:  # noqa: BLE001 - a storage error: recorded on the job, retried with backoff
            await self._fail([job], exc)
            return
        # its input changed while the model answered: again shortly, with the new input
        await self._set(job_id, "done" if complete else "pending", 0 if complete else CHANGED_RETRY_S, None)

    async def _set(self, job_id: int, status: str, delay_s: float, error: str | None) -> None:
        now = utcnow()
        async with self.db.transaction() as conn:
            # a job re-armed meanwhile (a new commit set it back to 'pending') stays so
            await conn.ops.jobs.finish(conn, job_id, to_db_time(now), status=status, error=error,
                                       next_run_at=to_db_time(now + timedelta(seconds=delay_s)))

    async def _push(self, job_id: int, delay_s: float) -> None:
        when = to_db_time(utcnow() + timedelta(seconds=delay_s))
        async with self.db.transaction() as conn:
            await conn.ops.jobs.postpone(conn, job_id, when)


async def run_llm_job(ab: Any, target: str) -> bool:
    """Run one ``llm`` job.

    Args:
        ab: the engine, with ``ab.llm`` set.
        target: ``"summary:<session id>"``, ``"turn:<entry id>"`` or ``"facts:<entry id>"``.

    Returns:
        True when done (also when there is nothing to do: the entry or session was deleted, the use switched
        off), False when its input changed while the model answered (the job runs again).

    Raises:
        LLMUnavailable, LLMRetryable, LLMError, LLMOutputError: from the model (nothing was written).
        StorageError: the write failed.
    """
    kind, _, ident = target.partition(":")
    if ab.llm is None or not ident:
        return True
    if kind == "summary":
        return await _summary_job(ab, ident) if ab.settings.llm.use("summaries") else True
    if kind == "turn":
        return await _turn_job(ab, ident)
    if kind == "facts":
        return await _facts_job(ab, ident) if ab.settings.llm.use("facts") else True
    return True


def _str_field(data: Any, key: str, purpose: str, *, required: bool = True) -> str | None:
    value = data.get(key) if isinstance(data, dict) else None
    if isinstance(value, str) and value.strip():
        return " ".join(value.split())
    if required:
        raise LLMOutputError(f"the answer has no text field {key!r}: {json.dumps(data)[:200]}", purpose=purpose)
    return None


async def _entry_by_id(db: Any, entry_id: str) -> tuple[int, Any] | None:
    row = await db.ops.entries.row_by_id(db, entry_id)
    return (row[0], row_to_entry(row)) if row is not None else None


def _transcript(rows: list[tuple[str, str, str | None]]) -> str:
    lines = [f"{name or role}: {' '.join(content.split())[:TRANSCRIPT_MESSAGE_CHARS]}" for role, content, name in rows]
    text = "\n".join(lines)
    if len(text) <= TRANSCRIPT_MAX_CHARS:
        return text
    half = TRANSCRIPT_MAX_CHARS // 2
    return f"{text[:half]}\n[...]\n{text[-half:]}"


async def _summary_job(ab: Any, session_id: str) -> bool:
    from ..ingest.commit import _summary_tags

    db = ab.db
    session = await db.ops.ingest.watermarks(db, session_id)
    if session is None:
        return True
    upto = session[0]
    rows = [(r[0], r[1], r[2]) for r in await db.ops.ingest.transcript(db, session_id, upto, skip_blank=True)
            if r[0] in _TURN_ROLES]
    if not rows:
        return True
    result = await ab.llm.chat(summary_messages(_transcript(rows)), purpose="summary", json_mode=True,
                               max_tokens=min(ab.settings.llm.max_tokens, 400))
    data = parse_json_answer(result.text, purpose="summary")
    summary = _str_field(data, "summary", "summary")
    summary = summary if len(summary) <= SUMMARY_MAX_CHARS else lead(summary, SUMMARY_MAX_CHARS)
    overview = lead(_str_field(data, "overview", "summary", required=False) or summary, L1_MAX_CHARS)
    abstract = _truncate(_str_field(data, "abstract", "summary", required=False) or overview, L0_MAX_CHARS)
    async with db.transaction() as conn:
        now_seq = await conn.ops.ingest.watermarks(conn, session_id)
        if now_seq is None:
            return True
        if now_seq[0] != upto or now_seq[1] != upto:
            # more was committed: that commit's enrichment re-arms this job (enqueue_llm_jobs), which then
            # summarises the longer session; this answer is dropped
            return True
        existing = await conn.ops.ingest.summary_entry_row(conn, session_id)
        if existing is None:  # the rules found nothing to summarise, or the user deleted the summary
            return True
        old = row_to_entry(existing)
        if old.l2_full == summary and old.l0_abstract == abstract and old.l1_overview == overview:
            return True
        tag_rows = await conn.ops.ingest.turn_tag_lists(conn, session_id)
        turn_tags = list(dict.fromkeys(t for raw in tag_rows for t in json.loads(raw)))
        meta = {**old.metadata, "written_by": f"llm:{result.model}", "summarised_seq": upto}
        new = old.model_copy(update={"l2_full": summary, "l0_abstract": abstract, "l1_overview": overview,
                                     "content_hash": content_hash(summary), "updated_at": utcnow(),
                                     "metadata": meta, "tags": _summary_tags(summary, turn_tags, old.tags)})
        await update_entry_row(conn, existing[0], old, new, engine=db.vector_engine)
    ab._notify()  # the new text has an embedding job
    return True


async def _turn_job(ab: Any, entry_id: str) -> bool:
    db = ab.db
    llm = ab.settings.llm
    found = await _entry_by_id(db, entry_id)
    if found is None:
        return True
    _rid, entry = found
    text = entry.l2_full
    want_key = llm.use("retrieval_keys")
    want_tiers = llm.use("summaries") and len(text) > L0_MAX_CHARS
    if not (want_key or want_tiers):
        return True
    speaker = entry.name or str(entry.metadata.get("role") or "user")
    result = await ab.llm.chat(
        turn_messages(text[:4000], speaker=speaker, context=entry.description, key=want_key, tiers=want_tiers,
                      overview=len(text) > L1_MAX_CHARS),
        purpose="retrieval_key" if want_key else "tiers", json_mode=True, max_tokens=min(llm.max_tokens, 200))
    data = parse_json_answer(result.text, purpose=result.purpose)
    key = _str_field(data, "key", result.purpose) if want_key else None
    abstract = _str_field(data, "abstract", result.purpose, required=False) if want_tiers else None
    overview = _str_field(data, "overview", result.purpose, required=False) \
        if want_tiers and len(text) > L1_MAX_CHARS else None
    async with db.transaction() as conn:
        row = await conn.ops.entries.row_by_id(conn, entry_id)
        if row is None:
            return True
        current = row_to_entry(row)
        if current.content_hash != entry.content_hash:
            return False  # edited while the model answered: its job was re-armed or runs again
        meta = dict(current.metadata)
        if key:
            meta[RETRIEVAL_KEY] = key[:KEY_MAX_CHARS]
            meta[RETRIEVAL_KEY_FOR] = current.content_hash
        l0 = _truncate(abstract, L0_MAX_CHARS) if abstract else current.l0_abstract
        l1 = lead(overview, L1_MAX_CHARS) if overview else current.l1_overview
        if meta == current.metadata and l0 == current.l0_abstract and l1 == current.l1_overview:
            return True
        new = current.model_copy(update={"metadata": meta, "l0_abstract": l0, "l1_overview": l1})
        # derived text, like a queued enrichment's tags: no history event, no new vector (the embedded text holds
        # neither the key nor the tiers)
        await conn.ops.ingest.set_derived_text(conn, row[0], json.dumps(meta, ensure_ascii=False), l0, l1,
                                               _fts_source(new))
    return True


async def _facts_job(ab: Any, entry_id: str) -> bool:
    db = ab.db
    found = await _entry_by_id(db, entry_id)
    if found is None:
        return True
    _rid, turn = found
    message_id = turn.metadata.get("message_id")
    if turn.category != "turn" or not isinstance(message_id, str):
        return True
    speaker = turn.name or "User"
    result = await ab.llm.chat(facts_messages(turn.l2_full[:4000], speaker=speaker, context=turn.description),
                               purpose="facts", json_mode=True, max_tokens=min(ab.settings.llm.max_tokens, 400))
    data = parse_json_answer(result.text, purpose="facts")
    raw = data.get("facts") if isinstance(data, dict) else data if isinstance(data, list) else None
    if not isinstance(raw, list) or not all(isinstance(f, str) for f in raw):
        raise LLMOutputError(f"the answer is not {{\"facts\": [str, ...]}}: {result.text[:200]!r}", purpose="facts")
    facts = list(dict.fromkeys(" ".join(f.split()) for f in raw if 3 <= len(f.strip()) <= FACT_MAX_CHARS))
    facts = facts[:MAX_FACTS]
    owners = {"user_id": turn.user_id, "agent_id": turn.agent_id, "project_id": turn.project_id}
    now = utcnow()
    stamp = to_db_time(now)
    entity_tags = [t for t in turn.tags if t.startswith("ner_")]
    async with db.transaction() as conn:
        current_hash = await conn.ops.ingest.content_hash_of(conn, entry_id)
        if current_hash is None:
            return True
        if current_hash != turn.content_hash:
            return False
        # the model's earlier answer for this message (a job run again) is replaced by this one
        earlier = await conn.ops.ingest.llm_fact_rows(conn, message_id)
        keep = {content_hash(f) for f in facts}
        kept_ids: dict[str, str] = {}
        for r in earlier:
            e = row_to_entry(r)
            if e.content_hash in keep and e.content_hash not in kept_ids:
                kept_ids[e.content_hash] = e.id
            else:
                await delete_entry_row(conn, r[0], e, engine=db.vector_engine, now=stamp)
        new_ids: list[str] = []
        for text in facts:
            h = content_hash(text)
            if h in kept_ids:
                new_ids.append(kept_ids[h])
                continue
            same = await conn.ops.ingest.known_memory_id(conn, h, owners)
            if same is not None:  # already known (a rule-based fact, another message's): nothing to add
                continue
            entry = ab._build_entry(
                text, category="fact", tags=entity_tags,
                metadata={"source": "llm", "message_id": message_id, "extracted_by": f"llm:{result.model}"},
                scope=Scope.GLOBAL, owners={**owners, "session_id": turn.session_id}, confidence=0.8,
                importance=0.6, event_time=turn.event_time, context_type=ContextType.MEMORY, entry_id=None,
                extra={}, extract_entities=False)
            await insert_entry(conn, entry, fact_key=None)
            new_ids.append(entry.id)
            kept_ids[h] = entry.id
            if turn.session_id:
                seq = turn.metadata.get("message_seq")
                await conn.ops.ingest.insert_links(
                    conn, [(turn.session_id, entry.id, "fact", seq if isinstance(seq, int) else None)])
        if new_ids:
            # The rule-based facts of this message without a knowledge-update key give way to the model's (a
            # keyed one, "User lives in Oslo", keeps superseding later values of its key, so it stays).
            rule = await conn.ops.ingest.rule_fact_rows(conn, message_id)
            for rid, old_id, old_text in rule:
                if content_hash(old_text) in keep:  # the model stated it too: it stays
                    continue
                await conn.ops.ingest.supersede(conn, rid, new_ids[0], stamp)
                await conn.ops.entries.record_history(conn, old_id, "UPDATE", old_text, old_text, stamp,
                                     {"superseded_by": new_ids[0], "reason": "replaced by the LLM's facts"})
    ab._notify()
    return True
