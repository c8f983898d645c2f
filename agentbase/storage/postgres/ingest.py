"""Session-commit operations on PostgreSQL: what ``commit_session`` and its enrichment (``agentbase/ingest/commit.py``)
and the LLM ingest jobs (``agentbase/llm/ingest.py``) read and write beyond the entry writes themselves. Same
functions, arguments and row shapes as ``storage/sqlite/ingest.py``.

They serve: the message window a commit reads, the session watermarks (``committed_seq``: messages turned into
entries; ``enriched_seq``: messages whose facts, tags, relations and summary are written), the
``session_memory_links`` rows tying entries to the messages they came from, fact deduplication and supersession
(``superseded_by``), the session summary, and the LLM's retrieval keys, tiers and facts.

Owner filters are ``{"user_id": ..., "agent_id": ..., "project_id": ...}`` dicts (a subset of those keys; None
matches a missing owner, as ``IS NOT DISTINCT FROM``). Entry rows come back in ``ENTRY_COLUMNS`` order
(``agentbase/storage/entries.py``); times are DB time text (UTC); tags and metadata are JSON text.

What differs from SQLite, and why:

- Several hosts commit at once (SQLite has one writer, so a transaction's read-then-write cannot interleave with
  another's). The callers read, check and write inside one transaction; two row/advisory locks make that hold here
  too, taken only when the op runs in a transaction (``PgWriter``; a plain read locks nothing):

  * ``watermarks`` locks the session row (``SELECT ... FOR UPDATE``,
    https://www.postgresql.org/docs/current/sql-select.html#SQL-FOR-UPDATE-SHARE). A second commit or enrichment
    of the same session waits until the first commits, then reads the watermarks the first wrote (READ COMMITTED
    re-reads a locked row's newest version) and sees that it raced, as it would on SQLite.
  * ``same_fact_row``, ``fact_key_rows`` and ``known_memory_id`` (deduplicate, then insert or supersede) first take
    a transaction-scoped advisory lock on the owner set (``pg_advisory_xact_lock`` on a 64-bit hash of the owners,
    https://www.postgresql.org/docs/current/functions-admin.html#FUNCTIONS-ADVISORY-LOCKS), then read. Facts of one
    owner set are thus written one transaction at a time, and each read (a new statement, a new snapshot) sees the
    facts the previous one committed: two hosts stating one fact store it once, and two values of one key end with
    exactly one current. A hash collision of two owner sets only makes them wait for each other.

  Lock order, so that none of these waits can deadlock: a transaction takes the session row first (``watermarks``
  here; ``sessions.session_exists``/``enrichment_pending`` in the message writes), then the owners' fact lock,
  then entry rows. The LLM fact job takes no session row; it deletes its own earlier facts (``llm_fact_rows``,
  which no commit writes) before it takes the fact lock.
- ``set_derived_text`` also rebuilds ``fts``/``doc_len`` and moves ``keyword_stats`` (SQLite's FTS5 trigger
  follows ``fts_text`` there).
- ``json_extract(metadata, '$.k')`` is ``json_doc(metadata) ->> 'k'`` (:func:`.sqlutil.json_doc`): a metadata
  text holding the ``\\u0000`` escape reads as no metadata here (PostgreSQL cannot read that escape as text, and
  one such row would fail the statement), where SQLite reads it.
- ``insert_links`` is ``INSERT ... ON CONFLICT DO NOTHING`` (SQLite's ``INSERT OR IGNORE``); lists bind as one
  ``text[]`` parameter; ``messages.committed`` is the integer 0/1 on both engines.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .sqlutil import in_transaction, lock_key
from .sqlutil import json_doc as _doc

__all__ = ["committed_message_ids", "content_hash_of", "fact_key_rows", "insert_links", "known_memory_id",
           "last_message_time", "llm_fact_rows", "mark_committed", "participant_names", "previous_turn",
           "rule_fact_rows", "same_fact_row", "sessions_to_settle", "set_derived_text", "set_enriched_seq",
           "summary_entry_row", "supersede", "transcript", "turn_entry_rows", "turn_tag_lists", "watermarks",
           "window_message_ids"]

_OWNER_KEYS = ("user_id", "agent_id", "project_id")
_FACT_LOCK = "agentbase.facts"  # namespace of the owner-set advisory lock keys


def _owner_sql(owners: dict[str, Any]) -> tuple[str, list[Any]]:
    bad = set(owners) - set(_OWNER_KEYS)
    if bad or not owners:  # the callers' own owner dicts, never user input; checked all the same
        raise ValueError(f"unknown owner keys {sorted(bad)}")
    return " AND ".join(f"{k} IS NOT DISTINCT FROM %s" for k in owners), list(owners.values())


async def _lock_owner_facts(c: Any, owners: dict[str, Any]) -> None:
    """Inside a transaction, wait for and hold (until it ends) the advisory lock of this owner set's facts."""
    await lock_key(c, json.dumps([_FACT_LOCK, *(owners.get(k) for k in _OWNER_KEYS)], ensure_ascii=False))


