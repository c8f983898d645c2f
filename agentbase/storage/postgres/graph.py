"""Graph operations on PostgreSQL: entities, their aliases and relations with validity intervals.

The same functions, arguments, row shapes (:data:`RELATION_COLUMNS`, :data:`ENTITY_COLUMNS`) and orders as
:mod:`agentbase.storage.sqlite.graph`. Times are DB time text (:func:`agentbase.timeutil.to_db_time`, UTC).

What differs from the SQLite engine, and why:

- Several hosts write at once. Entity resolution reads then writes (look a name up, create the entity when it
  is absent; look a relation up, insert it when it is absent), which SQLite makes safe with its single writer.
  Here a write transaction's first graph lookup (:func:`entity_id_for_alias`, :func:`same_relation_at`) or
  entity insert takes a transaction-level advisory lock, :data:`GRAPH_LOCK`, held until COMMIT: graph writers
  queue as on SQLite, and the second one sees the first one's entity instead of failing on ``norm_name``'s
  unique index (which would abort its whole transaction). One lock, not one per name: per-name locks taken in
  different orders ("Alice met Bob", "Bob met Alice") would deadlock. Reads take no lock.
- Times are compared and ordered with ``COLLATE "C"`` (byte order, SQLite's ``BINARY``), whatever collation the
  database has; ``ORDER BY ... DESC`` says ``NULLS LAST`` (PostgreSQL puts NULLs first in a descending order,
  SQLite last), so undated relations come where they do on SQLite.
- ``MAX(a, b)`` is ``GREATEST(a, b)``; ``INSERT OR IGNORE`` is ``ON CONFLICT DO NOTHING``; id lists bind as one
  ``text[]`` (``= ANY(%s)``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .sqlutil import in_transaction

#: Relation row order: id, subject name, subject id, predicate, object name, object id, valid_from, valid_to,
#: source_entry_id, confidence, created_at.
RELATION_COLUMNS = ("id", "subject", "subject_id", "predicate", "object", "object_id", "valid_from", "valid_to",
                    "source_entry_id", "confidence", "created_at")
#: Entity row order.
ENTITY_COLUMNS = ("id", "name", "type", "aliases", "created_at")

#: Advisory lock key ("agbg") a write transaction holds from its first graph lookup until COMMIT.
GRAPH_LOCK = 0x61676267

_C = 'COLLATE "C"'
_REL_SELECT = (
    "SELECT r.id, s.name, r.subject_id, r.predicate, o.name, r.object_id, r.valid_from, r.valid_to, "
    "r.source_entry_id, r.confidence, r.created_at FROM relations r "
    "JOIN entities s ON s.id = r.subject_id JOIN entities o ON o.id = r.object_id"
)
_VALID_AT = f"(r.valid_from IS NULL OR r.valid_from {_C} <= %s) AND (r.valid_to IS NULL OR r.valid_to {_C} > %s)"


async def _graph_lock(c: Any) -> None:
    """Inside a write transaction, wait for (then hold until COMMIT) :data:`GRAPH_LOCK`; a read does nothing."""
    if in_transaction(c):
        await c.execute("SELECT pg_advisory_xact_lock(%s)", (GRAPH_LOCK,))


# ------------------------------------------------------------------------------------------------ entities
async def entity_id_for_alias(c: Any, norm_alias: str) -> str | None:
    """The id of the entity known by this normalised name or alias, or None. In a write transaction, takes
    :data:`GRAPH_LOCK` first (the caller creates the entity when there is none)."""
    await _graph_lock(c)
    row = await c.fetchone("SELECT entity_id FROM entity_aliases WHERE norm_alias = %s", (norm_alias,))
    return row[0] if row else None


async def entity_rows(c: Any, ids: Sequence[str]) -> list[tuple]:
    """Entity rows (:data:`ENTITY_COLUMNS`) for these ids, in no particular order."""
    if not ids:
        return []
    return await c.fetchall("SELECT id, name, type, aliases, created_at FROM entities WHERE id = ANY(%s)",
                            (list(ids),))


async def insert_entity(conn: Any, entity_id: str, name: str, norm_name: str, type: str | None, now: str) -> None:
    """A new entity with no aliases yet (under :data:`GRAPH_LOCK`).

    Raises:
        StorageError: an entity with this id or ``norm_name`` exists (at COMMIT or at once).
    """
    await _graph_lock(conn)
    await conn.execute("INSERT INTO entities(id, name, norm_name, type, aliases, created_at) "
                       "VALUES (%s, %s, %s, %s, %s, %s)", (entity_id, name, norm_name, type, "[]", now))


async def merge_entity(conn: Any, keep: str, other: str) -> None:
    """Re-point ``other``'s relations and aliases to ``keep`` and delete ``other``."""
    await conn.execute("UPDATE relations SET subject_id = %s WHERE subject_id = %s", (keep, other))
    await conn.execute("UPDATE relations SET object_id = %s WHERE object_id = %s", (keep, other))
    await conn.execute("UPDATE entity_aliases SET entity_id = %s WHERE entity_id = %s", (keep, other))
    await conn.execute("DELETE FROM entities WHERE id = %s", (other,))


