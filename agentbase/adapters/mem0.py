"""mem0 drop-in: :class:`Mem0Adapter` and :class:`AsyncMem0Adapter` mirror mem0's ``Memory``/``AsyncMemory``.

Same method names, arguments, defaults, return shapes, messages and error types as mem0ai 2.2.x (2.2.1,
``mem0/memory/main.py``), stored in one AgentBase file and written only through AgentBase's public API.

Mapping (see ``docs/compatibility.md`` for every known difference):

- A mem0 memory is an AgentBase entry with ``context_type="memory"``. ``user_id`` and ``agent_id`` are the
  entry owners of the same name; mem0's ``run_id`` is the entry's ``session_id``. ``role``, ``actor_id``,
  ``attributed_to``, ``expiration_date`` and the caller's metadata are flat keys of the entry metadata; read
  APIs promote the first four to the top level of an item, as mem0 does.
- ``infer=False`` stores each non-system message verbatim. ``infer=True`` uses AgentBase's zero-LLM fact
  extraction (``commit_session``) instead of an LLM; when no fact is found, the user messages are stored
  verbatim. With a model configured (``settings.llm``, docs/llm.md) it runs mem0's algorithm instead
  (:meth:`AgentBase.infer_memories`: extract, retrieve, ADD / UPDATE / DELETE / NONE), and falls back to the
  rules, with a warning, when the model's answer is malformed or the model cannot be reached.
- ``search`` ranks with AgentBase's hybrid ``find()``; ``threshold`` applies to the cosine similarity of the
  vector leg (mem0 applies it to its semantic score); ``score`` is AgentBase's final score, not a cosine.
- Owner ids are accepted as keywords (older mem0) and inside ``filters`` (mem0 2.x). Plain equality on owners
  and metadata keys runs inside SQL; mem0's operators (eq, ne, in, nin, gt, gte, lt, lte, contains, icontains,
  ``"*"``, AND, OR, NOT) are applied to an over-fetched candidate list.
"""

from __future__ import annotations

import copy
import functools
import logging
import os
import uuid
from collections.abc import Generator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from agentbase import AgentBase, SyncAgentBase, load_settings, release_db, resolve_db, run_sync
from agentbase.embeddings import normalize_rows
from agentbase.errors import LLMError, NotFoundError
from agentbase.errors import ValidationError as AgentBaseValidationError

from ._mem0_rules import (_SCOPE_PREFIX, _UNSET, ValidationError, _check_search_params, _expired, _invalid, _item,
                          _leftover, _match, _messages, _norm_expiration, _payload, _split_filters, _strip_identity, _trim_id,
                          _usable, _valid_memory_id, mem0_validation_error)

__all__ = ["AsyncMem0Adapter", "AsyncMemory", "Mem0Adapter", "Memory", "ValidationError", "mem0_validation_error"]

log = logging.getLogger(__name__)

# Strings and defaults copied from mem0ai 2.2.1, mem0/memory/main.py.
MSG_UPDATED = "Memory updated successfully!"
MSG_DELETED = "Memory deleted successfully!"
MSG_DELETED_ALL = "Memories deleted successfully!"
DEFAULT_TOP_K = 20
DEFAULT_THRESHOLD = 0.1
PROCEDURAL_MEMORY = "procedural_memory"
_MAX_FIND, _MAX_LIST = 1000, 10_000  # AgentBase.find top_k and AgentBase.list limit maxima


class _LangChainEmbedder:
    """A LangChain ``Embeddings`` (mem0's ``langchain`` embedder provider) as an AgentBase embedder."""

    def __init__(self, model: Any, dims: int | None = None):
        self.model, self.dims = model, int(dims or len(model.embed_query("dimension probe")))
        self.model_id = f"langchain/{type(model).__name__}/{self.dims}"

    def embed_documents(self, texts: list[str]) -> Any:
        rows = self.model.embed_documents(list(texts)) if texts else []
        return normalize_rows(np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dims))

    def embed_query(self, text: str) -> Any:
        return normalize_rows(np.asarray(self.model.embed_query(text), dtype=np.float32))


class _Call(NamedTuple):
    name: str
    args: tuple
    kwargs: dict


def _call(name: str, *args: Any, **kwargs: Any) -> _Call:
    return _Call(name, args, kwargs)


Op = Generator[_Call, Any, Any]  # yields AgentBase calls, receives their results, returns the answer


