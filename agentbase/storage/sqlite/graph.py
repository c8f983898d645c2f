"""Graph operations on SQLite: entities, their aliases and relations with validity intervals.

Times are DB time text (:func:`agentbase.timeutil.to_db_time`, UTC, sortable as text). Relation rows come back as
:data:`RELATION_COLUMNS`, entity rows as :data:`ENTITY_COLUMNS`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

#: Relation row order: id, subject name, subject id, predicate, object name, object id, valid_from, valid_to,
#: source_entry_id, confidence, created_at.
RELATION_COLUMNS = ("id", "subject", "subject_id", "predicate", "object", "object_id", "valid_from", "valid_to",
                    "source_entry_id", "confidence", "created_at")
#: Entity row order.
ENTITY_COLUMNS = ("id", "name", "type", "aliases", "created_at")

_REL_SELECT = (
    "SELECT r.id, s.name, r.subject_id, r.predicate, o.name, r.object_id, r.valid_from, r.valid_to, "
    "r.source_entry_id, r.confidence, r.created_at FROM relations r "
    "JOIN entities s ON s.id = r.subject_id JOIN entities o ON o.id = r.object_id"
)
_VALID_AT = "(r.valid_from IS NULL OR r.valid_from <= ?) AND (r.valid_to IS NULL OR r.valid_to > ?)"


def _marks(n: int) -> str:
    return ",".join("?" * n)


# ------------------------------------------------------------------------------------------------ entities
async def entity_id_for_alias(c: Any, norm_alias: str) -> str | None:
    """The id of the entity known by this normalised name or alias, or None."""
    row = await c.fetchone("SELECT entity_id FROM entity_aliases WHERE norm_alias = ?", (norm_alias,))
    return row[0] if row else None


async def entity_rows(c: Any, ids: Sequence[str]) -> list[tuple]:
    """Entity rows (:data:`ENTITY_COLUMNS`) for these ids, in no particular order."""
    if not ids:
        return []
    return await c.fetchall(f"SELECT id, name, type, aliases, created_at FROM entities WHERE id IN "
                            f"({_marks(len(ids))})", list(ids))


async def insert_entity(conn: Any, entity_id: str, name: str, norm_name: str, type: str | None, now: str) -> None:
    """A new entity with no aliases yet."""
    await conn.execute("INSERT INTO entities(id, name, norm_name, type, aliases, created_at) VALUES (?,?,?,?,?,?)",
                       (entity_id, name, norm_name, type, "[]", now))


async def merge_entity(conn: Any, keep: str, other: str) -> None:
    """Re-point ``other``'s relations and aliases to ``keep`` and delete ``other``."""
    await conn.execute("UPDATE relations SET subject_id = ? WHERE subject_id = ?", (keep, other))
    await conn.execute("UPDATE relations SET object_id = ? WHERE object_id = ?", (keep, other))
    await conn.execute("UPDATE entity_aliases SET entity_id = ? WHERE entity_id = ?", (keep, other))
    await conn.execute("DELETE FROM entities WHERE id = ?", (other,))


async def set_aliases(conn: Any, entity_id: str, norm_aliases: Iterable[str], aliases_json: str,
                      type: str | None) -> None:
    """Index these normalised aliases for the entity (existing ones stay), store its alias list (JSON text), and
    set its type where it has none."""
    await conn.executemany("INSERT OR IGNORE INTO entity_aliases(norm_alias, entity_id) VALUES (?, ?)",
                           [(n, entity_id) for n in norm_aliases])
    await conn.execute("UPDATE entities SET aliases = ?, type = COALESCE(type, ?) WHERE id = ?",
                       (aliases_json, type, entity_id))


# ----------------------------------------------------------------------------------------------- relations
async def relation_row(c: Any, relation_id: str) -> tuple | None:
    """One relation row (:data:`RELATION_COLUMNS`), or None."""
    return await c.fetchone(f"{_REL_SELECT} WHERE r.id = ?", (relation_id,))