# ------------------------------------------------------------------------------------------------ sessions
async def sessions_to_settle(c: Any, session_id: str) -> list[str]:
    """Ids of the sessions with the same owners (user, agent, project) as this one, itself included, whose
    committed messages still wait for enrichment (``enriched_seq < committed_seq``); [] for an unknown id."""
    rows = await c.fetchall(
        "SELECT p.id FROM sessions s JOIN sessions p ON p.user_id IS NOT DISTINCT FROM s.user_id "
        "AND p.agent_id IS NOT DISTINCT FROM s.agent_id AND p.project_id IS NOT DISTINCT FROM s.project_id "
        "WHERE s.id = %s AND p.enriched_seq < p.committed_seq", (session_id,))
    return [r[0] for r in rows]


async def watermarks(c: Any, session_id: str) -> tuple[int, int] | None:
    """The session's ``(committed_seq, enriched_seq)``, or None when no session has this id. Inside a
    transaction the session row stays locked (``FOR UPDATE``) until it ends, so the caller's check-then-write
    cannot interleave with another host's commit of the same session."""
    lock = " FOR UPDATE" if in_transaction(c) else ""
    return await c.fetchone(f"SELECT committed_seq, enriched_seq FROM sessions WHERE id = %s{lock}", (session_id,))


async def mark_committed(conn: Any, session_id: str, after_seq: int, upto_seq: int, enriched_seq: int,
                         now: str) -> None:
    """Flag the session's messages with ``after_seq < seq <= upto_seq`` committed and set the session
    ``committed`` with ``committed_seq = upto_seq``, this ``enriched_seq`` and ``updated_at = now``."""
    await conn.execute("UPDATE messages SET committed = 1 WHERE session_id = %s AND seq > %s AND seq <= %s",
                       (session_id, after_seq, upto_seq))
    await conn.execute("UPDATE sessions SET committed_seq = %s, enriched_seq = %s, status = 'committed', "
                       "updated_at = %s WHERE id = %s", (upto_seq, enriched_seq, now, session_id))


async def set_enriched_seq(conn: Any, session_id: str, seq: int) -> None:
    """Set the session's ``enriched_seq``."""
    await conn.execute("UPDATE sessions SET enriched_seq = %s WHERE id = %s", (seq, session_id))


# ------------------------------------------------------------------------------------------------ messages
async def window_message_ids(c: Any, session_id: str, after_seq: int, upto_seq: int) -> list[str]:
    """Ids of the session's messages with ``after_seq < seq <= upto_seq``, by seq."""
    rows = await c.fetchall("SELECT id FROM messages WHERE session_id = %s AND seq > %s AND seq <= %s "
                            "ORDER BY seq", (session_id, after_seq, upto_seq))
    return [r[0] for r in rows]


async def committed_message_ids(c: Any, session_id: str, after_seq: int) -> set[str]:
    """Ids of the session's messages past ``after_seq`` that a commit has read before (``committed`` set)."""
    rows = await c.fetchall("SELECT id FROM messages WHERE session_id = %s AND seq > %s AND committed = 1",
                            (session_id, after_seq))
    return {r[0] for r in rows}


async def previous_turn(c: Any, session_id: str, before_seq: int, roles: Sequence[str]) -> tuple | None:
    """``(role, content, name)`` of the session's last message before ``before_seq`` whose role is one of
    ``roles`` and whose content is not blank (``TRIM`` strips spaces, on both engines), or None."""
    return await c.fetchone(
        "SELECT role, content, name FROM messages WHERE session_id = %s AND seq < %s AND role = ANY(%s::text[]) "
        "AND TRIM(content) <> '' ORDER BY seq DESC LIMIT 1", [session_id, before_seq, list(roles)])


