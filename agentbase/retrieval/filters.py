"""Filters applied inside every candidate query (never after a top-k cut)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import ValidationError
from ..models import ContextType, Scope
from ..scopes import check_viewer
from ..timeutil import parse_time
from ..validation import check_bool, check_category, check_id, check_int, check_json, check_tags

__all__ = ["METADATA_KEY", "OWNER_KEYS", "Filters", "filters_from_kwargs"]

OWNER_KEYS = ("user_id", "agent_id", "project_id", "session_id")
# A metadata filter key is addressed as the JSON path label $."key": any text but the quote and the backslash
# (SQLite's path labels have no escapes), control characters and lone surrogates (not UTF-8: no stored key
# holds one), as stored keys are ("キー", "a b", "it's").
METADATA_KEY = re.compile(r'[^"\\\x00-\x1f\ud800-\udfff]{1,256}')


@dataclass
class Filters:
    """Which entries a query may see. Every field is optional; unset (``None``) fields do not filter.

    Attributes:
        context_type: ``memory``, ``resource`` or ``skill``, or a list of them (any of them; an empty list
            matches nothing).
        category: one category or a list (any of them; an empty list matches nothing).
        tags: entries must carry *all* of these tags (an empty list asks for nothing and matches every entry).
        scope: one scope or a list (any of them; an empty list matches nothing).
        user_id, agent_id, project_id, session_id: owner ids (exact match).
        metadata: equality on top-level metadata keys (JSON scalars), type included: a string matches only a
            stored string, ``True`` only ``true``, a number any equal number (``1`` and ``1.0``); ``None`` matches
            a key stored as JSON ``null``, not a missing key. A stored array matches when one of its items does
            (``{"tags": "x"}`` finds ``["x", "y"]``, as in Qdrant and Pinecone); an object never matches.
        date_from, date_to: inclusive bounds on ``COALESCE(event_time, created_at)`` (UTC). A bound without a
            clock time (``"2024-05-31"``, ``"2024-05"``, ``"2024"``, a ``datetime.date``) names a period:
            ``date_from`` is its first moment and ``date_to`` its last, so ``date_to="2024-05-31"`` includes
            that whole day. Bounds with a clock time are exact.
        include_archived: include entries archived by a decay pass.
        exclude_superseded: hide entries replaced by a newer version of the same fact.
        visible_to: a viewer's owner ids (``user_id``, ``agent_id``, ``project_id``, ``session_id``): only what
            that viewer may see by scope (:func:`agentbase.scopes.visibility_clause`; built by
            :func:`agentbase.scopes.visible_to`).
    """

    context_type: str | list[str] | None = None
    category: str | list[str] | None = None
    tags: list[str] | None = None
    scope: str | list[str] | None = None
    user_id: str | None = None
    agent_id: str | None = None
    project_id: str | None = None
    session_id: str | None = None
    metadata: dict[str, Any] | None = None
    date_from: datetime | None = None
    date_to: datetime | None = None
    include_archived: bool = False
    exclude_superseded: bool = True
    visible_to: dict[str, Any] | None = None

    def where(self, alias: str = "e", ops: Any = None) -> tuple[str, list[Any]]:
        """Build the SQL boolean expression over ``entries AS alias`` that applies these filters, and its
        parameters (the SQL is the engine's ``filters.where``: :func:`agentbase.storage.sqlite.filters.where`, or
        :func:`agentbase.storage.postgres.filters.where` with ``%s`` placeholders; both are the engine-neutral walk
        :func:`agentbase.storage.filters.where` over that engine's SQL text).

        Args:
            alias: the entries table's alias in the query (an identifier).
            ops: the engine's operations (``db.ops`` of the connection the SQL will run on); None means SQLite.

        Returns:
            ``(sql, params)``; values are always bound parameters, never interpolated.

        Raises:
            ValidationError: a metadata key longer than 256 characters or holding ``"``, ``\\``, a control
                character or a lone surrogate, or a value that is not a JSON scalar, an int outside the 64-bit
                range, NaN/infinity or a string with a lone surrogate; an unknown ``visible_to`` key or a malformed
                id.
        """
        if ops is None:
            from ..storage import sqlite as ops

        for key, value in (self.metadata or {}).items():
            if not isinstance(key, str) or not METADATA_KEY.fullmatch(key):
                raise ValidationError(f"metadata filter key {key!r} must be 1-256 characters without '\"', '\\', "
                                      "control characters or lone surrogates")
            if value is not None and not isinstance(value, (str, int, float, bool)):
                raise ValidationError(f"metadata filter value for {key!r} must be a JSON scalar")
            if isinstance(value, int) and not isinstance(value, bool):
                check_int(value, f"metadata filter value for {key!r}")
            else:  # NaN/infinity, lone surrogates
                check_json(value, f"metadata filter value for {key!r}")
        if self.visible_to is not None:
            check_viewer(self.visible_to, alias)
        return ops.filters.where(self, alias)


def _one_or_many(value: Any, what: str, allowed: set[str] | None) -> Any:
    """Check a filter that takes one value or a list of them: strings (or enum members) from ``allowed``."""
    if value is None:
        return None
    values = [value] if isinstance(value, str) or hasattr(value, "value") else value
    if not isinstance(values, (list, tuple)):
        raise ValidationError(f"{what} filter must be a string or a list of strings, got {type(value).__name__}")
    for v in values:
        v = getattr(v, "value", v)
        if allowed is None:
            check_category(v, what)
        elif v not in allowed:
            raise ValidationError(f"{what} filter {v!r} is not one of {sorted(allowed)}")
    return value


_FILTER_NAMES = frozenset(fld.name for fld in dataclasses.fields(Filters))


def filters_from_kwargs(filters: dict[str, Any], *, now: datetime | None = None) -> Filters:
    """Validate keyword filters into a :class:`Filters`.

    Args:
        filters: the keyword arguments of :class:`Filters`. ``context_type`` and ``scope`` must name known values,
            ``category`` must be non-empty strings without NUL (one or a list), ``tags`` a list of strings.
        now: the moment relative dates in ``date_from`` / ``date_to`` are read from (``"last week"``; aware UTC);
            default the current time. ``find()`` passes its ``reference_time``.

    Returns:
        The checked :class:`Filters`, with ``date_from`` / ``date_to`` as aware UTC datetimes (``date_to`` at the
        end of its period when it has no clock time).

    Raises:
        ValidationError: an unknown filter name or a bad value.
    """
    unknown = sorted(set(filters) - _FILTER_NAMES)
    if unknown:
        raise ValidationError(f"unknown filter {', '.join(map(repr, unknown))}; known filters: "
                              f"{', '.join(sorted(_FILTER_NAMES))}")
    f = Filters(**filters)
    if f.visible_to is not None:
        check_viewer(f.visible_to)  # a dict of known keys and well-formed ids
    f.context_type = _one_or_many(f.context_type, "context_type", {c.value for c in ContextType})
    f.scope = _one_or_many(f.scope, "scope", {s.value for s in Scope})
    f.category = _one_or_many(f.category, "category", None)
    for flag in ("include_archived", "exclude_superseded"):
        check_bool(getattr(f, flag), flag)
    for key in OWNER_KEYS:
        value = getattr(f, key)
        if value is not None:
            check_id(value, key)
    if f.tags is not None:
        f.tags = check_tags(f.tags)
    if f.metadata is not None and not isinstance(f.metadata, dict):
        raise ValidationError("metadata filter must be a dict")
    f.date_from = parse_time(f.date_from, now=now)
    f.date_to = parse_time(f.date_to, end=True, now=now)
    return f
