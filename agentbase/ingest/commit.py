"""Zero-LLM session commit: a session's new messages become turn entries, then facts, relations and a summary.

A commit has two parts:

1. **Turns** (always inside the call): one entry per user/assistant turn, with its FTS row, its speaker's tag and
   its embedding job, ``session_memory_links`` rows, and ``sessions.committed_seq`` moved to the last message.
2. **Enrichment**: entity tags on the turns (NER), extracted facts (dedup, hardening, supersession), temporal
   graph relations and the session summary; ``sessions.enriched_seq`` follows ``committed_seq``.

``commit_session(wait=True)`` (the default) does both in one transaction. ``wait=False`` commits the turns and
queues an ``enrich`` job for the session in the same transaction, so the call returns once the turns are durable
and keyword-searchable; the :class:`~agentbase.ingest.worker.EnrichmentWorker` does the rest, and
``AgentBase.flush()`` waits for it. Either way each message is enriched exactly once, in message order.
"""

from __future__ import annotations

import asyncio
import json
import unicodedata
from typing import Any

from ..errors import NotFoundError, StorageError
from ..models import ContextType, Message, Scope, Session, utcnow
from ..ner import TAG_PREFIX, entity_tags, tag_for
from ..ner.base import mention_pattern
from ..ner.vocative import drop_vocatives
from ..storage.entries import (SESSION_SUMMARY, insert_entries, insert_entry,
                               row_to_entry, set_derived_tags, update_entry_row)
from ..timeutil import from_db_time, to_db_time
from ._text import cut_text
from .dedup import content_hash, harden_confidence
from .facts import KEY_DESCRIPTIONS, extract_facts, resolve_time
from .summary import summarize_session
from .tiers import l0_abstract, l1_overview

__all__ = ["TURN_ROLES", "commit_session", "enrich_session", "settle", "settle_owners_of"]

TURN_ROLES = ("user", "assistant")
ENRICH_JOB = "enrich"  # jobs.kind of a queued session enrichment; jobs.target is the session id


class _CommitRaced(Exception):
    """Another commit of the same session landed between reading the new messages and writing them."""


async def commit_session(ab: Any, session_id: str, *, wait: bool = True) -> dict[str, Any]:
    """See :meth:`AgentBase.commit_session`. Concurrent commits of one session (tasks, threads or processes)
    store each message once: the one that loses the race re-reads what is still new and commits only that."""
    for _attempt in range(20):
        try:
            if wait:
                # Earlier commits' queued enrichment first, this session's and its owners' others (their facts
                # are the ones this commit hardens or supersedes), so facts are applied in commit order.
                await settle_owners_of(ab, session_id)
            return await _commit_once(ab, session_id, enrich=wait)
        except _CommitRaced:
            continue
    raise StorageError(f"session {session_id!r} kept changing during commit; try again")


async def settle_owners_of(ab: Any, session_id: str) -> None:
    """:func:`settle` every session with queued enrichment whose owners (user, agent, project) are this
    session's, itself included; nothing for an unknown session. One read of the pending-sessions index.

    Raises:
        StorageError: as :func:`settle`.
    """
    db = await ab._open()
    ids = await db.ops.ingest.sessions_to_settle(db, session_id)
    if ids:
        await settle(ab, ids)


async def settle(ab: Any, session_ids: list[str]) -> None:
    """Run now whatever enrichment is still queued for these sessions (the write barrier before an edit that
    would change what it reads: deleting or replacing messages, editing, archiving or deleting an entry of their
    owners, a commit with ``wait=True``), so the result is what an inline commit followed by that edit gives.
    Sessions with nothing queued cost one indexed read.

    Raises:
        StorageError: a write failed, or a session kept changing (20 rounds).
    """
    from ..sessions import get_session

    for session_id in dict.fromkeys(session_ids):
        for _attempt in range(20):
            session = await get_session(ab, session_id)
            if session is None or session.enriched_seq >= session.committed_seq:
                break
            await enrich_session(ab, session_id)
        else:
            raise StorageError(f"session {session_id!r} kept changing while its queued enrichment ran; try again")


def _empty_result(session_id: str, messages: int, enriched: bool) -> dict[str, Any]:
    return {"session_id": session_id, "messages": messages, "turns": 0, "facts_added": 0, "facts_hardened": 0,
            "facts_superseded": 0, "summary_id": None, "enriched": enriched}


