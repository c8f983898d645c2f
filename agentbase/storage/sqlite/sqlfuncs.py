"""SQL functions the migrations call, registered on the writer connection (:func:`register`).

Migrations that recompute derived columns (keyword text, content hashes, tags) must give exactly what the current
Python code would write, so they call that code through these functions instead of re-implementing it in SQL.
Each returns NULL (None) for a value it cannot compute, and the migration then keeps the stored value: a migration
that raised on one odd row would leave the whole file unopenable.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["register"]


def _fts_source(name: str | None, description: str | None, l2_full: str | None, tags_json: str | None) -> str:
    """``agentbase_fts_source(name, description, l2_full, tags)``: the ``entries.fts_text`` of a row (version 5)."""
    from ..entries import fts_source

    return fts_source(name, description, l2_full or "", [t for t in _json_list(tags_json) if isinstance(t, str)])


def _content_hash(text: str | None) -> str | None:
    """``agentbase_content_hash(text)``: :func:`~agentbase.ingest.dedup.content_hash` (version 6)."""
    from ...ingest.dedup import content_hash

    try:
        return content_hash(text) if isinstance(text, str) else None
    except Exception:  # noqa: BLE001 - keep the stored hash of a row the current rules reject
        return None


def _casefold(text: str | None) -> str | None:
    """``agentbase_casefold(text)``: Python's ``str.casefold`` (SQLite's ``lower`` folds ASCII only)."""
    return text.casefold() if isinstance(text, str) else None


def _ner_tags(tags_json: str | None) -> str | None:
    """``agentbase_ner_tags(tags)``: the tag list with each ``ner_`` tag re-normalised by
    :func:`~agentbase.ner.tag_for` (version 6: typographic apostrophes became ``'``), duplicates dropped."""
    from ...errors import ValidationError
    from ...ner import TAG_PREFIX, tag_for

    tags = _json_list(tags_json)
    if not tags or not all(isinstance(t, str) for t in tags):
        return None
    out: list[str] = []
    for tag in tags:
        if tag.startswith(TAG_PREFIX):
            try:
                tag = tag_for(tag)
            except ValidationError:
                pass
        if tag not in out:
            out.append(tag)
    return json.dumps(out, ensure_ascii=False)


def _key_description(fact_key: str | None) -> str | None:
    """``agentbase_key_description(fact_key)``: what a profile fact answers
    (:data:`~agentbase.ingest.facts.KEY_DESCRIPTIONS`), for keys with or without a speaker prefix (version 6)."""
    from ...ingest.facts import KEY_DESCRIPTIONS

    return KEY_DESCRIPTIONS.get(fact_key.rpartition("|")[2]) if isinstance(fact_key, str) else None


def _json_list(raw: str | None) -> list[Any]:
    try:
        value = json.loads(raw or "[]")
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def register(conn: Any) -> None:
    """Register every migration function on a driver connection (``sqlite3`` or ``sqlean``)."""
    conn.create_function("agentbase_fts_source", 4, _fts_source, deterministic=True)
    conn.create_function("agentbase_content_hash", 1, _content_hash, deterministic=True)
    conn.create_function("agentbase_casefold", 1, _casefold, deterministic=True)
    conn.create_function("agentbase_ner_tags", 1, _ner_tags, deterministic=True)
    conn.create_function("agentbase_key_description", 1, _key_description, deterministic=True)
