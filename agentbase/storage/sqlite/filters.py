"""Filters as SQLite SQL: the boolean expression over ``entries AS <alias>`` that every candidate query applies
inside the engine (never after a top-k cut).

This module holds only the SQL text (``_SQL``); the walk over the filter that picks the conditions and their
values is the engine-neutral :mod:`agentbase.storage.filters`. Both functions take input already validated by
:class:`~agentbase.retrieval.filters.Filters` and :func:`~agentbase.scopes.visibility_clause`; values are always
bound parameters, never interpolated.
"""

from __future__ import annotations

import json
from typing import Any

from .. import filters as _walk


def _metadata_clause(a: str, key: str, value: Any) -> tuple[str, list[Any]]:
    """One metadata equality (``Filters.metadata``) on ``entries AS a`` as ``(sql, params)``."""
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
    return (f"(json_type({a}.metadata, ?) != 'object' AND EXISTS "
            f"(SELECT 1 FROM json_each({a}.metadata, ?) WHERE {test}))"), [path, path, *args]


_SQL = _walk.FilterSQL(
    all_of=lambda clauses: " AND ".join(clauses) or "1",
    any_of=lambda clauses: "(" + " OR ".join(clauses) + ")",
    nothing="0",
    equals="{a}.{column} = ?",
    # A list binds as one JSON array text, read back row by row by json_each.
    one_of="{a}.{column} IN (SELECT value FROM json_each(?))",
    values=json.dumps,
    # One clause for any number of tags (an AND of one EXISTS per tag passes SQLite's expression depth limit of
    # 1,000 near that many tags); (tag, rid) is the table's primary key, so counting the entry's rows among the
    # wanted tags counts distinct tags.
    all_tags=("(SELECT count(*) FROM entry_tags t WHERE t.rid = {a}.rid "
              "AND t.tag IN (SELECT value FROM json_each(?))) = ?"),
    metadata=_metadata_clause,
    date_from="COALESCE({a}.event_time, {a}.created_at) >= ?",
    date_to="COALESCE({a}.event_time, {a}.created_at) <= ?",
    active="{a}.status = 'active'",
    current="{a}.superseded_by IS NULL",
    global_scope="{a}.scope = 'global'",
    owner_scope="({a}.scope = '{scope}' AND {a}.{column} = ?)",
    user_or_none="({a}.user_id IS NULL OR {a}.user_id = ?)",
)


def visibility(viewer: dict[str, Any], alias: str) -> tuple[str, list[Any]]:
    """``(sql, params)`` keeping what ``viewer`` (owner ids, None ignored) may see by scope; ``alias`` is an
    identifier (:func:`agentbase.storage.filters.visibility` with ``_SQL``)."""
    return _walk.visibility(viewer, alias, _SQL)


def where(f: Any, alias: str) -> tuple[str, list[Any]]:
    """``(sql, params)`` of the :class:`~agentbase.retrieval.filters.Filters` ``f`` over ``entries AS alias``
    (``"1"`` when nothing filters; :func:`agentbase.storage.filters.where` with ``_SQL``)."""
    return _walk.where(f, alias, _SQL)
