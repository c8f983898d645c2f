"""SQLite connections: driver choice, PRAGMAs, extension loading, transactions and error translation.

Driver choice (ARCHITECTURE.md section 4): the stdlib ``sqlite3`` when it can load extensions, else
``sqlean-py`` (a maintained SQLite build with extension loading and FTS5). Reads and writes both run on the
engine loop thread, each on its own connection (see :class:`Writer` and :meth:`Database.fetchall`).
``sqlite-vec`` provides the vector index; if it cannot load, vector search falls back to a numpy scan over the
stored vectors and the reason is reported (``Database.degrade_reason``).

Concurrency: WAL, ``busy_timeout``, one writer connection per process (serialised by an ``asyncio.Lock``) and a
separate reader connection, both used on the loop that opened the file (AgentBase's engine loop; a call from another
loop is forwarded there, see :func:`agentbase._loop.on_loop`); ``BEGIN IMMEDIATE`` and reads are retried on
SQLITE_BUSY with async sleeps, so several processes can share one file and the loop is never parked on a lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ..._loop import loop_ended, on_loop
from ...errors import SchemaVersionError, StorageError
from .schema import MIGRATIONS, SCHEMA_VERSION
from .sqlfuncs import register as register_sql_functions

__all__ = ["DRIVER_ERRORS", "Database", "Result", "Writer", "not_agentbase_reason", "open_database",
           "read_only_value"]


def _ops() -> Any:
    """This engine's package of named operations (``agentbase.storage.sqlite``), imported by now."""
    return sys.modules[__package__]


def _driver_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [sqlite3.Error]
    with contextlib.suppress(ImportError):
        import sqlean

        errors.append(sqlean.Error)
    return tuple(errors)


DRIVER_ERRORS = _driver_errors()


def _load_vec(conn: Any) -> str | None:
    """Load sqlite-vec into ``conn``; return None on success or the reason it failed."""
    try:
        import sqlite_vec
    except ImportError:
        return "sqlite-vec is not installed"
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    except (AttributeError, *DRIVER_ERRORS) as exc:
        return f"sqlite-vec failed to load: {exc}"
    return None


def _choose_driver() -> tuple[Callable[..., Any], str]:
    """Return (connect function, driver name): stdlib sqlite3 when it loads extensions, else sqlean."""
    probe = sqlite3.connect(":memory:")
    try:
        if hasattr(probe, "enable_load_extension") and _load_vec(probe) is None:
            return sqlite3.connect, "sqlite3"
    finally:
        probe.close()
    try:
        import sqlean
    except ImportError:
        return sqlite3.connect, "sqlite3"
    return sqlean.connect, "sqlean"


WRITER_BUSY_MS = 50  # longest SQLite-internal lock wait of the writer (milliseconds); see Database.open


def _is_busy(exc: BaseException) -> bool:
    msg = str(exc).lower()
    return "locked" in msg or "busy" in msg


class Result:
    """Rows of one statement, fetched completely so no statement stays open (an open SELECT would keep a stale
    WAL snapshot and make the next ``BEGIN IMMEDIATE`` fail with SQLITE_BUSY)."""

    def __init__(self, rows: list[tuple], rowcount: int, lastrowid: int | None):
        self.rows = rows
        self.rowcount = rowcount
        self.lastrowid = lastrowid

    async def fetchone(self) -> tuple | None:
        return self.rows[0] if self.rows else None

    async def fetchall(self) -> list[tuple]:
        return self.rows


