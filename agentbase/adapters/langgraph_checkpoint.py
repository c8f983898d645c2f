"""LangGraph checkpointer on AgentBase: ``graph.compile(checkpointer=AgentBaseSaver(db))``.

:class:`AgentBaseSaver` is a ``langgraph.checkpoint.base.BaseCheckpointSaver`` whose checkpoints, channel values
and pending writes live in the AgentBase file (its checkpoint tables, see
:meth:`~agentbase.engine.AgentBase.put_checkpoint`), beside the memories but never among them: they do not
appear in ``find()``. One class serves sync graphs (``invoke``/``stream``) and async ones
(``ainvoke``/``astream``), as LangGraph's ``InMemorySaver`` does, and works inside a running event loop.
Values are serialised with ``self.serde`` (LangGraph's ``JsonPlusSerializer`` unless another serializer is given);
metadata is stored as JSON, as the SQLite and Postgres savers store it.

Every write is one durable transaction: a ``put`` or ``put_writes`` that returned is committed, so another
process opening the same file resumes the thread where it stopped.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any
from uuid import UUID

from agentbase import AgentBase, release_db, resolve_db, run_sync
from agentbase.errors import MissingDependencyError, ValidationError
from agentbase.models import CheckpointRecord

try:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import (
        WRITES_IDX_MAP,
        BaseCheckpointSaver,
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        get_checkpoint_id,
        get_serializable_checkpoint_metadata,
    )
    from langgraph.checkpoint.serde.base import SerializerProtocol
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("langgraph-checkpoint", "langgraph") from exc

__all__ = ["AgentBaseSaver", "CheckpointConfigError"]

_EMPTY = "empty"  # type tag of a channel that has a version but no value (LangGraph's convention)


class CheckpointConfigError(ValidationError, KeyError):
    """A config that does not name what the call needs (``configurable.thread_id``, or ``checkpoint_id`` for
    ``put_writes``). A ``KeyError``, as LangGraph's own savers raise for it, and an AgentBase
    :class:`~agentbase.errors.ValidationError`. Nothing is written.

    Attributes:
        key: the missing or unusable key (``"configurable"``, ``"thread_id"``, ``"checkpoint_id"``, ...).
    """

    def __init__(self, key: str, detail: str):
        self.key = key
        super().__init__(f"{key}: {detail}")


def _configurable(config: Any) -> Mapping[str, Any]:
    if not isinstance(config, Mapping):
        raise CheckpointConfigError("configurable", f"config must be a dict, got {type(config).__name__}")
    conf = config.get("configurable")
    if not isinstance(conf, Mapping):
        raise CheckpointConfigError("configurable", "config has no 'configurable' dict holding a thread_id")
    return conf


def _thread_id(value: Any, what: str = "thread_id") -> str:
    """Thread ids are strings; ints and UUIDs (which LangGraph users pass too) are stored as ``str(value)``."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, UUID)) and not isinstance(value, bool):
        return str(value)
    raise CheckpointConfigError(what, f"must be a string, got {type(value).__name__}")


def _target(config: Any, *, need_id: bool = False) -> tuple[str, str, str | None]:
    """``(thread_id, checkpoint_ns, checkpoint_id)`` of a config; ``checkpoint_ns`` defaults to ``""``."""
    conf = _configurable(config)
    if conf.get("thread_id") is None:
        raise CheckpointConfigError("thread_id", "config['configurable'] must name the thread "
                                    "({'configurable': {'thread_id': ...}}), as every LangGraph checkpointer needs")
    ns = conf.get("checkpoint_ns") or ""
    if not isinstance(ns, str):
        raise CheckpointConfigError("checkpoint_ns", f"must be a string, got {type(ns).__name__}")
    checkpoint_id = conf.get("checkpoint_id") or None
    if checkpoint_id is not None and not isinstance(checkpoint_id, str):
        raise CheckpointConfigError("checkpoint_id", f"must be a string, got {type(checkpoint_id).__name__}")
    if need_id and checkpoint_id is None:
        raise CheckpointConfigError("checkpoint_id", "put_writes needs the config of a stored checkpoint "
                                    "(the one put() returned)")
    return _thread_id(conf["thread_id"]), ns, checkpoint_id


