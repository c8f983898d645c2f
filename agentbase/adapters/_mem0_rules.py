"""mem0 semantics the adapter follows, as plain functions: input validation, the filter language, item shapes.

Split from :mod:`agentbase.adapters.mem0`; the strings, codes and rules are those of mem0ai 2.2.1
(``mem0/memory/main.py``, ``mem0/exceptions.py``). Nothing here touches storage.
"""

from __future__ import annotations

import copy
import hashlib
import logging
from datetime import date, datetime, timezone
from typing import Any

from agentbase.errors import AgentBaseError
from agentbase.retrieval.filters import METADATA_KEY

log = logging.getLogger("agentbase.adapters.mem0")

_OWNERS = ("user_id", "agent_id", "run_id")
_IDENTITY = (*_OWNERS, "actor_id")
_META_PROMOTED = ("actor_id", "role", "attributed_to", "expiration_date")
_PROMOTED = (*_OWNERS, *_META_PROMOTED)
_OPERATORS = frozenset({"eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "icontains"})
_LOGICAL = ("AND", "OR", "NOT")
_SCOPE_PREFIX = "mem0-scope-"  # private session for infer=True without run_id; never shown as run_id
_UNSET: Any = object()
_MISSING: Any = object()


class ValidationError(AgentBaseError):
    """Stand-in for ``mem0.exceptions.ValidationError`` when mem0ai is not installed (same fields, message).

    Attributes:
        message: human-readable text (also ``str(error)``). error_code: e.g. ``"VALIDATION_001"``.
        details: context dict. suggestion: how to fix it. debug_info: extra dict.
    """

    def __init__(self, message: str, error_code: str, details: dict | None = None,
                 suggestion: str | None = None, debug_info: dict | None = None):
        self.message, self.error_code, self.details = message, error_code, details or {}
        self.suggestion, self.debug_info = suggestion, debug_info or {}
        super().__init__(message)


_VALIDATION_CLS: type[Exception] | None = None


def mem0_validation_error() -> type[Exception]:
    """The class raised for mem0's ``VALIDATION_00x`` errors.

    Returns:
        ``mem0.exceptions.ValidationError`` when mem0ai can be imported (imported on first need, since
        importing mem0 creates ``$MEM0_DIR``), else :class:`ValidationError` from this module.
    """
    global _VALIDATION_CLS
    if _VALIDATION_CLS is None:
        try:
            from mem0.exceptions import ValidationError as cls
        except Exception:  # noqa: BLE001 - mem0 missing or broken: use our twin
            cls = ValidationError
        _VALIDATION_CLS = cls
    return _VALIDATION_CLS


def _invalid(message: str, code: str, details: dict, suggestion: str) -> Exception:
    return mem0_validation_error()(message=message, error_code=code, details=details, suggestion=suggestion)


# ------------------------------------------------------------------------------------------------ validation
def _trim_id(value: Any, name: str) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    if not text:
        raise ValueError(f"Invalid {name}: cannot be empty or whitespace-only. Provide a valid identifier.")
    if any(c.isspace() for c in text):
        raise ValueError(f"Invalid {name}: cannot contain whitespace. "
                         "Provide a valid identifier without spaces.")
    return text


def _check_search_params(threshold: Any = None, top_k: Any = None) -> None:
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
            raise ValueError("threshold must be a valid number")
        if threshold < 0 or threshold > 1:
            raise ValueError(f"Invalid threshold: {threshold}. Must be between 0 and 1 (inclusive).")
    if top_k is not None:
        if not isinstance(top_k, int) or isinstance(top_k, bool):
            raise ValueError("top_k must be a valid integer")
        if top_k < 0:
            raise ValueError(f"Invalid top_k: {top_k}. Must be a non-negative integer.")


def _norm_expiration(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError as exc:
            raise ValueError("expiration_date must be a valid date in YYYY-MM-DD format.") from exc
    raise ValueError("expiration_date must be a date string in YYYY-MM-DD format.")


def _expired(entry: Any) -> bool:
    value = entry.metadata.get("expiration_date")
    try:
        return bool(value) and date.fromisoformat(str(value)) < datetime.now(timezone.utc).date()
    except ValueError:
        return False


# mem0 writes these payload keys itself after merging the caller's metadata, so a caller's value never shows
_CORE_KEYS = ("data", "hash", "created_at", "updated_at")


def _strip_identity(metadata: dict, existing: dict, where: str) -> dict:
    """The caller's metadata without identity keys (a changed one logs a warning) and without the payload keys
    mem0 overwrites (``data``, ``hash``, ``created_at``, ``updated_at``: dropped silently, as mem0 does)."""
    clean = {}
    for key, value in copy.deepcopy(metadata).items():
        if key in _CORE_KEYS:
            continue
        if key not in _IDENTITY:
            clean[key] = value
        elif value != existing.get(key):
            log.warning("%s: ignoring metadata['%s'] - identity fields cannot be set through metadata",
                        where, key)
    return clean


def _valid_memory_id(memory_id: Any) -> str | None:
    return memory_id if isinstance(memory_id, str) and 0 < len(memory_id) <= 256 and "\x00" not in memory_id \
        else None


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content if content.strip() else None
    if isinstance(content, list):  # OpenAI-style parts: keep the text parts
        parts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(p for p in parts if p) or None
    return None


def _messages(messages: Any) -> list[Any]:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if isinstance(messages, dict):
        return [messages]
    if isinstance(messages, list):
        return messages
    raise _invalid("messages must be str, dict, or list[dict]", "VALIDATION_003",
                   {"provided_type": type(messages).__name__, "valid_types": ["str", "dict", "list[dict]"]},
                   "Convert your input to a string, dictionary, or list of dictionaries.")


def _usable(messages: list[Any]) -> list[tuple[dict, str]]:
    """(message, text) per valid non-system message; invalid or text-less ones are skipped with a warning."""
    out = []
    for m in messages:
        text = _text_of(m.get("content")) if isinstance(m, dict) and m.get("role") is not None else None
        if text is None:
            log.warning("Skipping invalid message format: %r", m)
        elif m["role"] != "system":
            out.append((m, text))
    return out


# ------------------------------------------------------------------------------------------------ filters
def _check_filter(cond: dict) -> None:
    for key, value in cond.items():
        if key in _LOGICAL:
            if not isinstance(value, list) or (key != "AND" and not value):
                kind = "a list" if key == "AND" else "a non-empty list"
                raise ValueError(f"{key} operator requires {kind} of conditions")
            for i, sub in enumerate(value):
                if not isinstance(sub, dict):
                    raise ValueError(f"{key} filter list item at index {i} must be a dict, got "
                                     f"{type(sub).__name__}: {sub!r}")
                _check_filter(sub)
        elif isinstance(value, dict):
            for op in value:
                if op not in _OPERATORS:
                    raise ValueError(f"Unsupported metadata filter operator: {op}")


def _split_filters(filters: dict | None, keywords: dict) -> tuple[dict, dict, dict]:
    """Validate mem0 filters; return (SQL owner filters, SQL metadata equality, post-filter conditions)."""
    if filters is not None and not isinstance(filters, dict):
        raise ValueError("filters must be a dict")
    eff = dict(filters or {})
    for key in _OWNERS:
        if keywords.get(key) is not None:
            value = _trim_id(keywords[key], key)
            if key in eff and _trim_id(eff[key], key) != value:
                raise ValueError(f"{key} given both as a keyword ({value!r}) and in filters ({eff[key]!r})")
            eff[key] = value
        elif key in eff and not isinstance(eff[key], (dict, list)):
            eff[key] = _trim_id(eff[key], key)
    if not any(key in eff for key in _OWNERS):
        raise ValueError("filters must contain at least one of: user_id, agent_id, run_id. "
                         "Example: filters={'user_id': 'u1'}")
    _check_filter(eff)
    owners, meta, post = {}, {}, {}
    for key, value in eff.items():
        scalar = isinstance(value, (str, int, float, bool)) and value != "*"
        if key in _OWNERS and isinstance(value, str) and value != "*":
            owners["session_id" if key == "run_id" else key] = value
        elif key not in _LOGICAL and key not in _OWNERS and scalar and METADATA_KEY.fullmatch(key) \
                and "." not in key and key not in ("created_at", "updated_at"):  # "cfg.lang" reads nested keys
            meta[key] = value
        else:
            post[key] = value
    return owners, meta, post


def _compare(a: Any, b: Any) -> int | None:
    """-1/0/1 for numbers, or for strings (ISO UTC timestamps order as text); None when not comparable."""
    if isinstance(b, (date, datetime)):
        b = b.isoformat()
    numbers = isinstance(a, (int, float)) and isinstance(b, (int, float))
    strings = isinstance(a, str) and isinstance(b, str)
    if isinstance(a, bool) or isinstance(b, bool) or not (numbers or strings):
        return None
    return (a > b) - (a < b)


def _contains(actual: Any, arg: Any, fold: bool) -> bool:
    if isinstance(actual, str) and isinstance(arg, str):
        return arg.casefold() in actual.casefold() if fold else arg in actual
    if isinstance(actual, list):
        return any(_contains(a, arg, fold) if isinstance(a, str) else a == arg for a in actual)
    return False


def _same(a: Any, b: Any) -> bool:
    """JSON equality: ``True`` is not ``1`` (Python's ``==`` says it is; Qdrant keeps booleans apart)."""
    return (isinstance(a, bool) == isinstance(b, bool)) and a == b


def _equals(actual: Any, value: Any) -> bool:
    """Qdrant's match: a stored list matches when one of its items does."""
    if isinstance(actual, list):
        return any(_same(a, value) for a in actual)
    return _same(actual, value)


def _in(actual: Any, options: Any) -> bool:
    options = options if isinstance(options, (list, tuple, set)) else [options]
    return any(_equals(actual, o) for o in options)


def _lookup(payload: dict, key: str) -> Any:
    """``payload[key]``, else a dotted key read into nested objects (Qdrant: ``"cfg.lang"``)."""
    if key in payload:
        return payload[key]
    value: Any = payload
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


_OPS = {
    "eq": _equals, "ne": lambda a, v: not _equals(a, v), "in": _in, "nin": lambda a, v: not _in(a, v),
    "gt": lambda a, v: (c := _compare(a, v)) is not None and c > 0,
    "gte": lambda a, v: (c := _compare(a, v)) is not None and c >= 0,
    "lt": lambda a, v: (c := _compare(a, v)) is not None and c < 0,
    "lte": lambda a, v: (c := _compare(a, v)) is not None and c <= 0,
    "contains": lambda a, v: _contains(a, v, False), "icontains": lambda a, v: _contains(a, v, True),
}


def _match(payload: dict, cond: dict) -> bool:
    """mem0/Qdrant semantics: a missing key fails every condition but ``"*"``; NOT negates conditions."""
    for key, value in cond.items():
        if key == "AND":
            ok = all(_match(payload, c) for c in value)
        elif key == "OR":
            ok = any(_match(payload, c) for c in value)
        elif key == "NOT":
            ok = not any(_match(payload, c) for c in value)
        else:
            actual = _lookup(payload, key)
            if value == "*":  # mem0's default store (Qdrant) skips the condition: any value, or none
                ok = True
            elif actual is _MISSING or actual is None:
                ok = False
            elif isinstance(value, dict):
                ok = all(_OPS[op](actual, arg) for op, arg in value.items())
            elif isinstance(value, list):
                ok = _in(actual, value)
            else:
                ok = _equals(actual, value)
        if not ok:
            return False
    return True


# ------------------------------------------------------------------------------------------------ shapes
def _run_id(entry: Any) -> str | None:
    sid = entry.session_id
    return None if sid is None or sid.startswith(_SCOPE_PREFIX) else sid


def _leftover(entry: Any) -> bool:
    """A turn or summary of a private ``infer=True`` session: the call that made it removes it before it
    returns, so one that reads is left by a call killed midway (never acknowledged); reads skip it."""
    sid = entry.session_id
    return sid is not None and sid.startswith(_SCOPE_PREFIX) and entry.category in ("turn", "summary")


def _payload(entry: Any) -> dict:
    owners = {"user_id": entry.user_id, "agent_id": entry.agent_id, "run_id": _run_id(entry)}
    return {**entry.metadata, **{k: v for k, v in owners.items() if v is not None},
            "created_at": entry.created_at.isoformat(), "updated_at": entry.updated_at.isoformat()}


_PROVENANCE = frozenset({"source", "message_id", "fact_key", "value", "when"})  # what commit_session stamps


def _item(entry: Any, *, score: Any = _UNSET) -> dict[str, Any]:
    """mem0's ``MemoryItem``: id, memory, hash, metadata, [score,] created_at, updated_at, promoted keys. A fact
    extracted by ``infer=True`` without caller metadata shows ``metadata: None``, as in mem0 (its provenance keys
    stay in AgentBase)."""
    meta = dict(entry.metadata)
    if meta.get("source") == "session" and set(meta) <= _PROVENANCE:
        meta = {}
    promoted: dict[str, Any] = {k: v for k, v in (("user_id", entry.user_id), ("agent_id", entry.agent_id),
                                                   ("run_id", _run_id(entry))) if v is not None}
    promoted.update({k: meta.pop(k) for k in _META_PROMOTED if k in meta})
    item: dict[str, Any] = {"id": entry.id, "memory": entry.content,
                            "hash": hashlib.md5(entry.content.encode()).hexdigest(), "metadata": meta or None}
    if score is not _UNSET:
        item["score"] = score
    item["created_at"] = entry.created_at.isoformat()
    item["updated_at"] = entry.updated_at.isoformat()
    item.update({k: promoted[k] for k in _PROMOTED if k in promoted})
    return item