def _drive_sync(db: AgentBase, op: Op) -> Any:
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            call = op.throw(error) if error is not None else op.send(send)
        except StopIteration as stop:
            return stop.value
        try:
            send, error = getattr(db.sync, call.name)(*call.args, **call.kwargs), None
        except Exception as exc:  # noqa: BLE001 - handed back to the operation, which may translate it
            send, error = None, exc


async def _drive_async(db: AgentBase, op: Op) -> Any:
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            call = op.throw(error) if error is not None else op.send(send)
        except StopIteration as stop:
            return stop.value
        try:
            send, error = await getattr(db, call.name)(*call.args, **call.kwargs), None
        except Exception as exc:  # noqa: BLE001
            send, error = None, exc


def _read_mem0_config(config: Any) -> tuple[Any, Any, Any]:
    """``(database path, embedder, settings)`` from a mem0 config (see :meth:`_Mem0Base.from_config`)."""
    if hasattr(config, "model_dump"):
        config = config.model_dump()
    if not isinstance(config, dict):
        raise ValueError("a mem0 config must be a dict or a MemoryConfig")
    own = dict(config.get("agentbase") or {})
    path = own.get("path")
    vs_conf = (config.get("vector_store") or {}).get("config") or {}
    vs_path = vs_conf.get("path") if isinstance(vs_conf, dict) else getattr(vs_conf, "path", None)
    if path is None and vs_path:
        path = Path(vs_path)
        path = path if path.suffix in (".db", ".sqlite", ".sqlite3") else path / "agentbase.db"
        path.parent.mkdir(parents=True, exist_ok=True)
    embedder, emb = own.get("embedder"), config.get("embedder") or {}
    if embedder is None and emb.get("provider") == "langchain" and (emb.get("config") or {}).get("model"):
        embedder = _LangChainEmbedder(emb["config"]["model"], emb["config"].get("embedding_dims"))
    elif embedder is None and emb:
        log.info("mem0 embedder provider %r ignored; AgentBase settings choose the embedder", emb.get("provider"))
    ignored = sorted(k for k in ("llm", "reranker", "graph_store", "history_db_path") if config.get(k))
    if ignored:
        log.info("mem0 config sections ignored by AgentBase: %s", ", ".join(ignored))
    settings = None
    if own.get("settings") or own.get("config_file"):
        settings = load_settings(own.get("config_file"), **dict(own.get("settings") or {}))
    return path or "agentbase.db", embedder, settings


