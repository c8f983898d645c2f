"""Copying an AgentBase SQLite file into a PostgreSQL database (``agentbase migrate --from FILE --to URL``).

Everything is copied (entries with their tags, history and vectors, sessions and messages, the graph, skills,
traces, jobs, heartbeats, LangGraph checkpoints, the embedding cache and meta) in one PostgreSQL transaction, so a
failed copy leaves the destination empty and can simply be run again. The destination must be empty: a second run
into a database that already holds rows refuses and names what is there, instead of merging or duplicating.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import StorageError
from .sqlite.connection import open_database

__all__ = ["migrate_to_postgres"]


async def migrate_to_postgres(source: str | Path, target_url: str, *, batch_size: int = 2000,
                              progress: Callable[[str, int], None] | None = None) -> dict[str, tuple[int, int]]:
    """Copy the SQLite database ``source`` into the empty PostgreSQL database at ``target_url``.

    Args:
        source: an existing AgentBase SQLite file (opened, and upgraded to this code's schema like any open).
        target_url: ``postgresql://...``; its schema is created if absent.
        batch_size: rows per read and per insert batch.
        progress: called as ``progress(table, rows copied so far)`` after each batch.

    Returns:
        ``{table: (rows in the source, rows in the destination)}``, equal for every table.

    Raises:
        StorageError: the source does not exist or is not an AgentBase file, the destination cannot be reached,
            already holds rows (nothing is written), or a count differs after the copy (rolled back).
        SchemaVersionError: either side is newer than this AgentBase.
    """
    from .postgres.connection import open_postgres

    path = Path(source)
    if not path.is_file():
        raise StorageError(f"{path} does not exist: name an AgentBase SQLite file to copy from")
    src = await open_database(path)
    try:
        dst = await open_postgres(target_url)
        try:
            tables = [t for t, _ in src.ops.dump.COPY_TABLES]
            held = {t: n for t in tables if (n := await dst.ops.load.row_count(dst, t))}
            if held:
                shown = ", ".join(f"{t} ({n} rows)" for t, n in held.items())
                raise StorageError(f"{dst.path} already holds AgentBase data ({shown}); migrate copies into an "
                                   f"empty database only, and nothing was written")
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
        finally:
            await dst.close()
    finally:
        await src.close()