async def _commit_once(ab: Any, session_id: str, *, enrich: bool) -> dict[str, Any]:
    from ..sessions import get_messages, get_session

    db = await ab._open()
    session = await get_session(ab, session_id)
    if session is None:
        raise NotFoundError(f"session {session_id!r} not found")
    new = await get_messages(ab, session_id, limit=None, order="asc", after_seq=session.committed_seq,
                             before_seq=None)
    result = _empty_result(session_id, len(new), session.enriched_seq >= session.committed_seq)
    if not new:
        return result
    result["enriched"] = enrich
    owners = _owners(session)
    turns = await _uncommitted(db, session_id, session.committed_seq,
                               [m for m in new if m.role in TURN_ROLES and m.content.strip()])
    entity_lists = await _turn_entities(ab, session_id, turns, new[-1].seq) if enrich else [[] for _ in turns]
    contexts = await _reply_contexts(ab, session_id, turns)
    embed_roles = set(ab.settings.ingest.embed_roles)
    now = utcnow()
    turn_tags = [_turn_tags(msg, ents) for msg, ents in zip(turns, entity_lists)]
    turn_entries = []
    for msg, tags, context in zip(turns, turn_tags, contexts):
        turn_entries.append(ab._build_entry(
            msg.content, category="turn", tags=tags, metadata={"role": msg.role, "speaker": msg.name,
                                                               "message_id": msg.id, "message_seq": msg.seq},
            scope=Scope.SESSION, owners={**owners, "session_id": session_id}, confidence=1.0, importance=0.3,
            event_time=msg.created_at, context_type=ContextType.MEMORY, entry_id=None,
            extra={k: v for k, v in (("name", msg.name), ("description", context)) if v}, extract_entities=False))
    links: list[tuple[str, str, str, int | None]] = [(session_id, e.id, "turn", m.seq)
                                                      for m, e in zip(turns, turn_entries)]
    async with db.transaction() as conn:
        row = await conn.ops.ingest.watermarks(conn, session_id)
        if row is None or row[0] != session.committed_seq or (enrich and row[1] != session.committed_seq):
            raise _CommitRaced
        # a replace in another process may have swapped the messages read for others under the same seqs
        now_there = await conn.ops.ingest.window_message_ids(conn, session_id, session.committed_seq, new[-1].seq)
        if now_there != [m.id for m in new]:
            raise _CommitRaced
        await insert_entries(conn, turn_entries, embed=[m.role in embed_roles for m in turns])
        result["turns"] = len(turn_entries)
        if enrich:
            await _enrich(ab, conn, session, turns, entity_lists, turn_tags, links, result, now, new[-1].seq)
        await conn.ops.ingest.insert_links(conn, links)
        last = new[-1].seq
        # enriched_seq row[1], read in this transaction: an enrichment that ran since the session was read must
        # not be undone (its turns would be read, and their facts hardened, again)
        await conn.ops.ingest.mark_committed(conn, session_id, session.committed_seq, last,
                                             last if enrich else row[1], to_db_time(now))
        if not enrich:
            await conn.ops.jobs.enqueue(conn, ENRICH_JOB, session_id, to_db_time(now))
    return result