async def participant_names(c: Any, session_id: str, upto_seq: int) -> list[str]:
    """The distinct speaker names of the session's messages up to ``upto_seq`` (in no particular order)."""
    rows = await c.fetchall(
        "SELECT DISTINCT name FROM messages WHERE session_id = %s AND seq <= %s AND name IS NOT NULL",
        (session_id, upto_seq))
    return [r[0] for r in rows]


async def transcript(c: Any, session_id: str, upto_seq: int, *, skip_blank: bool = False) -> list[tuple]:
    """``(role, content, name)`` of the session's messages up to ``upto_seq``, by seq; without the ones whose
    content is blank when ``skip_blank``."""
    blank = " AND TRIM(content) <> ''" if skip_blank else ""
    return await c.fetchall(f"SELECT role, content, name FROM messages WHERE session_id = %s AND seq <= %s{blank} "
                            "ORDER BY seq", (session_id, upto_seq))


async def last_message_time(c: Any, session_id: str, upto_seq: int) -> str | None:
    """The latest ``created_at`` of the session's messages up to ``upto_seq``, or None when it has none."""
    row = await c.fetchone("SELECT MAX(created_at) FROM messages WHERE session_id = %s AND seq <= %s",
                           (session_id, upto_seq))
    return row[0]


# ------------------------------------------------------------------------------------------------ links
async def insert_links(conn: Any, links: Sequence[tuple]) -> None:
    """Link entries to the session: ``(session_id, entry_id, kind, message_seq)`` rows (kind ``turn``, ``fact``
    or ``summary``; message_seq None for a summary); a link that exists is kept as it is (``ON CONFLICT DO
    NOTHING``, also against a concurrent writer)."""
    rows = list(links)
    if rows:
        await conn.executemany("INSERT INTO session_memory_links(session_id, entry_id, kind, message_seq) "
                               "VALUES (%s, %s, %s, %s) ON CONFLICT (session_id, entry_id) DO NOTHING", rows)


async def turn_entry_rows(c: Any, session_id: str, after_seq: int, upto_seq: int) -> list[tuple]:
    """``(message_seq, *ENTRY_COLUMNS)`` of the session's turn entries linked to messages with
    ``after_seq < seq <= upto_seq``."""
    from ..entries import entry_columns

    return await c.fetchall(
        f"SELECT l.message_seq, {entry_columns('e')} FROM session_memory_links l JOIN entries e "
        f"ON e.id = l.entry_id WHERE l.session_id = %s AND l.kind = 'turn' AND l.message_seq > %s "
        f"AND l.message_seq <= %s", (session_id, after_seq, upto_seq))


async def summary_entry_row(c: Any, session_id: str) -> tuple | None:
    """The entry row (``ENTRY_COLUMNS``) linked to the session as its summary, or None."""
    from ..entries import entry_columns

    return await c.fetchone(
        f"SELECT {entry_columns('e')} FROM entries e JOIN session_memory_links l ON l.entry_id = e.id "
        "WHERE l.session_id = %s AND l.kind = 'summary' LIMIT 1", (session_id,))


async def turn_tag_lists(c: Any, session_id: str) -> list[str]:
    """The tags (JSON text, one list per entry) of the session's turn entries, in insertion order (by rid)."""
    rows = await c.fetchall("SELECT tags FROM entries WHERE session_id = %s AND category = 'turn' ORDER BY rid",
                            (session_id,))
    return [r[0] for r in rows]


# ------------------------------------------------------------------------------------------------ facts
async def same_fact_row(c: Any, content_hash: str, category: str, owners: dict[str, Any]) -> tuple | None:
    """An active, not superseded entry (``ENTRY_COLUMNS``) of these owners with this content hash and category,
    or None. Inside a transaction it first takes the owners' fact lock (module docstring)."""
    from ..entries import ENTRY_COLUMNS

    owner_sql, owner_params = _owner_sql(owners)
    await _lock_owner_facts(c, owners)
    return await c.fetchone(
        f"SELECT {ENTRY_COLUMNS} FROM entries WHERE content_hash = %s AND category = %s AND status = 'active' "
        f"AND superseded_by IS NULL AND {owner_sql} LIMIT 1", [content_hash, category, *owner_params])


