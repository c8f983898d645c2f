"""The other reads of ``find()`` on SQLite: the filter checks of the candidate legs, entry rows by rid, the
superseded facts and their session links, the turns that follow a candidate, and the name lookups of the
vector query text (:mod:`agentbase.retrieval.names`).

Filters arrive as the ``(where_sql, params)`` pair of ``db.ops.filters.where(f, "e")`` (a condition on
``entries`` aliased ``e``) and are spliced in as they are; entry rows come back in ``ENTRY_COLUMNS`` order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..entries import entry_columns
from ..filters import owners_equal

_CHUNK = 500  # bound parameters per IN list


async def rids_passing(c: Any, rids: Sequence[int], where_sql: str, params: Sequence[Any]) -> set[int]:
    """Which of ``rids`` pass the filter (checked in chunks of 500 rids).

    Args:
        c: a reader (``Database``) or an open ``Writer``.
        rids: entry rids. where_sql, params: the filter on ``entries e`` and its values.

    Returns:
        The subset of ``rids`` that passes.

    Raises:
        StorageError: the query failed.
    """
    allowed: set[int] = set()
    for start in range(0, len(rids), _CHUNK):
        part = list(rids[start:start + _CHUNK])
        rows = await c.fetchall(f"SELECT e.rid FROM entries e WHERE e.rid IN ({','.join('?' * len(part))}) "
                                f"AND {where_sql}", [*part, *params])
        allowed.update(int(r[0]) for r in rows)
    return allowed


async def passing_rids(c: Any, where_sql: str, params: Sequence[Any]) -> list[int]:
    """The rids of every entry passing the filter (a selective filter's own row set), in the engine's order."""
    rows = await c.fetchall(f"SELECT e.rid FROM entries e WHERE {where_sql}", list(params))
    return [int(r[0]) for r in rows]


async def any_passing(c: Any, where_sql: str, params: Sequence[Any]) -> bool:
    """Whether at least one entry passes the filter (one row read)."""
    return await c.fetchone(f"SELECT 1 FROM entries e WHERE {where_sql} LIMIT 1", list(params)) is not None


async def entry_rows(c: Any, rids: Sequence[int]) -> list[tuple]:
    """The entry rows (``ENTRY_COLUMNS`` order) of these rids, one statement, in no particular order; rids that do
    not exist are left out. ``rids`` is the fused candidate pool (a few hundred at most)."""
    return await c.fetchall(f"SELECT {entry_columns('e')} FROM entries e WHERE e.rid IN "
                            f"({','.join('?' * len(rids))})", list(rids))


_SUPERSEDED = "e.fact_key IS NOT NULL AND e.superseded_by IS NOT NULL AND e.status = 'active'"


async def superseded_fact_links(c: Any, session_ids: Sequence[str],
                                owners: Mapping[str, str]) -> list[tuple]:
    """The active keyed facts another fact superseded, of these owners, that a message of these sessions stated:
    ``(fact id, fact_key, user_id, agent_id, project_id, session_id, message_seq)`` per session link of kind
    ``fact``.

    Args:
        c: a reader or an open ``Writer``.
        session_ids: the sessions of the query's candidates (a few dozen), bound as one JSON array.
        owners: ``{column: value}`` with columns among ``user_id``, ``agent_id``, ``project_id`` (others raise
            ValueError); an empty mapping reads every owner's.
    """
    own, vals = owners_equal(owners, "e", "?")
    if not session_ids:
        return []
    # CROSS JOIN fixes the order (https://www.sqlite.org/optoverview.html#crossjoin): from the sessions' links to
    # their entries. Left to itself SQLite started from the owner's superseded facts (schema 11's partial index,
    # every one of them: 340 ms at 1M entries) and looked each one's links up; this way 28 ms cold.
    return await c.fetchall(
        "SELECT e.id, e.fact_key, e.user_id, e.agent_id, e.project_id, l.session_id, l.message_seq "
        "FROM json_each(?) j "
        "CROSS JOIN session_memory_links l ON l.session_id = j.value CROSS JOIN entries e ON e.id = l.entry_id "
        f"WHERE l.kind = 'fact' AND {_SUPERSEDED}{own}", [json.dumps([str(s) for s in session_ids]), *vals])


async def current_fact_keys(c: Any, rids: Sequence[int]) -> list[tuple]:
    """Which of ``rids`` are keyed facts holding their key's value now (active, not superseded): ``(rid,
    fact_key, user_id, agent_id, project_id)`` rows (checked in chunks of 500 rids).

    Args:
        c: a reader or an open ``Writer``. rids: entry rids (the query's candidates).
    """
    out: list[tuple] = []
    rids = [int(r) for r in rids]
    for i in range(0, len(rids), _CHUNK):
        part = rids[i:i + _CHUNK]
        out += await c.fetchall(
            "SELECT e.rid, e.fact_key, e.user_id, e.agent_id, e.project_id FROM entries e "
            f"WHERE e.rid IN ({','.join('?' * len(part))}) "
            "AND e.fact_key IS NOT NULL AND e.superseded_by IS NULL AND e.status = 'active'", part)
    return [(int(r), str(k), *owners) for r, k, *owners in out]


async def following_user_turns(c: Any, sources: Sequence[int], where_sql: str,
                               params: Sequence[Any]) -> list[tuple]:
    """The two turns after each source turn in its session, where a person (role ``user``) wrote them and they
    pass the filter.

    A position is counted before the role filter, so an assistant's turn between two user turns still counts as
    the turn between.

    Args:
        c: a reader or an open ``Writer``.
        sources: rids of candidate turns (a few dozen).
        where_sql, params: the query's filter on ``entries e`` and its values.

    Returns:
        ``(source rid, is the next turn (1/0), *entry row in ENTRY_COLUMNS order)`` rows.
    """
    # Planned by hand: the next seqs are computed once per source (MATERIALIZED), and each target is reached from
    # its session's links (CROSS JOIN fixes the order). Left to itself SQLite drove the lookup from the owner
    # filter's index and re-ran the next-seq subquery per link row: 55 ms per find on a 10k-entry file, 0.2 now.
    nxt = ("(SELECT MIN(l3.message_seq) FROM session_memory_links l3 WHERE l3.session_id = {sid} "
           "AND l3.kind = 'turn' AND l3.message_seq > {seq})")
    return await c.fetchall(
        f"WITH n1 AS MATERIALIZED (SELECT q.rid AS qrid, l.session_id AS sid, "
        f"{nxt.format(sid='l.session_id', seq='l.message_seq')} AS s1 FROM entries q "
        f"JOIN session_memory_links l ON l.entry_id = q.id AND l.kind = 'turn' "
        f"WHERE q.rid IN ({','.join('?' * len(sources))})), "
        f"n2 AS MATERIALIZED (SELECT qrid, sid, s1, {nxt.format(sid='n1.sid', seq='n1.s1')} AS s2 FROM n1) "
        f"SELECT n2.qrid, l2.message_seq = n2.s1, {entry_columns('e')} FROM n2 CROSS JOIN session_memory_links l2 "
        f"CROSS JOIN entries e ON e.id = l2.entry_id "
        f"WHERE l2.session_id = n2.sid AND l2.message_seq IN (n2.s1, n2.s2) AND l2.kind = 'turn' "
        f"AND json_extract(e.metadata, '$.role') = 'user' AND {where_sql}",
        [*sources, *params])


async def name_fact_values(c: Any, user_id: str, limit: int = 20) -> list[Any]:
    """The values of ``user_id``'s current (not superseded, active) ``name`` facts: at most ``limit``, as
    stored in ``metadata.value`` (normally text; any JSON value is returned as read)."""
    rows = await c.fetchall(
        "SELECT json_extract(metadata, '$.value') FROM entries WHERE fact_key = 'name' AND user_id = ? "
        f"AND superseded_by IS NULL AND status = 'active' LIMIT {int(limit)}", [user_id])
    return [r[0] for r in rows]


async def tag_counts_in_latest(c: Any, tags: Sequence[str], where_sql: str, params: Sequence[Any],
                               sample: int) -> tuple[int, list[int]]:
    """Among the latest ``sample`` entries passing the filter (highest rids), how many there are and how many
    carry each tag (compared case-insensitively).

    Returns:
        ``(sampled, [count per tag, in the order of tags])``; an empty sample gives ``(0, [0, ...])``.
    """
    counts = ", ".join("SUM(EXISTS(SELECT 1 FROM entry_tags t WHERE t.rid = s.rid AND t.tag = ? COLLATE NOCASE))"
                       for _ in tags)
    row = await c.fetchone(
        f"SELECT COUNT(*), {counts} FROM (SELECT e.rid FROM entries e WHERE {where_sql} ORDER BY e.rid DESC "
        f"LIMIT ?) s", [*tags, *params, sample])
    if not row:
        return 0, [0] * len(tags)
    return int(row[0] or 0), [int(n or 0) for n in row[1:]]
