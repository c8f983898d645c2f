"""Memory lifecycle: strength with recall-driven reinforcement, decay passes, archive/unarchive and backups.

Strength follows the exponential forgetting curve (Ebbinghaus 1885) with spaced-repetition style reinforcement:

    strength = exp(-age / tau),   tau = tau0 * 1.5 ** access_count

``age`` is the time since the memory was last recalled (``last_accessed_at``), else since it was created
(``created_at``); ``tau0`` is the time constant of a memory never recalled (default 30 days; after ``tau0`` an
unrecalled memory has strength ``1/e`` = 0.37). Every recall (:meth:`AgentBase.recall`, and each result of
``find()`` while ``retrieval.count_recalls`` is on) multiplies ``tau`` by 1.5 and restarts the clock, the same shape as the stability growth in
MemoryBank (Zhong et al., AAAI 2024). A decay pass archives memories whose strength fell below a threshold
(``status='archived'``: kept in the file, its history and indexes, but hidden from ``find``/``list`` by default)
or, with ``purge``, deletes them. Archive and unarchive record an ``UPDATE`` history event.

Backups use SQLite's online backup API (``Connection.backup``), which copies a consistent snapshot page by page
while other connections keep reading and writing (https://www.sqlite.org/backup.html).
"""

from __future__ import annotations

import asyncio
import math
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from .errors import StorageError, ValidationError
from .models import utcnow
from .retrieval.filters import filters_from_kwargs
from .storage import DRIVER_ERRORS
from .storage.entries import delete_entry_row, row_to_entry
from .timeutil import from_db_time, parse_time, to_db_time
from .validation import check_id, check_path

__all__ = ["DEFAULT_TAU0_DAYS", "REINFORCEMENT", "strength"]

DEFAULT_TAU0_DAYS = 30.0
REINFORCEMENT = 1.5  # tau multiplier per recall
_DAY_S = 86400.0
_BACKUP_NAME = re.compile(r"^(?P<stem>.+)-(?P<stamp>\d{8}T\d{6}\d{6}Z)\.(db|dump)$")


def strength(created_at: datetime, last_accessed_at: datetime | None, access_count: int, now: datetime,
             tau0_days: float = DEFAULT_TAU0_DAYS) -> float:
    """Memory strength in ``(0, 1]``: ``exp(-age / (tau0 * 1.5 ** access_count))``.

    Args:
        created_at: when the memory was stored (UTC).
        last_accessed_at: last recall (UTC) or None; the age counts from it when present.
        access_count: number of recalls.
        now: the reference time (UTC).
        tau0_days: time constant of an unrecalled memory, in days (> 0).

    Returns:
        1.0 for a memory of age 0 (or from the future), falling towards 0 with age.
    """
    age_days = max(0.0, (now - (last_accessed_at or created_at)).total_seconds() / _DAY_S)
    tau = tau0_days * REINFORCEMENT ** max(0, int(access_count))
    return math.exp(-age_days / tau)


def _check_tau(tau0_days: Any) -> float:
    if isinstance(tau0_days, bool) or not isinstance(tau0_days, (int, float)) or not 0 < tau0_days < math.inf:
        raise ValidationError("tau0_days must be a positive, finite number of days")
    return float(tau0_days)


def _check_ids(entry_ids: Any) -> list[str]:
    if isinstance(entry_ids, str) or not isinstance(entry_ids, list):
        raise ValidationError("entry_ids must be a list of entry ids")
    return [check_id(i, "entry_id") for i in entry_ids]


async def recall(ab: Any, entry_ids: list[str], now: Any = None) -> int:
    """See :meth:`AgentBase.recall`."""
    ids = _check_ids(entry_ids)
    if not ids:
        return 0
    when = to_db_time(parse_time(now) or utcnow())
    db = await ab._open()
    n = 0
    async with db.transaction() as conn:
        for eid in dict.fromkeys(ids):
            n += await conn.ops.lifecycle.count_recall(conn, eid, when)
    return n


async def strengths(ab: Any, entry_ids: list[str], *, now: Any, tau0_days: float) -> dict[str, float]:
    """See :meth:`AgentBase.strengths`."""
    ids = _check_ids(entry_ids)
    tau0 = _check_tau(tau0_days)
    ref = parse_time(now) or utcnow()
    db = await ab._open()
    out: dict[str, float] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        rows = await db.ops.lifecycle.recall_rows(db, chunk)
        for eid, created, accessed, count in rows:
            out[eid] = strength(from_db_time(created), from_db_time(accessed), count, ref, tau0)
    return out