async def same_relation_at(conn: Any, subject_id: str, predicate: str, object_id: str, when: str) -> str | None:
    """The id of ``subject -predicate-> object`` valid at ``when``, or None."""
    row = await conn.fetchone(
        "SELECT id FROM relations WHERE subject_id = ? AND predicate = ? AND object_id = ? "
        "AND (valid_from IS NULL OR valid_from <= ?) AND (valid_to IS NULL OR valid_to > ?) LIMIT 1",
        (subject_id, predicate, object_id, when, when))
    return row[0] if row else None


async def raise_confidence(conn: Any, relation_id: str, confidence: float) -> None:
    """Confidence becomes the larger of the stored one and ``confidence``."""
    await conn.execute("UPDATE relations SET confidence = MAX(confidence, ?) WHERE id = ?",
                       (float(confidence), relation_id))


async def next_same_relation(conn: Any, subject_id: str, predicate: str, object_id: str,
                             after: str) -> tuple[str, str] | None:
    """``(id, valid_from)`` of the earliest ``subject -predicate-> object`` starting after ``after``, or None."""
    row = await conn.fetchone(
        "SELECT id, valid_from FROM relations WHERE subject_id = ? AND predicate = ? AND object_id = ? "
        "AND valid_from > ? ORDER BY valid_from LIMIT 1", (subject_id, predicate, object_id, after))
    return (row[0], row[1]) if row else None


async def state_starts_between(conn: Any, subject_id: str, predicate: str, start: str, end: str) -> bool:
    """Whether a ``subject -predicate->`` relation (any object) starts strictly between ``start`` and ``end``."""
    row = await conn.fetchone(
        "SELECT 1 FROM relations WHERE subject_id = ? AND predicate = ? AND valid_from > ? AND valid_from < ? "
        "LIMIT 1", (subject_id, predicate, start, end))
    return row is not None


async def close_other_objects(conn: Any, subject_id: str, predicate: str, object_id: str, when: str) -> None:
    """End at ``when`` the subject's relations of this predicate to another object that are valid at ``when``."""
    await conn.execute(
        "UPDATE relations SET valid_to = ? WHERE subject_id = ? AND predicate = ? AND object_id != ? "
        "AND (valid_from IS NULL OR valid_from <= ?) AND (valid_to IS NULL OR valid_to > ?)",
        (when, subject_id, predicate, object_id, when, when))


async def move_start(conn: Any, relation_id: str, valid_from: str, confidence: float) -> None:
    """Start the relation at ``valid_from`` and raise its confidence to at least ``confidence``."""
    await conn.execute("UPDATE relations SET valid_from = ?, confidence = MAX(confidence, ?) WHERE id = ?",
                       (valid_from, float(confidence), relation_id))


async def next_state_start(conn: Any, subject_id: str, predicate: str, after: str) -> str | None:
    """The earliest ``valid_from`` after ``after`` of the subject's relations of this predicate, or None."""
    row = await conn.fetchone(
        "SELECT MIN(valid_from) FROM relations WHERE subject_id = ? AND predicate = ? AND valid_from > ?",
        (subject_id, predicate, after))
    return row[0] if row else None


async def insert_relation(conn: Any, relation_id: str, subject_id: str, predicate: str, object_id: str, *,
                          valid_from: str, valid_to: str | None, source_entry_id: str | None, confidence: float,
                          now: str) -> None:
    """A new relation row."""
    await conn.execute(
        "INSERT INTO relations(id, subject_id, predicate, object_id, valid_from, valid_to, source_entry_id, "
        "confidence, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
        (relation_id, subject_id, predicate, object_id, valid_from, valid_to, source_entry_id, float(confidence),
         now))


async def end_open_relation(conn: Any, subject_id: str, predicate: str, object_id: str, when: str) -> int:
    """End at ``when`` the open ``subject -predicate-> object`` relation begun by then; returns how many ended."""
    cur = await conn.execute(
        "UPDATE relations SET valid_to = ? WHERE subject_id = ? AND predicate = ? AND object_id = ? "
        "AND valid_to IS NULL AND (valid_from IS NULL OR valid_from <= ?)",
        (when, subject_id, predicate, object_id, when))
    return cur.rowcount


