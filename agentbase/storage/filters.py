"""The walk over a :class:`~agentbase.retrieval.filters.Filters` that builds its SQL boolean expression over
``entries AS <alias>``, applied inside every candidate query (never after a top-k cut).

Engine-neutral: this module decides which conditions a filter entails, in which order, and which values they bind;
the SQL text of each condition is the engine's, a :class:`FilterSQL` in ``storage/<engine>/filters.py`` (``_SQL``,
private because the engines differ in it), whose ``where`` and ``visibility`` call :func:`where` and
:func:`visibility` here with it. Callers reach them through ``Filters.where(alias, db.ops)`` and
:func:`agentbase.scopes.visibility_clause`, which validate first. Values are always bound parameters, never
interpolated; only the alias, column names and scope names (identifiers checked by the callers, or this module's
constants) are written into the text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..timeutil import to_db_time

__all__ = ["FilterSQL", "owners_equal", "visibility", "where"]

# (scope, owner column): an entry of that scope is visible to a viewer with the same owner id.
_SCOPED = (("agent", "agent_id"), ("project", "project_id"), ("session", "session_id"))
_ONE_OR_MANY = ("context_type", "category", "scope")
_OWNERS = ("user_id", "agent_id", "project_id", "session_id")


@dataclass(frozen=True)
class FilterSQL:
    """One engine's SQL text for the conditions of a filter. Templates are ``str.format`` strings with the fields
    ``{a}`` (the entries alias), ``{column}`` (a column name) and ``{scope}`` (a scope name), written with the
    engine's placeholders; each binds the parameters its field's description names, in that order.

    Attributes:
        all_of: the conjunction of a list of conditions; of an empty list, the engine's "true".
        any_of: the disjunction of a non-empty list of conditions, parenthesised.
        nothing: a condition no row passes (a one-of filter given an empty list).
        equals: ``{a}.{column}`` equals one bound value.
        one_of: ``{a}.{column}`` is one of a list of strings, bound as one parameter made by ``values``.
        values: the one parameter that binds a list of strings (for ``one_of`` and ``all_tags``).
        all_tags: the entry ``{a}`` carries every tag of a list; binds ``values(tags)`` and the number of tags.
        metadata: ``metadata(alias, key, value)`` -> ``(sql, params)``: a top-level metadata key equals a JSON
            scalar (key and value validated by ``Filters.where``), with the meaning documented on ``Filters``.
        date_from: ``COALESCE(event_time, created_at)`` of ``{a}`` is at or after a bound UTC text
            (:func:`~agentbase.timeutil.to_db_time`).
        date_to: the same at or before a bound UTC text.
        active: ``{a}`` is not archived.
        current: ``{a}`` is not superseded.
        global_scope: ``{a}`` has the ``global`` scope.
        owner_scope: ``{a}`` has the scope ``{scope}`` and ``{a}.{column}`` equals one bound owner id.
        user_or_none: ``{a}`` belongs to one bound user or to no user.
    """

    all_of: Callable[[list[str]], str]
    any_of: Callable[[list[str]], str]
    nothing: str
    equals: str
    one_of: str
    values: Callable[[list[str]], Any]
    all_tags: str
    metadata: Callable[[str, str, Any], tuple[str, list[Any]]]
    date_from: str
    date_to: str
    active: str
    current: str
    global_scope: str
    owner_scope: str
    user_or_none: str


def visibility(viewer: dict[str, Any], alias: str, sql: FilterSQL) -> tuple[str, list[Any]]:
    """``(sql, params)`` keeping what ``viewer`` may see by scope, in the engine's SQL ``sql``.

    A ``global`` entry is visible to everyone; an ``agent``/``project``/``session`` entry to a viewer with that
    owner id; with a ``user_id``, only entries of that user or of no user.

    Args:
        viewer: owner ids (``user_id``, ``agent_id``, ``project_id``, ``session_id``; None values are ignored),
            checked by :func:`~agentbase.scopes.check_viewer`.
        alias: the entries table's alias in the query (an identifier, checked by the same function).
        sql: the engine's :class:`FilterSQL`.

    Returns:
        The SQL boolean expression and its parameters, in placeholder order.
    """
    scopes = [sql.global_scope.format(a=alias)]
    params: list[Any] = []
    for scope, column in _SCOPED:
        value = viewer.get(column)
        if value is not None:
            scopes.append(sql.owner_scope.format(a=alias, scope=scope, column=column))
            params.append(value)
    text = sql.any_of(scopes)
    if viewer.get("user_id") is not None:
        text = sql.all_of([text, sql.user_or_none.format(a=alias)])
        params.append(viewer["user_id"])
    return text, params


def where(f: Any, alias: str, sql: FilterSQL) -> tuple[str, list[Any]]:
    """``(sql, params)`` of the :class:`~agentbase.retrieval.filters.Filters` ``f`` over ``entries AS alias``, in
    the engine's SQL ``sql`` (its "true" when nothing filters).

    Args:
        f: a validated ``Filters`` (``Filters.where(alias, db.ops)`` validates, then calls the engine's ``where``).
        alias: the entries table's alias in the query (an identifier).
        sql: the engine's :class:`FilterSQL`.

    Returns:
        The SQL boolean expression and its parameters, in placeholder order.
    """
    clauses: list[str] = []
    params: list[Any] = []
    a = alias
    for column in _ONE_OR_MANY:
        value = getattr(f, column)
        if value is None:
            continue
        values = [value] if isinstance(value, str) or hasattr(value, "value") else list(value)
        values = list(dict.fromkeys(getattr(v, "value", v) for v in values))
        if not values:  # "one of no values": nothing passes (None, not [], means no filter)
            clauses.append(sql.nothing)
        elif len(values) == 1:
            clauses.append(sql.equals.format(a=a, column=column))
            params.append(values[0])
        else:
            clauses.append(sql.one_of.format(a=a, column=column))
            params.append(sql.values(values))
    for column in _OWNERS:
        value = getattr(f, column)
        if value is not None:
            clauses.append(sql.equals.format(a=a, column=column))
            params.append(str(value))
    tags = list(dict.fromkeys(str(t) for t in f.tags or []))
    if tags:
        clauses.append(sql.all_tags.format(a=a))
        params.extend([sql.values(tags), len(tags)])
    for key, value in (f.metadata or {}).items():
        text, args = sql.metadata(a, key, value)
        clauses.append(text)
        params.extend(args)
    if f.date_from is not None:
        clauses.append(sql.date_from.format(a=a))
        params.append(to_db_time(f.date_from))
    if f.date_to is not None:
        clauses.append(sql.date_to.format(a=a))
        params.append(to_db_time(f.date_to, end=True))
    if not f.include_archived:
        clauses.append(sql.active.format(a=a))
    if f.exclude_superseded:
        clauses.append(sql.current.format(a=a))
    if f.visible_to is not None:
        text, viewer_params = visibility(f.visible_to, a, sql)
        clauses.append(text)
        params.extend(viewer_params)
    return sql.all_of(clauses), params


def owners_equal(owners: Mapping[str, str], alias: str, mark: str) -> tuple[str, list[str]]:
    """``(" AND <alias>.user_id = <mark> ...", values)``: the conditions that ``owners`` (``{column: value}``, with
    columns among ``user_id``, ``agent_id``, ``project_id``) hold, each value bound with the engine's placeholder
    ``mark`` (``?`` or ``%s``); an empty mapping gives ``("", [])``.

    Raises:
        ValueError: another column is named (the callers pass the pipeline's constants, never user input; checked
            all the same, as the name is written into the SQL text).
    """
    bad = set(owners) - {"user_id", "agent_id", "project_id"}
    if bad:
        raise ValueError(f"unknown owner columns {sorted(bad)}")
    return "".join(f" AND {alias}.{k} = {mark}" for k in owners), [str(v) for v in owners.values()]