class _Mem0Base:
    """The mem0 API written once; each public method is an operation that the sync or async class drives."""

    def __init__(self, db: AgentBase | SyncAgentBase | str | os.PathLike[str] | dict | None = None, *,
                 embedder: Any = None, settings: Any = None, wait_for_vectors: bool = True, config: Any = None):
        """Wrap an AgentBase.

        Args:
            db: an :class:`AgentBase`, a :class:`SyncAgentBase`, or a database path (default
                ``"agentbase.db"``; the adapter then owns the database and :meth:`close` closes it; a database
                passed in stays open). A mem0 config given first, as ``Memory(config)`` does, is read as
                ``config``.
            embedder: with a path: an embedder object or provider name for :class:`AgentBase`.
            settings: with a path: :class:`~agentbase.config.Settings` for :class:`AgentBase`.
            wait_for_vectors: after a write, wait until it is embedded (mem0 embeds before returning, so a
                search right after ``add`` uses the vector); ``False`` returns at commit and vectors follow.
            config: mem0's ``Memory(config=MemoryConfig(...))``: a ``MemoryConfig`` (anything with
                ``model_dump()``) or its dict, read as :meth:`from_config` reads it (instead of ``db``).

        Raises:
            TypeError: ``db`` is none of the accepted types, or both ``db`` and ``config`` are given.
            ValueError, ConfigError: as :meth:`from_config`.
        """
        if isinstance(db, dict) or hasattr(db, "model_dump"):
            db, config = (None, db) if config is None else (db, config)
        if config is not None:
            if db is not None:
                raise TypeError("give either db or a mem0 config, not both")
            db, mem0_embedder, mem0_settings = _read_mem0_config(config)
            embedder = mem0_embedder if embedder is None else embedder
            settings = mem0_settings if settings is None else settings
        self.db, self._owned = resolve_db("agentbase.db" if db is None else db, settings=settings,
                                          embedder=embedder)
        self._wait = wait_for_vectors

    @classmethod
    def from_config(cls, config_dict: dict[str, Any]) -> Any:
        """Build an adapter from a mem0 ``MemoryConfig`` dict, offline (no LLM or remote embedder is called).

        Args:
            config_dict: read are ``agentbase`` (``path``, ``embedder``, ``settings`` = ``load_settings``
                overrides, ``config_file``); else ``vector_store.config.path`` (a folder gets ``agentbase.db``
                inside, a ``.db``/``.sqlite`` path is used as is); and an ``embedder`` with provider
                ``langchain`` (its ``config.model`` is used). Ignored, with a log line: ``llm`` (extraction
                is rule-based), other embedder providers (AgentBase settings decide), ``reranker``,
                ``graph_store``, ``history_db_path`` (history lives in the same file); also ``version``,
                ``collection_name``, ``custom_instructions``.

        Returns:
            An adapter that owns its database (default path ``agentbase.db``).

        Raises:
            ValueError: ``config_dict`` is not a dict. ConfigError: bad ``agentbase.settings``.
        """
        if not isinstance(config_dict, dict):
            raise ValueError("config_dict must be a dict")
        return cls(config=config_dict)

    # ------------------------------------------------------------------ the mem0 API
    def add(self, messages: Any, *, user_id: Any = None, agent_id: Any = None, run_id: Any = None,
            metadata: dict[str, Any] | None = None, timestamp: Any = None, expiration_date: Any = None,
            infer: bool = True, memory_type: str | None = None, prompt: str | None = None,
            llm: Any = None) -> Any:
        """Store memories from messages (mem0 ``Memory.add``).

        Args:
            messages: a str (one user message), a message dict, or a list of ``{"role", "content", "name"?}``.
            user_id, agent_id, run_id: scope (at least one; trimmed; ints coerced to str). ``run_id`` is
                stored as the entry's ``session_id``.
            metadata: flat keys stored with each memory (``user_id``/``agent_id``/``run_id``/``actor_id`` are
                dropped with a warning, as in mem0).
            timestamp: when it happened (stored as ``event_time``; mem0 OSS rejects it).
            expiration_date: ``YYYY-MM-DD``, date or datetime; expired memories are hidden from reads.
            infer: ``False``: one memory per non-system message, verbatim, with ``role`` and ``actor_id``
                (message ``name``). ``True``: rule-based fact extraction through an AgentBase session
                (``run_id`` or a private per-owner session); with no fact found, the user messages are stored
                verbatim.
            memory_type: only ``"procedural_memory"``; with ``agent_id`` the transcript is stored as one
                ``procedure`` memory (no LLM summary). prompt, llm: accepted and ignored (the model, if any,
                is AgentBase's ``settings.llm``).

        Returns:
            ``{"results": [{"id", "memory", "event": "ADD", "actor_id", "role"}]}`` for ``infer=False``;
            ``{"results": [{"id", "memory", "event": "ADD"|"DELETE"}]}`` otherwise: a fact already stored gives no
            event, and an older value a new fact replaces ("I live in Berlin" after "I live in Paris") is a
            ``DELETE`` event (it is kept, superseded: ``get`` gives ``None`` for it, ``history`` ends with a
            ``DELETE``). With a model configured: ``ADD``, ``UPDATE`` (with ``previous_memory``) and ``DELETE``
            events as the model decided (docs/llm.md).

        Raises:
            mem0 ValidationError (see :func:`mem0_validation_error`): ``VALIDATION_001`` no id,
                ``VALIDATION_002`` bad ``memory_type``, ``VALIDATION_003`` bad ``messages`` type.
            ValueError: a malformed id or ``expiration_date``; with ``infer=True``, a ``run_id`` that is a
                conversation of other owners (its facts would be theirs); AgentBase ``ValidationError`` for text
                it cannot store.
        """
        expiration = _norm_expiration(expiration_date)
        ids = {"user_id": _trim_id(user_id, "user_id"), "agent_id": _trim_id(agent_id, "agent_id"),
               "run_id": _trim_id(run_id, "run_id")}
        base = _strip_identity(metadata, {}, "add()") if metadata else {}
        if not any(ids.values()):
            raise _invalid("At least one of 'user_id', 'agent_id', or 'run_id' must be provided.",
                           "VALIDATION_001", {"provided_ids": ids},
                           "Please provide at least one identifier to scope the memory operation.")
        if expiration is not None:
            base["expiration_date"] = expiration
        if memory_type is not None and memory_type != PROCEDURAL_MEMORY:
            raise _invalid(f"Invalid 'memory_type'. Please pass {PROCEDURAL_MEMORY} to create procedural "
                           "memories.", "VALIDATION_002",
                           {"provided_type": memory_type, "valid_type": PROCEDURAL_MEMORY},
                           f"Use '{PROCEDURAL_MEMORY}' to create procedural memories.")
        msgs = _messages(messages)
        common = {"event_time": timestamp, "scope": "session" if ids["run_id"] else "global",
                  "user_id": ids["user_id"], "agent_id": ids["agent_id"], "session_id": ids["run_id"]}
        if ids["agent_id"] and memory_type == PROCEDURAL_MEMORY:
            text = "\n".join(f"{m['role']}: {t}" for m, t in _usable(msgs))
            if not text:
                raise ValueError("The conversation has no text to build a procedural memory from.")
            entry = yield _call("add_memory", text, category="procedure", dedup=False,
                                metadata={**base, "memory_type": PROCEDURAL_MEMORY}, **common)
            results = [{"id": entry.id, "memory": text, "event": "ADD"}]
        elif infer:
            results = yield from self._infer(msgs, ids, base, common)
        else:
            results = []
            for m, text in _usable(msgs):
                meta = {**copy.deepcopy(base), "role": m["role"]}
                if m.get("name"):
                    meta["actor_id"] = m["name"]
                entry = yield _call("add_memory", text, metadata=meta, dedup=False, **common)
                results.append({"id": entry.id, "memory": text, "event": "ADD",
                                "actor_id": m.get("name") or None, "role": m["role"]})
        if results and self._wait:
            yield _call("flush")
        return {"results": results}

    def _infer(self, msgs: list[Any], ids: dict, base: dict, common: dict) -> Op:
        usable = _usable(msgs)
        if not usable:
            return []
        # With a model configured (settings.llm, docs/llm.md) mem0's own algorithm runs: extract facts, retrieve
        # related memories, ADD / UPDATE / DELETE / NONE decisions. None: no model, the rule-based path below.
        try:
            inferred = yield _call("infer_memories", [
                {"role": m["role"], "content": t, **({"name": m["name"]} if m.get("name") else {})}
                for m, t in usable], user_id=ids["user_id"], agent_id=ids["agent_id"], session_id=ids["run_id"],
                metadata=copy.deepcopy(base) or None, event_time=common["event_time"], scope=common["scope"])
        except LLMError as exc:  # malformed JSON or an unreachable model: nothing was written
            log.warning("add(infer=True): the LLM path failed (%s: %s); using the rule-based extraction",
                        type(exc).__name__, exc)
            inferred = None
        if inferred is not None:
            return inferred["results"]
        if ids["run_id"]:
            return (yield from self._infer_in(ids["run_id"], usable, ids, base, common, fresh=False))
        # Without a run_id each call commits through a session of its own, deleted afterwards (the facts stay):
        # calls from several processes for one owner never commit each other's messages.
        sid = _SCOPE_PREFIX + uuid.uuid4().hex
        try:
            return (yield from self._infer_in(sid, usable, ids, base, common, fresh=True))
        finally:
            yield _call("delete_session", sid)

    def _infer_in(self, sid: str, usable: list[Any], ids: dict, base: dict, common: dict, *, fresh: bool) -> Op:
        # The facts get the session's owners: a run that is another owner's conversation would file this call's
        # facts under that owner (an agent's "I like rock" under the user who opened the run).
        try:
            session = yield _call("create_session", session_id=sid, user_id=ids["user_id"], agent_id=ids["agent_id"])
        except AgentBaseValidationError as exc:
            session = yield _call("get_session", sid)
            if session is None:
                raise exc
        foreign = {k: getattr(session, k) for k in ("user_id", "agent_id")
                   if getattr(session, k) is not None and getattr(session, k) != ids[k]}
        if foreign:
            owners = ", ".join(f"{k}={v!r}" for k, v in foreign.items())
            raise ValueError(f"run_id {ids['run_id']!r} is a conversation of {owners}: infer=True "
                             f"commits this call's messages through it, so its facts would belong to them; pass "
                             f"their ids too, another run_id, or infer=False")
        # Apply what the run's session still has queued (commit_session(wait=False) by other code) before taking
        # the baseline, so the summary that enrichment writes is not taken for this call's own and deleted (a
        # private session of this call has neither).
        before: set[str] = set()
        if not fresh:
            yield _call("commit_session", sid)
            before = {e.id for e in (yield _call("list", session_id=sid, category="summary", limit=100))}
        added = yield _call("add_messages", sid, [
            {"role": m["role"], "content": t, "name": m.get("name"), "created_at": common["event_time"]}
            for m, t in usable])
        outcome = yield _call("commit_session", sid)
        facts = []
        for msg in added:
            rows = yield _call("list", session_id=sid, metadata={"message_id": msg.id}, limit=1000,
                               order="asc")
            for e in rows:
                if e.category == "turn":  # the verbatim turn: mem0's infer=True keeps only extracted facts
                    yield _call("delete", e.id)
                elif e.metadata.get("source") == "session":
                    facts.append(e)
        if outcome.get("summary_id") and outcome["summary_id"] not in before:
            yield _call("delete", outcome["summary_id"])
        results = []
        for e in facts:
            # A fact that replaced an older value ("I live in Berlin" after "I live in Paris") hides the old one
            # from every read, as mem0's DELETE event does: report it so.
            replaced = []
            if e.metadata.get("fact_key"):
                older = yield _call("list", user_id=ids["user_id"], agent_id=ids["agent_id"], category=e.category,
                                    metadata={"fact_key": e.metadata["fact_key"]}, exclude_superseded=False,
                                    limit=1000)
                replaced = [o for o in older if o.superseded_by == e.id]
                if not replaced and outcome["facts_superseded"]:
                    # the old value was added with caller metadata, which replaced its fact_key key: look among
                    # the category's newest facts for the one this fact superseded
                    older = yield _call("list", user_id=ids["user_id"], agent_id=ids["agent_id"],
                                        category=e.category, exclude_superseded=False, limit=1000)
                    replaced = [o for o in older if o.superseded_by == e.id]
            # A mem0 memory's metadata is the caller's alone: with caller metadata it replaces the commit's
            # provenance keys (source, message_id, fact_key, value), which would collide with caller keys of those
            # names (commit_session cannot stamp it: one UPDATE per fact); without, the item view hides them.
            if base:
                yield _call("update", e.id, metadata=copy.deepcopy(base))
            results.append({"id": e.id, "memory": e.content, "event": "ADD"})
            results.extend({"id": o.id, "memory": o.content, "event": "DELETE"} for o in replaced)
        # No fact from this call's messages: keep the user messages themselves. Another call on the same run may
        # have committed this call's messages first (its facts are then found above, by message id, while this
        # commit's own counts are zero), so both conditions are needed.
        if not facts and outcome["facts_added"] + outcome["facts_hardened"] + outcome["facts_superseded"] == 0:
            started = datetime.now(timezone.utc)
            for m, text in usable:
                if m["role"] == "user":
                    entry = yield _call("add_memory", text, metadata=copy.deepcopy(base), **common)
                    if entry.created_at >= started:  # an exact duplicate returns the old entry: no event
                        results.append({"id": entry.id, "memory": text, "event": "ADD"})
        return results

    def get(self, memory_id: str) -> Any:
        """One memory by id (mem0 ``Memory.get``), whoever owns it.

        Args:
            memory_id: the id returned by ``add``.

        Returns:
            ``{"id", "memory", "hash", "metadata", "score": None, "created_at", "updated_at", + promoted
            keys}``, or ``None`` when no entry has this id.
        """
        mid = _valid_memory_id(memory_id)
        entry = (yield _call("get", mid)) if mid else None
        # a fact replaced by a newer value was reported as deleted by the add() that replaced it
        return _item(entry, score=None) if entry is not None and not entry.superseded_by else None

    def get_all(self, *, filters: dict[str, Any] | None = None, top_k: int = DEFAULT_TOP_K,
                show_expired: bool = False, page: int | None = None, page_size: int | None = None,
                **kwargs: Any) -> Any:
        """List memories of a scope, newest first (mem0 ``Memory.get_all``), with the total count.

        mem0's default ``top_k=20`` cuts silently; the result's ``total`` says how many memories match, and
        ``page`` / ``page_size`` (as in mem0's platform ``MemoryClient.get_all``) walk all of them in disjoint,
        complete pages (newest first, ties broken by insertion order).

        Args:
            filters: must name ``user_id``, ``agent_id`` or ``run_id``; other keys filter metadata (with
                mem0's operators, see the module docstring).
            top_k: at most this many (>= 0); ignored when ``page`` or ``page_size`` is given.
            show_expired: include expired memories.
            page: 1-based page number (an int >= 1; default 1 when only ``page_size`` is given).
            page_size: memories per page (1..10000; default 100 as in mem0's platform API when only ``page``
                is given).
            **kwargs: ``user_id``/``agent_id``/``run_id`` keywords (older mem0) join ``filters``; ``limit`` is
                an alias of ``top_k``; anything else is ignored, as in mem0.

        Returns:
            ``{"results": [{"id", "memory", "hash", "metadata", "created_at", "updated_at", + promoted}],
            "total": int}``, plus ``"page"`` and ``"page_size"`` when paging.

        Raises:
            ValueError: no owner id, a malformed id, a bad ``top_k`` / ``page`` / ``page_size``, an unknown
                filter operator.
        """
        top_k = kwargs.get("limit", top_k)
        _check_search_params(top_k=top_k)
        paging = page is not None or page_size is not None
        if paging:
            page = 1 if page is None else page
            page_size = 100 if page_size is None else page_size
            for name, value, most in (("page", page, 2**31), ("page_size", page_size, _MAX_LIST)):
                if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
                    raise ValueError(f"{name} must be an integer between 1 and {most}")
        owners, meta, post = _split_filters(filters, kwargs)
        matched, offset = [], 0
        while True:  # every visible memory is counted, so ``total`` is exact whatever the page
            rows = yield _call("list", limit=_MAX_LIST, offset=offset, order="desc", context_type="memory",
                               metadata=meta or None, **owners)
            matched.extend(e for e in rows if (show_expired or not _expired(e))
                           and (not post or _match(_payload(e), post)) and not _leftover(e))
            if len(rows) < _MAX_LIST:
                break
            offset += _MAX_LIST
        if not paging:
            return {"results": [_item(e) for e in matched[:top_k]], "total": len(matched)}
        start = (page - 1) * page_size
        return {"results": [_item(e) for e in matched[start:start + page_size]], "total": len(matched),
                "page": page, "page_size": page_size}

    def search(self, query: str, *, top_k: int = DEFAULT_TOP_K, filters: dict[str, Any] | None = None,
               threshold: float | None = DEFAULT_THRESHOLD, rerank: bool = False, explain: bool = False,
               reference_date: Any = None, show_expired: bool = False, **kwargs: Any) -> Any:
        """Hybrid search (mem0 ``Memory.search``): AgentBase ``find()`` over the scope's memories.

        Args:
            query: non-empty text (trimmed).
            top_k: at most this many results (>= 0; 0 gives none).
            filters: as in :meth:`get_all`. **kwargs: as in :meth:`get_all`.
            threshold: 0..1, minimum cosine similarity of the vector leg (results found by keywords only, or
                stored without a vector, are kept); ``None`` means 0.1 as in mem0.
            rerank: ignored (AgentBase always reranks). explain: add ``score_details``.
            reference_date: "now" for temporal queries (mem0 OSS rejects it). show_expired: include expired.

        Returns:
            ``{"results": [{..., "score": float, ...}]}`` best first; ``score`` is AgentBase's final score
            (0..1, higher is better), not a cosine. ``score_details`` holds mem0's keys plus ``score_parts``.

        Raises:
            ValueError: empty query, threshold outside [0, 1], bad top_k, no owner id, bad filters.
        """
        top_k = kwargs.get("limit", top_k)
        _check_search_params(threshold=threshold, top_k=top_k)
        if not isinstance(query, str):
            raise ValueError("Invalid query: must be a non-empty string.")
        if not query.strip():
            raise ValueError("Invalid query: cannot be empty or whitespace-only.")
        owners, meta, post = _split_filters(filters, kwargs)
        threshold = DEFAULT_THRESHOLD if threshold is None else float(threshold)
        if top_k == 0:
            return {"results": []}
        args = {"top_k": min(_MAX_FIND, max(top_k * 4, 60)), "context_type": "memory",
                "reference_time": reference_date, "metadata": meta or None, **owners}
        hits = yield _call("find", query.strip(), **args)
        results = []
        for hit in hits:
            e, parts = hit.entry, hit.score_parts
            cosine = parts.get("cosine_similarity")
            if (cosine is not None and cosine < threshold) or (not show_expired and _expired(e)) or \
                    (post and not _match(_payload(e), post)) or _leftover(e):
                continue
            item = _item(e, score=hit.score)
            if explain:
                item["score_details"] = {
                    "semantic_score": cosine or 0.0, "bm25_score": -parts.get("bm25", 0.0),
                    "entity_boost": parts.get("ner_boost", 1.0) - 1.0, "raw_score": parts.get("rrf", 0.0),
                    "max_possible_score": 1.0, "final_score": hit.score, "threshold": threshold,
                    "matched_by": hit.matched_by, "score_parts": dict(parts)}
            results.append(item)
            if len(results) >= top_k:
                break
        return {"results": results}

    def update(self, memory_id: str, text: str | None = None, metadata: dict[str, Any] | None = None,
               expiration_date: Any = _UNSET, data: str | None = None) -> Any:
        """Change a memory's text and/or metadata (mem0 ``Memory.update``); ``created_at`` is kept.

        Args:
            memory_id: the memory. text: new text. data: deprecated alias of ``text`` (``text`` wins).
            metadata: keys merged over the stored metadata (identity keys ignored).
            expiration_date: ``YYYY-MM-DD``/date, or ``None`` to clear it.

        Returns:
            ``{"message": "Memory updated successfully!"}``.

        Raises:
            ValueError: nothing to change, or ``"Memory with id {id} not found. Please provide a valid
                'memory_id'"``.
        """
        if data is not None:
            log.warning("The `data` argument to update() is deprecated and will be removed in the next major "
                        "release. Use `text` instead.")
            text = data if text is None else text
        if text is None and metadata is None and expiration_date is _UNSET:
            raise ValueError("At least one of text, metadata, or expiration_date must be provided.")
        changes = copy.deepcopy(metadata) if metadata is not None else None
        if expiration_date is not _UNSET:
            changes = {**(changes or {}), "expiration_date": _norm_expiration(expiration_date)}
        missing = ValueError(f"Memory with id {memory_id} not found. Please provide a valid 'memory_id'")
        mid = _valid_memory_id(memory_id)
        entry = (yield _call("get", mid)) if mid else None
        if entry is None or entry.superseded_by:  # a replaced fact reads as deleted (see get)
            raise missing
        new_meta = None
        if changes is not None:
            current = {**_payload(entry), "actor_id": entry.metadata.get("actor_id")}
            new_meta = {**entry.metadata, **_strip_identity(changes, current, "update()")}
        try:
            yield _call("update", entry.id, text, metadata=new_meta)
        except NotFoundError:
            raise missing from None
        if text is not None and self._wait:
            yield _call("flush")
        return {"message": MSG_UPDATED}

    def delete(self, memory_id: str) -> Any:
        """Delete one memory from every index (mem0 ``Memory.delete``); a DELETE event stays in its history.

        Returns:
            ``{"message": "Memory deleted successfully!"}``.

        Raises:
            ValueError: ``"Memory with id {id} not found"``.
        """
        mid = _valid_memory_id(memory_id)
        if not mid or not (yield _call("delete", mid)):
            raise ValueError(f"Memory with id {memory_id} not found")
        return {"message": MSG_DELETED}

    def delete_all(self, user_id: Any = None, agent_id: Any = None, run_id: Any = None) -> Any:
        """Delete every memory of a scope (mem0 ``Memory.delete_all``); resources and skills are kept.

        Returns:
            ``{"message": "Memories deleted successfully!"}``.

        Raises:
            ValueError: no id given (use :meth:`reset`), or a malformed id.
        """
        ids = {"user_id": _trim_id(user_id, "user_id"), "agent_id": _trim_id(agent_id, "agent_id"),
               "session_id": _trim_id(run_id, "run_id")}
        if not any(ids.values()):
            raise ValueError("At least one filter is required to delete all memories. If you want to delete "
                             "all memories, use the `reset()` method.")
        yield _call("delete_all", context_type="memory", **{k: v for k, v in ids.items() if v})
        return {"message": MSG_DELETED_ALL}

    def history(self, memory_id: str) -> Any:
        """Changes of a memory, oldest first (mem0 ``Memory.history``); kept after deletion.

        Returns:
            ``[{"id", "memory_id", "old_memory", "new_memory", "event": "ADD"|"UPDATE"|"DELETE", "created_at"
            (the memory's creation, as in mem0), "updated_at" (the event's time), "is_deleted", "actor_id",
            "role"}]``; ``[]`` for an unknown id. ``actor_id``/``role`` come from the live entry
            (``None`` once deleted).
        """
        mid = _valid_memory_id(memory_id)
        if not mid:
            return []
        events = yield _call("history", mid)
        entry = yield _call("get", mid)
        meta = entry.metadata if entry is not None else {}
        first = events[0].created_at.isoformat() if events else None
        out = []
        for ev in events:
            # being replaced by a newer value is what add() reported as a DELETE event
            replaced = ev.event == "UPDATE" and bool(ev.metadata.get("superseded_by"))
            event = "DELETE" if replaced else ev.event
            out.append({"id": ev.id, "memory_id": ev.entry_id, "old_memory": ev.old_value,
                        "new_memory": None if replaced else ev.new_value, "event": event, "created_at": first,
                        "updated_at": ev.created_at.isoformat(), "is_deleted": event == "DELETE",
                        "actor_id": meta.get("actor_id"), "role": meta.get("role")})
        return out

    def reset(self) -> Any:
        """Delete every memory in the file, of every owner and adapter (mem0 ``Memory.reset``).

        Also deletes the adapter's private ``infer=True`` sessions. Resources, skills, other sessions and the
        audit history are kept.

        Returns:
            ``None``.
        """
        yield _call("delete_all", context_type="memory")
        private, offset = [], 0
        while True:
            batch = yield _call("list_sessions", limit=1000, offset=offset)
            private += [s.id for s in batch if s.id.startswith(_SCOPE_PREFIX)]
            if len(batch) < 1000:
                break
            offset += 1000
        for sid in private:
            yield _call("delete_session", sid, delete_memories=True)

    def chat(self, query: str) -> Any:
        """Not implemented, as in mem0.

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError("Chat function not implemented yet.")


_API = ("add", "get", "get_all", "search", "update", "delete", "delete_all", "history", "reset")


class Mem0Adapter(_Mem0Base):
    """Blocking drop-in for ``mem0.Memory`` on an AgentBase file; works inside a running event loop too.

    Example:
        >>> m = Mem0Adapter("./agent.db")                                   # doctest: +SKIP
        >>> m.add("I like pizza", user_id="alice")                          # doctest: +SKIP
        >>> m.search("food preferences", user_id="alice")                   # doctest: +SKIP
    """

    def close(self) -> None:
        """Close the database if this adapter opened it (idempotent)."""
        if self._owned:
            self._owned = False
            run_sync(release_db(self.db))

    def __enter__(self) -> Mem0Adapter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncMem0Adapter(_Mem0Base):
    """Async drop-in for ``mem0.AsyncMemory``: the same methods as :class:`Mem0Adapter`, awaited."""

    def close(self) -> None:
        """Close the database if this adapter opened it (blocking, idempotent; as in mem0, not async)."""
        if self._owned:
            self._owned = False
            run_sync(release_db(self.db))

    async def aclose(self) -> None:
        """Async :meth:`close`."""
        if self._owned:
            self._owned = False
            await release_db(self.db)

    async def __aenter__(self) -> AsyncMem0Adapter:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


def _bind(name: str) -> None:
    op = getattr(_Mem0Base, name)

    @functools.wraps(op)
    def run(self: Mem0Adapter, *args: Any, **kwargs: Any) -> Any:
        return _drive_sync(self.db, op(self, *args, **kwargs))

    @functools.wraps(op)
    async def arun(self: AsyncMem0Adapter, *args: Any, **kwargs: Any) -> Any:
        return await _drive_async(self.db, op(self, *args, **kwargs))

    run.__qualname__, arun.__qualname__ = f"Mem0Adapter.{name}", f"AsyncMem0Adapter.{name}"
    setattr(Mem0Adapter, name, run)
    setattr(AsyncMem0Adapter, name, arun)


for _name in _API:
    _bind(_name)

# mem0's own names, so switching is one import line: ``from agentbase.adapters.mem0 import Memory`` in place of
# ``from mem0 import Memory`` (``Memory()`` opens ./agentbase.db; ``Memory.from_config({...})`` as in mem0).
Memory = Mem0Adapter
AsyncMemory = AsyncMem0Adapter