def _json_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Metadata as a JSON object (tuples become lists, as in LangGraph's SQL savers)."""
    try:
        return json.loads(json.dumps(dict(metadata), ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"checkpoint metadata must be JSON-serialisable: {exc}") from exc


def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}


def _strategy(strategy: Any) -> bool:
    if strategy not in ("keep_latest", "delete"):
        raise ValidationError(f"prune strategy must be 'keep_latest' or 'delete', got {strategy!r}")
    return strategy == "keep_latest"


_DELTA_COUNTERS = "counters_since_delta_snapshot"  # metadata key LangGraph writes for threads with DeltaChannels


def _delta_chain(recs: Sequence[CheckpointRecord]) -> set[str]:
    """Ids to keep when pruning one namespace to its newest checkpoint (``recs`` newest first): the newest, plus
    the ancestors a ``DeltaChannel`` needs to rebuild its value there. Its channels are the keys of the newest
    checkpoint's ``counters_since_delta_snapshot`` metadata; a channel is rebuilt from the writes stored under
    each ancestor back to the nearest one that stores a value for it (a snapshot), so that chain is kept
    (the rule of ``BaseCheckpointSaver.prune``'s DeltaChannel note, langgraph-checkpoint 4.x)."""
    latest = recs[0]
    counters = latest.metadata.get(_DELTA_COUNTERS)
    pending = {ch for ch in counters if not _stored(latest, ch)} if isinstance(counters, dict) else set()
    keep = {latest.checkpoint_id}
    by_id = {r.checkpoint_id: r for r in recs}
    parent = latest.parent_checkpoint_id
    while pending and parent in by_id:
        rec = by_id[parent]
        keep.add(rec.checkpoint_id)
        pending = {ch for ch in pending if not _stored(rec, ch)}
        parent = rec.parent_checkpoint_id
    return keep


def _stored(rec: CheckpointRecord, channel: str) -> bool:
    """Whether ``rec`` stores a value (not LangGraph's "empty" marker) for ``channel``."""
    blob = rec.blobs.get(channel)
    return blob is not None and blob[0] != _EMPTY


def _thread_ids(values: Any, what: str) -> list[str]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise ValidationError(f"{what} must be a list of ids, got {type(values).__name__}")
    return [_thread_id(v, what) for v in values]


class AgentBaseSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer storing checkpoints and pending writes in an AgentBase file.

    Args:
        db: an :class:`~agentbase.AgentBase`, a :class:`~agentbase.SyncAgentBase` or a database path (opened
            here and handed back by :meth:`close`).
        serde: the serializer for checkpoints, channel values and writes (default: LangGraph's
            ``JsonPlusSerializer``).

    Every ``BaseCheckpointSaver`` method exists in its sync and async form: ``get_tuple``/``aget_tuple``,
    ``list``/``alist`` (``filter`` on metadata, ``before``, ``limit``), ``put``/``aput``,
    ``put_writes``/``aput_writes``, ``delete_thread``, ``delete_for_runs``, ``copy_thread`` and ``prune``
    (``strategy="keep_latest"`` or ``"delete"``). Channel versions are strings that sort in order
    (``get_next_version``).

    Raises (from the methods):
        CheckpointConfigError: a config without ``configurable.thread_id`` (or, for ``put_writes``, without
            ``checkpoint_id``); a ``KeyError`` as in LangGraph's savers. Nothing is written.
        agentbase.errors.ValidationError: metadata that is not JSON-serialisable, an unknown prune strategy.

    Example:
        >>> saver = AgentBaseSaver("agent.db")                                 # doctest: +SKIP
        >>> graph = builder.compile(checkpointer=saver)                       # doctest: +SKIP
        >>> graph.invoke(inputs, {"configurable": {"thread_id": "t1"}})        # doctest: +SKIP
    """

    def __init__(self, db: Any, *, serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        self._db: AgentBase
        self._db, self._owned = resolve_db(db)

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Hand back the database if this saver opened it from a path (otherwise do nothing)."""
        if self._owned:
            self._owned = False
            run_sync(release_db(self._db))

    async def aclose(self) -> None:
        """Async :meth:`close`."""
        if self._owned:
            self._owned = False
            await release_db(self._db)

    def __enter__(self) -> AgentBaseSaver:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> AgentBaseSaver:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def with_allowlist(self, extra_allowlist: Any) -> AgentBaseSaver:
        """LangGraph's shallow clone with a stricter msgpack allowlist (made by compiled graphs); the clone shares
        this saver's database and never hands it back (only this saver's :meth:`close` does)."""
        clone = super().with_allowlist(extra_allowlist)
        if clone is not self:
            clone._owned = False
        return clone

    # ------------------------------------------------------------------ conversions
    def _tuple(self, rec: CheckpointRecord) -> CheckpointTuple:
        checkpoint = self.serde.loads_typed((rec.type, rec.checkpoint))
        checkpoint["channel_values"] = {ch: self.serde.loads_typed(blob) for ch, blob in rec.blobs.items()
                                        if blob[0] != _EMPTY}
        parent = (_config(rec.thread_id, rec.checkpoint_ns, rec.parent_checkpoint_id)
                  if rec.parent_checkpoint_id else None)
        return CheckpointTuple(
            config=_config(rec.thread_id, rec.checkpoint_ns, rec.checkpoint_id), checkpoint=checkpoint,
            metadata=rec.metadata, parent_config=parent,
            pending_writes=[(w.task_id, w.channel, self.serde.loads_typed((w.type, w.value))) for w in rec.writes])

    def _put_args(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                  new_versions: ChannelVersions) -> dict[str, Any]:
        """Validate and serialise a ``put`` before anything is written."""
        thread_id, ns, parent = _target(config)
        snapshot = dict(checkpoint)
        values = snapshot.pop("channel_values", None) or {}
        type_, payload = self.serde.dumps_typed(snapshot)
        blobs = [(ch, ver, *(self.serde.dumps_typed(values[ch]) if ch in values else (_EMPTY, b"")))
                 for ch, ver in new_versions.items()]
        return dict(thread_id=thread_id, checkpoint_id=checkpoint["id"], checkpoint_ns=ns,
                    parent_checkpoint_id=parent, checkpoint_type=type_, checkpoint=payload,
                    metadata=_json_metadata(get_serializable_checkpoint_metadata(config, metadata)),
                    channel_versions=dict(checkpoint.get("channel_versions") or {}), blobs=blobs)

    def _writes_args(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                     task_path: str) -> dict[str, Any]:
        thread_id, ns, checkpoint_id = _target(config, need_id=True)
        rows = [(task_id, WRITES_IDX_MAP.get(channel, idx), channel, *self.serde.dumps_typed(value), task_path)
                for idx, (channel, value) in enumerate(writes)]
        return dict(thread_id=thread_id, checkpoint_id=checkpoint_id, writes=rows, checkpoint_ns=ns)

    @staticmethod
    def _list_args(config: RunnableConfig | None, filter: dict[str, Any] | None, before: RunnableConfig | None,
                   limit: int | None) -> dict[str, Any] | None:
        """Arguments of ``list_checkpoints``, or None when nothing can match (``limit <= 0``)."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise ValidationError(f"limit must be an int or None, got {limit!r}")
        if limit is not None and limit <= 0:
            return None
        if filter is not None and not isinstance(filter, Mapping):
            raise ValidationError(f"filter must be a dict of metadata values, got {type(filter).__name__}")
        thread_id = ns = checkpoint_id = None
        if config is not None:
            conf = _configurable(config)
            if conf.get("thread_id") is not None:
                thread_id = _thread_id(conf["thread_id"])
            ns = conf.get("checkpoint_ns")
            checkpoint_id = conf.get("checkpoint_id") or None
        return dict(thread_id=thread_id, checkpoint_ns=ns, checkpoint_id=checkpoint_id,
                    before=get_checkpoint_id(before) if before else None,
                    metadata_filter=dict(filter or {}), limit=limit)

    # ------------------------------------------------------------------ sync
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (``checkpoint_id``), else the newest of its thread and namespace, with
        channel values and pending writes (ordered by task path, task id, index); None if there is none."""
        return run_sync(self.aget_tuple(config))

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None, limit: int | None = None) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of ``config``'s thread (all threads when None), of its ``checkpoint_ns`` when
        the config has that key (else every namespace), whose metadata equals ``filter`` on each key, older than
        ``before``, at most ``limit``."""
        args = self._list_args(config, filter, before, limit)
        if args is None:
            return iter(())
        return iter([self._tuple(r) for r in run_sync(self._db.list_checkpoints(**args))])

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        """Store a checkpoint (channel values only for ``new_versions``; the others are read from the versions
        stored before) and return its config ``{"configurable": {thread_id, checkpoint_ns, checkpoint_id}}``."""
        return run_sync(self.aput(config, checkpoint, metadata, new_versions))

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        """Store a task's pending writes for the checkpoint ``config`` names; a repeated (task, index) is kept
        once, special channels (error, interrupt, ...) are replaced."""
        run_sync(self.aput_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of a thread, all namespaces (an unknown thread is a no-op)."""
        run_sync(self.adelete_thread(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) whose metadata ``run_id`` is one of ``run_ids``."""
        run_sync(self.adelete_for_runs(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of one thread to another (same checkpoint ids)."""
        run_sync(self.acopy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``"keep_latest"``: keep only the newest checkpoint (and its writes) of each namespace of these threads,
        plus, for a graph with ``DeltaChannel`` s, the ancestors back to each such channel's last snapshot (which
        its value is rebuilt from); ``"delete"``: delete them all.

        Raises:
            agentbase.errors.ValidationError: another strategy; nothing is deleted.
        """
        run_sync(self.aprune(thread_ids, strategy=strategy))

    # ------------------------------------------------------------------ async
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`."""
        thread_id, ns, checkpoint_id = _target(config)
        rec = await self._db.get_checkpoint(thread_id, checkpoint_id, checkpoint_ns=ns)
        return self._tuple(rec) if rec is not None else None

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None, limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`."""
        args = self._list_args(config, filter, before, limit)
        if args is None:
            return
        for rec in await self._db.list_checkpoints(**args):
            yield self._tuple(rec)

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        """Async :meth:`put`."""
        args = self._put_args(config, checkpoint, metadata, new_versions)
        await self._db.put_checkpoint(**args)
        return _config(args["thread_id"], args["checkpoint_ns"], args["checkpoint_id"])

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        """Async :meth:`put_writes`."""
        await self._db.put_checkpoint_writes(**self._writes_args(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        await self._db.delete_checkpoint_threads([_thread_id(thread_id)])

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`."""
        await self._db.delete_checkpoint_runs(_thread_ids(run_ids, "run_ids"))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`."""
        await self._db.copy_checkpoint_thread(_thread_id(source_thread_id, "source_thread_id"),
                                              _thread_id(target_thread_id, "target_thread_id"))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`prune`."""
        keep_latest = _strategy(strategy)
        ids = _thread_ids(thread_ids, "thread_ids")
        if not keep_latest:
            await self._db.prune_checkpoints(ids, keep_latest=False)
            return
        for thread_id in ids:
            by_ns: dict[str, list[CheckpointRecord]] = {}
            for rec in await self._db.list_checkpoints(thread_id):
                by_ns.setdefault(rec.checkpoint_ns, []).append(rec)
            if not any(_DELTA_COUNTERS in recs[0].metadata for recs in by_ns.values()):
                await self._db.prune_checkpoints([thread_id])  # no DeltaChannel: one transaction
                continue
            for ns, recs in by_ns.items():
                keep = _delta_chain(recs)
                drop = [r.checkpoint_id for r in recs if r.checkpoint_id not in keep]
                if drop:
                    await self._db.delete_checkpoints(thread_id, drop, checkpoint_ns=ns)

    # ------------------------------------------------------------------ versions
    def get_next_version(self, current: str | int | None, channel: None = None) -> str:
        """The version after ``current``: ``"<counter, 32 digits>.<random fraction, 16 digits>"``, which sorts in
        order as text (the format of LangGraph's own savers; the random part keeps versions written by forked
        runs of one thread apart)."""
        if current is None:
            number = 0
        elif isinstance(current, (int, float)):
            number = int(current)
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"
