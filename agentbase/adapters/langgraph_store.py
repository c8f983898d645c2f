"""LangGraph long-term store: :class:`AgentBaseStore` is a ``langgraph.store.base.BaseStore`` kept in AgentBase.

Use it wherever LangGraph or LangChain 1.x take a store (``create_agent(..., store=AgentBaseStore(db))``,
``StateGraph.compile(store=...)``); tools read it with ``langgraph.config.get_store()`` or ``runtime.store``.

Mapping (docs/langgraph.md, "Store"):

- An item ``(namespace, key)`` is one AgentBase entry: ``context_type="memory"``, ``category="langgraph"``, id
  ``uuid5(namespace + key)``, so a put of the same ``(namespace, key)`` replaces the entry in place (upsert; its
  ``created_at`` is kept, as in ``PostgresStore``).
- Owners: ``user_id`` is read from the namespace by ``user_from_namespace`` (a label position such as ``-1`` for
  ``("memories", "<user_id>")`` or ``0`` for ``("<user_id>", "memories")``, or a function); ``agent_id`` is the
  store's own (optional; it makes the scope ``"agent"``, else ``"global"``). So ``db.find(q, user_id=...)``, the
  mem0 adapter's ``get_all(user_id=...)`` and ``MinimalAdapter.recall(who=...)`` see the user's store items.
- The entry text is what the index configuration selects (langgraph's JSON paths, ``"$"`` = the whole value as
  JSON, the default); ``query`` searches run AgentBase's hybrid ``find()`` on that text inside the namespace.
- The value's top-level keys are the entry's metadata keys, so ``filter`` equality on string values runs inside
  AgentBase's metadata filter SQL; every filter is then checked exactly as ``InMemoryStore`` does
  (``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``, nested dicts, lists). Reserved metadata keys:
  ``langgraph`` (namespace, key, times, TTL, index), ``langgraph_ns`` (the dotted namespace prefixes, for prefix
  search in SQL) and ``langgraph_indexed``. A value that uses a reserved key is kept whole inside ``langgraph``.
- TTL (minutes, langgraph's ``TTLConfig``): an item past its expiry is never returned; reads refresh it when
  ``refresh_ttl`` (default ``refresh_on_read``, True); :meth:`AgentBaseStore.sweep_ttl` deletes expired items and
  :meth:`AgentBaseStore.start_ttl_sweeper` runs it every ``sweep_interval_minutes``.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import math
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from agentbase import AgentBase, SyncAgentBase, release_db, resolve_db, run_sync
from agentbase.errors import MissingDependencyError, ValidationError
from agentbase.models import Entry

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        IndexConfig,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
        get_text_at_path,
        validate_op_namespace,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("langgraph", "langgraph") from exc

from ._langgraph_rules import (
    CATEGORY, _INDEXED_KEY, _INTERNAL, _MAX_FIND, _MAX_ID_LEN, _NS_KEY, _PAGE, _RESERVED,
    _SURROGATE, _check_filter, _check_int, _check_json, _does_match, _iso, _matches, _now, _parse,
    _plain, _pushdown, _utc, item_id,
)

__all__ = ["CATEGORY", "AgentBaseStore", "item_id"]

log = logging.getLogger(__name__)


class _Stored:
    """A store item read back from its entry."""

    __slots__ = ("entry", "namespace", "key", "value", "created_at", "updated_at", "ttl", "expires_at")

    def __init__(self, entry: Entry):
        meta = entry.metadata
        inner = meta.get(_INTERNAL) if isinstance(meta.get(_INTERNAL), dict) else {}
        self.entry = entry
        self.namespace = tuple(inner.get("namespace") or ())
        self.key = inner.get("key")
        if isinstance(inner.get("value"), dict):
            self.value = inner["value"]
        else:
            self.value = {k: v for k, v in meta.items() if k not in _RESERVED}
        self.created_at = _parse(inner.get("created_at"), _utc(entry.created_at))
        self.updated_at = _parse(inner.get("updated_at"), _utc(entry.updated_at))
        self.ttl = inner.get("ttl")
        self.expires_at = _parse(inner.get("expires_at"), None) if inner.get("expires_at") else None  # type: ignore[arg-type]

    def valid(self) -> bool:
        return isinstance(self.key, str) and bool(self.namespace)

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def item(self) -> Item:
        return Item(value=self.value, key=self.key, namespace=self.namespace, created_at=self.created_at,
                    updated_at=self.updated_at)

    def search_item(self, score: float | None) -> SearchItem:
        return SearchItem(namespace=self.namespace, key=self.key, value=self.value, created_at=self.created_at,
                          updated_at=self.updated_at, score=score)


class AgentBaseStore(BaseStore):
    """A LangGraph ``BaseStore`` (long-term memory across threads) stored in an AgentBase file.

    Args:
        db: an :class:`AgentBase`, a :class:`SyncAgentBase` or a database path (the store then owns it and
            :meth:`close` hands it back).
        user_from_namespace: how a namespace names its AgentBase ``user_id``: None (items have no user), an int
            label position (``-1``: the last label, for ``("memories", "<user_id>")``; ``0`` for
            ``("<user_id>", "memories")``; a namespace too short for it has no user), or a function
            ``namespace tuple -> str | None``.
        agent_id: the AgentBase ``agent_id`` of every item this store writes (scope ``"agent"``); None: no agent,
            scope ``"global"``.
        index: langgraph's ``IndexConfig``; only ``fields`` is read (JSON paths whose text is the searchable
            entry text; default ``["$"]``, the whole value). ``dims`` and ``embed`` are ignored: AgentBase's own
            embedder makes the vectors. Without ``index``, ``query`` still searches (upstream stores without an
            index ignore it).
        ttl: langgraph's ``TTLConfig`` (minutes): ``default_ttl``, ``refresh_on_read`` (default True),
            ``sweep_interval_minutes`` (used by :meth:`start_ttl_sweeper`). Expired items are always omitted.
        wait_for_vectors: after a batch with puts, wait until the queued embeddings are written (``db.flush()``),
            so a ``query`` search right after ``put`` uses the vector leg; False returns at commit.
        embedder, settings: with a path, passed to :class:`AgentBase`.

    Raises:
        TypeError: ``db`` is none of the accepted types, or ``user_from_namespace`` is neither None, an int nor
            callable. ValidationError: a bad ``index`` or ``ttl`` configuration.

    Example:
        >>> store = AgentBaseStore("agent.db", user_from_namespace=-1)               # doctest: +SKIP
        >>> store.put(("memories", "alice"), "food", {"text": "Alice likes sushi"})  # doctest: +SKIP
        >>> store.search(("memories", "alice"), query="what does she eat")[0].key   # doctest: +SKIP
        'food'
    """

    supports_ttl = True

    def __init__(self, db: AgentBase | SyncAgentBase | str | os.PathLike[str], *,
                 user_from_namespace: int | Callable[[tuple[str, ...]], str | None] | None = None,
                 agent_id: str | None = None, index: IndexConfig | None = None, ttl: TTLConfig | None = None,
                 wait_for_vectors: bool = True, embedder: Any = None, settings: Any = None):
        if user_from_namespace is not None and not callable(user_from_namespace) and (
                isinstance(user_from_namespace, bool) or not isinstance(user_from_namespace, int)):
            raise TypeError("user_from_namespace must be None, an int label position or a function")
        if agent_id is not None and (not isinstance(agent_id, str) or not 0 < len(agent_id) <= _MAX_ID_LEN):
            raise ValidationError("agent_id must be a non-empty string of at most 256 characters")
        if index is not None and not isinstance(index, Mapping):
            raise ValidationError("index must be a langgraph IndexConfig dict")
        fields = list((index or {}).get("fields") or ["$"])
        if not all(isinstance(f, str) and f for f in fields):
            raise ValidationError("index fields must be non-empty JSON path strings")
        ignored = sorted(k for k in (index or {}) if k in ("dims", "embed"))
        if ignored:
            log.info("AgentBaseStore ignores index %s: AgentBase's embedder makes the vectors", ignored)
        if ttl is not None:
            if not isinstance(ttl, Mapping):
                raise ValidationError("ttl must be a langgraph TTLConfig dict")
            if ttl.get("default_ttl") is not None:
                self._check_ttl(ttl["default_ttl"], "ttl default_ttl")
            interval = ttl.get("sweep_interval_minutes")
            if interval is not None and (isinstance(interval, bool) or not isinstance(interval, (int, float))
                                         or not math.isfinite(interval) or interval <= 0):
                raise ValidationError("ttl sweep_interval_minutes must be a positive number of minutes")
        self.db, self._owned = resolve_db(db, settings=settings, embedder=embedder)
        self.user_from_namespace = user_from_namespace
        self.agent_id = agent_id
        self.index_config = dict(index) if index is not None else None
        self.index_fields = fields
        self.ttl_config = dict(ttl) if ttl is not None else None  # type: ignore[assignment]
        self.wait_for_vectors = bool(wait_for_vectors)
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()

    # ------------------------------------------------------------------ the BaseStore core
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` (GetOp, SearchOp, PutOp, ListNamespacesOp) and return one result per op, in order.

        Every op is checked before anything runs, so a refused batch writes nothing. Reads see the store as it
        was before the batch's writes; of several puts to one ``(namespace, key)`` the last wins (as
        ``InMemoryStore``).

        Returns:
            ``Item | None`` per GetOp, ``list[SearchItem]`` per SearchOp, ``list[tuple]`` per ListNamespacesOp,
            ``None`` per PutOp.

        Raises:
            InvalidNamespaceError: a label that is not a non-empty string without '.' and NUL, a put with an
                empty namespace or root label ``"langgraph"``, or a namespace whose user id label is longer than
                256 characters. ValidationError (a ``ValueError``): a value that is not JSON, a key that is not
                a string or holds a lone surrogate, a bad ``index``, ``ttl`` (minutes, > 0), ``limit``,
                ``offset``, ``max_depth``, ``query`` or ``filter`` (a filter key with a lone surrogate included).
            ValueError: an unknown op type or filter operator.
        """
        return run_sync(self._abatch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch` (same arguments, results and errors)."""
        return await self._abatch(list(ops))

    # ------------------------------------------------------------------ checks
    @staticmethod
    def _check_ttl(ttl: Any, what: str = "ttl") -> None:
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl) or ttl <= 0:
            raise ValidationError(f"{what} must be a positive number of minutes or None, got {ttl!r}")

    def _user_of(self, namespace: tuple[str, ...]) -> str | None:
        rule = self.user_from_namespace
        if rule is None:
            return None
        if callable(rule):
            user = rule(tuple(namespace))
        else:
            try:
                user = namespace[rule]
            except IndexError:
                return None
        if user is None:
            return None
        if not isinstance(user, str) or not 0 < len(user) <= _MAX_ID_LEN or "\x00" in user or \
                _SURROGATE.search(user):
            raise InvalidNamespaceError(f"namespace {namespace} gives user_id {user!r}; an AgentBase user_id is a "
                                        f"non-empty string of at most {_MAX_ID_LEN} characters")
        return user

    def _check_op(self, op: Any) -> None:
        if not isinstance(op, (GetOp, SearchOp, PutOp, ListNamespacesOp)):
            raise ValueError(f"Unknown operation type: {type(op)}")
        validate_op_namespace(op)
        for label in getattr(op, "namespace", None) or getattr(op, "namespace_prefix", None) or ():
            if _SURROGATE.search(label):
                raise InvalidNamespaceError(f"namespace label {label!r} holds a lone surrogate code point")
        if isinstance(op, (GetOp, PutOp)) and not isinstance(op.key, str):
            raise ValidationError(f"key must be a string, got {type(op.key).__name__}")
        if isinstance(op, (GetOp, PutOp)) and _SURROGATE.search(op.key):  # not UTF-8: no id, never stored
            raise ValidationError(f"key {op.key!r} holds a lone surrogate code point (invalid Unicode)")
        if isinstance(op, PutOp):
            if op.value is None:
                return
            if not op.namespace:
                raise InvalidNamespaceError("Namespace cannot be empty.")
            if op.namespace[0] == "langgraph":
                raise InvalidNamespaceError(f'Root label for namespace cannot be "langgraph". Got: {op.namespace}')
            if not isinstance(op.value, Mapping):
                raise ValidationError(f"a store value must be a dict, got {type(op.value).__name__}")
            _check_json(op.value)
            if op.index is not None and op.index is not False and (
                    not isinstance(op.index, (list, tuple)) or not all(isinstance(f, str) and f for f in op.index)):
                raise ValidationError("index must be False, None or a list of JSON path strings")
            if op.ttl is not None:
                self._check_ttl(op.ttl)
            self._user_of(op.namespace)
        elif isinstance(op, SearchOp):
            _check_int(op.limit, "limit", 0)
            _check_int(op.offset, "offset", 0)
            if op.query is not None and not isinstance(op.query, str):
                raise ValidationError("query must be a string or None")
            _check_filter(op.filter)
        elif isinstance(op, ListNamespacesOp):
            _check_int(op.limit, "limit", 0)
            _check_int(op.offset, "offset", 0)
            if op.max_depth is not None:
                _check_int(op.max_depth, "max_depth", 1)
            for cond in op.match_conditions or ():
                if cond.match_type not in ("prefix", "suffix"):
                    raise ValueError(f"Unsupported match type: {cond.match_type}")

    # ------------------------------------------------------------------ execution
    async def _abatch(self, ops: list[Any]) -> list[Result]:
        for op in ops:
            self._check_op(op)
        now = _now()
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(op, now))
            elif isinstance(op, SearchOp):
                results.append(await self._search(op, now))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._list_namespaces(op, now))
            else:
                puts.pop((tuple(op.namespace), op.key), None)  # the last put of a key wins, in its own place
                puts[(tuple(op.namespace), op.key)] = op
                results.append(None)
        wrote = False
        for op in puts.values():
            if op.value is None:
                await self.db.delete(item_id(tuple(op.namespace), op.key))
            else:
                await self._put(op, _now())
                wrote = True
        if wrote and self.wait_for_vectors:
            await self.db.flush()
        return results

    async def _read(self, namespace: tuple[str, ...], key: str) -> _Stored | None:
        entry = await self.db.get(item_id(namespace, key))
        if entry is None or entry.category != CATEGORY:
            return None
        stored = _Stored(entry)
        if stored.namespace != namespace or stored.key != key:
            return None
        return stored

    async def _refresh(self, stored: _Stored, now: datetime) -> None:
        """Move a TTL item's expiry to ``now + ttl`` (a metadata update; its ``updated_at`` is kept)."""
        if stored.ttl is None:
            return
        meta = dict(stored.entry.metadata)
        inner = dict(meta.get(_INTERNAL) or {})
        inner["expires_at"] = _iso(now + timedelta(minutes=float(stored.ttl)))
        meta[_INTERNAL] = inner
        try:
            await self.db.update(stored.entry.id, metadata=meta)
        except LookupError:  # deleted meanwhile: nothing to refresh
            pass

    async def _get(self, op: GetOp, now: datetime) -> Item | None:
        stored = await self._read(tuple(op.namespace), op.key)
        if stored is None or stored.expired(now):
            return None
        if op.refresh_ttl:
            await self._refresh(stored, now)
        return stored.item()

    def _text(self, value: dict[str, Any], index: Any) -> str | None:
        """The entry text of an indexed value, or None when nothing is indexed."""
        if index is False:
            return None
        paths = list(index) if index is not None else self.index_fields
        texts: list[str] = []
        for path in paths:
            texts.extend(t for t in get_text_at_path(value, path) if t and t.strip())
        return "\n".join(dict.fromkeys(texts)) or None

    async def _put(self, op: PutOp, now: datetime) -> None:
        namespace, key = tuple(op.namespace), op.key
        value = _plain(op.value)
        text = self._text(value, op.index)
        eid = item_id(namespace, key)
        existing = await self.db.get(eid)
        created = now
        if existing is not None and existing.category == CATEGORY:
            created = _Stored(existing).created_at
        inner: dict[str, Any] = {
            "namespace": list(namespace), "key": key, "created_at": _iso(created), "updated_at": _iso(now),
            "index": op.index if op.index is False or op.index is None else list(op.index),
            "ttl": op.ttl, "expires_at": _iso(now + timedelta(minutes=float(op.ttl))) if op.ttl else None}
        if _RESERVED & set(value):
            inner["value"] = value
        meta = {**{k: v for k, v in value.items() if k not in _RESERVED}, _INTERNAL: inner,
                _NS_KEY: [".".join(namespace[:i]) for i in range(1, len(namespace) + 1)],
                _INDEXED_KEY: text is not None}
        content = text if text is not None else json.dumps(value, sort_keys=True, ensure_ascii=False)
        user = self._user_of(namespace)
        if existing is not None and (existing.user_id != user or existing.agent_id != self.agent_id):
            await self.db.delete(eid)  # the owner rule changed: file the item under its new owners
            existing = None
        if existing is None:
            try:
                await self.db.add_memory(content, category=CATEGORY, metadata=meta, user_id=user,
                                         agent_id=self.agent_id, scope="agent" if self.agent_id else "global",
                                         dedup=False, entry_id=eid)
                return
            except ValidationError:
                if await self.db.get(eid) is None:  # not a concurrent put of the same key: a real refusal
                    raise
        await self.db.update(eid, content=content if existing is None or existing.content != content else None,
                             metadata=meta)

    def _filters(self, prefix: tuple[str, ...], extra: dict[str, Any]) -> dict[str, Any]:
        meta = dict(extra)
        if prefix:
            meta[_NS_KEY] = ".".join(prefix)
        return {"context_type": "memory", "category": CATEGORY, "include_archived": True,
                **({"metadata": meta} if meta else {})}

    def _keep(self, stored: _Stored, prefix: tuple[str, ...], flt: dict[str, Any] | None, now: datetime) -> bool:
        if not stored.valid() or stored.expired(now) or stored.namespace[:len(prefix)] != prefix:
            return False
        return all(_matches(stored.value.get(k), v) for k, v in (flt or {}).items())

    async def _scan(self, filters: dict[str, Any]) -> Any:
        """Every entry matching ``filters``, oldest first, page by page (an async generator)."""
        offset = 0
        while True:
            page = await self.db.list(limit=_PAGE, offset=offset, order="asc", **filters)
            for entry in page:
                yield entry
            if len(page) < _PAGE:
                return
            offset += len(page)

    async def _search(self, op: SearchOp, now: datetime) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        need = op.offset + op.limit
        if op.limit == 0:
            return []
        found: list[tuple[_Stored, float | None]] = []
        if op.query and op.query.strip():  # a blank query has no word to rank by: listed as no query
            filters = self._filters(prefix, {**_pushdown(op.filter), _INDEXED_KEY: True})
            top_k = min(max(need, 10), _MAX_FIND)
            while True:
                hits = await self.db.find(op.query, top_k=top_k, **filters)
                found = []
                seen: set[str] = set()
                for hit in hits:
                    if hit.entry.id in seen or hit.entry.category != CATEGORY:
                        continue
                    seen.add(hit.entry.id)
                    stored = _Stored(hit.entry)
                    if self._keep(stored, prefix, op.filter, now):
                        found.append((stored, float(hit.score)))
                if len(found) >= need or len(hits) < top_k or top_k >= _MAX_FIND:
                    break
                top_k = min(top_k * 2, _MAX_FIND)
        else:
            async for entry in self._scan(self._filters(prefix, _pushdown(op.filter))):
                stored = _Stored(entry)
                if self._keep(stored, prefix, op.filter, now):
                    found.append((stored, None))
                    if len(found) >= need:
                        break
        page = found[op.offset:need]
        if op.refresh_ttl:
            for stored, _ in page:
                await self._refresh(stored, now)
        return [stored.search_item(score) for stored, score in page]

    async def _namespaces(self, prefix: tuple[str, ...], now: datetime) -> set[tuple[str, ...]]:
        out: set[tuple[str, ...]] = set()
        async for entry in self._scan(self._filters(prefix, {})):
            stored = _Stored(entry)
            if stored.valid() and not stored.expired(now):
                out.add(stored.namespace)
        return out

    async def _list_namespaces(self, op: ListNamespacesOp, now: datetime) -> list[tuple[str, ...]]:
        conds = tuple(op.match_conditions or ())
        pushed: tuple[str, ...] = ()
        for cond in conds:  # the labels before a prefix condition's first wildcard narrow the scan in SQL
            if cond.match_type == "prefix":
                lead = []
                for label in cond.path:
                    if label == "*":
                        break
                    lead.append(label)
                if len(lead) > len(pushed):
                    pushed = tuple(lead)
        names = [ns for ns in await self._namespaces(pushed, now) if all(_does_match(c, ns) for c in conds)]
        if op.max_depth is not None:
            names = list({ns[:op.max_depth] for ns in names})
        return sorted(names)[op.offset:op.offset + op.limit]

    # ------------------------------------------------------------------ TTL
    async def asweep_ttl(self) -> int:
        """Delete every store item whose TTL has run out.

        Returns:
            How many items were deleted.
        """
        now, doomed = _now(), []
        async for entry in self._scan(self._filters((), {})):
            if _Stored(entry).expired(now):
                doomed.append(entry.id)
        deleted = 0
        for eid in doomed:
            entry = await self.db.get(eid)  # read again: a put may have renewed it since the scan
            if entry is not None and _Stored(entry).expired(_now()):
                deleted += int(await self.db.delete(eid))
        return deleted

    def sweep_ttl(self) -> int:
        """Blocking twin of :meth:`asweep_ttl`."""
        return run_sync(self.asweep_ttl())

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> concurrent.futures.Future[None]:
        """Run :meth:`sweep_ttl` every ``sweep_interval_minutes`` on a daemon thread until :meth:`stop_ttl_sweeper`.

        Args:
            sweep_interval_minutes: minutes between sweeps; default the ``ttl`` config's
                ``sweep_interval_minutes``, else 5 (``PostgresStore``'s default).

        Returns:
            A future that completes when the sweeper stops (as ``PostgresStore.start_ttl_sweeper``); a second
            call while one runs returns a future that is already done.

        Raises:
            ValidationError: a non-positive interval.
        """
        interval = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5
        self._check_ttl(interval, "sweep_interval_minutes")
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        if self._sweeper is not None and self._sweeper.is_alive():
            done.set_result(None)
            return done
        self._sweeper_stop.clear()

        def loop() -> None:
            try:
                while not self._sweeper_stop.wait(float(interval) * 60.0):
                    try:
                        n = self.sweep_ttl()
                        if n:
                            log.info("AgentBaseStore TTL sweep deleted %d expired items", n)
                    except Exception:  # noqa: BLE001 - a sweep failure must not end the sweeper
                        log.exception("AgentBaseStore TTL sweep failed")
            finally:
                done.set_result(None)

        self._sweeper = threading.Thread(target=loop, name="agentbase-store-ttl", daemon=True)
        self._sweeper.start()
        return done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread.

        Args:
            timeout: seconds to wait for it (None waits until it ends).

        Returns:
            True when no sweeper runs any more.
        """
        thread = self._sweeper
        if thread is None:
            return True
        self._sweeper_stop.set()
        thread.join(timeout)
        if not thread.is_alive():
            self._sweeper = None
            return True
        return False

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Stop the TTL sweeper and hand the database back if this store opened it (idempotent)."""
        self.stop_ttl_sweeper()
        if self._owned:
            self._owned = False
            run_sync(release_db(self.db))

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        self.stop_ttl_sweeper()
        if self._owned:
            self._owned = False
            await release_db(self.db)

    def __enter__(self) -> AgentBaseStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> AgentBaseStore:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()
