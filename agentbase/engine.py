"""AgentBase: the async core and composition root.

Every public coroutine runs on the engine loop (see :mod:`agentbase._loop`), so it can be awaited from any event
loop; :class:`~agentbase.sync.SyncAgentBase` gives each one a blocking twin.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from . import observability as _obs
from . import sessions as _sessions
from ._loop import bridged
from .config import Settings, load_settings
from .embeddings import create_embedder
from .errors import DimensionMismatchError, NotFoundError, UsageError, ValidationError
from .index.vector import VEC_TABLE, create_vec_table, upsert_vector
from .ingest.dedup import content_hash
from .ingest.tiers import l0_abstract, l1_overview
from .ingest.worker import EmbeddingWorker
from .models import ContextType, Entry, HistoryEvent, Message, Scope, SearchResult, Session, Trace, utcnow
from .ner import create_extractor, entity_tags
from .observability import load_trace
from .retrieval.filters import Filters
from .retrieval.pipeline import FindParams, run_find
from .storage import Database, open_database
from .storage.entries import (ENTRY_COLUMNS, delete_entry_row, enqueue_job, insert_entry, row_to_entry,
                              row_to_history, update_entry_row)
from .timeutil import parse_time, to_db_time
from .validation import check_id, check_limit, check_tags, check_text

__all__ = ["AgentBase"]

_OWNER_KEYS = ("user_id", "agent_id", "project_id", "session_id")


class AgentBase:
    """A context database in one SQLite file.

    Args:
        path: the database file (created if missing); ``":memory:"`` is not supported (use a temp file).
        settings: a :class:`~agentbase.config.Settings`; default: :func:`~agentbase.config.load_settings`.
        embedder: an embedder object (``model_id``, ``dims``, ``embed_documents``, ``embed_query``) or a provider
            name (``"local"``, ``"onnx"``, ``"openai"``, ``"hash"``, ``"none"``) overriding the settings.
        config_file: optional YAML settings file.

    Example:
        >>> async with AgentBase(path="./my_agent.db") as db:          # doctest: +SKIP
        ...     await db.add_memory("User prefers Python 3.12", category="preference", user_id="alice")
        ...     results = await db.find("Python preferences", top_k=5, user_id="alice")
    """

    def __init__(self, path: str | Path = "agentbase.db", *, settings: Settings | None = None,
                 embedder: Any = None, config_file: str | Path | None = None):
        self.path = Path(path)
        if isinstance(embedder, str):
            settings = (settings or load_settings(config_file)).model_copy(deep=True)
            settings.embedder.provider = embedder  # type: ignore[assignment]
            embedder = None
        self.settings = settings or load_settings(config_file)
        self._embedder_arg = embedder
        self.embedder: Any = None
        self.extractor: Any = None
        self.query_extractor: Any = None
        self.db: Database | None = None
        self.worker: EmbeddingWorker | None = None
        self.vector_error: DimensionMismatchError | None = None
        self._init_lock: asyncio.Lock | None = None
        self._closed = False
        self._sync: Any = None
        self._tasks: set[asyncio.Task] = set()

    def _background(self, coro: Any) -> None:
        """Run a write (e.g. a trace) after the current call returns; ``close`` and readers can await it."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _drain_background(self) -> None:
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # ------------------------------------------------------------------ lifecycle
    @bridged
    async def initialize(self) -> AgentBase:
        """Open the file, apply migrations, choose the embedder and NER extractor, start the job worker.

        Idempotent; every other method calls it on first use.

        Returns:
            ``self``.

        Raises:
            SchemaVersionError: the file was written by a newer AgentBase.
            StorageError: the file cannot be opened.
            ConfigError / MissingDependencyError: the configured embedder cannot be built.
        """
        return await self._ensure()

    async def _ensure(self) -> AgentBase:
        if self._closed:
            raise UsageError("this AgentBase is closed; create a new one")
        if self.db is not None:
            return self
        if self._init_lock is None:
            self._init_lock = asyncio.Lock()
        async with self._init_lock:
            if self.db is not None:
                return self
            self.embedder = self._embedder_arg or create_embedder(self.settings.embedder)
            self.extractor = create_extractor(self.settings.ner)
            qner = self.settings.retrieval.query_ner
            self.query_extractor = self.extractor if qner == self.extractor.name else create_extractor(qner)
            db = await open_database(self.path, busy_timeout_s=self.settings.storage.busy_timeout_s,
                                     vector_engine=self.settings.storage.vector_engine,
                                     synchronous=self.settings.storage.synchronous)
            self.db = db
            if self.embedder is not None:
                await self._check_dims()
                self.worker = EmbeddingWorker(db, self.embedder, batch_size=self.settings.embedder.batch_size,
                                              max_chars=self.settings.embedder.max_chars)
                self.worker.enabled = self.vector_error is None
                self.worker.start()
        return self

    async def _check_dims(self) -> None:
        """Record the embedder's dimension on first use and create the vector table; flag a mismatch."""
        assert self.db is not None
        rows = dict(await self.db.fetchall("SELECT key, value FROM meta WHERE key IN ('vector_dims','vector_model')"))
        stored = int(rows["vector_dims"]) if "vector_dims" in rows else None
        dims = int(self.embedder.dims)
        self.vector_error = None
        if stored is not None and stored != dims:
            self.vector_error = DimensionMismatchError(stored, dims, rows.get("vector_model", ""),
                                                       self.embedder.model_id)
            return
        async with self.db.transaction() as conn:
            await conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('vector_dims', ?), ('vector_model', ?)",
                               (str(dims), self.embedder.model_id))
            if self.db.vector_engine == "sqlite-vec":
                await create_vec_table(conn, dims)

    async def _open(self) -> Database:
        await self._ensure()
        assert self.db is not None
        return self.db

    @bridged
    async def close(self) -> None:
        """Stop the worker and close the file (idempotent). Pending embedding jobs stay queued in the file."""
        self._closed = True
        await self._drain_background()
        if self.worker is not None:
            await self.worker.stop()
            self.worker = None
        if self.db is not None:
            await self.db.close()
            self.db = None

    async def __aenter__(self) -> AgentBase:
        await self.initialize()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    @property
    def sync(self) -> Any:
        """A :class:`~agentbase.sync.SyncAgentBase` view of this database (blocking twins of every method)."""
        if self._sync is None:
            from .sync import SyncAgentBase

            self._sync = SyncAgentBase(db=self)
        return self._sync

    # ------------------------------------------------------------------ entries
    def _embed_enabled(self) -> bool:
        return self.embedder is not None and self.vector_error is None

    def _notify(self) -> None:
        if self.worker is not None:
            self.worker.notify()

    def _tags_for(self, text: str, tags: list[str]) -> list[str]:
        ner = entity_tags(self.extractor.extract(text)) if self.extractor is not None else []
        return list(dict.fromkeys([*tags, *ner]))

    async def _find_duplicate(self, text_hash: str, context_type: str, owners: dict[str, Any]) -> Entry | None:
        db = await self._open()
        sql = f"SELECT {ENTRY_COLUMNS} FROM entries WHERE content_hash = ? AND context_type = ? AND status='active'"
        params: list[Any] = [text_hash, context_type]
        for key in _OWNER_KEYS:
            sql += f" AND {key} IS ?"
            params.append(owners.get(key))
        row = await db.fetchone(sql + " LIMIT 1", params)
        return row_to_entry(row) if row else None

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
            category: free label such as ``profile``, ``preference``, ``fact``, ``event``, ``procedure``.
            tags: labels; entries can be filtered by them.
            metadata: a JSON object stored with the entry.
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
            ValidationError: empty content, lone surrogates, bad tags or ids, or values out of range.
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
        if not isinstance(category, str) or not category.strip():
            raise ValidationError("category must be a non-empty string")
        if metadata is not None and not isinstance(metadata, dict):
            raise ValidationError("metadata must be a dict")
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
            id=check_id(entry_id, "entry_id") if entry_id else str(uuid.uuid4()), context_type=ctype,
            category=category, l0_abstract=l0_abstract(content), l1_overview=l1_overview(content), l2_full=content,
            tags=self._tags_for(content, check_tags(tags)) if extract_entities else check_tags(tags),
            metadata=dict(metadata or {}), scope=scope_v,
            confidence=float(confidence), importance=float(importance), created_at=now, updated_at=now,
            event_time=parse_time(event_time), content_hash=content_hash(content),
            **{k: v for k, v in owners.items()}, **extra,
        )

    async def _add(self, content: str, *, dedup: bool, **kw: Any) -> Entry:
        entry = self._build_entry(content, **kw)
        db = await self._open()
        if dedup:
            existing = await self._find_duplicate(entry.content_hash, entry.context_type.value,
                                                  {k: getattr(entry, k) for k in _OWNER_KEYS})
            if existing is not None:
                return await self._harden(existing)
        async with db.transaction() as conn:
            await insert_entry(conn, entry, fact_key=None, embed=self._embed_enabled())
        self._notify()
        return entry

    async def _harden(self, entry: Entry) -> Entry:
        """A repeated fact raises confidence by ``ingest.confidence_step`` (capped at 1.0)."""
        db = await self._open()
        step = self.settings.ingest.confidence_step
        new_conf = min(1.0, entry.confidence + step)
        async with db.transaction() as conn:
            await conn.execute("UPDATE entries SET confidence = ?, updated_at = ? WHERE id = ?",
                               (new_conf, to_db_time(utcnow()), entry.id))
        return entry.model_copy(update={"confidence": new_conf})

    async def _row(self, entry_id: str, owners: dict[str, Any] | None = None) -> tuple[int, Entry] | None:
        db = await self._open()
        check_id(entry_id, "entry_id")
        sql = f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id = ?"
        params: list[Any] = [entry_id]
        for key, value in (owners or {}).items():
            if value is not None:
                sql += f" AND {key} = ?"
                params.append(check_id(value, key))
        row = await db.fetchone(sql, params)
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
    async def update(self, entry_id: str, content: str | None = None, *, tags: list[str] | None = None,
                     metadata: dict[str, Any] | None = None, category: str | None = None,
                     confidence: float | None = None, importance: float | None = None,
                     event_time: datetime | str | None = None, status: str | None = None,
                     user_id: str | None = None, agent_id: str | None = None) -> Entry:
        """Change an entry; a new text replaces FTS rows and the vector in the same transaction.

        Args:
            entry_id: the entry. content: new full text (L0/L1 and entity tags are recomputed).
            tags, metadata, category, confidence, importance, event_time: replace the stored values when given.
            status: ``active`` or ``archived``.
            user_id, agent_id: when given, the entry must belong to them (else NotFoundError).

        Returns:
            The updated entry.

        Raises:
            NotFoundError: no such entry for these owners.
            ValidationError: bad values (nothing is written).
        """
        found = await self._row(entry_id, {"user_id": user_id, "agent_id": agent_id})
        if found is None:
            raise NotFoundError(f"entry {entry_id!r} not found")
        rid, old = found
        changes: dict[str, Any] = {"updated_at": utcnow()}
        user_tags = check_tags(tags) if tags is not None else [t for t in old.tags if not t.startswith("ner_")]
        if content is not None:
            check_text(content)
            changes.update(l2_full=content, l0_abstract=l0_abstract(content), l1_overview=l1_overview(content),
                           content_hash=content_hash(content), tags=self._tags_for(content, user_tags))
        elif tags is not None:
            changes["tags"] = list(dict.fromkeys([*user_tags, *(t for t in old.tags if t.startswith("ner_"))]))
        if metadata is not None:
            if not isinstance(metadata, dict):
                raise ValidationError("metadata must be a dict")
            changes["metadata"] = dict(metadata)
        if category is not None:
            changes["category"] = check_text(category, "category")
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
        new = old.model_copy(update=changes)
        db = await self._open()
        async with db.transaction() as conn:
            await update_entry_row(conn, rid, old, new, engine=db.vector_engine, embed=self._embed_enabled())
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
        found = await self._row(entry_id, {"user_id": user_id, "agent_id": agent_id})
        if found is None:
            return False
        db = await self._open()
        async with db.transaction() as conn:
            await delete_entry_row(conn, found[0], found[1], engine=db.vector_engine, now=to_db_time(utcnow()))
        return True

    @bridged
    async def delete_all(self, **filters: Any) -> int:
        """Delete every entry matching ``filters`` (the keyword arguments of :class:`Filters`).

        At least one owner id or ``context_type`` is required so that a typo cannot wipe the database.

        Returns:
            Number of entries deleted.

        Raises:
            ValidationError: no narrowing filter was given.
        """
        f = Filters(**filters, include_archived=True, exclude_superseded=False)
        if not any(getattr(f, k) for k in (*_OWNER_KEYS, "context_type", "category", "tags")):
            raise ValidationError("delete_all needs at least one of user_id, agent_id, project_id, session_id, "
                                  "context_type, category or tags")
        db = await self._open()
        where, params = f.where()
        rows = await db.fetchall(f"SELECT {ENTRY_COLUMNS} FROM entries e WHERE {where}", params)
        now = to_db_time(utcnow())
        async with db.transaction() as conn:
            for row in rows:
                await delete_entry_row(conn, row[0], row_to_entry(row), engine=db.vector_engine, now=now)
        return len(rows)

    @bridged
    async def list(self, *, limit: int = 100, offset: int = 0, order: str = "desc", **filters: Any) -> list[Entry]:
        """List entries matching ``filters`` (keyword arguments of :class:`Filters`), newest first by default.

        Args:
            limit: 1..10000. offset: rows to skip. order: ``"desc"`` or ``"asc"`` by creation time.

        Returns:
            Entries.

        Raises:
            ValidationError: bad limit, order or filter.
        """
        check_limit(limit, "limit")
        if order not in ("asc", "desc"):
            raise ValidationError("order must be 'asc' or 'desc'")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValidationError("offset must be a non-negative integer")
        db = await self._open()
        where, params = _filters(filters).where()
        rows = await db.fetchall(
            f"SELECT {ENTRY_COLUMNS} FROM entries e WHERE {where} ORDER BY e.created_at {order}, e.rid {order} "
            f"LIMIT ? OFFSET ?", [*params, limit, offset])
        return [row_to_entry(r) for r in rows]

    @bridged
    async def count(self, **filters: Any) -> int:
        """Number of entries matching ``filters`` (keyword arguments of :class:`Filters`)."""
        db = await self._open()
        where, params = _filters(filters).where()
        row = await db.fetchone(f"SELECT COUNT(*) FROM entries e WHERE {where}", params)
        return int(row[0])

    @bridged
    async def history(self, entry_id: str) -> list[HistoryEvent]:
        """ADD / UPDATE / DELETE events of an entry, oldest first (kept after the entry is deleted).

        Raises:
            ValidationError: a malformed id.
        """
        db = await self._open()
        rows = await db.fetchall(
            "SELECT id, entry_id, event, old_value, new_value, metadata, created_at FROM entry_history "
            "WHERE entry_id = ? ORDER BY seq", (check_id(entry_id, "entry_id"),))
        return [row_to_history(r) for r in rows]

    @bridged
    async def add_resource(self, uri: str, content: str, *, mime_type: str = "text/plain",
                           title: str | None = None, tags: list[str] | None = None,
                           metadata: dict[str, Any] | None = None, chunk_chars: int = 1500,
                           **owners: Any) -> list[Entry]:
        """Store a document, URL or API description as resource chunks that point back to it.

        Each chunk is an entry with ``context_type="resource"``, the ``uri``, and ``metadata["chunk_index"]`` /
        ``["chunk_count"]`` / ``["char_start"]``. All chunks commit in one transaction.

        Args:
            uri: where the resource lives. content: its text. mime_type: e.g. ``text/markdown``.
            title: stored as the entries' ``name``. chunk_chars: target chunk size in characters.
            **owners: ``user_id``, ``agent_id``, ``project_id``, ``session_id``, ``scope``.

        Returns:
            The chunk entries in order.

        Raises:
            ValidationError: empty uri or content, bad owners.
        """
        from .embeddings.base import chunk_text

        check_text(uri, "uri")
        check_text(content)
        pieces = chunk_text(content, max(200, int(chunk_chars)))
        db = await self._open()
        entries, pos = [], 0
        for i, piece in enumerate(pieces):
            start = content.find(piece[:50], pos)
            pos = max(pos, start)
            meta = {**(metadata or {}), "chunk_index": i, "chunk_count": len(pieces), "char_start": max(start, 0)}
            entries.append(self._build_entry(
                piece, category="document", tags=tags, metadata=meta, scope=owners.pop("scope", Scope.GLOBAL)
                if i == 0 else entries[0].scope, owners={k: owners.get(k) for k in _OWNER_KEYS}, confidence=1.0,
                importance=0.5, event_time=None, context_type=ContextType.RESOURCE, entry_id=None,
                extra={"uri": uri, "mime_type": mime_type, "name": title}))
        async with db.transaction() as conn:
            for e in entries:
                await insert_entry(conn, e, fact_key=None, embed=self._embed_enabled())
        self._notify()
        return entries

    @bridged
    async def add_skill(self, name: str, description: str, content: str = "", *, tags: list[str] | None = None,
                        input_schema: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None,
                        **owners: Any) -> Entry:
        """Store a skill (what an agent can do): name, description, instructions and an optional input schema.

        Returns:
            The skill entry (``context_type="skill"``, ``category="procedure"``).

        Raises:
            ValidationError: empty name or description.
        """
        check_text(name, "name")
        check_text(description, "description")
        meta = {**(metadata or {}), **({"input_schema": input_schema} if input_schema else {})}
        return await self._add(content or description, category="procedure", tags=tags, metadata=meta,
                               scope=owners.pop("scope", Scope.GLOBAL),
                               owners={k: owners.get(k) for k in _OWNER_KEYS}, confidence=1.0, importance=0.5,
                               event_time=None, context_type=ContextType.SKILL, dedup=False, entry_id=None,
                               extra={"name": name, "description": description})

    # ------------------------------------------------------------------ retrieval
    @bridged
    async def find(self, query: str, *, top_k: int = 10, mode: str = "hybrid", strategy: str = "auto",
                   token_budget: int | None = None, reference_time: datetime | str | None = None,
                   trace: bool | None = None, **filters: Any) -> list[SearchResult]:
        """Hybrid retrieval: FTS5 BM25 + vector KNN + entity tags, fused by weighted RRF (ARCHITECTURE.md §6).

        Args:
            query: user text; any string is safe (operators are searched as words). Empty -> ``[]``
                without an embedding call.
            top_k: results to return (1..1000).
            mode: ``"hybrid"``, ``"fts"`` or ``"vector"``.
            strategy: ``"auto"`` (query-type strategies), ``"flat"`` (no strategy) or ``"hierarchical"``
                (rank on L0, then L1, then load L2 for the final results).
            token_budget: stop adding results once their text would exceed this many tokens (len/4 rule).
            reference_time: "now" for temporal expressions and freshness (UTC); default the current time.
            trace: persist a retrieval trace (default from settings).
            **filters: keyword arguments of :class:`~agentbase.retrieval.filters.Filters` (context_type,
                category, tags, scope, user_id, agent_id, project_id, session_id, metadata, date_from, date_to).

        Returns:
            Up to ``top_k`` :class:`SearchResult`, best first.

        Raises:
            ValidationError: bad top_k, mode, strategy or filters.
            DimensionMismatchError: ``mode="vector"`` while the stored vectors have another dimension.
        """
        if mode not in ("hybrid", "fts", "vector"):
            raise ValidationError("mode must be 'hybrid', 'fts' or 'vector'")
        if strategy not in ("auto", "flat", "hierarchical"):
            raise ValidationError("strategy must be 'auto', 'flat' or 'hierarchical'")
        check_limit(top_k, "top_k", maximum=1000)
        if token_budget is not None:
            check_limit(token_budget, "token_budget", maximum=10_000_000)
        if mode == "vector" and self.vector_error is not None:
            raise self.vector_error
        f = _filters(filters)
        f.where()  # validate before any work
        await self._ensure()
        params = FindParams(query=query, top_k=top_k, mode=mode, strategy=strategy, token_budget=token_budget,
                            reference_time=parse_time(reference_time) or utcnow(), filters=f,
                            trace=self.settings.retrieval.trace if trace is None else trace)
        return await run_find(self, params)

    @bridged
    async def get_trace(self, trace_id: str) -> Trace:
        """Load a persisted retrieval trace with its steps.

        Raises:
            NotFoundError: unknown id.
        """
        db = await self._open()
        await self._drain_background()
        return await load_trace(db, check_id(trace_id, "trace_id"))

    # ------------------------------------------------------------------ sessions
    @bridged
    async def create_session(self, *, session_id: str | None = None, user_id: str | None = None,
                             agent_id: str | None = None, project_id: str | None = None,
                             metadata: dict[str, Any] | None = None,
                             created_at: datetime | str | None = None) -> Session:
        """Create a conversation session (or return the existing one with the same ``session_id``).

        Raises:
            ValidationError: bad ids or metadata.
        """
        return await _sessions.create_session(self, session_id=session_id, user_id=user_id, agent_id=agent_id,
                                              project_id=project_id, metadata=metadata, created_at=created_at)

    @bridged
    async def get_session(self, session_id: str) -> Session | None:
        """Return the session or None."""
        return await _sessions.get_session(self, session_id)

    @bridged
    async def list_sessions(self, *, user_id: str | None = None, agent_id: str | None = None,
                            limit: int = 100, offset: int = 0) -> list[Session]:
        """Sessions, newest first, optionally for one owner."""
        return await _sessions.list_sessions(self, user_id=user_id, agent_id=agent_id, limit=limit, offset=offset)

    @bridged
    async def update_session(self, session_id: str, *, metadata: dict[str, Any]) -> Session:
        """Replace a session's metadata. Raises NotFoundError for an unknown id."""
        return await _sessions.update_session(self, session_id, metadata=metadata)

    @bridged
    async def delete_session(self, session_id: str, *, delete_memories: bool = False) -> bool:
        """Delete a session and its messages; with ``delete_memories`` also the entries committed from it.

        Returns:
            True if the session existed.
        """
        return await _sessions.delete_session(self, session_id, delete_memories=delete_memories)

    @bridged
    async def add_message(self, session_id: str, role: str, content: str, *, name: str | None = None,
                          tool_calls: list[dict[str, Any]] | None = None, tool_call_id: str | None = None,
                          metadata: dict[str, Any] | None = None, created_at: datetime | str | None = None,
                          message_id: str | None = None) -> Message:
        """Append one message; its ``seq`` is the next integer in the session (strict insertion order).

        Raises:
            NotFoundError: unknown session. ValidationError: bad role, content or fields.
        """
        msgs = await _sessions.add_messages(self, session_id, [dict(
            role=role, content=content, name=name, tool_calls=tool_calls, tool_call_id=tool_call_id,
            metadata=metadata, created_at=created_at, id=message_id)])
        return msgs[0]

    @bridged
    async def add_messages(self, session_id: str, messages: list[dict[str, Any]]) -> list[Message]:
        """Append several messages in one transaction (all or nothing); an empty list does nothing.

        Args:
            messages: dicts with ``role``, ``content`` and optional ``name``, ``tool_calls``, ``tool_call_id``,
                ``metadata``, ``created_at``, ``id``.

        Raises:
            NotFoundError: unknown session. ValidationError: any bad message (none is written).
        """
        return await _sessions.add_messages(self, session_id, messages)

    @bridged
    async def get_messages(self, session_id: str, *, limit: int | None = None, order: str = "asc",
                           after_seq: int | None = None, before_seq: int | None = None) -> list[Message]:
        """Messages of a session in ``seq`` order (``asc`` or ``desc``); unknown session gives ``[]``."""
        return await _sessions.get_messages(self, session_id, limit=limit, order=order, after_seq=after_seq,
                                            before_seq=before_seq)

    @bridged
    async def get_message(self, session_id: str, message_id: str) -> Message | None:
        """One message by id, or None."""
        return await _sessions.get_message(self, session_id, message_id)

    @bridged
    async def update_message(self, session_id: str, message_id: str, *, metadata: dict[str, Any]) -> Message:
        """Replace a message's metadata. Raises NotFoundError for an unknown message."""
        return await _sessions.update_message(self, session_id, message_id, metadata=metadata)

    @bridged
    async def delete_message(self, session_id: str, message_id: str) -> Message | None:
        """Delete one message; returns it, or None if it did not exist. Other messages keep their order."""
        return await _sessions.delete_message(self, session_id, message_id)

    @bridged
    async def replace_messages(self, session_id: str, messages: list[dict[str, Any]]) -> list[Message]:
        """Replace all messages of a session (created if missing) in one transaction."""
        return await _sessions.replace_messages(self, session_id, messages)

    @bridged
    async def clear_messages(self, session_id: str) -> int:
        """Delete every message of a session; returns how many were deleted."""
        return await _sessions.clear_messages(self, session_id)

    @bridged
    async def commit_session(self, session_id: str) -> dict[str, Any]:
        """Turn the session's new messages into entries with zero LLM calls.

        Writes, in one transaction: one entry per user/assistant turn, extracted facts (deduplicated and
        hardened against the owner's existing facts; a changed value supersedes the old entry), a rule-based
        session summary, entity tags, and ``session_memory_links``. Idempotent: messages already committed are
        skipped, so a second commit with no new messages writes nothing.

        Returns:
            ``{"session_id", "messages", "turns", "facts_added", "facts_hardened", "facts_superseded",
            "summary_id"}``.

        Raises:
            NotFoundError: unknown session.
        """
        result = await _sessions.commit_session(self, session_id)
        self._notify()
        return result

    # ------------------------------------------------------------------ maintenance
    @bridged
    async def flush(self, timeout: float | None = None) -> int:
        """Wait until every queued embedding job is done or failed.

        Args:
            timeout: seconds; None waits as long as jobs make progress.

        Returns:
            Number of jobs still pending (0 unless the timeout expired or vectors are disabled).
        """
        await self._ensure()
        if self.worker is None or not self.worker.enabled:
            return 0
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            done = await self.worker.run_once()
            pending = await self.worker.pending()
            if pending == 0 or (deadline is not None and loop.time() > deadline):
                return pending
            if done == 0:
                await asyncio.sleep(0.05)

    @bridged
    async def stats(self) -> dict[str, Any]:
        """Counts and engine facts.

        Returns:
            ``{"path", "schema_version", "driver", "vector_engine", "degrade_reason", "embedder", "vector_dims",
            "ner", "entries" (by context_type), "sessions", "messages", "embeddings", "jobs" (by status),
            "traces", "size_bytes"}``.
        """
        db = await self._open()
        await self._drain_background()

        async def scalar(sql: str) -> Any:
            row = await db.fetchone(sql)
            return row[0] if row else None
        by_type = dict(await db.fetchall("SELECT context_type, COUNT(*) FROM entries GROUP BY context_type"))
        jobs = dict(await db.fetchall("SELECT status, COUNT(*) FROM jobs GROUP BY status"))
        return {
            "path": str(self.path), "schema_version": await scalar("SELECT MAX(version) FROM schema_version"),
            "driver": db.driver, "vector_engine": db.vector_engine if self.embedder is not None else None,
            "degrade_reason": self.degrade_reason(),
            "embedder": getattr(self.embedder, "model_id", None),
            "vector_dims": await scalar("SELECT value FROM meta WHERE key='vector_dims'"),
            "ner": getattr(self.extractor, "name", None), "entries": by_type,
            "entries_total": sum(by_type.values()),
            "sessions": await scalar("SELECT COUNT(*) FROM sessions"),
            "messages": await scalar("SELECT COUNT(*) FROM messages"),
            "embeddings": await scalar("SELECT COUNT(*) FROM embeddings"), "jobs": jobs,
            "traces": await scalar("SELECT COUNT(*) FROM retrieval_traces"),
            "size_bytes": self.path.stat().st_size if self.path.exists() else 0,
        }

    def degrade_reason(self) -> str | None:
        """Why vector search is reduced or off, or None when it runs at full strength."""
        if self.embedder is None:
            return "no embedder configured (install agentbase[local] or set embedder.provider); keyword search only"
        if self.vector_error is not None:
            return str(self.vector_error)
        return self.db.degrade_reason if self.db is not None else None

    @bridged
    async def reindex(self) -> dict[str, int]:
        """Rebuild every derived index from the entries: FTS5, and vectors with the configured embedder.

        Drops the vector table and stored vectors (so a new embedder of another dimension can take over),
        records the new model, and queues an embedding job per entry; ``flush()`` waits for them.

        Returns:
            ``{"entries": n, "jobs": n}``.
        """
        db = await self._open()
        from .index.fts import fts_document  # noqa: F401 - fts_text is recomputed through the entries repo
        from .storage.entries import _fts_source

        rows = await db.fetchall(f"SELECT {ENTRY_COLUMNS} FROM entries")
        now = to_db_time(utcnow())
        async with db.transaction() as conn:
            for row in rows:
                await conn.execute("UPDATE entries SET fts_text = ? WHERE rid = ?",
                                   (_fts_source(row_to_entry(row)), row[0]))
            await conn.execute("INSERT INTO entries_fts(entries_fts) VALUES ('rebuild')")
            jobs = 0
            if self.embedder is not None:
                await conn.execute("DELETE FROM embeddings")
                await conn.execute(f"DROP TABLE IF EXISTS {VEC_TABLE}")
                await conn.execute("DELETE FROM meta WHERE key IN ('vector_dims', 'vector_model')")
                await conn.execute("INSERT INTO meta(key, value) VALUES ('vector_dims', ?), ('vector_model', ?)",
                                   (str(self.embedder.dims), self.embedder.model_id))
                if db.vector_engine == "sqlite-vec":
                    await create_vec_table(conn, int(self.embedder.dims))
                for row in rows:
                    await enqueue_job(conn, "embed", row[1], now)
                    jobs += 1
        if self.embedder is not None:
            self.vector_error = None
            if self.worker is not None:
                self.worker.enabled = True
                self._notify()
        return {"entries": len(rows), "jobs": jobs}

    # ------------------------------------------------------------------ graph, lifecycle, scopes, archives
    # (issue 6: methods delegate to graph.py, lifecycle.py, archive.py; add new public methods in this section)

    # --- graph (agentbase/graph.py)
    @bridged
    async def add_entity(self, name: str, *, entity_type: str | None = None,
                         aliases: list[str] | None = None) -> Any:
        """Create a graph entity, or merge into the one already known by this name or an alias.

        Names match case- and alias-insensitively (``"ACME corp"`` finds ``"Acme Corp"``); aliases that name two
        existing entities merge them (relations are re-pointed).

        Args:
            name: the canonical name (1-200 characters). entity_type: e.g. ``PERSON``, ``ORG``, ``GPE``.
            aliases: other names of the same entity.

        Returns:
            The :class:`~agentbase.graph.GraphEntity` (``id``, ``name``, ``type``, ``aliases``, ``created_at``).

        Raises:
            ValidationError: an empty or over-long name, or aliases that are not a list of strings.
        """
        from . import graph
        return await graph.add_entity(self, name, entity_type, aliases)

    @bridged
    async def get_entity(self, name: str) -> Any:
        """Look up a graph entity by name or alias (case-insensitive); returns a ``GraphEntity`` or None.

        Raises:
            ValidationError: an empty name.
        """
        from . import graph
        return await graph.get_entity(self, name)

    @bridged
    async def add_relation(self, subject: str, predicate: str, obj: str, *,
                           valid_from: datetime | str | None = None, valid_to: datetime | str | None = None,
                           source_entry_id: str | None = None, confidence: float = 1.0,
                           functional: bool | None = None, subject_type: str | None = None,
                           object_type: str | None = None) -> Any:
        """Record an explicit fact ``subject -predicate-> object`` in the temporal graph.

        Entities are created or matched by name/alias. For a functional predicate (``works_at``, ``lives_in``,
        ``married_to``, ...; see :data:`agentbase.graph.FUNCTIONAL_PREDICATES`) an open relation of the subject
        with another object is closed at ``valid_from`` (never deleted). Repeating a fact that already holds
        returns the existing relation.

        Args:
            subject, obj: entity names. predicate: e.g. ``"works at"`` or ``"works_at"`` (normalised to
                ``[a-z0-9_]``, at most 64 characters).
            valid_from: when it became true (UTC; default now). valid_to: when it stopped (None = still true).
            source_entry_id: the entry this fact comes from (provenance). confidence: 0..1.
            functional: override whether the predicate allows one object at a time.
            subject_type, object_type: entity types for newly created entities.

        Returns:
            The :class:`~agentbase.graph.Relation` with names, ids and validity interval.

        Raises:
            ValidationError: bad names, predicate, confidence, times, or subject == object.
        """
        from . import graph
        return await graph.add_relation(self, subject, predicate, obj, valid_from=valid_from, valid_to=valid_to,
                                        source_entry_id=source_entry_id, confidence=confidence,
                                        functional=functional, subject_type=subject_type, object_type=object_type)

    @bridged
    async def facts(self, entity: str, *, as_of: datetime | str | None = None, predicate: str | None = None,
                    direction: str = "both") -> list[Any]:
        """What was true about ``entity`` at a point in time: relations with ``valid_from <= as_of < valid_to``.

        Args:
            entity: name or alias. as_of: the moment (UTC; default now). predicate: only this predicate.
            direction: ``"out"`` (entity is the subject), ``"in"`` (the object) or ``"both"``.

        Returns:
            :class:`~agentbase.graph.Relation` objects, newest ``valid_from`` first; ``[]`` for an unknown entity.

        Raises:
            ValidationError: bad direction, predicate or time.
        """
        from . import graph
        return await graph.facts(self, entity, as_of=as_of, predicate=predicate, direction=direction)

    @bridged
    async def timeline(self, entity: str) -> list[Any]:
        """Every relation of ``entity`` (open and closed), ordered by ``valid_from``; ``[]`` if unknown."""
        from . import graph
        return await graph.timeline(self, entity)

    @bridged
    async def neighbors(self, entity: str, *, depth: int = 1, as_of: datetime | str | None = None,
                        include_expired: bool = False, limit: int = 200) -> Any:
        """Entities within ``depth`` hops of ``entity`` (relations followed in both directions).

        Args:
            entity: name or alias. depth: hops, 1..5. as_of: follow relations valid at this time (default now).
            include_expired: follow closed relations too. limit: stop expanding after this many entities.

        Returns:
            A :class:`~agentbase.graph.Neighborhood` (``center``, ``entities``, ``depths``, ``relations``), or None
            for an unknown entity.

        Raises:
            ValidationError: depth out of range.
        """
        from . import graph
        return await graph.neighbors(self, entity, depth=depth, as_of=as_of, include_expired=include_expired,
                                     limit=limit)

    @bridged
    async def extract_relations(self, entry_ids: list[str] | None = None) -> int:
        """(Re)extract graph relations from stored memory entries, oldest event first (idempotent).

        ``commit_session`` extracts relations from each committed turn; use this for memories written with
        ``add_memory`` or before the graph existed. Each relation is valid from the entry's ``event_time`` (else
        its ``created_at``); "I"/"my" refer to ``metadata["speaker"]`` or the entry's ``user_id``.

        Args:
            entry_ids: only these entries (default: every memory entry).

        Returns:
            Number of relations created or ended.
        """
        from . import graph
        return await graph.extract_relations(self, entry_ids)

    # --- lifecycle (agentbase/lifecycle.py)
    @bridged
    async def recall(self, entry_ids: list[str], *, now: datetime | str | None = None) -> int:
        """Count a recall of these entries: ``access_count`` + 1 and ``last_accessed_at`` = ``now``.

        Each recall multiplies the memory's decay time constant by 1.5 (see :mod:`agentbase.lifecycle`).

        Returns:
            Number of entries updated (unknown ids are ignored).

        Raises:
            ValidationError: ``entry_ids`` is not a list of ids.
        """
        from . import lifecycle
        return await lifecycle.recall(self, entry_ids, now)

    @bridged
    async def strengths(self, entry_ids: list[str], *, now: datetime | str | None = None,
                        tau0_days: float = 30.0) -> dict[str, float]:
        """Current strength ``exp(-age / (tau0 * 1.5 ** access_count))`` of each entry, in ``(0, 1]``.

        Args:
            entry_ids: the entries. now: reference time (UTC; default now).
            tau0_days: time constant of a never-recalled memory, in days.

        Returns:
            ``{entry_id: strength}`` (unknown ids are absent).
        """
        from . import lifecycle
        return await lifecycle.strengths(self, entry_ids, now=now, tau0_days=tau0_days)

    @bridged
    async def decay_pass(self, threshold: float = 0.05, *, purge: bool = False, now: datetime | str | None = None,
                         tau0_days: float = 30.0, context_type: str | list[str] | None = "memory") -> dict[str, Any]:
        """Archive (or with ``purge`` delete) entries whose strength fell below ``threshold``.

        Archived entries keep their row, indexes and history but are hidden from ``find``/``list`` unless
        ``include_archived=True``; each archive records an ``UPDATE`` history event. Superseded entries are skipped.

        Args:
            threshold: 0..1 (0.05 = about 3 time constants without recall). purge: delete instead of archive
                (archived entries below the threshold are deleted too). now: reference time (UTC; default now).
            tau0_days: time constant of a never-recalled memory, in days. context_type: which entries decay
                (default memories only; None for all).

        Returns:
            ``{"scanned", "archived": [ids], "deleted": [ids], "threshold", "tau0_days", "now"}``.

        Raises:
            ValidationError: threshold outside 0..1 or a non-positive tau0_days.
        """
        from . import lifecycle
        return await lifecycle.decay_pass(self, threshold=threshold, purge=purge, now=now, tau0_days=tau0_days,
                                          context_type=context_type)

    @bridged
    async def archive_entries(self, entry_ids: list[str], *, reason: str | None = None) -> list[str]:
        """Set ``status='archived'`` (hidden from find/list by default), recording an ``UPDATE`` history event.

        Returns:
            The ids whose status changed.
        """
        from . import lifecycle
        return await lifecycle.set_status(self, entry_ids, "archived", reason)

    @bridged
    async def unarchive_entries(self, entry_ids: list[str], *, reason: str | None = None) -> list[str]:
        """Make archived entries active again (``UPDATE`` history event; the decay clock restarts).

        Returns:
            The ids whose status changed.
        """
        from . import lifecycle
        return await lifecycle.set_status(self, entry_ids, "active", reason)

    @bridged
    async def backup(self, dest_dir: str | Path, *, keep: int | None = None) -> dict[str, Any]:
        """Copy the database with SQLite's online backup API to ``dest_dir/<stem>-<UTC timestamp>Z.db``.

        Safe while other connections read and write; the copy passes ``PRAGMA quick_check`` before it is renamed
        into place.

        Args:
            dest_dir: folder (created if missing). keep: keep only the newest ``keep`` backups of this database
                in that folder (None keeps all).

        Returns:
            ``{"path", "size_bytes", "created_at", "removed": [paths], "kept": [paths]}``.

        Raises:
            ValidationError: bad keep. StorageError: the copy failed.
        """
        from . import lifecycle
        return await lifecycle.backup(self, dest_dir, keep=keep)

    # --- scopes and heartbeats (agentbase/scopes.py)
    @bridged
    async def heartbeat(self, session_id: str, agent_id: str | None = None, task: str | None = None, *,
                        project_id: str | None = None, metadata: dict[str, Any] | None = None,
                        now: datetime | str | None = None) -> Any:
        """Register that an agent is working in a session (call every few seconds while it works).

        Args:
            session_id: the session. agent_id: the agent (default the session's). task: what it is doing now
                (None keeps the previous task). project_id: default the session's. metadata: replaces the stored
                one when given. now: heartbeat time (UTC; default now).

        Returns:
            The :class:`~agentbase.scopes.ActiveSession` row.

        Raises:
            ValidationError: malformed ids, task over 2000 characters, non-JSON metadata.
        """
        from . import scopes
        return await scopes.heartbeat(self, session_id, agent_id, task, project_id=project_id, metadata=metadata,
                                      now=now)

    @bridged
    async def active_sessions(self, project_id: str | None = None, *, stale_after_s: float = 300.0,
                              exclude_session_id: str | None = None,
                              now: datetime | str | None = None) -> list[Any]:
        """Sessions whose last heartbeat is younger than ``stale_after_s`` seconds, most recent first.

        Args:
            project_id: only this project's sessions (the siblings of an agent). stale_after_s: seconds.
            exclude_session_id: leave out the caller's own session. now: reference time (UTC; default now).

        Returns:
            :class:`~agentbase.scopes.ActiveSession` objects (``session_id``, ``agent_id``, ``task``, ``age_s``...).
        """
        from . import scopes
        return await scopes.active_sessions(self, project_id=project_id, stale_after_s=stale_after_s,
                                            exclude_session_id=exclude_session_id, now=now)

    @bridged
    async def end_heartbeat(self, session_id: str) -> bool:
        """Remove a session from the active list at once (instead of waiting for it to go stale)."""
        from . import scopes
        return await scopes.end_heartbeat(self, session_id)

    # --- skills (agentbase/skills.py)
    @bridged
    async def find_skills(self, query: str, *, top_k: int = 5, **filters: Any) -> list[SearchResult]:
        """Find skills for an intent-style query ("how do I deploy?").

        Fuses ``find(query, context_type="skill")`` with a match of the query's words (and their stems, e.g.
        "deploy" ~ "deployment") against skill names (weight 2) and descriptions (weight 1), by RRF (k = 60).

        Args:
            query: the request. top_k: 1..1000. **filters: as for :meth:`find` (owners, tags, ``extra``...).

        Returns:
            :class:`SearchResult` objects for skill entries; ``score_parts`` has ``find_rank``, ``name_rank``,
            ``name_match`` and ``skill_rrf``.

        Raises:
            ValidationError: bad top_k or filters.
        """
        from . import skills
        return await skills.find_skills(self, query, top_k=top_k, filters=filters)

    @bridged
    async def import_skill_dir(self, path: str | Path, *, max_files: int = 500, max_bytes: int = 5 * 1024 * 1024,
                               tags: list[str] | None = None, **owners: Any) -> Entry:
        """Import a skill folder with ``SKILL.md`` (YAML front matter ``name``, ``description``) at its root.

        The skill entry and every file of the folder (relative path + text, in ``skill_files``) are written in one
        transaction; a skill with the same name and owners is replaced in place (same id, ``UPDATE`` history).

        Args:
            path: the folder. max_files: most files accepted. max_bytes: most bytes accepted (all files).
            tags: tags for the entry. **owners: ``user_id``, ``agent_id``, ``project_id``, ``session_id``, ``scope``.

        Returns:
            The skill :class:`Entry` (content = the SKILL.md body; ``metadata["front_matter"]`` = other keys).

        Raises:
            ValidationError: refused as a whole, database unchanged: symlinks, unsafe names, non-regular files,
                non-UTF-8 text, no SKILL.md or bad front matter, more than ``max_files`` files or ``max_bytes``.
        """
        from . import skills
        return await skills.import_skill_dir(self, path, max_files=max_files, max_bytes=max_bytes, tags=tags,
                                             owners=owners)

    @bridged
    async def get_skill_files(self, skill_id: str) -> dict[str, str]:
        """The files imported with a skill folder: ``{relative_path: text}`` (``{}`` for other skills)."""
        from . import skills
        return await skills.get_skill_files(self, skill_id)

    # --- archives (agentbase/archive.py)
    @bridged
    async def export_archive(self, path: str | Path) -> dict[str, Any]:
        """Write everything (entries with history, sessions with messages and links, graph, skill files) to a tar.

        Read from one consistent snapshot; written to ``path + ".partial"`` and renamed. A name ending in
        ``.tar.gz``/``.tgz`` is gzip-compressed. Vectors are not included (imports re-embed).

        Returns:
            ``{"path", "size_bytes", "counts": {member: rows}, "format_version"}``.

        Raises:
            StorageError: the file cannot be read or the archive cannot be written.
        """
        from . import archive
        return await archive.export_archive(self, path)

    @bridged
    async def import_archive(self, path: str | Path, *, max_bytes: int = 1 << 30,
                             flush: bool = True) -> dict[str, Any]:
        """Merge an archive written by :meth:`export_archive` into this database, in one transaction.

        Missing entries are created with their history; present ones with other content are revised (``UPDATE``
        history); sessions whose id exists are skipped; entities merge by name; nothing is deleted. Imported
        entries queue embedding jobs; with ``flush`` the call waits for them.

        Args:
            path: the archive. max_bytes: refuse archives holding more bytes than this. flush: wait for vectors.

        Returns:
            Counts: ``entries_added``, ``entries_updated``, ``entries_unchanged``, ``sessions_added``,
            ``sessions_skipped``, ``messages_added``, ``entities_added``, ``relations_added``, ``skill_files``,
            plus ``format_version`` and ``created_at`` of the archive.

        Raises:
            ArchiveError (a ValidationError): refused as a whole, nothing written: link or non-file members,
                unexpected or unsafe member names, oversize, checksum mismatch, damage, non-UTF-8 or bad JSON,
                or a newer format version.
        """
        from . import archive
        out = await archive.import_archive(self, path, max_bytes=max_bytes)
        if flush:
            await self.flush()
        return out

    # ------------------------------------------------------------------ debug APIs
    # (issue 5: trace_session, entity_graph, diff_entries delegate to observability.py; add them in this section)

    @bridged
    async def list_traces(self, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
        """Persisted retrieval traces, newest first, without their steps (load one with :meth:`get_trace`).

        Args:
            limit: 1..1000 rows. offset: rows to skip.

        Returns:
            Dicts ``{"id", "query", "created_at" (UTC), "total_ms", "result_ids", "results", "steps",
            "degrade_reason"}``.

        Raises:
            ValidationError: bad limit or offset.
        """
        check_limit(limit, "limit", maximum=1000)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValidationError("offset must be a non-negative integer")
        db = await self._open()
        await self._drain_background()
        return await _obs.list_traces(db, limit, offset)

    @bridged
    async def trace_session(self, session_id: str) -> dict[str, Any]:
        """Debug view of one session: messages, the entries committed from it, and the traces that found them.

        Returns:
            ``{"session", "messages", "memories": [{"entry", "kind", "message_seq"}], "traces", "counts"}``
            (see :func:`agentbase.observability.trace_session`).

        Raises:
            NotFoundError: unknown session. ValidationError: a malformed id.
        """
        db = await self._open()
        await self._drain_background()
        return await _obs.trace_session(db, check_id(session_id, "session_id"))

    @bridged
    async def entity_graph(self, entity: str | None = None, *, limit: int = 60) -> dict[str, Any]:
        """Entity graph around ``entity`` (or the whole database): graph relations plus tag co-occurrence.

        Args:
            entity: a name such as ``"Caroline"`` or a tag ``"ner_Caroline"``; None for the top entities.
            limit: 1..500 nodes.

        Returns:
            ``{"entity", "nodes", "edges", "entries"}`` (see :func:`agentbase.observability.entity_graph`).

        Raises:
            NotFoundError: an entity that is nowhere in the database. ValidationError: bad name or limit.
        """
        check_limit(limit, "limit", maximum=500)
        db = await self._open()
        return await _obs.entity_graph(db, entity, limit=limit)

    @bridged
    async def diff_entries(self, a: str, b: str) -> dict[str, Any]:
        """Field-by-field comparison of two entries with a unified diff of their text.

        Returns:
            ``{"a", "b", "fields", "tags_added", "tags_removed", "metadata", "text_diff", "similarity"}``
            (see :func:`agentbase.observability.diff_entries`).

        Raises:
            NotFoundError: either id is unknown. ValidationError: a malformed id.
        """
        db = await self._open()
        return await _obs.diff_entries(db, check_id(a, "entry_id"), check_id(b, "entry_id"))


def _filters(filters: dict[str, Any]) -> Filters:
    try:
        f = Filters(**filters)
    except TypeError as exc:
        raise ValidationError(f"unknown filter: {exc}") from None
    for key in _OWNER_KEYS:
        value = getattr(f, key)
        if value is not None:
            check_id(value, key)
    if f.tags is not None:
        f.tags = check_tags(f.tags)
    if f.metadata is not None and not isinstance(f.metadata, dict):
        raise ValidationError("metadata filter must be a dict")
    f.date_from = parse_time(f.date_from)
    f.date_to = parse_time(f.date_to)
    return f
