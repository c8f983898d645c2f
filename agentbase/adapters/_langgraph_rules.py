"""The store rules of :mod:`agentbase.adapters.langgraph_store` that need no database: item ids, the reserved
metadata keys, value checks, and langgraph's filter and namespace-match semantics (as ``InMemoryStore`` of
langgraph 1.2 decides them), written for AgentBase."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from agentbase import check_json
from agentbase.errors import ValidationError

CATEGORY = "langgraph"  # the entry category that marks a store item
_INTERNAL = "langgraph"  # metadata: {"namespace", "key", "created_at", "updated_at", "ttl", "expires_at", "index"}
_NS_KEY = "langgraph_ns"  # metadata: ["a", "a.b", "a.b.c"], every prefix of the namespace joined by "."
_INDEXED_KEY = "langgraph_indexed"  # metadata: True when the entry text holds indexed fields
_RESERVED = frozenset({_INTERNAL, _NS_KEY, _INDEXED_KEY})
# Item ids: uuid5 of the JSON [namespace, key] under this fixed namespace UUID (RFC 4122 name-based ids).
_ID_NAMESPACE = uuid.UUID("6f1b0c1e-4a3e-5d7a-9b1c-2f0e8d4c7a10")
_MAX_ID_LEN = 256  # AgentBase owner ids: 1-256 characters
_FILTER_KEY = re.compile(r'[^"\\\x00-\x1f]{1,256}')  # keys AgentBase's metadata filter can address
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
_MAX_FIND = 1000  # AgentBase.find top_k maximum
_PAGE = 1000  # rows per AgentBase.list page when scanning


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).isoformat()


def _parse(t: Any, fallback: datetime) -> datetime:
    if isinstance(t, str):
        try:
            parsed = datetime.fromisoformat(t)
        except ValueError:
            return fallback
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
    return fallback


def _utc(t: datetime) -> datetime:
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def item_id(namespace: tuple[str, ...], key: str) -> str:
    """The AgentBase entry id of the store item ``(namespace, key)``.

    Args:
        namespace: the item's namespace labels. key: its key.

    Returns:
        ``str(uuid5(<fixed UUID>, json.dumps([list(namespace), key])))`` (RFC 4122 name-based id), the same in
        every process and file.
    """
    return str(uuid.uuid5(_ID_NAMESPACE, json.dumps([list(namespace), key], ensure_ascii=False)))


def _check_json(value: Any) -> None:
    """Raise ValidationError unless ``value`` is storable JSON (AgentBase's metadata rules, Mappings allowed): at
    most 90 levels deep, since the item is kept inside the entry's metadata, which allows 100."""
    check_json(value, "store value", max_depth=90, mappings=True)


def _plain(value: Any) -> Any:
    """``value`` as plain JSON types (Mappings become dicts, tuples lists), as it reads back."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _check_int(value: Any, what: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValidationError(f"{what} must be an integer >= {minimum}, got {value!r}")


def _check_filter(flt: Any) -> None:
    if flt is None:
        return
    if not isinstance(flt, dict):
        raise ValidationError(f"filter must be a dict, got {type(flt).__name__}")

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for k, sub in v.items():
                if isinstance(k, str) and k.startswith("$") and k not in _OPERATORS:
                    raise ValueError(f"Unsupported operator: {k}")
                walk(sub)
        elif isinstance(v, (list, tuple)):
            for sub in v:
                walk(sub)
    walk(flt)


def _as_number(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return float(v) if isinstance(v, bool) else None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _operator(value: Any, op: str, want: Any) -> bool:
    if op == "$eq":
        return bool(value == want)
    if op == "$ne":
        return bool(value != want)
    a, b = _as_number(value), _as_number(want)
    if a is None or b is None:  # a missing or non-numeric value fails every comparison (JSONB-like)
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _matches(value: Any, want: Any) -> bool:
    """Whether a stored value satisfies one filter value, with ``InMemoryStore``'s rules (langgraph 1.2)."""
    if isinstance(want, dict):
        if any(isinstance(k, str) and k.startswith("$") for k in want):
            return all(_operator(value, k, v) for k, v in want.items())
        return isinstance(value, dict) and all(_matches(value.get(k), v) for k, v in want.items())
    if isinstance(want, (list, tuple)):
        return isinstance(value, (list, tuple)) and len(value) == len(want) and \
            all(_matches(a, b) for a, b in zip(value, want, strict=True))
    return bool(value == want)


def _pushdown(flt: dict[str, Any] | None) -> dict[str, str]:
    """The filter conditions AgentBase's metadata filter can run in SQL as a superset of the exact match: string
    equality on an addressable, unreserved top-level key (a stored list holding the string also passes SQL; the
    exact check after it drops it). Numbers, booleans and None stay in Python: there ``True == 1`` and a missing
    key equals None, which AgentBase's typed SQL match would exclude."""
    out: dict[str, str] = {}
    for key, want in (flt or {}).items():
        if isinstance(want, dict) and set(want) == {"$eq"}:
            want = want["$eq"]
        if isinstance(want, str) and isinstance(key, str) and key not in _RESERVED and _FILTER_KEY.fullmatch(key):
            out[key] = want
    return out


def _does_match(cond: Any, ns: tuple[str, ...]) -> bool:
    path = tuple(cond.path)
    if len(ns) < len(path):
        return False
    if cond.match_type == "prefix":
        pairs = zip(ns, path, strict=False)
    elif cond.match_type == "suffix":
        pairs = zip(reversed(ns), reversed(path), strict=False)
    else:
        raise ValueError(f"Unsupported match type: {cond.match_type}")
    return all(p == "*" or a == p for a, p in pairs)