class Writer:
    """The writer connection as seen inside :meth:`Database.transaction`.

    Statements run synchronously on the calling (engine loop) thread: a write transaction holds the process's write
    lock anyway, and a hop to a connection thread costs ~0.2-0.7 ms per statement on these machines against a few
    microseconds for the statement itself, which made multi-statement writes (a session commit) hop-bound. COMMIT
    runs here too, so the connection is never used from two threads. Only ``BEGIN IMMEDIATE`` can wait on another
    process in WAL mode; it is retried with async sleeps
    (:meth:`Database._retry_busy`), so the loop is never parked on a lock.
    """

    def __init__(self, conn: Any):
        self._conn = conn

    @property
    def ops(self) -> Any:
        """This engine's named operations (:mod:`agentbase.storage.sqlite`)."""
        return _ops()

    async def fetchall(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple]:
        """Run a query inside the transaction and return every row (reads see the transaction's own writes)."""
        return (await self.execute(sql, params)).rows

    async def fetchone(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> tuple | None:
        """Like :meth:`fetchall` but return the first row or None."""
        rows = (await self.execute(sql, params)).rows
        return rows[0] if rows else None

    async def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Result:
        cur = self._conn.execute(sql, params)
        try:
            return Result(cur.fetchall(), cur.rowcount, cur.lastrowid)
        finally:
            cur.close()

    async def executemany(self, sql: str, seq: Iterable[Any]) -> None:
        self._conn.executemany(sql, seq).close()


#: tables every AgentBase file has had since schema version 1
_OWN_TABLES = frozenset({"schema_version", "meta", "entries", "sessions", "messages"})


class Database:
    """Two driver connections to one file (a serialised writer and a reader), both used on the engine loop thread,
    plus driver facts.

    Attributes:
        path: the database file.
        driver: ``"sqlite3"`` or ``"sqlean"``.
        vector_engine: ``"sqlite-vec"`` or ``"numpy"`` (the fallback).
        degrade_reason: why the fallback is used, or None.
        parallel_reads: False: every statement runs on the engine loop's thread, one at a time.
    """

    engine = "sqlite"  # the engine's name (the PostgreSQL engine's connection says "postgres")
    parallel_reads = False  # statements run on the engine loop's thread, one at a time

    def __init__(self, path: Path, busy_timeout_s: float, vector_engine: str = "auto", synchronous: str = "FULL",
                 mmap_mb: int = 0):
        self.path = path
        self.mmap_bytes = max(0, int(mmap_mb)) * 1024 * 1024
        self.busy_timeout_s = busy_timeout_s
        self._requested_engine = vector_engine
        self.synchronous = "NORMAL" if synchronous == "NORMAL" else "FULL"
        self.driver = ""
        self.vector_engine = "numpy"
        self.degrade_reason: str | None = None
        self.writer: Any = None  # a driver connection, used on the engine loop thread only
        self.reader: Any = None  # a driver connection, used on the engine loop thread only
        self._vec_failures: list[str] = []
        self._write_lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop that opened the file (see _write_turn)
        self._migrated = False  # set once the file is at this code's schema version (see _check_version)

    def _connect_raw(self, busy_ms: int) -> Any:
        """A driver connection with sqlite-vec loaded (when wanted), foreign keys and the synchronous level."""
        connect, self.driver = _choose_driver()
        # an absolute name: SQLite builds with URI filenames on would read "file:x.db" as a URI, not that file
        conn = connect(os.path.abspath(self.path), timeout=busy_ms / 1000, isolation_level=None,
                       check_same_thread=False)
        if self._requested_engine != "numpy":
            reason = _load_vec(conn)
            if reason:
                self._vec_failures.append(reason)
        conn.execute(f"PRAGMA busy_timeout = {busy_ms}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        conn.execute(f"PRAGMA mmap_size = {self.mmap_bytes}")
        return conn

    def _set_engine(self) -> None:
        if self._requested_engine == "numpy":
            self.vector_engine, self.degrade_reason = "numpy", "vector engine set to numpy in settings"
        elif self._vec_failures:
            self.vector_engine, self.degrade_reason = ("numpy", self._vec_failures[0]
                                                       + "; using the numpy fallback index")
        else:
            self.vector_engine, self.degrade_reason = "sqlite-vec", None

    async def open(self, *, migrate_to: int = SCHEMA_VERSION) -> None:
        """Open both connections, enable WAL and apply pending migrations.

        Raises:
            SchemaVersionError: the file is newer than this code.
            StorageError: the file cannot be opened (not a database, permissions, ...).
        """
        self._loop = asyncio.get_running_loop()
        try:
            # The writer sleeps inside SQLite on a lock for at most WRITER_BUSY_MS (it would park the event loop):
            # that covers transient WAL locks, while a write lock held by another process makes BEGIN IMMEDIATE
            # fail fast and retry with async sleeps for up to busy_timeout_s. The reader waits the same way (in WAL
            # a read waits only on rare recovery and checkpoint locks).
            self.writer = self._connect_raw(WRITER_BUSY_MS)
            register_sql_functions(self.writer)
            self.reader = self._connect_raw(WRITER_BUSY_MS)
            self._set_engine()
            await self._refuse_foreign_file()
            await self._retry_busy(lambda: Writer(self.writer).execute("PRAGMA journal_mode = WAL"))
            await self._migrate(migrate_to)
            self._migrated = True
        except DRIVER_ERRORS as exc:
            await self.close()
            raise StorageError(f"cannot open {self.path}: {exc}") from exc
        except BaseException:
            await self.close()
            raise

    async def _refuse_foreign_file(self) -> None:
        """Refuse, before anything is written (WAL mode included), an SQLite file with tables or views that is
        not AgentBase's (its first schema version's tables missing; a ``schema_version`` table alone is common to
        migration tools): another program's database would otherwise get AgentBase's schema added to it. Names
        starting ``sqlite_`` are SQLite's own (reserved in any case)."""
        names = [r[0] for r in await self._retry_busy(lambda: self._read(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' "
            "ESCAPE '\\' ORDER BY name", ()))]
        if names and not _OWN_TABLES <= set(names):
            shown = ", ".join(repr(n) for n in names[:5]) + (", ..." if len(names) > 5 else "")
            raise StorageError(f"{self.path} is not an AgentBase database: it is another SQLite database (tables: "
                               f"{shown}); it was left unchanged. Pass a new file or an AgentBase one.")

    async def _retry_busy(self, op: Callable[[], Any]) -> Any:
        deadline = time.monotonic() + self.busy_timeout_s
        delay = 0.01
        while True:
            try:
                return await op()
            except DRIVER_ERRORS as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 0.5)

    async def _migrate(self, target: int) -> None:
        # A file already at ``target`` needs no write: read its version first, so opening it never waits for the
        # write lock another process holds (a read-only `agentbase find` waited out a long import, then failed).
        # A file at another version is checked again inside the write transaction below.
        try:
            row = await self._retry_busy(lambda: self._read("SELECT MAX(version) FROM schema_version", ()))
        except DRIVER_ERRORS as exc:
            if "no such table" not in str(exc):
                raise
        else:
            if row and row[0][0] == target:
                return
        async with self.transaction() as conn:
            await conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = await (await conn.execute("SELECT MAX(version) FROM schema_version")).fetchone()
            current = row[0] or 0
            if current > SCHEMA_VERSION:
                raise SchemaVersionError(
                    f"{self.path} has schema version {current}, newer than this AgentBase ({SCHEMA_VERSION}); "
                    f"upgrade agentbase to open it"
                )
            for version in range(current + 1, target + 1):
                for statement in _split_sql(MIGRATIONS[version - 1]):
                    await conn.execute(statement)
                await conn.execute("INSERT INTO schema_version(version) VALUES (?)", (version,))

    async def _check_version(self, writer: Writer) -> None:
        """Refuse a write to a file that a newer AgentBase upgraded after this process opened it: this code
        would write rows in formats the newer schema no longer uses (an old process writing on during a rolling
        upgrade left rows that keyword search could not find). One indexed read of a one-row-per-version table
        inside the write transaction, so no upgrade can land between the check and the write."""
        row = await writer.execute("SELECT MAX(version) FROM schema_version")
        current = (await row.fetchone() or (None,))[0] or 0
        if current > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.path} was upgraded to schema version {current} by a newer AgentBase while this process had "
                f"it open (this code writes version {SCHEMA_VERSION}); upgrade agentbase and restart this process")

    @contextlib.asynccontextmanager
    async def transaction(self, *, durable: bool = True) -> AsyncIterator[Writer]:
        """Serialise a write transaction: ``BEGIN IMMEDIATE`` (retried on SQLITE_BUSY), then COMMIT or ROLLBACK.

        Args:
            durable: False commits without an fsync (``synchronous = NORMAL`` for this transaction only): in WAL
                mode the write survives a process crash and reaches the disk with the next durable commit or
                checkpoint, but not a power loss (https://www.sqlite.org/pragma.html#pragma_synchronous). For
                bookkeeping the caller never waits for (retrieval traces, recall counts); user writes stay durable.

        Yields:
            The writer connection; everything executed on it commits atomically when the block exits.

        Raises:
            StorageError: a driver error inside the block (the transaction is rolled back).
        """
        if self.writer is None:
            raise StorageError("database is closed")
        async with self._write_turn():
            writer = Writer(self.writer)
            relaxed = not durable and self.synchronous == "FULL"
            if relaxed:
                await writer.execute("PRAGMA synchronous = NORMAL")
            try:
                try:
                    await self._retry_busy(lambda: writer.execute("BEGIN IMMEDIATE"))
                except DRIVER_ERRORS as exc:
                    raise StorageError(f"cannot start a write on {self.path} (another process held the write lock "
                                       f"for over busy_timeout_s = {self.busy_timeout_s:g} s): {exc}") from exc
                try:
                    if self._migrated:
                        await self._check_version(writer)
                    yield writer
                except BaseException as exc:
                    with contextlib.suppress(*DRIVER_ERRORS):
                        await writer.execute("ROLLBACK")
                    if isinstance(exc, DRIVER_ERRORS):
                        raise StorageError(f"write failed: {exc}") from exc
                    raise
                try:
                    # Synchronous like every writer statement: a COMMIT on another thread could still be running
                    # when a cancelled caller rolls back or closes, and one connection must never be used from
                    # two threads at once.
                    await writer.execute("COMMIT")
                except DRIVER_ERRORS as exc:
                    with contextlib.suppress(*DRIVER_ERRORS):
                        await writer.execute("ROLLBACK")
                    raise StorageError(f"commit failed: {exc}") from exc
            finally:
                if relaxed:
                    with contextlib.suppress(*DRIVER_ERRORS):
                        await writer.execute("PRAGMA synchronous = FULL")

    @contextlib.asynccontextmanager
    async def _write_turn(self) -> AsyncIterator[None]:
        """Hold the process's write lock. Like every asyncio lock it belongs to one loop, the one that opened the
        file: a transaction from another loop takes and releases it there (:func:`agentbase._loop.on_loop`)."""
        lock = self._write_lock
        await on_loop(self._loop, lock.acquire(), undo=lambda _: _release(lock))
        try:
            yield
        finally:
            await on_loop(self._loop, _release(lock), finish=True)

    @property
    def closed(self) -> bool:
        """True before :meth:`open` and after :meth:`close`."""
        return self.writer is None

    @property
    def ops(self) -> Any:
        """This engine's named operations (:mod:`agentbase.storage.sqlite`), for reads on the reader connection."""
        return _ops()

    async def fetchall(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple]:
        """Run a read query on the reader connection and return all rows.

        The statement runs on the calling (engine loop) thread, like writes: a hop to a connection thread cost
        0.25-1.2 ms per statement on these 2-core machines (more right after a query embedding, whose OpenMP threads
        keep spinning), against 5 microseconds for an indexed read, and a ``find()`` makes about five reads
        (docs/benchmarks.md, perf). Execute and fetch run with no await between them, so no other coroutine's
        statement can run inside this statement's read transaction and see its snapshot. A long read holds the
        loop for its duration, as a write transaction does.

        Args:
            sql: one SELECT statement with ``?`` placeholders.
            params: its parameters.

        Returns:
            every row, as tuples.

        Raises:
            StorageError: the driver failed, the file stayed locked for ``busy_timeout_s``, or the database is closed.
        """
        if self.reader is None:
            raise StorageError("database is closed")
        try:
            return await on_loop(self._loop, self._retry_busy(lambda: self._read(sql, params)))
        except DRIVER_ERRORS as exc:
            raise StorageError(f"query failed: {exc}") from exc

    async def _read(self, sql: str, params: Sequence[Any] | dict[str, Any]) -> list[tuple]:
        if self.reader is None:  # closed while a busy retry slept
            raise StorageError("database is closed")
        cur = self.reader.execute(sql, params)
        try:
            return cur.fetchall()
        finally:
            cur.close()

    async def fetchone(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> tuple | None:
        """Like :meth:`fetchall` but return the first row or None."""
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def close(self) -> None:
        """Close both connections (idempotent)."""
        reader, writer = self.reader, self.writer
        self.reader = self.writer = None
        if reader is not None:
            with contextlib.suppress(Exception):
                reader.close()
        if writer is not None:
            if loop_ended(self._loop):
                writer.close()  # the loop that opened it has ended: no transaction can be in flight on it
                return
            # Let a transaction in flight finish first.
            async with self._write_turn():
                with contextlib.suppress(Exception):
                    writer.close()


async def _release(lock: asyncio.Lock) -> None:
    lock.release()


def _split_sql(script: str) -> Iterable[str]:
    """Split a migration script into statements, keeping trigger bodies (``BEGIN ... END;``) whole."""
    buf: list[str] = []
    depth = 0
    for line in script.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        buf.append(line)
        upper = stripped.upper()
        if upper.startswith("CREATE TRIGGER"):
            depth = 1
        if depth and upper == "END;":
            depth = 0
        if not depth and stripped.endswith(";"):
            yield "\n".join(buf)
            buf = []
    if buf:
        yield "\n".join(buf)


async def open_database(path: str | Path, *, busy_timeout_s: float = 30.0, vector_engine: str = "auto",
                        synchronous: str = "FULL", mmap_mb: int = 0, migrate_to: int = SCHEMA_VERSION) -> Database:
    """Open (creating if needed) and migrate the database at ``path``.

    Args:
        path: file path; parent folders must exist.
        busy_timeout_s: seconds to wait for another process's write lock.
        vector_engine: ``"auto"``, ``"sqlite-vec"`` or ``"numpy"``.
        synchronous: ``"FULL"`` (durable across power loss) or ``"NORMAL"`` (across process crashes).
        mmap_mb: MiB of the file each connection reads through a memory map (``PRAGMA mmap_size``); 0 = none.
        migrate_to: schema version to migrate to (tests use older versions to exercise upgrades).

    Returns:
        An open :class:`Database`.

    Raises:
        SchemaVersionError, StorageError: see :meth:`Database.open`.
    """
    db = Database(Path(path), busy_timeout_s, vector_engine, synchronous, mmap_mb)
    await db.open(migrate_to=migrate_to)
    return db


def read_only_value(path: str | Path, key: str) -> str | None:
    """``meta[key]`` of the SQLite file at ``path``, read through a read-only connection (``mode=ro``: no WAL switch,
    no migration, no file created), or None when the file is absent, not a database or has no such key. For the
    demo's check of a file it may replace, before anything opens it."""
    try:
        con = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)  # as_uri escapes # ? %
        try:
            row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return None
    return None if row is None else row[0]


def not_agentbase_reason(path: str | Path) -> str | None:
    """Why the existing file at ``path`` is not an AgentBase SQLite database, or None when it is one (it has the
    tables every AgentBase file has had since schema version 1, as :meth:`Database.open` requires of a file with
    tables). Read through a read-only connection (``mode=ro``): nothing is created or changed, no WAL switch, no
    migration. For ``agentbase migrate``, which must not turn an empty or foreign file into a database.

    Returns:
        ``"it is empty (no tables)"`` (a 0-byte file too), ``"it is another SQLite database (tables: ...)"``,
        ``"it is not an SQLite database (<driver message>)"``, or None.
    """
    try:
        con = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)  # as_uri escapes # ? %
        try:
            names = sorted(r[0] for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' "
                "ESCAPE '\\'"))
        finally:
            con.close()
    except sqlite3.Error as exc:
        return f"it is not an SQLite database ({exc})"
    if not names:
        return "it is empty (no tables)"
    if not _OWN_TABLES <= set(names):
        shown = ", ".join(repr(n) for n in names[:5]) + (", ..." if len(names) > 5 else "")
        return f"it is another SQLite database (tables: {shown})"
    return None