async def enrich_session(ab: Any, session_id: str) -> bool:
    """Enrich a session's committed but not yet enriched turns (the queued part of ``commit_session(wait=False)``):
    entity tags on their turn entries, facts, graph relations and the summary, in one transaction.

    Args:
        ab: the engine.
        session_id: the session; an unknown (deleted) one is nothing to do.

    Returns:
        True when the session is fully enriched afterwards; False when another commit or enrichment of it landed
        meanwhile (its job stays queued and runs again).

    Raises:
        StorageError: the write failed (the job records it and retries).
    """
    from ..sessions import get_messages, get_session

    db = await ab._open()
    session = await get_session(ab, session_id)
    if session is None or session.enriched_seq >= session.committed_seq:
        return True
    lo, hi = session.enriched_seq, session.committed_seq
    msgs = await get_messages(ab, session_id, limit=None, order="asc", after_seq=lo, before_seq=hi + 1)
    turns = [m for m in msgs if m.role in TURN_ROLES and m.content.strip()]
    entity_lists = await _turn_entities(ab, session_id, turns, hi)
    turn_tags = [_turn_tags(msg, ents) for msg, ents in zip(turns, entity_lists)]
    result = _empty_result(session_id, len(msgs), True)
    now = utcnow()
    async with db.transaction() as conn:
        row = await conn.ops.ingest.watermarks(conn, session_id)  # (committed_seq, enriched_seq)
        if row is None or row[1] != lo:
            return row is None
        entries = {r[0]: r[1:] for r in await conn.ops.ingest.turn_entry_rows(conn, session_id, lo, hi)}
        links: list[tuple[str, str, str, int | None]] = []
        keep: list[int] = []
        for i, msg in enumerate(turns):
            found = entries.get(msg.seq)
            if found is None:  # the turn entry was deleted meanwhile, or the message was committed before a
                continue       # replace renumbered it: nothing to tag or enrich
            keep.append(i)
            old = row_to_entry(found)
            links.append((session_id, old.id, "turn", msg.seq))
            tags = list(dict.fromkeys([*old.tags, *turn_tags[i]]))  # facts get the derived tags only
            if tags != old.tags:
                await set_derived_tags(conn, found[0], old, tags)
        await _enrich(ab, conn, session, [turns[i] for i in keep], [entity_lists[i] for i in keep],
                      [turn_tags[i] for i in keep], links, result, now, hi)
        await conn.ops.ingest.insert_links(conn, [link for link in links if link[2] != "turn"])
        await conn.ops.ingest.set_enriched_seq(conn, session_id, hi)
        return row[0] <= hi


async def _uncommitted(db: Any, session_id: str, after_seq: int, turns: list[Message]) -> list[Message]:
    """``turns`` without the messages a commit has read before (``messages.committed``): a replace renumbers the
    messages it keeps past the watermark, but a message is committed once (its memories stay deleted if the
    user deleted them)."""
    if not turns:
        return turns
    done = await db.ops.ingest.committed_message_ids(db, session_id, after_seq)
    return [m for m in turns if m.id not in done] if done else turns


def _owners(session: Session) -> dict[str, Any]:
    return {"user_id": session.user_id, "agent_id": session.agent_id, "project_id": session.project_id}


def _turn_tags(msg: Message, ents: list[Any]) -> list[str]:
    """A turn's tags: its speaker's name first (when named), then its entities. "When did Caroline ..." is about
    what Caroline said, not about turns where someone else addresses her; the name also joins the keyword and
    vector text (the entry's ``name`` field, which for turns holds the speaker)."""
    tags = entity_tags(ents)
    return list(dict.fromkeys([tag_for(msg.name), *tags])) if msg.name else tags


async def _enrich(ab: Any, conn: Any, session: Session, turns: list[Message], entity_lists: list[list[Any]],
                  turn_tags: list[list[str]], links: list[tuple[str, str, str, int | None]], result: dict[str, Any],
                  now: Any, upto_seq: int) -> None:
    """Facts, graph relations and the summary (of the session's messages up to ``upto_seq``, the committed ones)
    for ``turns`` (their turn entries are in ``links``), inside the caller's transaction; counters go to
    ``result`` and new link rows to ``links``."""
    from ..graph import ingest_session_relations  # temporal graph relations from the committed turns

    owners = _owners(session)
    for msg, tags in zip(turns, turn_tags):
        if msg.role == "user":
            for fact in extract_facts(msg.content, subject=msg.name or "User"):
                counts, eid = await _store_fact(ab, conn, fact, owners, session.id, msg, tags, now)
                for key, n in counts.items():
                    result[key] += n
                links.append((session.id, eid, "fact", msg.seq))
    await ingest_session_relations(ab, conn, session, turns, entity_lists, links)
    summary_id = await _store_summary(ab, conn, session, owners, upto_seq)
    if summary_id:
        links.append((session.id, summary_id, "summary", None))
        result["summary_id"] = summary_id
    if ab.settings.llm.configured:  # the optional model's work, as durable jobs (agentbase/llm/ingest.py)
        from ..llm.ingest import enqueue_llm_jobs

        by_seq = {m.seq: m for m in turns}
        await enqueue_llm_jobs(ab, conn, session.id, [(link[1], by_seq[link[3]].role, len(by_seq[link[3]].content))
                                                      for link in links if link[2] == "turn" and link[3] in by_seq],
                               to_db_time(now))