async def set_aliases(conn: Any, entity_id: str, norm_aliases: Iterable[str], aliases_json: str,
                      type: str | None) -> None:
    """Index these normalised aliases for the entity (existing ones stay, whichever entity they name), store its
    alias list (JSON text), and set its type where it has none."""
    rows = [(n, entity_id) for n in norm_aliases]
    if rows:
        await conn.executemany("INSERT INTO entity_aliases(norm_alias, entity_id) VALUES (%s, %s) "
                               "ON CONFLICT DO NOTHING", rows)
    await conn.execute("UPDATE entities SET aliases = %s, type = COALESCE(type, %s) WHERE id = %s",
                       (aliases_json, type, entity_id))


# ----------------------------------------------------------------------------------------------- relations
async def relation_row(c: Any, relation_id: str) -> tuple | None:
    """One relation row (:data:`RELATION_COLUMNS`), or None."""
    return await c.fetchone(f"{_REL_SELECT} WHERE r.id = %s", (relation_id,))


async def same_relation_at(conn: Any, subject_id: str, predicate: str, object_id: str, when: str) -> str | None:
    """The id of ``subject -predicate-> object`` valid at ``when``, or None (under :data:`GRAPH_LOCK` in a write
    transaction: the caller inserts the relation when there is none)."""
    await _graph_lock(conn)
    row = await conn.fetchone(
        "SELECT id FROM relations r WHERE subject_id = %s AND predicate = %s AND object_id = %s "
        f"AND {_VALID_AT} LIMIT 1", (subject_id, predicate, object_id, when, when))
    return row[0] if row else None


async def raise_confidence(conn: Any, relation_id: str, confidence: float) -> None:
    """Confidence becomes the larger of the stored one and ``confidence``."""
    await conn.execute("UPDATE relations SET confidence = GREATEST(confidence, %s) WHERE id = %s",
                       (float(confidence), relation_id))


async def next_same_relation(conn: Any, subject_id: str, predicate: str, object_id: str,
                             after: str) -> tuple[str, str] | None:
    """``(id, valid_from)`` of the earliest ``subject -predicate-> object`` starting after ``after``, or None."""
    row = await conn.fetchone(
        "SELECT id, valid_from FROM relations WHERE subject_id = %s AND predicate = %s AND object_id = %s "
        f"AND valid_from {_C} > %s ORDER BY valid_from {_C} LIMIT 1", (subject_id, predicate, object_id, after))
    return (row[0], row[1]) if row else None


async def state_starts_between(conn: Any, subject_id: str, predicate: str, start: str, end: str) -> bool:
    """Whether a ``subject -predicate->`` relation (any object) starts strictly between ``start`` and ``end``."""
    row = await conn.fetchone(
        f"SELECT 1 FROM relations WHERE subject_id = %s AND predicate = %s AND valid_from {_C} > %s "
        f"AND valid_from {_C} < %s LIMIT 1", (subject_id, predicate, start, end))
    return row is not None


