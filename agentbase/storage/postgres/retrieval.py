"""The other reads of ``find()`` on PostgreSQL: the filter checks of the candidate legs, entry rows by rid, the
superseded facts and their session links, the turns that follow a candidate, and the name lookups of the
vector query text (:mod:`agentbase.retrieval.names`). Same functions, arguments and row shapes as
``storage/sqlite/retrieval.py``.

Filters arrive as the ``(where_sql, params)`` pair of ``db.ops.filters.where(f, "e")`` (a condition on
``entries`` aliased ``e``, ``%s`` placeholders) and are spliced in as they are; entry rows come back in
``ENTRY_COLUMNS`` order.

What differs from SQLite, and why:

- Lists of rids and ids bind as one array parameter (``= ANY(%s::bigint[])``), so ``rids_passing`` needs no
  500-at-a-time chunks and ``superseded_fact_links`` no ``json_each``.
- ``following_user_turns``: the same plan, written with ``AS MATERIALIZED`` CTEs (PostgreSQL 12+) and plain
  joins (PostgreSQL has no ``CROSS JOIN ... ON``); "is the next turn" is cast to the integer 1/0 SQLite returns,
  and ``metadata.role`` is read with ``json_doc(e.metadata) ->> 'role'`` (:func:`.sqlutil.json_doc`: a metadata
  text holding the ``\\u0000`` escape reads as no metadata, as PostgreSQL cannot read it as text).
- ``name_fact_values`` reads ``json_doc(metadata) -> 'value'``, which psycopg loads as a Python value, then gives what
  SQLite's ``json_extract`` gives (https://www.sqlite.org/json1.html#jex): text as str, numbers as int/float,
  ``true``/``false`` as 1/0, null as None, and an array or object as its minified JSON text.
- ``tag_counts_in_latest`` compares tags with ``lower(x COLLATE "C")``, which folds ASCII letters only, as
  SQLite's ``COLLATE NOCASE`` does (``Ü`` and ``ü`` differ on both engines); an empty ``tags`` list gives
  ``(sampled, [])`` (SQLite's statement would not parse); a negative ``sample`` means no limit, as on SQLite.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..entries import entry_columns
from ..filters import owners_equal
from .sqlutil import json_doc as _doc
from .sqlutil import limit as _limit

__all__ = ["any_passing", "current_fact_keys", "entry_rows", "following_user_turns", "name_fact_values",
           "passing_rids", "rids_passing", "superseded_fact_links", "tag_counts_in_latest"]


async def rids_passing(c: Any, rids: Sequence[int], where_sql: str, params: Sequence[Any]) -> set[int]:
    """Which of ``rids`` pass the filter (one statement, the rids bound as one ``bigint[]``).

    Args:
        c: a reader (``PgDatabase``) or an open ``PgWriter``.
        rids: entry rids. where_sql, params: the filter on ``entries e`` and its values.

    Returns:
        The subset of ``rids`` that passes.

    Raises:
        StorageError: the query failed.
    """
    part = [int(r) for r in rids]
    if not part:
        return set()
    rows = await c.fetchall(f"SELECT e.rid FROM entries e WHERE e.rid = ANY(%s::bigint[]) AND {where_sql}",
                            [part, *params])
    return {int(r[0]) for r in rows}


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
    if not rids:
        return []
    return await c.fetchall(f"SELECT {entry_columns('e')} FROM entries e WHERE e.rid = ANY(%s::bigint[])",
                            [[int(r) for r in rids]])


_SUPERSEDED = "e.fact_key IS NOT NULL AND e.superseded_by IS NOT NULL AND e.status = 'active'"


async def superseded_fact_links(c: Any, session_ids: Sequence[str],
                                owners: Mapping[str, str]) -> list[tuple]:
    """The active keyed facts another fact superseded, of these owners, that a message of these sessions stated:
    ``(fact id, fact_key, user_id, agent_id, project_id, session_id, message_seq)`` per session link of kind
    ``fact``.

    Args:
        c: a reader or an open ``PgWriter``.
        session_ids: the sessions of the query's candidates (a few dozen), bound as one ``text[]``.
        owners: ``{column: value}`` with columns among ``user_id``, ``agent_id``, ``project_id`` (others raise
            ValueError); an empty mapping reads every owner's.
    """
    own, vals = owners_equal(owners, "e", "%s")
    if not session_ids:
        return []
    # From the sessions' links to their entries, one id lookup each: OFFSET 0 keeps the LATERAL subquery from
    # being flattened into a join that the planner drove from every superseded fact of the owner (the partial
    # index ix_entries_superseded_facts of schema 11, since dropped: 48 ms at 1M entries, 20 ms this way).
    return await c.fetchall(
        "SELECT f.id, f.fact_key, f.user_id, f.agent_id, f.project_id, l.session_id, l.message_seq "
        "FROM session_memory_links l CROSS JOIN LATERAL (SELECT e.id, e.fact_key, e.user_id, e.agent_id, "
        "e.project_id FROM entries e WHERE e.id = l.entry_id "
        f"AND {_SUPERSEDED}{own} OFFSET 0) f WHERE l.session_id = ANY(%s::text[]) AND l.kind = 'fact'",
        [*vals, [str(s) for s in session_ids]])


async def current_fact_keys(c: Any, rids: Sequence[int]) -> list[tuple]:
    """Which of ``rids`` are keyed facts holding their key's value now (active, not superseded): ``(rid,
    fact_key, user_id, agent_id, project_id)`` rows.

    Args:
        c: a reader or an open ``PgWriter``. rids: entry rids (the query's candidates), bound as one array.
    """
    if not rids:
        return []
    rows = await c.fetchall(
        "SELECT e.rid, e.fact_key, e.user_id, e.agent_id, e.project_id FROM entries e "
        "WHERE e.rid = ANY(%s::bigint[]) "
        "AND e.fact_key IS NOT NULL AND e.superseded_by IS NULL AND e.status = 'active'", [[int(r) for r in rids]])
    return [(int(r), str(k), *owners) for r, k, *owners in rows]


async def following_user_turns(c: Any, sources: Sequence[int], where_sql: str,
                               params: Sequence[Any]) -> list[tuple]:
    """The two turns after each source turn in its session, where a person (role ``user``) wrote them and they
    pass the filter.

    A position is counted before the role filter, so an assistant's turn between two user turns still counts as
    the turn between.

    Args:
        c: a reader or an open ``PgWriter``.
        sources: rids of candidate turns (a few dozen).
        where_sql, params: the query's filter on ``entries e`` and its values.

    Returns:
        ``(source rid, is the next turn (1/0), *entry row in ENTRY_COLUMNS order)`` rows.
    """
    if not sources:
        return []
    # The SQLite plan (next seqs computed once per source, targets reached from their session's links), which
    # PostgreSQL keeps as written: MATERIALIZED CTEs are optimisation fences.
    nxt = ("(SELECT MIN(l3.message_seq) FROM session_memory_links l3 WHERE l3.session_id = {sid} "
           "AND l3.kind = 'turn' AND l3.message_seq > {seq})")
    return await c.fetchall(
        f"WITH n1 AS MATERIALIZED (SELECT q.rid AS qrid, l.session_id AS sid, "
        f"{nxt.format(sid='l.session_id', seq='l.message_seq')} AS s1 FROM entries q "
        f"JOIN session_memory_links l ON l.entry_id = q.id AND l.kind = 'turn' "
        f"WHERE q.rid = ANY(%s::bigint[])), "
        f"n2 AS MATERIALIZED (SELECT qrid, sid, s1, {nxt.format(sid='n1.sid', seq='n1.s1')} AS s2 FROM n1) "
        f"SELECT n2.qrid, (l2.message_seq = n2.s1)::int, {entry_columns('e')} FROM n2 "
        f"JOIN session_memory_links l2 ON l2.session_id = n2.sid AND l2.message_seq IN (n2.s1, n2.s2) "
        f"AND l2.kind = 'turn' JOIN entries e ON e.id = l2.entry_id "
        f"WHERE ({_doc('e.metadata')} ->> 'role') = 'user' AND {where_sql}",
        [[int(r) for r in sources], *params])


def _as_json_extract(value: Any) -> Any:
    """A JSON value loaded by psycopg, as SQLite's ``json_extract`` returns it."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return value


async def name_fact_values(c: Any, user_id: str, limit: int = 20) -> list[Any]:
    """The values of ``user_id``'s current (not superseded, active) ``name`` facts: at most ``limit``, as
    stored in ``metadata.value`` (normally text; any JSON value is returned as SQLite's ``json_extract`` returns
    it: numbers as numbers, true/false as 1/0, an array or object as JSON text, a missing key as None)."""
    rows = await c.fetchall(
        f"SELECT {_doc('metadata')} -> 'value' FROM entries WHERE fact_key = 'name' AND user_id = %s "
        "AND superseded_by IS NULL AND status = 'active' LIMIT %s", [user_id, _limit(int(limit))])
    return [_as_json_extract(r[0]) for r in rows]


async def tag_counts_in_latest(c: Any, tags: Sequence[str], where_sql: str, params: Sequence[Any],
                               sample: int) -> tuple[int, list[int]]:
    """Among the latest ``sample`` entries passing the filter (highest rids), how many there are and how many
    carry each tag (compared case-insensitively in ASCII, as SQLite's ``NOCASE``).

    Returns:
        ``(sampled, [count per tag, in the order of tags])``; an empty sample gives ``(0, [0, ...])``.
    """
    counts = "".join(", COUNT(*) FILTER (WHERE EXISTS (SELECT 1 FROM entry_tags t WHERE t.rid = s.rid "
                     "AND lower(t.tag COLLATE \"C\") = lower(%s::text COLLATE \"C\")))" for _ in tags)
    row = await c.fetchone(
        f"SELECT COUNT(*){counts} FROM (SELECT e.rid FROM entries e WHERE {where_sql} ORDER BY e.rid DESC "
        f"LIMIT %s) s", [*(str(t) for t in tags), *params, _limit(sample)])
    if not row:
        return 0, [0] * len(tags)
    return int(row[0] or 0), [int(n or 0) for n in row[1:]]