async def _reply_contexts(ab: Any, session_id: str, turns: list[Message]) -> list[str | None]:
    """For each turn, the turn before it in the session (``"Speaker: text"`` cut to ``ingest.turn_context_chars``).

    The same whether the session is committed at once or in steps: the first new turn looks back past tool and
    system messages and empty turns to the last earlier turn with content.
    """
    limit = ab.settings.ingest.turn_context_chars
    if not limit or not turns:
        return [None] * len(turns)
    db = await ab._open()
    row = await db.ops.ingest.previous_turn(db, session_id, turns[0].seq, sorted(TURN_ROLES))
    prev: tuple[str, str, str | None] | None = (row[0], row[1], row[2]) if row else None
    out: list[str | None] = []
    for msg in turns:
        # a turn replies to the other party's turn; a second message in a row by the same speaker does not
        # reply to the first ("My favourite cuisine is Ethiopian." after "I'm planning a trip to Japan.")
        same = prev is not None and prev[0] == msg.role and prev[2] == msg.name
        out.append(None if prev is None or same else
                   f"{prev[2] or prev[0]}: {cut_text(' '.join(prev[1].split()), limit)}")
        prev = (msg.role, msg.content, msg.name)
    return out


async def _turn_entities(ab: Any, session_id: str, turns: list[Message], upto_seq: int) -> list[list[Any]]:
    """Entities of each turn: the configured extractor for roles in ``ingest.ner_roles``, regex for the rest.
    Participants' names (speakers of the session's messages up to ``upto_seq``) used vocatively ("Thanks,
    Caroline!" addresses Caroline; it is not about her) are dropped when ``ingest.drop_vocatives`` is on."""
    limit = ab.settings.ingest.ner_max_chars
    ner_roles = set(ab.settings.ingest.ner_roles)
    main = [i for i, m in enumerate(turns) if m.role in ner_roles or ab.extractor.name == "regex"]
    out: list[list[Any]] = [[] for _ in turns]
    if main:
        texts = [turns[i].content[:limit] for i in main]
        # spaCy costs milliseconds per message: run it off the engine loop so other calls keep flowing.
        found = ab.extractor.extract_many(texts) if ab.extractor.name == "regex" else \
            await asyncio.to_thread(ab.extractor.extract_many, texts)
        for i, ents in zip(main, found):
            out[i] = ents
    chosen = set(main)
    rest = [i for i in range(len(turns)) if i not in chosen]
    if rest:
        for i, ents in zip(rest, ab.regex_extractor.extract_many([turns[i].content[:limit] for i in rest])):
            out[i] = ents
    if turns and ab.settings.ingest.drop_vocatives:
        db = await ab._open()
        participants = await db.ops.ingest.participant_names(db, session_id, upto_seq)
        if participants:
            out = [drop_vocatives(m.content, ents, participants) for m, ents in zip(turns, out)]
    return out


async def _store_fact(ab: Any, conn: Any, fact: Any, owners: dict[str, Any], session_id: str, msg: Message,
                      tags: list[str], now: Any) -> tuple[str, str]:
    """Insert, harden or supersede one extracted fact. Returns (counter increments, entry id)."""
    text_hash = content_hash(fact.text)
    row = await conn.ops.ingest.same_fact_row(conn, text_hash, fact.category, owners)
    if row is not None:
        old = row_to_entry(row)
        hardened = old.model_copy(update={"confidence": harden_confidence(old.confidence,
                                                                          ab.settings.ingest.confidence_step),
                                          "updated_at": now})
        await update_entry_row(conn, row[0], old, hardened, engine=ab.db.vector_engine)
        return {"facts_hardened": 1}, old.id
    meta = {"source": "session", "message_id": msg.id, "fact_key": fact.subject_key, "value": fact.value}
    resolved = resolve_time(fact, msg.created_at)  # "last month" said on 15 Nov 2026: October 2026
    if resolved:
        meta["when"] = resolved
    entry = ab._build_entry(
        fact.text, category=fact.category, tags=tags, metadata=meta,
        scope=Scope.GLOBAL, owners={**owners, "session_id": session_id}, confidence=float(fact.confidence),
        importance=0.6, event_time=msg.created_at, context_type=ContextType.MEMORY, entry_id=None,
        extra={"description": KEY_DESCRIPTIONS[fact.subject_key]} if fact.subject_key in KEY_DESCRIPTIONS else {},
        extract_entities=False)
    counts = {"facts_added": 1, "facts_superseded": 0}
    # A named speaker's facts are theirs: in a chat between two people, Ann's "I live in Boston" must not replace
    # Bob's "I live in Seattle", so the supersession key carries the speaker's name.
    fact_key = f"{msg.name.casefold()}|{fact.subject_key}" if fact.subject_key and msg.name else fact.subject_key
    if fact_key:
        # The value stated last in time wins, whatever the commit order: a session imported late with an older
        # date ("I live in Boston", 2020, after "We moved to Austin", 2024) is stored already superseded.
        when = to_db_time(msg.created_at)
        prev = await conn.ops.ingest.fact_key_rows(conn, fact_key, owners)
        newer = [row for row in prev if row[3] > when]
        if newer:
            entry = entry.model_copy(update={"superseded_by": newer[-1][1]})  # the next value in time
            counts["facts_superseded"] += 1
        for rid, old_id, old_text, _t in prev[len(newer):]:
            await conn.ops.ingest.supersede(conn, rid, entry.id, to_db_time(now))
            await conn.ops.entries.record_history(conn, old_id, "UPDATE", old_text, old_text, to_db_time(now),
                                 {"superseded_by": entry.id})
            counts["facts_superseded"] += 1
    await insert_entry(conn, entry, fact_key=fact_key)
    return counts, entry.id