async def relations_at(c: Any, entity_id: str, *, direction: str, when: str, predicate: str | None) -> list[tuple]:
    """Relations of the entity valid at ``when`` (``direction``: ``out`` as subject, ``in`` as object, ``both``),
    optionally of one predicate, newest ``valid_from`` first."""
    side = {"out": "r.subject_id = ?", "in": "r.object_id = ?", "both": "(r.subject_id = ? OR r.object_id = ?)"}
    params: list[Any] = [entity_id] * (2 if direction == "both" else 1) + [when, when]
    sql = f"{_REL_SELECT} WHERE {side[direction]} AND {_VALID_AT}"
    if predicate is not None:
        sql += " AND r.predicate = ?"
        params.append(predicate)
    return await c.fetchall(sql + " ORDER BY r.valid_from DESC, r.created_at DESC", params)


async def timeline_rows(c: Any, entity_id: str) -> list[tuple]:
    """Every relation of the entity (either side, open and closed), oldest ``valid_from`` first (undated last)."""
    return await c.fetchall(f"{_REL_SELECT} WHERE r.subject_id = ? OR r.object_id = ? "
                            "ORDER BY r.valid_from IS NOT NULL, r.valid_from, r.created_at", (entity_id, entity_id))


async def relations_touching(c: Any, entity_ids: Sequence[str], when: str | None) -> list[tuple]:
    """Relations with any of these entities on either side (valid at ``when``; None: all), newest first."""
    marks = _marks(len(entity_ids))
    valid = "" if when is None else f" AND {_VALID_AT}"
    params: list[Any] = [*entity_ids, *entity_ids] + ([] if when is None else [when, when])
    return await c.fetchall(f"{_REL_SELECT} WHERE (r.subject_id IN ({marks}) OR r.object_id IN ({marks})){valid}"
                            " ORDER BY r.valid_from DESC", params)


async def source_rids(c: Any, entity_ids: Sequence[str], filters: Any, limit: int) -> list[int]:
    """Row ids of the entries (passing ``filters``, a :class:`~agentbase.retrieval.filters.Filters`) that are the
    source of relations about these entities: currently valid relations first, then newest ``valid_from``."""
    where, params = filters.where("e")
    marks = _marks(len(entity_ids))
    rows = await c.fetchall(
        f"SELECT e.rid, MAX(r.valid_to IS NULL) AS open_, MAX(r.valid_from) AS vf FROM relations r "
        f"JOIN entries e ON e.id = r.source_entry_id WHERE (r.subject_id IN ({marks}) OR r.object_id IN ({marks})) "
        f"AND {where} GROUP BY e.rid ORDER BY open_ DESC, vf DESC LIMIT ?",
        [*entity_ids, *entity_ids, *params, int(limit)])
    return [int(r[0]) for r in rows]


async def forget_source(conn: Any, entry_id: str) -> int:
    """Delete the relations read from this entry; a relation of the same subject and predicate that one of them
    closed (its ``valid_to`` is their ``valid_from``: a newer state ended it) is reopened. Returns how many were
    deleted."""
    rows = await conn.fetchall("SELECT id, subject_id, predicate, object_id, valid_from FROM relations "
                               "WHERE source_entry_id = ?", (entry_id,))
    for _rid, subject_id, predicate, object_id, valid_from in rows:
        if valid_from is not None:
            await conn.execute(
                "UPDATE relations SET valid_to = NULL WHERE subject_id = ? AND predicate = ? AND object_id != ? "
                "AND valid_to = ? AND (source_entry_id IS NULL OR source_entry_id != ?)",
                (subject_id, predicate, object_id, valid_from, entry_id))
    await conn.execute("DELETE FROM relations WHERE source_entry_id = ?", (entry_id,))
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
        sql += f" AND id IN ({_marks(len(entry_ids))})"
        params = list(entry_ids)
    return await c.fetchall(sql + " ORDER BY COALESCE(event_time, created_at), rid", params)


async def active_memory_row(c: Any, entry_id: str) -> tuple | None:
    """The entry row (``ENTRY_COLUMNS``) of an active memory, or None."""
    from ..entries import ENTRY_COLUMNS

    return await c.fetchone(
        f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id = ? AND context_type = 'memory' AND status = 'active'",
        (entry_id,))
