"""Copying an AgentBase SQLite file into a PostgreSQL database (``agentbase migrate --from FILE --to URL``).

Everything is copied (entries with their tags, history and vectors, sessions and messages, the graph, skills,
traces, jobs, heartbeats, LangGraph checkpoints, the embedding cache and meta) in one PostgreSQL transaction, so a
failed copy leaves the destination empty and can simply be run again. The destination must be empty: a second run
into a database that already holds rows refuses and names what is there, instead of merging or duplicating. Two
copies into one database at the same time take turns (a session-level advisory lock, :data:`COPY_LOCK`, held from
the emptiness check to the commit), so the second sees the first's rows and refuses the same way. The source is
checked read-only first: a missing path, a folder, an empty file or a file that is not an AgentBase database is
refused unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import StorageError, ValidationError
from .sqlite.connection import not_agentbase_reason, open_database

__all__ = ["COPY_LOCK", "migrate_to_postgres"]

COPY_LOCK = 0x61676D  # advisory lock key ("agm") a migrate holds on the destination from its check to its commit


async def migrate_to_postgres(source: str | Path, target_url: str, *, batch_size: int = 2000,
                              progress: Callable[[str, int], None] | None = None) -> dict[str, tuple[int, int]]:
    """Copy the SQLite database ``source`` into the empty PostgreSQL database at ``target_url``.

    Args:
        source: an existing AgentBase SQLite file (checked read-only first; then opened, and upgraded to this
            code's schema like any open).
        target_url: ``postgresql://...``; its schema is created if absent.
        batch_size: rows per read and per insert batch.
        progress: called as ``progress(table, rows copied so far)`` after each batch.

    Returns:
        ``{table: (rows in the source, rows in the destination)}``, equal for every table.

    Raises:
        ValidationError: the source does not exist, is a folder, or is not an AgentBase SQLite file (empty, another
            program's database, not a database); it is left unchanged and nothing is written.
        StorageError: the destination cannot be reached, already holds rows (nothing is written; also what the
            second of two copies started together gets, once the first has committed), or a count differs after
            the copy (rolled back).
        SchemaVersionError: either side is newer than this AgentBase.
    """
    from .postgres.connection import open_postgres

    path = _checked_source(source)
    src = await open_database(path)
    try:
        dst = await open_postgres(target_url)
        lock = None
        try:
            tables = [t for t, _ in src.ops.dump.COPY_TABLES]
            lock = await _copy_lock(dst)
            await _refuse_if_held(dst, tables)
            counts: dict[str, tuple[int, int]] = {}
            async with dst.transaction() as conn:
                await conn.ops.load.begin(conn)
                for table in tables:
                    copied = 0
                    async for cols, rows in src.ops.dump.read_batches(src, table, batch_size):
                        copied += await conn.ops.load.insert_rows(conn, table, cols, rows)
                        if progress is not None:
                            progress(table, copied)
                    counts[table] = (await src.ops.dump.count(src, table),
                                     await conn.ops.load.row_count(conn, table))
                await conn.ops.load.finish(conn)
                wrong = {t: c for t, c in counts.items() if c[0] != c[1]}
                if wrong:
                    raise StorageError(f"row counts differ after the copy, rolled back: {wrong}")
            return counts
        except StorageError as exc:
            if _unique_violation(exc):  # rows written by something other than a migrate since the check
                await _refuse_if_held(dst, tables, cause=exc)
            raise
        finally:
            if lock is not None:
                await lock.close()  # ends the session: the advisory lock goes with it
            await dst.close()
    finally:
        await src.close()


def _checked_source(source: str | Path) -> Path:
    """``source`` as a Path once it is known to be an AgentBase SQLite file (read-only check: nothing changes).

    Raises:
        ValidationError: missing, a folder, not a regular file, or not an AgentBase database.
    """
    path = Path(source)
    if path.is_dir():
        raise ValidationError(f"{path} is a directory: name the AgentBase SQLite file to copy from")
    if not path.exists():
        raise ValidationError(f"{path} does not exist: name an AgentBase SQLite file to copy from")
    if not path.is_file():
        raise ValidationError(f"{path} is not a regular file: name an AgentBase SQLite file to copy from")
    reason = not_agentbase_reason(path)
    if reason is not None:
        raise ValidationError(f"{path} is not an AgentBase database: {reason}; it was left unchanged and nothing "
                              f"was copied")
    return path


async def _copy_lock(dst: Any) -> Any:
    """A connection of its own to ``dst`` holding :data:`COPY_LOCK` (session level, so it outlives the copy's
    transaction on the pool); waits while another migrate holds it. Close the connection to release it.

    Raises:
        StorageError: the server cannot be reached or the lock cannot be taken.
    """
    import psycopg

    try:
        conn = await psycopg.AsyncConnection.connect(dst.url, autocommit=True)
    except psycopg.Error as exc:
        raise StorageError(f"cannot open {dst.path}: {exc}") from exc
    try:
        await conn.execute("SELECT pg_advisory_lock(%s)", (COPY_LOCK,))
    except psycopg.Error as exc:
        await conn.close()
        raise StorageError(f"cannot lock {dst.path} for the copy: {exc}") from exc
    return conn


async def _refuse_if_held(dst: Any, tables: list[str], *, cause: BaseException | None = None) -> None:
    """Raise the "already holds AgentBase data" StorageError naming each table of ``tables`` with rows in ``dst``
    (chained to ``cause``); return when all are empty."""
    held = {t: n for t in tables if (n := await dst.ops.load.row_count(dst, t))}
    if held:
        shown = ", ".join(f"{t} ({n} rows)" for t, n in held.items())
        raise StorageError(f"{dst.path} already holds AgentBase data ({shown}); migrate copies into an "
                           f"empty database only, and nothing was written") from cause


def _unique_violation(exc: BaseException) -> bool:
    """Whether ``exc`` was caused by a PostgreSQL unique violation (SQLSTATE 23505)."""
    cause = exc.__cause__
    return getattr(cause, "sqlstate", None) == "23505"
