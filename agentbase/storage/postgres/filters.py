"""Filters as PostgreSQL SQL: the boolean expression over ``entries AS <alias>`` that every candidate query applies
inside the engine (never after a top-k cut). Same functions, arguments and meaning as
``storage/sqlite/filters.py``; ``%s`` placeholders; values are always bound parameters, never interpolated.

Both functions take input already validated by :class:`~agentbase.retrieval.filters.Filters` (reach them through
``Filters.where(alias, db.ops)``, which validates first) and :func:`~agentbase.scopes.check_viewer`.

What differs from the SQLite SQL, and why:

- "Nothing filters" is ``TRUE`` and "one of no values" is ``FALSE`` (PostgreSQL's WHERE needs a boolean, not
  ``1``/``0``).
- Lists of values bind as one ``text[]`` parameter (``= ANY(%s::text[])``) instead of ``json_each(?)``.
- Metadata equality uses jsonb containment on the key's value, ``(metadata::jsonb -> key) @> value::jsonb``
  (https://www.postgresql.org/docs/current/datatype-json.html#JSON-CONTAINMENT), which gives the SQLite rules
  exactly: the JSON type must agree (a string only a string, ``true`` only ``true``, ``null`` only a stored
  ``null``, not a missing key); numbers compare as numbers (``1`` equals ``1.0``); a stored array matches when one
  of its top-level items does; an object, a nested array or a missing key never matches.
- PostgreSQL's jsonb cannot hold the character U+0000 (the JSON escape ``\\u0000``): a stored metadata text that
  holds that escape is not cast (it never matches a metadata filter, where SQLite would compare it), and a filter
  value holding U+0000 matches nothing (on SQLite it matches an equal stored string). Without this guard one such
  row would fail the whole query.
- Date bounds compare the stored UTC text (fixed-width ``YYYY-MM-DDTHH:MM:SS.ffffff+00:00``) as text, as SQLite
  does; fixed-width digit strings sort the same under any collation, so the expression index on
  ``COALESCE(event_time, created_at)`` stays usable.
"""

from __future__ import annotations

import json
from typing import Any

from ...timeutil import to_db_time

__all__ = ["visibility", "where"]

_SCOPED = (("agent", "agent_id"), ("project", "project_id"), ("session", "session_id"))
_NUL_ESCAPE = "\\u0000"  # the JSON escape of U+0000, which jsonb rejects


def visibility(viewer: dict[str, Any], alias: str) -> tuple[str, list[Any]]:
    """``(sql, params)`` keeping what ``viewer`` (owner ids, None ignored) may see by scope; ``alias`` is an
    identifier (checked by :func:`~agentbase.scopes.check_viewer`).

    A ``global`` entry is visible to everyone; an ``agent``/``project``/``session`` entry to a viewer with that
    owner id; with a ``user_id``, only entries of that user or of no user.
    """
    a = alias
    ors = [f"{a}.scope = 'global'"]
    params: list[Any] = []
    for scope, key in _SCOPED:
        value = viewer.get(key)
        if value is not None:
            ors.append(f"({a}.scope = '{scope}' AND {a}.{key} = %s)")
            params.append(value)
    sql = "(" + " OR ".join(ors) + ")"
    if viewer.get("user_id") is not None:
        sql += f" AND ({a}.user_id IS NULL OR {a}.user_id = %s)"
        params.append(viewer["user_id"])
    return sql, params


def _metadata_clause(a: str, key: str, value: Any) -> tuple[str, list[Any]]:
    """One metadata equality (see the module docstring) as ``(sql, params)``."""
    wanted = json.dumps(value)  # None -> null, True -> true, numbers and strings as JSON
    if isinstance(value, str) and "\x00" in value:
        return "FALSE", []
    doc = f"(CASE WHEN strpos({a}.metadata, '{_NUL_ESCAPE}') = 0 THEN {a}.metadata::jsonb END)"
    return f"COALESCE(({doc} -> %s::text) @> %s::jsonb, FALSE)", [key, wanted]


def where(f: Any, alias: str) -> tuple[str, list[Any]]:
    """``(sql, params)`` of the :class:`~agentbase.retrieval.filters.Filters` ``f`` over ``entries AS alias``
    (``"TRUE"`` when nothing filters).

    Args:
        f: a validated ``Filters`` (``Filters.where(alias, db.ops)`` validates, then calls this).
        alias: the entries table's alias in the query (an identifier).

    Returns:
        The SQL boolean expression and its parameters, in placeholder order.
    """
    clauses: list[str] = []
    params: list[Any] = []
    a = alias

    def one_or_many(column: str, value: Any) -> None:
        values = [value] if isinstance(value, str) or hasattr(value, "value") else list(value)
        values = list(dict.fromkeys(getattr(v, "value", v) for v in values))
        if not values:  # "one of no values": nothing passes (None, not [], means no filter)
            clauses.append("FALSE")
        elif len(values) == 1:
            clauses.append(f"{a}.{column} = %s")
            params.append(values[0])
        else:
            clauses.append(f"{a}.{column} = ANY(%s::text[])")
            params.append(values)

    for column in ("context_type", "category", "scope"):
        if getattr(f, column) is not None:
            one_or_many(column, getattr(f, column))
    for column in ("user_id", "agent_id", "project_id", "session_id"):
        value = getattr(f, column)
        if value is not None:
            clauses.append(f"{a}.{column} = %s")
            params.append(str(value))
    tags = list(dict.fromkeys(str(t) for t in f.tags or []))
    if tags:
        # (tag, rid) is entry_tags' primary key, so counting the entry's rows among the wanted tags counts
        # distinct tags: all of them present <=> the count equals their number.
        clauses.append(f"(SELECT count(*) FROM entry_tags t WHERE t.rid = {a}.rid "
                       f"AND t.tag = ANY(%s::text[])) = %s")
        params.extend([tags, len(tags)])
    for key, value in (f.metadata or {}).items():
        sql, args = _metadata_clause(a, key, value)
        clauses.append(sql)
        params.extend(args)
    if f.date_from is not None:
        clauses.append(f"COALESCE({a}.event_time, {a}.created_at) >= %s")
        params.append(to_db_time(f.date_from))
    if f.date_to is not None:
        clauses.append(f"COALESCE({a}.event_time, {a}.created_at) <= %s")
        params.append(to_db_time(f.date_to, end=True))
    if not f.include_archived:
        clauses.append(f"{a}.status = 'active'")
    if f.exclude_superseded:
        clauses.append(f"{a}.superseded_by IS NULL")
    if f.visible_to is not None:
        sql, viewer_params = visibility(f.visible_to, a)
        clauses.append(sql)
        params.extend(viewer_params)
    return (" AND ".join(clauses) or "TRUE"), params
