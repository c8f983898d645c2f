"""Filters as PostgreSQL SQL: the boolean expression over ``entries AS <alias>`` that every candidate query applies
inside the engine (never after a top-k cut). Same functions, arguments and meaning as
``storage/sqlite/filters.py``; ``%s`` placeholders; values are always bound parameters, never interpolated.
This module holds only the SQL text (``_SQL``); the walk over the filter that picks the conditions and their
values is the engine-neutral :mod:`agentbase.storage.filters`.

Both functions take input already validated by :class:`~agentbase.retrieval.filters.Filters` (reach them through
``Filters.where(alias, db.ops)``, which validates first) and :func:`~agentbase.scopes.check_viewer`.

What differs from the SQLite SQL, and why:

- "Nothing filters" is ``TRUE`` and "one of no values" is ``FALSE`` (PostgreSQL's WHERE needs a boolean, not
  ``1``/``0``): ``_SQL.all_of`` and ``_SQL.nothing``.
- Lists of values bind as one ``text[]`` parameter (``= ANY(%s::text[])``) instead of ``json_each(?)``:
  ``_SQL.one_of``, ``_SQL.all_tags`` and ``_SQL.values``.
- Metadata equality (``_SQL.metadata``) uses jsonb containment on the key's value,
  ``(metadata::jsonb -> key) @> value::jsonb``
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

from .. import filters as _walk

__all__ = ["visibility", "where"]

_NUL_ESCAPE = "\\u0000"  # the JSON escape of U+0000, which jsonb rejects


def _metadata_clause(a: str, key: str, value: Any) -> tuple[str, list[Any]]:
    """One metadata equality (see the module docstring) as ``(sql, params)``."""
    wanted = json.dumps(value)  # None -> null, True -> true, numbers and strings as JSON
    if isinstance(value, str) and "\x00" in value:
        return "FALSE", []
    doc = f"(CASE WHEN strpos({a}.metadata, '{_NUL_ESCAPE}') = 0 THEN {a}.metadata::jsonb END)"
    return f"COALESCE(({doc} -> %s::text) @> %s::jsonb, FALSE)", [key, wanted]


_SQL = _walk.FilterSQL(
    all_of=lambda clauses: " AND ".join(clauses) or "TRUE",
    any_of=lambda clauses: "(" + " OR ".join(clauses) + ")",
    nothing="FALSE",
    equals="{a}.{column} = %s",
    one_of="{a}.{column} = ANY(%s::text[])",
    values=list,
    # (tag, rid) is entry_tags' primary key, so counting the entry's rows among the wanted tags counts distinct
    # tags: all of them present <=> the count equals their number.
    all_tags="(SELECT count(*) FROM entry_tags t WHERE t.rid = {a}.rid AND t.tag = ANY(%s::text[])) = %s",
    metadata=_metadata_clause,
    date_from="COALESCE({a}.event_time, {a}.created_at) >= %s",
    date_to="COALESCE({a}.event_time, {a}.created_at) <= %s",
    active="{a}.status = 'active'",
    current="{a}.superseded_by IS NULL",
    global_scope="{a}.scope = 'global'",
    owner_scope="({a}.scope = '{scope}' AND {a}.{column} = %s)",
    user_or_none="({a}.user_id IS NULL OR {a}.user_id = %s)",
)


def visibility(viewer: dict[str, Any], alias: str) -> tuple[str, list[Any]]:
    """``(sql, params)`` keeping what ``viewer`` (owner ids, None ignored) may see by scope; ``alias`` is an
    identifier (checked by :func:`~agentbase.scopes.check_viewer`).

    A ``global`` entry is visible to everyone; an ``agent``/``project``/``session`` entry to a viewer with that
    owner id; with a ``user_id``, only entries of that user or of no user
    (:func:`agentbase.storage.filters.visibility` with ``_SQL``).
    """
    return _walk.visibility(viewer, alias, _SQL)


def where(f: Any, alias: str) -> tuple[str, list[Any]]:
    """``(sql, params)`` of the :class:`~agentbase.retrieval.filters.Filters` ``f`` over ``entries AS alias``
    (``"TRUE"`` when nothing filters; :func:`agentbase.storage.filters.where` with ``_SQL``).

    Args:
        f: a validated ``Filters`` (``Filters.where(alias, db.ops)`` validates, then calls this).
        alias: the entries table's alias in the query (an identifier).

    Returns:
        The SQL boolean expression and its parameters, in placeholder order.
    """
    return _walk.where(f, alias, _SQL)
