"""Entry methods: add, get, update, delete, list, history, resources and skills."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from .._loop import bridged
from ..errors import NotFoundError, ValidationError
from ..graph import RELATIONS_JOB, may_state_relations
from ..ingest.dedup import content_hash, harden_confidence
from ..ingest.tiers import l0_abstract, l1_overview
from ..models import ContextType, Entry, HistoryEvent, Scope, utcnow
from ..ner import entity_tags
from ..retrieval.filters import OWNER_KEYS
from ..retrieval.filters import filters_from_kwargs as _filters
from ..storage.entries import (
    delete_entry_row,
    insert_entry,
    row_to_entry,
    row_to_history,
    update_entry_row,
)
from ..storage.ids import ids_with_prefix as _ids_with_prefix
from ..timeutil import parse_time, to_db_time
from ..validation import (
    INT64_MAX,
    check_bool,
    check_category,
    check_id,
    check_int,
    check_limit,
    check_metadata,
    check_tags,
    check_text,
)

__all__ = ["MIN_CHUNK_CHARS", "EntriesAPI"]

MIN_CHUNK_CHARS = 200  # add_resource refuses smaller chunks
# Metadata keys the engine writes and reads back, by category: a turn's link to its message (the role decides
# its vector and retrieval weights, the speaker the speaker boost) and a summary's origin (which marks it as its
# session's summary). update(metadata=) keeps them unless the new metadata sets them itself.
ENGINE_METADATA_KEYS = {"turn": ("role", "speaker", "message_id", "message_seq"), "summary": ("source",)}


class EntriesAPI:
    """Methods mixed into :class:`~agentbase.engine.AgentBase`; see its docstring for construction."""

    # ------------------------------------------------------------------ entries
    def _notify(self) -> None:
        """Wake the embedding worker (new ``embed`` jobs), the enrichment workers (new ``enrich`` and ``relations``
        jobs) and, with a model configured, the LLM worker (new ``llm`` jobs)."""
        for worker in (self.worker, self.enricher, self.relator, getattr(self, "llm_worker", None)):
            if worker is not None:
                worker.notify()

    def _tags_for(self, text: str, tags: list[str]) -> list[str]:
        """``tags`` and the entity tags of the first ``ingest.ner_max_chars`` characters of ``text`` (as commits
        read turns: a 160 KB memory took 5 s and gave 17,523 tags)."""
        self._ensure_extractors()
        limit = self.settings.ingest.ner_max_chars
        ner = entity_tags(self.extractor.extract(text[:limit]))
        return list(dict.fromkeys([*tags, *ner]))

    async def _find_duplicate(self, conn: Any, text_hash: str, context_type: str,
                              owners: dict[str, Any]) -> tuple[int, Entry] | None:
        row = await conn.ops.entries.duplicate_row(conn, text_hash, context_type,
                                                   {key: owners.get(key) for key in OWNER_KEYS})
        return (row[0], row_to_entry(row)) if row else None

    @bridged
    async def infer_memories(self, messages: list[dict[str, Any]], *, user_id: str | None = None,
                             agent_id: str | None = None, session_id: str | None = None,
                             metadata: dict[str, Any] | None = None, event_time: datetime | str | None = None,
                             scope: Scope | str = Scope.GLOBAL) -> dict[str, Any] | None:
        """mem0's ``infer=True`` with the configured model (docs/llm.md): extract facts from ``messages``,
        retrieve the related stored memories of these owners, let the model decide ADD / UPDATE / DELETE / NONE
        for each fact, and apply the decisions (``add_memory``, ``update``, ``delete``).

        Args:
            messages: ``[{"role", "content", "name"?}]``; only ``user`` and ``assistant`` messages are read.
            user_id, agent_id, session_id: the owners searched and given to new memories (at least one).
            metadata: stored with each added memory.
            event_time: when it happened (UTC), for added memories.
            scope: the scope of added memories.

        Returns:
            ``{"results": [{"id", "memory", "event": "ADD"|"UPDATE"|"DELETE", "previous_memory" (UPDATE only)}]}``,
            or None when no model is configured or ``llm.mem0_infer`` is off (nothing was done: use the rule-based
            path).

        Raises:
            ValidationError: ``messages`` is not a list of dicts with str ``role`` and ``content``, or no owner
                id is given.
            LLMOutputError: an answer was not the JSON asked for (nothing was written).
            LLMUnavailable / LLMRetryable / LLMError: the model could not answer (nothing was written).
        """
        from ..llm.mem0_infer import infer_memories
        from ..llm.usage import traced_calls

        if not isinstance(messages, list) or not all(
                isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                for m in messages):
            raise ValidationError("messages must be a list of dicts with str 'role' and 'content'")
        if not any((user_id, agent_id, session_id)):
            raise ValidationError("infer_memories needs user_id, agent_id or session_id")
        for key, value in (("user_id", user_id), ("agent_id", agent_id), ("session_id", session_id)):
            if value is not None:
                check_id(value, key)
        if metadata is not None:
            metadata = check_metadata(metadata)
        await self._ensure()
        owner = {k: v for k, v in (("user_id", user_id), ("agent_id", agent_id), ("session_id", session_id)) if v}
        async with traced_calls(self, "llm mem0 infer", {"kind": "mem0_infer", **owner}):
            return await infer_memories(self, messages, user_id=user_id, agent_id=agent_id, session_id=session_id,
                                        metadata=metadata, event_time=event_time, scope=scope)

    @bridged
    async def add_memory(self, content: str, *, category: str = "fact", tags: list[str] | None = None,
                         metadata: dict[str, Any] | None = None, scope: Scope | str = Scope.GLOBAL,
                         user_id: str | None = None, agent_id: str | None = None, project_id: str | None = None,
                         session_id: str | None = None, confidence: float = 1.0, importance: float = 0.5,
                         event_time: datetime | str | None = None, context_type: ContextType | str = "memory",
                         dedup: bool = True, entry_id: str | None = None, **extra: Any) -> Entry:
        """Store one entry (a memory by default) and queue its embedding.

        The entry row, its tags, FTS rows, ADD history event and embedding job commit in one transaction; the
        call returns after that commit (the vector follows; ``await db.flush()`` waits for it). Entity tags
        ``ner_<Entity>`` are added from the text. With ``dedup`` the same text (after case/whitespace
        normalisation) for the same owners returns the existing entry with its confidence raised instead of a copy.

        Args:
            content: the text (non-empty; lone surrogates are rejected).
            category: free label such as ``profile``, ``preference``, ``fact``, ``event``, ``procedure`` (no NUL).
            tags: a list or tuple of labels; entries can be filtered by them.
            metadata: a JSON object stored with the entry: str keys; values str, int, float (finite), bool, None,
                lists and dicts of them.
            scope: ``global``, ``agent``, ``project`` or ``session``.
            user_id, agent_id, project_id, session_id: owner ids.
            confidence: 0..1. importance: 0..1.
            event_time: when the remembered thing happened (UTC; naive times are taken as UTC).
            context_type: ``memory``, ``resource`` or ``skill``.
            dedup: merge exact duplicates for the same owners.
            entry_id: use this id instead of a new uuid4.
            **extra: ``uri``, ``mime_type``, ``name``, ``description`` for resources and skills.

        Returns:
            The stored :class:`Entry`.

        Raises:
            ValidationError: empty content, lone surrogates, bad tags, ids, category, metadata (non-str keys,
                NaN/infinity, sets and other non-JSON values), event_time, or values out of range.
        """
        return await self._add(content, category=category, tags=tags, metadata=metadata, scope=scope,
                               owners={"user_id": user_id, "agent_id": agent_id, "project_id": project_id,
                                       "session_id": session_id},
                               confidence=confidence, importance=importance, event_time=event_time,
                               context_type=context_type, dedup=dedup, entry_id=entry_id, extra=extra)

    def _build_entry(self, content: str, *, category: str, tags: list[str] | None, metadata: dict | None,
                     scope: Scope | str, owners: dict[str, Any], confidence: float, importance: float,
                     event_time: Any, context_type: Any, entry_id: str | None, extra: dict[str, Any],
                     extract_entities: bool = True) -> Entry:
        check_text(content)
        check_category(category)
        metadata = check_metadata(metadata)
        for key, value in owners.items():
            if value is not None:
                check_id(value, key)
        for name, value in (("confidence", confidence), ("importance", importance)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                raise ValidationError(f"{name} must be a number between 0 and 1")
        unknown = set(extra) - {"uri", "mime_type", "name", "description"}
        if unknown:
            raise ValidationError(f"unexpected arguments: {sorted(unknown)}")
        try:
            ctype = ContextType(getattr(context_type, "value", context_type))
            scope_v = Scope(getattr(scope, "value", scope))
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        now = utcnow()
        return Entry(
            id=check_id(entry_id, "entry_id") if entry_id is not None else str(uuid.uuid4()), context_type=ctype,
            category=category, l0_abstract=l0_abstract(content), l1_overview=l1_overview(content), l2_full=content,
            tags=self._tags_for(content, check_tags(tags)) if extract_entities else check_tags(tags),
            metadata=metadata, scope=scope_v,
            confidence=float(confidence), importance=float(importance), created_at=now, updated_at=now,
            event_time=parse_time(event_time), content_hash=content_hash(content),
            **{k: v for k, v in owners.items()}, **extra,
        )

    async def _add(self, content: str, *, dedup: bool, **kw: Any) -> Entry:
        check_bool(dedup, "dedup")
        entry = self._build_entry(content, **kw)
        db = await self._open()
        # The duplicate and id checks run inside the write transaction: of concurrent adds of one text, the first
        # inserts and the others harden it; of two adds with one entry_id, the second gets the ValidationError.
        async with db.transaction() as conn:
            if dedup:
                existing = await self._find_duplicate(conn, entry.content_hash, entry.context_type.value,
                                                      {k: getattr(entry, k) for k in OWNER_KEYS})
                if existing is not None:
                    return await self._harden(conn, *existing, entry)
            if kw.get("entry_id") is not None and await conn.ops.entries.id_exists(conn, entry.id):
                raise ValidationError(f"entry_id {entry.id!r} already exists; use update() to change it")
            await insert_entry(conn, entry, fact_key=None)
            if entry.context_type is ContextType.MEMORY and may_state_relations(content, self.settings):
                # its graph relations follow, as a commit's do (a text no relation verb occurs in queues nothing)
                await conn.ops.jobs.enqueue(conn, RELATIONS_JOB, entry.id, to_db_time(entry.updated_at))
        self._notify()
        return entry

    async def _harden(self, conn: Any, rid: int, entry: Entry, repeat: Entry) -> Entry:
        """A repeated memory's confidence rises by ``ingest.confidence_step`` (:func:`harden_confidence`), inside
        the caller's write transaction ``conn``; the repeat's tags and new metadata keys join the stored ones (a
        caller's new tag is never dropped; stored metadata values stay)."""
        hardened = entry.model_copy(update={
            "confidence": harden_confidence(entry.confidence, self.settings.ingest.confidence_step),
            "updated_at": utcnow(), "tags": list(dict.fromkeys([*entry.tags, *repeat.tags])),
            "metadata": {**repeat.metadata, **entry.metadata}})
        await update_entry_row(conn, rid, entry, hardened, engine=self.db.vector_engine)
        return hardened

    async def _row(self, entry_id: str, owners: dict[str, Any] | None = None,
                   conn: Any = None) -> tuple[int, Entry] | None:
        """The entry's rowid and model, for these owners; read on ``conn`` (a write transaction, so the row cannot
        change before the caller writes) when given, else on the reader connection."""
        db = await self._open()
        check_id(entry_id, "entry_id")
        owners = {key: check_id(value, key) for key, value in (owners or {}).items() if value is not None}
        c = conn if conn is not None else db
        row = await c.ops.entries.row_by_id(c, entry_id, owners)
        return (row[0], row_to_entry(row)) if row else None

    @bridged
    async def get(self, entry_id: str, *, user_id: str | None = None, agent_id: str | None = None,
                  project_id: str | None = None) -> Entry | None:
        """Return the entry with ``entry_id``, or None if it does not exist or belongs to other owners.

        Raises:
            ValidationError: a malformed id.
        """
        found = await self._row(entry_id, {"user_id": user_id, "agent_id": agent_id, "project_id": project_id})
        return found[1] if found else None

    @bridged
    async def ids_with_prefix(self, prefix: str, *, limit: int = 10) -> list[str]:
        """Entry ids that start with ``prefix`` (the short ids the CLI prints), smallest first.

        Each engine's ``entries.ids_with_prefix``: on SQLite a range scan on the unique ``id`` index (``prefix <=
        id < successor``, where the successor raises the prefix's last character by one code point), so it costs
        the same at any size; on PostgreSQL ``id LIKE`` the escaped prefix (the ``id`` index serves it in a ``C``
        collation database). ``prefix`` is a bound parameter: ``%``, ``_``, ``\\`` and quotes in it are plain
        characters, and case matters (ids are compared exactly).

        Args:
            prefix: the start of an id (validated like an id).
            limit: most ids to return (1..10,000); ask for 2 to tell "unique" from "ambiguous".

        Returns:
            Up to ``limit`` full ids, of entries of any owner and status.

        Raises:
            ValidationError: a malformed prefix or a bad ``limit``.
        """
        check_id(prefix, "prefix")
        check_limit(limit, "limit", maximum=10_000)
        return await _ids_with_prefix(await self._open(), "entries", prefix, limit)

    async def _settle_for(self, *, entry_id: str | None = None, owners: dict[str, Any] | None = None) -> None:
        """Before an edit of entries: run the enrichment still queued (``commit_session(wait=False)``) for the
        sessions whose facts and turns share owners with entry ``entry_id``, or for every session of ``owners``
        (every pending session when neither is given). A queued enrichment reads the owner's turns and facts
        (to harden a repeat or supersede an old value), so an edit of either must not land before it: a fact
        deleted first would be extracted again. One indexed read when nothing is queued."""
        from ..ingest.commit import settle

        db = await self._open()
        if entry_id is not None:
            pending = await db.ops.sessions.pending_sharing_owners(db, entry_id)
        else:
            pending = await db.ops.sessions.pending_of_owners(
                db, {k: v for k, v in (owners or {}).items() if v is not None})
        if pending:
            await settle(self, pending)

    @bridged
    async def update(self, entry_id: str, content: str | None = None, *, tags: list[str] | None = None,
                     metadata: dict[str, Any] | None = None, category: str | None = None,
                     confidence: float | None = None, importance: float | None = None,
                     event_time: datetime | str | None = None, status: str | None = None,
                     user_id: str | None = None, agent_id: str | None = None) -> Entry:
        """Change an entry; a new text replaces FTS rows and the vector in the same transaction (the old vector is
        dropped and a new one queued for the embedding worker; a turn of a role outside ``ingest.embed_roles``, an
        assistant's by default, stays without one).

        Args:
            entry_id: the entry. content: new full text (L0/L1 and entity tags are recomputed).
            tags, metadata, category, confidence, importance, event_time: replace the stored values when given
                (a new ``metadata`` of a turn keeps its stored ``role``, ``speaker``, ``message_id`` and
                ``message_seq``, and a summary's its ``source``, unless it sets them: the engine reads them).
            status: ``active`` or ``archived``.
            user_id, agent_id: when given, the entry must belong to them (else NotFoundError).

        Returns:
            The updated entry.

        Raises:
            NotFoundError: no such entry for these owners.
            ValidationError: bad values (nothing is written).
        """
        # Validate everything first (nothing is written on bad input), then read the row inside the write
        # transaction: a concurrent delete or update of the same entry cannot slip in between.
        check_id(entry_id, "entry_id")
        changes: dict[str, Any] = {"updated_at": utcnow()}
        new_tags = check_tags(tags) if tags is not None else None
        ner_tags: list[str] = []
        if content is not None:
            check_text(content)
            ner_tags = self._tags_for(content, [])
            changes.update(l2_full=content, l0_abstract=l0_abstract(content), l1_overview=l1_overview(content),
                           content_hash=content_hash(content))
        if metadata is not None:
            changes["metadata"] = check_metadata(metadata)
        if category is not None:
            changes["category"] = check_category(category)
        for name, value in (("confidence", confidence), ("importance", importance)):
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                    raise ValidationError(f"{name} must be a number between 0 and 1")
                changes[name] = float(value)
        if event_time is not None:
            changes["event_time"] = parse_time(event_time)
        if status is not None:
            if status not in ("active", "archived"):
                raise ValidationError("status must be 'active' or 'archived'")
            changes["status"] = status
        await self._settle_for(entry_id=entry_id)
        db = await self._open()
        async with db.transaction() as conn:
            found = await self._row(entry_id, {"user_id": user_id, "agent_id": agent_id}, conn)
            if found is None:
                raise NotFoundError(f"entry {entry_id!r} not found")
            rid, old = found
            if "metadata" in changes:
                kept = {k: old.metadata[k] for k in ENGINE_METADATA_KEYS.get(old.category, ()) if k in old.metadata}
                changes["metadata"] = {**kept, **changes["metadata"]}
            user_tags = new_tags if new_tags is not None else [t for t in old.tags if not t.startswith("ner_")]
            if content is not None:
                changes["tags"] = list(dict.fromkeys([*user_tags, *ner_tags]))
            elif new_tags is not None:
                changes["tags"] = list(dict.fromkeys([*user_tags, *(t for t in old.tags if t.startswith("ner_"))]))
            new = old.model_copy(update=changes)
            # a turn keeps the embedding policy it was committed with (ingest.embed_roles)
            embed = new.category != "turn" or new.metadata.get("role") in self.settings.ingest.embed_roles
            await update_entry_row(conn, rid, old, new, engine=db.vector_engine, embed=embed)
        self._notify()
        return new

    @bridged
    async def delete(self, entry_id: str, *, user_id: str | None = None, agent_id: str | None = None) -> bool:
        """Delete an entry from every index at once (row, tags, FTS, vector, links) and record a DELETE event.

        Returns:
            True if an entry was deleted, False if none matched (for these owners).

        Raises:
            ValidationError: a malformed id.
        """
        db = await self._open()
        check_id(entry_id, "entry_id")
        await self._settle_for(entry_id=entry_id)
        async with db.transaction() as conn:  # read inside: of two concurrent deletes, one finds nothing
            found = await self._row(entry_id, {"user_id": user_id, "agent_id": agent_id}, conn)
            if found is None:
                return False
            await delete_entry_row(conn, found[0], found[1], engine=db.vector_engine, now=to_db_time(utcnow()))
        return True

    @bridged
    async def delete_all(self, **filters: Any) -> int:
        """Delete every entry matching ``filters`` (the keyword arguments of :class:`Filters`).

        At least one owner id or ``context_type`` is required so that a typo cannot wipe the database. Archived
        and superseded entries are included unless ``include_archived`` / ``exclude_superseded`` are given
        (``delete_all(user_id="u")`` removes everything of ``u``, old fact versions too).

        Returns:
            Number of entries deleted.

        Raises:
            ValidationError: no narrowing filter was given, or a bad filter value.
        """
        f = _filters({"include_archived": True, "exclude_superseded": False, **filters})
        if not any(getattr(f, k) for k in (*OWNER_KEYS, "context_type", "category", "tags")):
            raise ValidationError("delete_all needs at least one of user_id, agent_id, project_id, session_id, "
                                  "context_type, category or tags")
        await self._settle_for(owners={k: getattr(f, k) for k in OWNER_KEYS})
        db = await self._open()
        where, params = f.where("e", db.ops)
        now = to_db_time(utcnow())
        async with db.transaction() as conn:
            rows = await conn.ops.entries.rows_where(conn, (where, params))
            for row in rows:
                await delete_entry_row(conn, row[0], row_to_entry(row), engine=db.vector_engine, now=now)
        return len(rows)

    @bridged
    async def list(self, *, limit: int = 100, offset: int = 0, order: str = "desc", **filters: Any) -> list[Entry]:
        """List entries matching ``filters`` (keyword arguments of :class:`Filters`), newest first by default.

        Args:
            limit: 1..10000. offset: rows to skip (an int, 0..2**63-1). order: ``"desc"`` or ``"asc"`` by creation
                time.

        Returns:
            Entries.

        Raises:
            ValidationError: bad limit, order or filter.
        """
        check_limit(limit, "limit")
        if order not in ("asc", "desc"):
            raise ValidationError("order must be 'asc' or 'desc'")
        check_int(offset, "offset", minimum=0)
        db = await self._open()
        rows = await db.ops.entries.list_rows(db, _filters(filters).where("e", db.ops), order=order, limit=limit, offset=offset)
        return [row_to_entry(r) for r in rows]

    @bridged
    async def count(self, **filters: Any) -> int:
        """Number of entries matching ``filters`` (keyword arguments of :class:`Filters`).

        Returns:
            The count (an int).

        Raises:
            ValidationError: an unknown filter or a bad filter value.
        """
        db = await self._open()
        return await db.ops.entries.count_where(db, _filters(filters).where("e", db.ops))

    @bridged
    async def history(self, entry_id: str) -> list[HistoryEvent]:
        """ADD / UPDATE / DELETE events of an entry, oldest first (kept after the entry is deleted).

        Raises:
            ValidationError: a malformed id.
        """
        db = await self._open()
        rows = await db.ops.entries.history_rows(db, check_id(entry_id, "entry_id"))
        return [row_to_history(r) for r in rows]

    @bridged
    async def add_resource(self, uri: str, content: str, *, mime_type: str = "text/plain",
                           title: str | None = None, tags: list[str] | None = None,
                           metadata: dict[str, Any] | None = None, chunk_chars: int = 1500,
                           **owners: Any) -> list[Entry]:
        """Store a document, URL or API description as resource chunks that point back to it.

        Each chunk is an entry with ``context_type="resource"``, the ``uri``, and ``metadata["chunk_index"]`` /
        ``["chunk_count"]`` / ``["char_start"]``. All chunks commit in one transaction.

        A ``uri`` is the resource's identity among the same owners (as a name is for :meth:`add_skill`): adding
        a uri the owners already have replaces that resource in the same transaction. Chunk ``i`` keeps the id and
        ``created_at`` of the old chunk ``i`` (an ``UPDATE`` history event where its text changed; a new vector
        only then), chunks beyond the new count are deleted, and new ones are added.

        Args:
            uri: where the resource lives. content: its text. mime_type: e.g. ``text/markdown``.
            title: stored as the entries' ``name``. chunk_chars: target chunk size in characters (an int, at least
            200).
            **owners: ``user_id``, ``agent_id``, ``project_id``, ``session_id``, ``scope``.

        Returns:
            The chunk entries in order, as stored.

        Raises:
            ValidationError: empty uri or content, ``chunk_chars`` not an int of at least 200, bad owners, tags
                or metadata.
        """
        from ..embeddings.base import chunk_spans

        check_text(uri, "uri")
        check_text(content)
        check_text(mime_type, "mime_type")
        if title is not None:
            check_text(title, "title")
        unknown = sorted(set(owners) - {*OWNER_KEYS, "scope"})
        if unknown:  # a misspelt owner (user_idd=) would store the resource with no owner, visible to everyone
            raise ValidationError(f"unknown argument(s) {unknown}; owners are {sorted({*OWNER_KEYS, 'scope'})}")
        check_int(chunk_chars, "chunk_chars", minimum=MIN_CHUNK_CHARS, maximum=INT64_MAX)
        metadata = check_metadata(metadata)
        spans = chunk_spans(content, chunk_chars)
        db = await self._open()
        entries = []
        for i, (start, end) in enumerate(spans):
            piece = content[start:end]
            meta = {**metadata, "chunk_index": i, "chunk_count": len(spans), "char_start": start}
            entries.append(self._build_entry(
                piece, category="document", tags=tags, metadata=meta, scope=owners.pop("scope", Scope.GLOBAL)
                if i == 0 else entries[0].scope, owners={k: owners.get(k) for k in OWNER_KEYS}, confidence=1.0,
                importance=0.5, event_time=None, context_type=ContextType.RESOURCE, entry_id=None,
                extra={"uri": uri, "mime_type": mime_type, "name": title}))
        first = entries[0]
        async with db.transaction() as conn:
            rows = await conn.ops.entries.resource_rows(conn, uri, first.user_id, first.agent_id, first.project_id,
                                                        first.session_id)
            stored = []
            for i, e in enumerate(entries):
                if i < len(rows):
                    old = row_to_entry(rows[i])
                    e = e.model_copy(update={"id": old.id, "created_at": old.created_at,
                                             "access_count": old.access_count,
                                             "last_accessed_at": old.last_accessed_at})
                    await update_entry_row(conn, rows[i][0], old, e, engine=db.vector_engine)
                else:
                    await insert_entry(conn, e, fact_key=None)
                stored.append(e)
            for row in rows[len(entries):]:
                await delete_entry_row(conn, row[0], row_to_entry(row), engine=db.vector_engine,
                                       now=to_db_time(first.updated_at))
        self._notify()
        return stored

    @bridged
    async def add_skill(self, name: str, description: str, content: str = "", *, tags: list[str] | None = None,
                        input_schema: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None,
                        **owners: Any) -> Entry:
        """Store a skill (what an agent can do): name, description, instructions and an optional input schema.

        A skill's name is its identity among the same owners (as for :meth:`import_skill_dir`): adding a name
        the owners already have replaces that skill in one transaction (same id and ``created_at``, new text,
        an ``UPDATE`` history event; an imported skill's files are dropped with its old version).

        Returns:
            The skill entry (``context_type="skill"``, ``category="procedure"``).

        Raises:
            ValidationError: empty name or description, bad tags, metadata or owners.
        """
        from ..skills import store_skill

        check_text(name, "name")
        check_text(description, "description")
        meta = {**check_metadata(metadata), **({"input_schema": input_schema} if input_schema else {})}
        built = self._build_entry(content or description, category="procedure", tags=tags, metadata=meta,
                                  scope=owners.pop("scope", Scope.GLOBAL),
                                  owners={k: owners.get(k) for k in OWNER_KEYS}, confidence=1.0, importance=0.5,
                                  event_time=None, context_type=ContextType.SKILL, entry_id=None,
                                  extra={"name": " ".join(name.split()), "description": description})
        return await store_skill(self, built, [])