def _summary_tags(text: str, turn_tags: list[str], old_tags: list[str]) -> list[str]:
    """A session summary's tags: the ones a user gave it (not ``ner_``) kept, plus the entity tags of the session's
    turns whose name the summary mentions (whole words, case as written, after NFKC normalisation like
    :func:`~agentbase.ner.tag_for`). The summary is built from the turns' own sentences, so a second extractor
    pass over it would find the same names (with spaCy it was a fifth of a commit's time), plus noise such as the
    "Topics" and "User asked" headings. Taking the names from every turn of the session, not only the ones just
    committed, makes the tags the same however the session was committed.
    """
    norm = unicodedata.normalize("NFKC", text)
    tags: dict[str, str] = {}  # case-folded -> first spelling
    for tag in old_tags:
        if not tag.startswith(TAG_PREFIX):
            tags.setdefault(tag.casefold(), tag)
    for tag in turn_tags:
        if not tag.startswith(TAG_PREFIX) or tag.casefold() in tags:
            continue
        name = tag[len(TAG_PREFIX):]
        if any(mention_pattern(form).search(norm) for form in dict.fromkeys((name.replace("_", " "), name))):
            tags[tag.casefold()] = tag
    return list(tags.values())


async def _store_summary(ab: Any, conn: Any, session: Session, owners: dict[str, Any], upto_seq: int) -> str | None:
    rows = await conn.ops.ingest.transcript(conn, session.id, upto_seq)
    text = summarize_session([(r[0], r[1], r[2]) for r in rows if r[0] in TURN_ROLES])
    if not text.strip():
        return None
    tag_rows = await conn.ops.ingest.turn_tag_lists(conn, session.id)
    turn_tags = list(dict.fromkeys(t for raw in tag_rows for t in json.loads(raw)))
    existing = await conn.ops.ingest.summary_entry_row(conn, session.id)
    last_time = await conn.ops.ingest.last_message_time(conn, session.id, upto_seq)
    if existing is not None:
        old = row_to_entry(existing)
        new = old.model_copy(update={"l2_full": text, "l0_abstract": l0_abstract(text), "l1_overview": l1_overview(text),
                                     "content_hash": content_hash(text), "updated_at": utcnow(),
                                     "event_time": from_db_time(last_time),
                                     "tags": _summary_tags(text, turn_tags, old.tags)})
        await update_entry_row(conn, existing[0], old, new, engine=ab.db.vector_engine)
        return old.id
    entry = ab._build_entry(text, category="summary", tags=_summary_tags(text, turn_tags, []),
                            metadata={"source": SESSION_SUMMARY}, scope=Scope.SESSION,
                            owners={**owners, "session_id": session.id}, confidence=1.0, importance=0.5,
                            event_time=from_db_time(last_time), context_type=ContextType.MEMORY, entry_id=None,
                            extra={}, extract_entities=False)
    await insert_entry(conn, entry, fact_key=None)
    return entry.id
