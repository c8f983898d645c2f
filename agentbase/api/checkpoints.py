"""Checkpoint methods: durable graph-state snapshots for agent runtimes (the LangGraph checkpointer's storage).

A checkpoint belongs to a thread (``thread_id``) and a namespace (``checkpoint_ns``, ``""`` for the root graph)
and is keyed by its ``checkpoint_id``; ids of one thread and namespace sort in creation order (LangGraph uses
uuid6). Snapshots, channel values and pending writes are the caller's serialised bytes, stored unread in their own
tables: they are not memories and never appear in :meth:`find`, :meth:`list_entries` or stats counts. Every write
is one durable transaction: a call that returned is committed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._loop import bridged
from ..errors import ValidationError
from ..models import CheckpointRecord, CheckpointWrite, utcnow
from ..timeutil import from_db_time, to_db_time
from ..validation import _SURROGATE, check_int, check_json, check_limit

__all__ = ["CheckpointsAPI"]


def _key(value: Any, what: str, *, allow_empty: bool = False) -> str:
    """A thread id, namespace, checkpoint id, channel or type tag: a str without NUL or lone surrogates."""
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, got {type(value).__name__}")
    if not value and not allow_empty:
        raise ValidationError(f"{what} must not be empty")
    if "\x00" in value or _SURROGATE.search(value):
        raise ValidationError(f"{what} holds a NUL or a lone surrogate code point")
    return value


def _opt_key(value: Any, what: str, *, allow_empty: bool = False) -> str | None:
    return None if value is None else _key(value, what, allow_empty=allow_empty)


def _bytes(value: Any, what: str) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise ValidationError(f"{what} must be bytes, got {type(value).__name__}")
    return bytes(value)


def _keys(values: Any, what: str) -> list[str]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise ValidationError(f"{what} must be a list of strings, got {type(values).__name__}")
    return [_key(v, what) for v in values]


def _version(value: Any, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValidationError(f"{what} must be a str, int or float, got {type(value).__name__}")
    return _key(str(value), what)


def _record(d: dict[str, Any]) -> CheckpointRecord:
    d["writes"] = [CheckpointWrite(task_id=t, idx=i, channel=c, type=ty, value=v, task_path=p)
                   for t, i, c, ty, v, p in d["writes"]]
    d["created_at"] = from_db_time(d["created_at"])
    return CheckpointRecord(**d)


class CheckpointsAPI:
    """Methods mixed into :class:`~agentbase.engine.AgentBase`; see its docstring for construction."""

    # ------------------------------------------------------------------ checkpoints
    @bridged
    async def put_checkpoint(self, thread_id: str, checkpoint_id: str, *, checkpoint_type: str, checkpoint: bytes,
                             checkpoint_ns: str = "", parent_checkpoint_id: str | None = None,
                             metadata: dict[str, Any] | None = None,
                             channel_versions: dict[str, str | int | float] | None = None,
                             blobs: Sequence[tuple[str, str | int | float, str, bytes]] = ()) -> CheckpointRecord:
        """Store one checkpoint and the channel values it introduces, in one durable transaction.

        Args:
            thread_id: the thread (non-empty). checkpoint_id: the checkpoint's id (non-empty; ids of a thread and
                namespace must sort in creation order). checkpoint_ns: the namespace (``""`` = root).
            checkpoint_type, checkpoint: the serialised snapshot (a type tag and bytes), stored unread.
            parent_checkpoint_id: the checkpoint this one follows, if any.
            metadata: a JSON object (str keys, no NaN/infinity); its top-level keys are filterable in
                :meth:`list_checkpoints`, and a str ``run_id`` key is what :meth:`delete_checkpoint_runs` matches.
            channel_versions: channel -> version (str, int or float; stored as ``str(version)``) of every channel
                the snapshot holds; :meth:`get_checkpoint` returns the stored value of each.
            blobs: ``(channel, version, type, value)`` for the channel values new in this checkpoint; a channel
                version stored before (by an earlier checkpoint of this thread and namespace) is replaced.

        Returns:
            The stored :class:`~agentbase.models.CheckpointRecord` (``blobs`` and ``writes`` empty; read it back
            with :meth:`get_checkpoint` for those). A checkpoint stored before under the same key is replaced.

        Raises:
            ValidationError: a bad id, type tag, bytes, metadata or version; nothing is written.
        """
        thread_id = _key(thread_id, "thread_id")
        checkpoint_id = _key(checkpoint_id, "checkpoint_id")
        checkpoint_ns = _key(checkpoint_ns, "checkpoint_ns", allow_empty=True)
        parent = _opt_key(parent_checkpoint_id, "parent_checkpoint_id")
        type_ = _key(checkpoint_type, "checkpoint_type")
        payload = _bytes(checkpoint, "checkpoint")
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, dict):
            raise ValidationError(f"metadata must be a dict, got {type(metadata).__name__}")
        metadata = check_json(dict(metadata), "metadata")
        if channel_versions is not None and not isinstance(channel_versions, dict):
            raise ValidationError("channel_versions must be a dict of channel -> version")
        versions = {_key(ch, "channel"): _version(v, f"channel_versions[{ch!r}]")
                    for ch, v in (channel_versions or {}).items()}
        rows = []
        for blob in blobs:
            if not isinstance(blob, (tuple, list)) or len(blob) != 4:
                raise ValidationError("each blob must be a (channel, version, type, value) tuple")
            ch, ver, t, v = blob
            rows.append((_key(ch, "channel"), _version(ver, "blob version"), _key(t, "blob type"),
                         _bytes(v, "blob value")))
        run_id = metadata.get("run_id")
        now = to_db_time(utcnow())
        db = await self._open()
        await db.ops.checkpoints.put_checkpoint(
            db, thread_id=thread_id, checkpoint_ns=checkpoint_ns, checkpoint_id=checkpoint_id,
            parent_checkpoint_id=parent, type_=type_, checkpoint=payload, metadata=metadata,
            channel_versions=versions, run_id=run_id if isinstance(run_id, str) else None, blobs=rows, created_at=now)
        return _record({"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id,
                        "parent_checkpoint_id": parent, "type": type_, "checkpoint": payload, "metadata": metadata,
                        "channel_versions": versions, "blobs": {}, "writes": [], "created_at": now})

    @bridged
    async def put_checkpoint_writes(self, thread_id: str, checkpoint_id: str,
                                    writes: Sequence[tuple[str, int, str, str, bytes, str]], *,
                                    checkpoint_ns: str = "") -> int:
        """Store pending writes of a checkpoint, in one durable transaction.

        Args:
            thread_id, checkpoint_id, checkpoint_ns: the checkpoint (it need not be stored yet).
            writes: ``(task_id, idx, channel, type, value, task_path)`` tuples; ``idx`` is an int. A write whose
                ``(task_id, idx)`` is already stored for this checkpoint is kept when ``idx >= 0`` (a retried task
                does not duplicate its writes) and replaced when ``idx < 0`` (LangGraph's special channels).

        Returns:
            The number of writes given.

        Raises:
            ValidationError: a bad id, index, type tag or value; nothing is written.
        """
        thread_id = _key(thread_id, "thread_id")
        checkpoint_id = _key(checkpoint_id, "checkpoint_id")
        checkpoint_ns = _key(checkpoint_ns, "checkpoint_ns", allow_empty=True)
        rows = []
        for w in writes:
            if not isinstance(w, (tuple, list)) or len(w) != 6:
                raise ValidationError("each write must be a (task_id, idx, channel, type, value, task_path) tuple")
            task, idx, ch, t, v, path = w
            rows.append((_key(task, "task_id", allow_empty=True), check_int(idx, "idx"), _key(ch, "channel"),
                         _key(t, "write type"), _bytes(v, "write value"), _key(path, "task_path", allow_empty=True)))
        if rows:
            db = await self._open()
            await db.ops.checkpoints.put_writes(db, thread_id=thread_id, checkpoint_ns=checkpoint_ns,
                                                checkpoint_id=checkpoint_id, writes=rows)
        return len(rows)

    @bridged
    async def get_checkpoint(self, thread_id: str, checkpoint_id: str | None = None, *,
                             checkpoint_ns: str = "") -> CheckpointRecord | None:
        """One checkpoint with its channel values and pending writes.

        Args:
            thread_id, checkpoint_ns: the thread and namespace. checkpoint_id: the checkpoint; None for the newest
                (largest id) of the thread and namespace.

        Returns:
            The :class:`~agentbase.models.CheckpointRecord`, or None if there is none.

        Raises:
            ValidationError: a malformed id.
        """
        thread_id = _key(thread_id, "thread_id")
        checkpoint_ns = _key(checkpoint_ns, "checkpoint_ns", allow_empty=True)
        checkpoint_id = _opt_key(checkpoint_id, "checkpoint_id")
        db = await self._open()
        found = await db.ops.checkpoints.get_checkpoint(db, thread_id, checkpoint_ns, checkpoint_id)
        return _record(found) if found else None

    @bridged
    async def list_checkpoints(self, thread_id: str | None = None, *, checkpoint_ns: str | None = None,
                               checkpoint_id: str | None = None, before: str | None = None,
                               metadata_filter: dict[str, Any] | None = None,
                               limit: int | None = None) -> list[CheckpointRecord]:
        """Checkpoints newest first (checkpoint id descending), with channel values and pending writes.

        Args:
            thread_id, checkpoint_ns, checkpoint_id: only these (None: any).
            before: only checkpoints whose id sorts before this one.
            metadata_filter: only checkpoints whose metadata value equals each given value (Python ``==`` on
                top-level keys; a missing key equals None).
            limit: at most this many (1..10,000,000); None for all.

        Returns:
            A list of :class:`~agentbase.models.CheckpointRecord`.

        Raises:
            ValidationError: a malformed id, filter or limit.
        """
        thread_id = _opt_key(thread_id, "thread_id")
        checkpoint_ns = _opt_key(checkpoint_ns, "checkpoint_ns", allow_empty=True)
        checkpoint_id = _opt_key(checkpoint_id, "checkpoint_id")
        before = _opt_key(before, "before")
        if metadata_filter is not None and not isinstance(metadata_filter, dict):
            raise ValidationError(f"metadata_filter must be a dict, got {type(metadata_filter).__name__}")
        flt = {_key(k, "metadata_filter key"): v for k, v in (metadata_filter or {}).items()}
        if limit is not None:
            limit = check_limit(limit, "limit", maximum=10_000_000)
        db = await self._open()
        found = await db.ops.checkpoints.list_checkpoints(db, thread_id=thread_id, checkpoint_ns=checkpoint_ns,
                                           checkpoint_id=checkpoint_id, before_id=before, metadata_filter=flt,
                                           limit=limit)
        return [_record(r) for r in found]

    @bridged
    async def delete_checkpoint_threads(self, thread_ids: Sequence[str]) -> int:
        """Delete every checkpoint, channel value and pending write of these threads (all namespaces), in one
        durable transaction. Unknown threads are skipped.

        Returns:
            The number of checkpoints deleted.

        Raises:
            ValidationError: ``thread_ids`` is not a list of non-empty strings; nothing is deleted.
        """
        ids = _keys(thread_ids, "thread_ids")
        if not ids:
            return 0
        db = await self._open()
        return await db.ops.checkpoints.delete_threads(db, ids)

    @bridged
    async def delete_checkpoints(self, thread_id: str, checkpoint_ids: Sequence[str], *,
                                 checkpoint_ns: str = "") -> int:
        """Delete these checkpoints of one thread and namespace, their pending writes and the channel values no
        remaining checkpoint points at, in one durable transaction. Unknown ids are skipped.

        Returns:
            The number of checkpoints deleted.

        Raises:
            ValidationError: a malformed id or ``checkpoint_ids`` not a list of strings; nothing is deleted.
        """
        thread_id = _key(thread_id, "thread_id")
        checkpoint_ns = _key(checkpoint_ns, "checkpoint_ns", allow_empty=True)
        ids = _keys(checkpoint_ids, "checkpoint_ids")
        if not ids:
            return 0
        db = await self._open()
        return await db.ops.checkpoints.delete_checkpoints(db, thread_id, checkpoint_ns, ids)

    @bridged
    async def delete_checkpoint_runs(self, run_ids: Sequence[str]) -> int:
        """Delete the checkpoints whose metadata ``run_id`` is one of ``run_ids`` (every thread and namespace),
        their pending writes, and the channel values no remaining checkpoint points at; one durable transaction.

        Returns:
            The number of checkpoints deleted.

        Raises:
            ValidationError: ``run_ids`` is not a list of non-empty strings; nothing is deleted.
        """
        ids = _keys(run_ids, "run_ids")
        if not ids:
            return 0
        db = await self._open()
        return await db.ops.checkpoints.delete_runs(db, ids)

    @bridged
    async def copy_checkpoint_thread(self, source_thread_id: str, target_thread_id: str) -> int:
        """Copy every checkpoint, channel value and pending write of one thread to another (same checkpoint ids
        and namespaces; rows the target holds under the same keys are replaced), in one durable transaction.

        Returns:
            The number of checkpoints copied (0 for an unknown source).

        Raises:
            ValidationError: a malformed id; nothing is written.
        """
        source = _key(source_thread_id, "source_thread_id")
        target = _key(target_thread_id, "target_thread_id")
        if source == target:
            return 0
        db = await self._open()
        return await db.ops.checkpoints.copy_thread(db, source, target)

    @bridged
    async def prune_checkpoints(self, thread_ids: Sequence[str], *, keep_latest: bool = True) -> int:
        """Keep only the newest checkpoint of each namespace of these threads (with its pending writes and the
        channel values it points at), or with ``keep_latest=False`` delete them all; one durable transaction.

        Returns:
            The number of checkpoints deleted.

        Raises:
            ValidationError: ``thread_ids`` is not a list of non-empty strings or ``keep_latest`` not a bool.
        """
        ids = _keys(thread_ids, "thread_ids")
        if not isinstance(keep_latest, bool):
            raise ValidationError(f"keep_latest must be True or False, got {keep_latest!r}")
        if not ids:
            return 0
        db = await self._open()
        return await db.ops.checkpoints.prune_threads(db, ids, keep_latest=keep_latest)