async def decay_pass(ab: Any, *, threshold: float, purge: bool, now: Any, tau0_days: float,
                     context_type: str | list[str] | None) -> dict[str, Any]:
    """See :meth:`AgentBase.decay_pass`."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        raise ValidationError("threshold must be a number between 0 and 1")
    tau0 = _check_tau(tau0_days)
    ref = parse_time(now) or utcnow()
    checked = filters_from_kwargs({"context_type": context_type}).context_type  # a misspelt type is an error
    one = isinstance(checked, str) or hasattr(checked, "value")
    types = [getattr(t, "value", t) for t in ([checked] if one else list(checked or []))]
    if checked is not None and not types:  # an empty list asks for no type, as in every filter
        return {"scanned": 0, "archived": [], "deleted": [], "threshold": float(threshold), "tau0_days": tau0,
                "now": ref.isoformat()}
    db = await ab._open()
    rows = await db.ops.lifecycle.decay_candidates(db, types, active_only=not purge)
    weak: list[tuple[int, str, float, str]] = []
    for rid, eid, created, accessed, count, status in rows:
        s = strength(from_db_time(created), from_db_time(accessed), count, ref, tau0)
        if s < threshold:
            weak.append((rid, eid, s, status))
    stamp = to_db_time(utcnow())
    archived: list[str] = []
    deleted: list[str] = []
    async with db.transaction() as conn:
        for rid, eid, s, status in weak:
            if purge:
                row = await conn.ops.entries.row_by_rid(conn, rid)
                if row is not None:
                    await delete_entry_row(conn, rid, row_to_entry(row), engine=db.vector_engine, now=stamp)
                    deleted.append(eid)
            elif status == "active":
                if await _set_status(conn, eid, "archived", stamp, {"reason": "decay", "strength": round(s, 6)}):
                    archived.append(eid)
    return {"scanned": len(rows), "archived": archived, "deleted": deleted, "threshold": float(threshold),
            "tau0_days": tau0, "now": ref.isoformat()}


async def _set_status(conn: Any, entry_id: str, status: str, stamp: str, meta: dict[str, Any]) -> bool:
    row = await conn.ops.lifecycle.text_and_status(conn, entry_id)
    if row is None or row[1] == status:
        return False
    await conn.ops.lifecycle.set_status(conn, entry_id, status, stamp, touch=status == "active")
    await conn.ops.entries.record_history(conn, entry_id, "UPDATE", row[0], row[0], stamp,
                         {"fields": ["status"], "status": {"old": row[1], "new": status}, **meta})
    return True


async def set_status(ab: Any, entry_ids: list[str], status: str, reason: str | None) -> list[str]:
    """See :meth:`AgentBase.archive_entries` / :meth:`AgentBase.unarchive_entries`."""
    ids = _check_ids(entry_ids)
    db = await ab._open()
    stamp = to_db_time(utcnow())
    changed: list[str] = []
    async with db.transaction() as conn:
        for eid in dict.fromkeys(ids):
            if await _set_status(conn, eid, status, stamp, {"reason": reason or "manual"}):
                changed.append(eid)
    return changed


# ------------------------------------------------------------------------------------------------ backups
def _database_name(url: str) -> str:
    """The database a PostgreSQL URL names (``agentbase`` when it names none), safe as a file name stem."""
    from urllib.parse import urlsplit

    name = urlsplit(url).path.lstrip("/") or "agentbase"
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def list_backups(dest_dir: Path, stem: str) -> list[Path]:
    """Backup files of the database ``stem`` in ``dest_dir``, oldest first (timestamped names sort by time)."""
    if not dest_dir.is_dir():
        return []
    found = [p for p in dest_dir.iterdir() if p.is_file() and (m := _BACKUP_NAME.match(p.name))
             and m.group("stem") == stem]
    return sorted(found, key=lambda p: p.name)


async def backup(ab: Any, dest_dir: str | Path, *, keep: int | None) -> dict[str, Any]:
    """See :meth:`AgentBase.backup`."""
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
        raise ValidationError("keep must be a positive integer or None")
    db = await ab._open()
    dest = check_path(dest_dir, "dest_dir")
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create backup folder {dest}: {exc}") from exc
    # a SQLite file is copied to <stem>-<time>Z.db; a PostgreSQL database is dumped (pg_dump custom format) to
    # <database name>-<time>Z.dump
    stem, suffix = (ab.path.stem, ".db") if ab.url is None else (_database_name(ab.url), ".dump")
    now = utcnow()
    target = dest / f"{stem}-{now.strftime('%Y%m%dT%H%M%S%f')}Z{suffix}"
    while target.exists():  # two backups within one microsecond
        now = utcnow()
        target = dest / f"{stem}-{now.strftime('%Y%m%dT%H%M%S%f')}Z{suffix}"
    try:
        await asyncio.to_thread(db.ops.lifecycle.backup_file, ab.path, target, db.driver, ab.settings.storage.busy_timeout_s)
    except DRIVER_ERRORS as exc:
        raise StorageError(f"backup to {target} failed: {exc}") from exc
    except OSError as exc:
        raise StorageError(f"backup to {target} failed: {exc}") from exc
    removed: list[str] = []
    if keep is not None:
        for old in list_backups(dest, stem)[:-keep]:
            try:
                old.unlink()
                removed.append(str(old))
            except OSError:
                pass
    return {"path": str(target), "size_bytes": target.stat().st_size, "created_at": now.isoformat(),
            "removed": removed, "kept": [str(p) for p in list_backups(dest, stem)]}