async def fact_key_rows(c: Any, fact_key: str, owners: dict[str, Any]) -> list[tuple]:
    """``(rid, id, l2_full, t)`` of the active, not superseded entries of these owners with this supersession
    key, latest ``t`` (``event_time``, else ``created_at``) first. Inside a transaction it first takes the
    owners' fact lock (module docstring)."""
    owner_sql, owner_params = _owner_sql(owners)
    await _lock_owner_facts(c, owners)
    return await c.fetchall(
        f"SELECT rid, id, l2_full, COALESCE(event_time, created_at) AS t FROM entries WHERE fact_key = %s "
        f"AND status = 'active' AND superseded_by IS NULL AND {owner_sql} ORDER BY t DESC",
        [fact_key, *owner_params])


async def supersede(conn: Any, rid: int, superseded_by: str, now: str) -> None:
    """Mark the entry row ``rid`` superseded by the entry id ``superseded_by`` (``updated_at = now``); the
    caller records the history event."""
    await conn.execute("UPDATE entries SET superseded_by = %s, updated_at = %s WHERE rid = %s",
                       (superseded_by, now, rid))


# ------------------------------------------------------------------------------------------------ LLM jobs
async def content_hash_of(c: Any, entry_id: str) -> str | None:
    """The entry's current ``content_hash``, or None when no entry has this id."""
    row = await c.fetchone("SELECT content_hash FROM entries WHERE id = %s", (entry_id,))
    return row[0] if row is not None else None


async def set_derived_text(conn: Any, rid: int, metadata_json: str, l0_abstract: str | None,
                           l1_overview: str | None, fts_text: str) -> None:
    """Replace the entry row's metadata, L0/L1 tiers and keyword text (derived text: no history event, no new
    vector). The keyword index follows the text in the same statement, as SQLite's trigger makes FTS5 follow it:
    ``fts`` and ``doc_len`` are rebuilt from ``fts_text`` (:func:`.bm25.keyword_document`) and ``keyword_stats``
    moves by the new minus the old ``doc_len`` (read by ``RETURNING old.doc_len``, PostgreSQL 18), the lexemes'
    document counts by the lexemes that entered or left (``entries.keyword_changed``)."""
    from .bm25 import keyword_document
    from .entries import KEYWORD_CHANGE, keyword_changed

    vector, length = keyword_document(fts_text)
    row = await conn.fetchone(
        "UPDATE entries SET metadata = %s, l0_abstract = %s, l1_overview = %s, fts_text = %s, fts = %s::tsvector, "
        f"doc_len = %s WHERE rid = %s RETURNING {KEYWORD_CHANGE}",
        (metadata_json, l0_abstract, l1_overview, fts_text, vector, length, rid))
    await keyword_changed(conn, row)


async def llm_fact_rows(c: Any, message_id: str) -> list[tuple]:
    """Entry rows (``ENTRY_COLUMNS``) of the facts the model extracted from this message
    (``metadata.source = 'llm'``)."""
    from ..entries import ENTRY_COLUMNS

    return await c.fetchall(
        f"SELECT {ENTRY_COLUMNS} FROM entries WHERE ({_doc('metadata')} ->> 'source') = 'llm' "
        f"AND ({_doc('metadata')} ->> 'message_id') = %s", (message_id,))


async def known_memory_id(c: Any, content_hash: str, owners: dict[str, Any]) -> str | None:
    """The id of an active, not superseded memory of these owners, other than a turn, with this content hash,
    or None. Inside a transaction it first takes the owners' fact lock (module docstring)."""
    owner_sql, owner_params = _owner_sql(owners)
    await _lock_owner_facts(c, owners)
    row = await c.fetchone(
        f"SELECT id FROM entries WHERE content_hash = %s AND status = 'active' AND superseded_by IS NULL "
        f"AND context_type = 'memory' AND category <> 'turn' AND {owner_sql} LIMIT 1",
        [content_hash, *owner_params])
    return row[0] if row is not None else None


async def rule_fact_rows(c: Any, message_id: str) -> list[tuple]:
    """``(rid, id, l2_full)`` of the active, not superseded rule-based facts of this message
    (``metadata.source = 'session'``) that have no supersession key."""
    return await c.fetchall(
        f"SELECT rid, id, l2_full FROM entries WHERE ({_doc('metadata')} ->> 'source') = 'session' "
        f"AND ({_doc('metadata')} ->> 'message_id') = %s AND fact_key IS NULL AND superseded_by IS NULL "
        "AND status = 'active'", (message_id,))