async def close_other_objects(conn: Any, subject_id: str, predicate: str, object_id: str, when: str) -> None:
    """End at ``when`` the subject's relations of this predicate to another object that are valid at ``when``."""
    await conn.execute(
        "UPDATE relations r SET valid_to = %s WHERE subject_id = %s AND predicate = %s AND object_id != %s "
        f"AND {_VALID_AT}", (when, subject_id, predicate, object_id, when, when))


async def move_start(conn: Any, relation_id: str, valid_from: str, confidence: float) -> None:
    """Start the relation at ``valid_from`` and raise its confidence to at least ``confidence``."""
    await conn.execute("UPDATE relations SET valid_from = %s, confidence = GREATEST(confidence, %s) WHERE id = %s",
                       (valid_from, float(confidence), relation_id))


async def next_state_start(conn: Any, subject_id: str, predicate: str, after: str) -> str | None:
    """The earliest ``valid_from`` after ``after`` of the subject's relations of this predicate, or None."""
    row = await conn.fetchone(
        f"SELECT MIN(valid_from {_C}) FROM relations WHERE subject_id = %s AND predicate = %s "
        f"AND valid_from {_C} > %s", (subject_id, predicate, after))
    return row[0] if row else None


async def insert_relation(conn: Any, relation_id: str, subject_id: str, predicate: str, object_id: str, *,
                          valid_from: str, valid_to: str | None, source_entry_id: str | None, confidence: float,
                          now: str) -> None:
    """A new relation row.

    Raises:
        StorageError: the id exists or an entity id is unknown (foreign key).
    """
    await conn.execute(
        "INSERT INTO relations(id, subject_id, predicate, object_id, valid_from, valid_to, source_entry_id, "
        "confidence, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (relation_id, subject_id, predicate, object_id, valid_from, valid_to, source_entry_id, float(confidence),
         now))


async def end_open_relation(conn: Any, subject_id: str, predicate: str, object_id: str, when: str) -> int:
    """End at ``when`` the open ``subject -predicate-> object`` relation begun by then; returns how many ended."""
    cur = await conn.execute(
        "UPDATE relations SET valid_to = %s WHERE subject_id = %s AND predicate = %s AND object_id = %s "
        f"AND valid_to IS NULL AND (valid_from IS NULL OR valid_from {_C} <= %s)",
        (when, subject_id, predicate, object_id, when))
    return cur.rowcount


async def relations_at(c: Any, entity_id: str, *, direction: str, when: str, predicate: str | None) -> list[tuple]:
    """Relations of the entity valid at ``when`` (``direction``: ``out`` as subject, ``in`` as object, ``both``),
    optionally of one predicate, newest ``valid_from`` first (undated last).

    Raises:
        KeyError: an unknown ``direction`` (as on SQLite; the caller validates it first).
    """
    side = {"out": "r.subject_id = %s", "in": "r.object_id = %s",
            "both": "(r.subject_id = %s OR r.object_id = %s)"}
    params: list[Any] = [entity_id] * (2 if direction == "both" else 1) + [when, when]
    sql = f"{_REL_SELECT} WHERE {side[direction]} AND {_VALID_AT}"
    if predicate is not None:
        sql += " AND r.predicate = %s"
        params.append(predicate)
    return await c.fetchall(sql + f" ORDER BY r.valid_from {_C} DESC NULLS LAST, r.created_at {_C} DESC NULLS LAST",
                            params)


async def timeline_rows(c: Any, entity_id: str) -> list[tuple]:
    """Every relation of the entity (either side, open and closed): undated ones first (as SQLite's ``ORDER BY
    valid_from IS NOT NULL`` gives), then oldest ``valid_from`` first, then ``created_at``."""
    return await c.fetchall(f"{_REL_SELECT} WHERE r.subject_id = %s OR r.object_id = %s "
                            f"ORDER BY r.valid_from IS NOT NULL, r.valid_from {_C}, r.created_at {_C}",
                            (entity_id, entity_id))


