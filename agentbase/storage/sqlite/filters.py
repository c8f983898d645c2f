"""Filters as SQLite SQL: the boolean expression over ``entries AS <alias>`` that every candidate query applies
inside the engine (never after a top-k cut).

Both functions take input already validated by :class:`~agentbase.retrieval.filters.Filters` and
:func:`~agentbase.scopes.visibility_clause`; values are always bound parameters, never interpolated.
"""

from __future__ import annotations

import json
from typing import Any

from ...timeutil import to_db_time

_SCOPED = (("agent", "agent_id"), ("project", "project_id"), ("session", "session_id"))


def visibility(viewer: dict[str, Any], alias: str) -> tuple[str, list[Any]]:
    """``(sql, params)`` keeping what ``viewer`` (owner ids, None ignored) may see by scope; ``alias`` is an
    identifier."""
    a = alias
    ors = [f"{a}.scope = 'global'"]
    params: list[Any] = []
    for scope, key in _SCOPED:
        value = viewer.get(key)
        if value is not None:
            ors.append(f"({a}.scope = '{scope}' AND {a}.{key} = ?)")
            params.append(value)
    sql = "(" + " OR ".join(ors) + ")"
    if viewer.get("user_id") is not None:
        sql += f" AND ({a}.user_id IS NULL OR {a}.user_id = ?)"
        params.append(viewer["user_id"])
    return sql, params


def where(f: Any, alias: str) -> tuple[str, list[Any]]:
    """``(sql, params)`` of the :class:`~agentbase.retrieval.filters.Filters` ``f`` over ``entries AS alias``
    (``"1"`` when nothing filters)."""
    clauses: list[str] = []
    params: list[Any] = []
    a = alias

    def one_or_many(column: str, value: Any) -> None:
        values = [value] if isinstance(value, str) or hasattr(value, "value") else list(value)
        values = list(dict.fromkeys(getattr(v, "value", v) for v in values))
        if not values:  # "one of no values": nothing passes (None, not [], means no filter)
            clauses.append("0")
        elif len(values) == 1:
            clauses.append(f"{a}.{column} = ?")
            params.append(values[0])
        else:
            clauses.append(f"{a}.{column} IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(values))

    for column in ("context_type", "category", "scope"):
        if getattr(f, column) is not None:
            one_or_many(column, getattr(f, column))
    for column in ("user_id", "agent_id", "project_id", "session_id"):
        value = getattr(f, column)
        if value is not None:
            clauses.append(f"{a}.{column} = ?")
            params.append(str(value))
    tags = list(dict.fromkeys(str(t) for t in f.tags or []))
    if tags:
        # One clause for any number of tags (an AND of one EXISTS per tag passes SQLite's expression depth
        # limit of 1,000 near that many tags); (tag, rid) is the table's primary key, so counting the entry's
        # rows among the wanted tags counts distinct tags.
        clauses.append(f"(SELECT count(*) FROM entry_tags t WHERE t.rid = {a}.rid "
                       f"AND t.tag IN (SELECT value FROM json_each(?))) = ?")
        params.extend([json.dumps(tags), len(tags)])
    for key, value in (f.metadata or {}).items():
        # Compared as JSON values: the stored type must agree (json_extract alone gives an array's JSON text,
        # true as 1, and NULL for a missing key as for a null). A stored array matches when one of its items
        # does, as in Qdrant, Pinecone and mem0 ({"tags": "x"} finds "tags": ["x", "y"]).
        # json_each walks a stored scalar as one row and an array item by item (an object's rows are its
        # members, so objects are left out). The key is a bound JSON path label $."key".
        path = f'$."{key}"'
        if value is None or isinstance(value, bool):
            test, args = "type = ?", [json.dumps(value)]  # 'null', 'true', 'false'
        elif isinstance(value, str):
            test, args = "type = 'text' AND value = ?", [value]
        else:  # int or float: 1 and 1.0 are the same number
            test, args = "type IN ('integer', 'real') AND value = ?", [value]
        clauses.append(f"(json_type({a}.metadata, ?) != 'object' AND EXISTS "
                       f"(SELECT 1 FROM json_each({a}.metadata, ?) WHERE {test}))")
        params.extend([path, path, *args])
    if f.date_from is not None:
        clauses.append(f"COALESCE({a}.event_time, {a}.created_at) >= ?")
        params.append(to_db_time(f.date_from))
    if f.date_to is not None:
        clauses.append(f"COALESCE({a}.event_time, {a}.created_at) <= ?")
        params.append(to_db_time(f.date_to, end=True))
    if not f.include_archived:
        clauses.append(f"{a}.status = 'active'")
    if f.exclude_superseded:
        clauses.append(f"{a}.superseded_by IS NULL")
    if f.visible_to is not None:
        sql, viewer_params = visibility(f.visible_to, a)
        clauses.append(sql)
        params.extend(viewer_params)
    return (" AND ".join(clauses) or "1"), params