async def relations_touching(c: Any, entity_ids: Sequence[str], when: str | None) -> list[tuple]:
    """Relations with any of these entities on either side (valid at ``when``; None: all), newest first (undated
    last)."""
    ids = list(entity_ids)
    valid = "" if when is None else f" AND {_VALID_AT}"
    params: list[Any] = [ids, ids] + ([] if when is None else [when, when])
    return await c.fetchall(f"{_REL_SELECT} WHERE (r.subject_id = ANY(%s) OR r.object_id = ANY(%s)){valid}"
                            f" ORDER BY r.valid_from {_C} DESC NULLS LAST", params)


async def source_rids(c: Any, entity_ids: Sequence[str], filters: Any, limit: int) -> list[int]:
    """Row ids of the entries (passing ``filters``, a :class:`~agentbase.retrieval.filters.Filters`) that are the
    source of relations about these entities: currently valid relations first, then newest ``valid_from``.

    The filter SQL is this engine's (``filters.where("e", c.ops)``: ``storage/postgres/filters.py``, validated
    first).

    Raises:
        ValidationError: a bad filter (nothing is read).
    """
    where, params = filters.where("e", c.ops)
    ids = list(entity_ids)
    rows = await c.fetchall(
        f"SELECT e.rid, bool_or(r.valid_to IS NULL) AS open_, MAX(r.valid_from {_C}) AS vf FROM relations r "
        f"JOIN entries e ON e.id = r.source_entry_id WHERE (r.subject_id = ANY(%s) OR r.object_id = ANY(%s)) "
        f"AND {where} GROUP BY e.rid ORDER BY open_ DESC, vf DESC NULLS LAST LIMIT %s",
        [ids, ids, *params, int(limit)])
    return [int(r[0]) for r in rows]


async def forget_source(conn: Any, entry_id: str) -> int:
    """Delete the relations read from this entry; a relation of the same subject and predicate that one of them
    closed (its ``valid_to`` is their ``valid_from``: a newer state ended it) is reopened. Returns how many were
    deleted."""
    rows = await conn.fetchall("DELETE FROM relations WHERE source_entry_id = %s "
                               "RETURNING id, subject_id, predicate, object_id, valid_from", (entry_id,))
    for _rid, subject_id, predicate, object_id, valid_from in rows:
        if valid_from is not None:
            await conn.execute(
                "UPDATE relations SET valid_to = NULL WHERE subject_id = %s AND predicate = %s "
                "AND object_id != %s AND valid_to = %s AND (source_entry_id IS NULL OR source_entry_id != %s)",
                (subject_id, predicate, object_id, valid_from, entry_id))
    return len(rows)


# ------------------------------------------------------------------------------------- memories to read
async def memory_rows_to_read(c: Any, entry_ids: Sequence[str] | None) -> list[tuple]:
    """Memory entry rows (``ENTRY_COLUMNS``) whose text relations are read from, oldest event first: all, or these
    ids. A commit's facts and summary are left out (their turns were read at the commit)."""
    from ..entries import ENTRY_COLUMNS

    sql = (f"SELECT {ENTRY_COLUMNS} FROM entries WHERE context_type = 'memory' AND NOT EXISTS "
           "(SELECT 1 FROM session_memory_links l WHERE l.entry_id = entries.id AND l.kind != 'turn')")
    params: list[Any] = []
    if entry_ids is not None:
        sql += " AND id = ANY(%s)"
        params = [list(entry_ids)]
    return await c.fetchall(sql + f" ORDER BY COALESCE(event_time, created_at) {_C}, rid", params)


async def active_memory_row(c: Any, entry_id: str) -> tuple | None:
    """The entry row (``ENTRY_COLUMNS``) of an active memory, or None."""
    from ..entries import ENTRY_COLUMNS

    return await c.fetchone(
        f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id = %s AND context_type = 'memory' AND status = 'active'",
        (entry_id,))
