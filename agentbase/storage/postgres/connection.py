"""PostgreSQL connections: a psycopg 3 async pool, transactions, schema creation and error translation.

The same interface as the SQLite :class:`~agentbase.storage.sqlite.connection.Database` (``transaction()``,
``fetchall``/``fetchone``, ``ops``, ``close``), so the engine-neutral code holds either. Differences that matter:

- Several writers at once: PostgreSQL runs concurrent transactions (row locks, MVCC), so there is no process-wide
  write lock; the job queue claims with ``FOR UPDATE SKIP LOCKED`` (``storage/postgres/jobs.py``).
- Every statement runs on a pooled connection (``psycopg_pool.AsyncConnectionPool``); a transaction keeps its
  connection until COMMIT. The pool belongs to the loop that opened it (AgentBase's engine loop): a call from
  another loop takes and returns its connection there (:func:`agentbase._loop.on_loop`).
- Durability: a committed transaction is in the WAL (``synchronous_commit = on``); ``durable=False`` sets
  ``synchronous_commit = off`` for that transaction only (survives a client crash, may lose the last few hundred
  milliseconds on a server crash: https://www.postgresql.org/docs/current/wal-async-commit.html).
- Schema creation and upgrades run under a transaction-level advisory lock, so hosts starting together migrate once.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from ..._loop import on_loop
from ...errors import ConfigError, SchemaVersionError, StorageError
from .bm25 import flush_terms
from .schema import SCHEMA_SQL, SCHEMA_VERSION, UPGRADES

__all__ = ["PgDatabase", "is_postgres_url", "open_postgres", "redact_url"]

_SCHEME = re.compile(r"^postgres(ql)?(\+psycopg)?://", re.IGNORECASE)
MIGRATION_LOCK = 0x616762  # advisory lock key ("agb") held while the schema is created or upgraded


def is_postgres_url(value: object) -> bool:
    """Whether ``value`` is a ``postgresql://`` (or ``postgres://``) URL rather than a SQLite path."""
    return isinstance(value, str) and bool(_SCHEME.match(value.strip()))


def redact_url(url: str) -> str:
    """``url`` with every password replaced by ``***`` (for messages, logs and ``stats()``; never print a secret):
    the one after ``user:`` and each ``password=`` parameter of the query string (libpq reads both:
    https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS); everything else is kept as
    written. A URL too malformed to split keeps only its scheme (``postgresql://***``)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # e.g. an unbalanced "[" in the host: nothing of it is safe to echo
        return url.split("://", 1)[0] + "://***" if "://" in url else "***"
    if password is not None:
        netloc = parts.netloc.rsplit("@", 1)
        user = netloc[0].split(":", 1)[0]
        parts = parts._replace(netloc=f"{user}:***@{netloc[1]}")
    if parts.query:
        parts = parts._replace(query="&".join(_redact_param(p) for p in parts.query.split("&")))
    return urlunsplit(parts)


def _redact_param(param: str) -> str:
    """One ``key=value`` of a URL query, its value ``***`` when the key (percent-decoded, any case) is ``password``."""
    key, eq, _ = param.partition("=")
    return f"{key}=***" if eq and unquote(key).strip().lower() == "password" else param


def _driver() -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:  # pragma: no cover - the extra is missing
        raise ConfigError("a postgresql:// URL needs the postgres extra: pip install 'agentbase[postgres]'") from exc
    return psycopg, psycopg_pool


def _ops() -> Any:
    """This engine's package of named operations (``agentbase.storage.postgres``), imported by now."""
    return sys.modules[__package__]


MIN_SERVER_VERSION = 180000  # PostgreSQL 18: RETURNING old.* / new.* (entries, ingest)
MIN_PGVECTOR = (0, 8)  # pgvector 0.8: iterative index scans (hnsw.iterative_scan, vectors.py)


async def _check_pgvector(conn: Any, where: str) -> None:
    """Refuse a server whose pgvector is missing or older than :data:`MIN_PGVECTOR`, before any schema is written."""
    cur = await conn.execute("SELECT COALESCE(installed_version, default_version) FROM pg_available_extensions WHERE name = 'vector'")
    row = await cur.fetchone()
    version = tuple(int(x) for x in re.findall(r"\d+", row[0])[:2]) if row else None
    if version is None or version < MIN_PGVECTOR:
        found = f"pgvector {row[0]}" if row else "no pgvector extension"
        raise StorageError(f"{where} has {found}; AgentBase needs pgvector 0.8 or newer installed on the server "
                           f"(https://github.com/pgvector/pgvector)")


def _set_config_sql(n: int, *, local: bool) -> str:
    """``SELECT set_config(name, value, local), ...`` for ``n`` settings (names and values are parameters)."""
    scope = "true" if local else "false"
    return "SELECT " + ", ".join(f"set_config(%s, %s, {scope})" for _ in range(n))


def _flat(settings: Mapping[str, str]) -> list[str]:
    return [x for pair in settings.items() for x in pair]


class PgResult:
    """Rows of one statement, fetched completely (the same shape as the SQLite engine's ``Result``)."""

    def __init__(self, rows: list[tuple], rowcount: int):
        self.rows = rows
        self.rowcount = rowcount
        self.lastrowid = None  # PostgreSQL has none: operations use RETURNING

    async def fetchone(self) -> tuple | None:
        return self.rows[0] if self.rows else None

    async def fetchall(self) -> list[tuple]:
        return self.rows


class PgWriter:
    """One pooled connection inside an open transaction, as :meth:`PgDatabase.transaction` yields it."""

    def __init__(self, conn: Any):
        self._conn = conn
        # lexeme -> change of its document frequency, written to keyword_terms at COMMIT (bm25.flush_terms)
        self.term_deltas: Counter[str] = Counter()

    @property
    def ops(self) -> Any:
        """This engine's named operations (:mod:`agentbase.storage.postgres`)."""
        return _ops()

    async def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> PgResult:
        """Run one statement (``%s`` placeholders); rows are fetched when it returns any."""
        cur = await self._conn.execute(sql, params or None)
        rows = await cur.fetchall() if cur.description is not None else []
        return PgResult(rows, cur.rowcount)

    async def executemany(self, sql: str, seq: Sequence[Any]) -> None:
        """Run one statement per parameter tuple of ``seq`` (pipelined by psycopg)."""
        async with self._conn.cursor() as cur:
            await cur.executemany(sql, list(seq))

    async def fetchall(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> list[tuple]:
        return (await self.execute(sql, params)).rows

    async def fetchone(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> tuple | None:
        rows = (await self.execute(sql, params)).rows
        return rows[0] if rows else None

    async def fetchall_configured(self, settings: Mapping[str, str], sql: str,
                                  params: Sequence[Any] | None = None) -> list[tuple]:
        """:meth:`fetchall` with server settings (``{name: value}``, e.g. ``hnsw.ef_search``) applied for the rest of
        this transaction (``set_config(..., true)``)."""
        await self._conn.execute(_set_config_sql(len(settings), local=True), _flat(settings))
        return (await self.execute(sql, params)).rows


class PgDatabase:
    """A PostgreSQL database holding AgentBase's schema, reached through a connection pool.

    Attributes:
        url: the connection URL as given (holds the password: never print it; use ``path``).
        path: the URL with its password redacted (what messages and ``stats()["path"]`` show).
        engine: ``"postgres"``.
        parallel_reads: True: reads awaited together run at once, each on a pooled connection.
        driver: ``"psycopg"``.
        vector_engine: ``"pgvector"``.
        degrade_reason: always None (no fallback index on this engine).
    """

    engine = "postgres"
    parallel_reads = True  # each read takes a pooled connection of its own, so reads awaited together overlap

    def __init__(self, url: str, *, busy_timeout_s: float = 30.0, pool_min: int = 1, pool_max: int = 8):
        self.url = url.strip()
        self.path = redact_url(self.url)
        self.busy_timeout_s = float(busy_timeout_s)
        self.pool_min, self.pool_max = max(1, int(pool_min)), max(1, int(pool_max), int(pool_min))
        self.driver = "psycopg"
        self.vector_engine = "pgvector"
        self.degrade_reason: str | None = None
        self._pool: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop that opened the pool (see on_loop)
        self._errors: tuple[type[BaseException], ...] = ()

    async def _configure(self, conn: Any) -> None:
        from pgvector.psycopg import register_vector_async

        await register_vector_async(conn)
        await conn.execute(f"SET statement_timeout = {int(self.busy_timeout_s * 1000)}")
        await conn.execute("SET lock_timeout = %s" % int(self.busy_timeout_s * 1000))
        await conn.commit()

    async def open(self, *, migrate_to: int = SCHEMA_VERSION) -> None:
        """Open the pool, create the schema if absent and check its version.

        Raises:
            SchemaVersionError: the database was created by a newer AgentBase.
            StorageError: the server cannot be reached, the URL is wrong, or pgvector is not installed on it.
            ConfigError: the ``postgres`` extra (psycopg, psycopg-pool, pgvector) is not installed.
        """
        psycopg, psycopg_pool = _driver()
        self._errors = (psycopg.Error, psycopg_pool.PoolTimeout)
        self._loop = asyncio.get_running_loop()
        try:
            # the schema first, on a connection of its own: pooled connections then all know the vector type
            await self._migrate(psycopg, migrate_to)
            self._pool = psycopg_pool.AsyncConnectionPool(
                self.url, min_size=self.pool_min, max_size=self.pool_max, open=False, timeout=self.busy_timeout_s,
                configure=self._configure, kwargs={"autocommit": True})
            await self._pool.open(wait=True, timeout=self.busy_timeout_s)
        except self._errors as exc:
            await self.close()
            raise StorageError(f"cannot open {self.path}: {exc}") from exc
        except BaseException:
            await self.close()
            raise

    async def _migrate(self, psycopg: Any, target: int) -> None:
        conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True,
                                                     connect_timeout=max(1, int(self.busy_timeout_s)))
        async with conn:
            if conn.info.server_version < MIN_SERVER_VERSION:
                raise StorageError(
                    f"{self.path} is PostgreSQL {conn.info.server_version // 10000}; AgentBase needs PostgreSQL 18 or "
                    f"newer (its writes read a row's old and new values with RETURNING old./new.)")
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                cur = await conn.execute("SELECT to_regclass('schema_version') IS NOT NULL")
                exists = (await cur.fetchone())[0]
                current = 0
                if exists:
                    cur = await conn.execute("SELECT MAX(version) FROM schema_version")
                    current = (await cur.fetchone())[0] or 0
                if current > SCHEMA_VERSION:
                    raise SchemaVersionError(
                        f"{self.path} has schema version {current}, newer than this AgentBase ({SCHEMA_VERSION}); "
                        f"upgrade agentbase to open it")
                if current == 0:
                    await _check_pgvector(conn, self.path)
                    await conn.execute(SCHEMA_SQL)
                    await conn.execute("INSERT INTO schema_version(version) VALUES (%s)", (SCHEMA_VERSION,))
                elif current < target:
                    missing = [v for v in range(current + 1, target + 1) if v not in UPGRADES]
                    if missing:
                        raise SchemaVersionError(
                            f"{self.path} has schema version {current}; this AgentBase has no PostgreSQL upgrade "
                            f"to version {missing[0]} (the first PostgreSQL schema was version {min(UPGRADES) - 1})")
                    for version in range(current + 1, target + 1):
                        await conn.execute(UPGRADES[version])
                        await conn.execute("INSERT INTO schema_version(version) VALUES (%s)", (version,))

    @contextlib.asynccontextmanager
    async def transaction(self, *, durable: bool = True) -> AsyncIterator[PgWriter]:
        """A write transaction on one pooled connection: COMMIT when the block exits, ROLLBACK on an exception.

        Args:
            durable: False sets ``synchronous_commit = off`` for this transaction (bookkeeping only: traces,
                recall counts).

        Yields:
            The transaction's :class:`PgWriter`.

        Raises:
            StorageError: a driver error inside the block or at COMMIT (the transaction is rolled back), or the
                database is closed.
            SchemaVersionError: a newer AgentBase upgraded the schema while this process had it open.
        """
        pool = self._pool
        if pool is None:
            raise StorageError("database is closed")
        try:
            # the pool's queue and lock belong to the loop that opened it: take and return the connection there
            conn = await on_loop(self._loop, pool.getconn(), undo=pool.putconn)
            try:
                async with conn, conn.transaction():
                    writer = PgWriter(conn)
                    if not durable:
                        await conn.execute("SET LOCAL synchronous_commit = off")
                    yield writer
                    await flush_terms(writer)
            finally:
                await on_loop(self._loop, pool.putconn(conn), finish=True)
        except self._errors as exc:
            raise StorageError(f"write failed on {self.path}: {exc}") from exc

    @property
    def closed(self) -> bool:
        """True before :meth:`open` and after :meth:`close`."""
        return self._pool is None

    @property
    def ops(self) -> Any:
        """This engine's named operations (:mod:`agentbase.storage.postgres`)."""
        return _ops()

    async def fetchall(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> list[tuple]:
        """Run one read statement (``%s`` placeholders) on a pooled connection; every row as tuples.

        Raises:
            StorageError: the driver failed or the database is closed.
        """
        async def run(conn: Any) -> list[tuple]:
            cur = await conn.execute(sql, params or None)
            return await cur.fetchall()

        return await self._read(run)

    async def fetchone(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> tuple | None:
        """Like :meth:`fetchall` but the first row or None."""
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def fetchall_configured(self, settings: Mapping[str, str], sql: str,
                                  params: Sequence[Any] | None = None) -> list[tuple]:
        """:meth:`fetchall` with server settings (``{name: value}``, e.g. ``hnsw.ef_search``) applied first, on the
        same pooled connection and in the same network round trip (psycopg pipeline mode). The settings stay on
        that connection (session level, no transaction to scope them), so every statement that reads one must
        set it this way.

        Raises:
            StorageError: the driver failed or the database is closed.
        """
        async def run(conn: Any) -> list[tuple]:
            async with conn.pipeline():
                await conn.execute(_set_config_sql(len(settings), local=False), _flat(settings))
                cur = await conn.execute(sql, params or None)
            return await cur.fetchall()

        return await self._read(run)

    async def _read(self, run: Any) -> list[tuple]:
        """``await run(conn)`` on a pooled connection, on the loop that opened the pool (see :func:`on_loop`);
        driver errors as StorageError."""
        if self._pool is None:
            raise StorageError("database is closed")
        return await on_loop(self._loop, self._read_here(run))

    async def _read_here(self, run: Any) -> list[tuple]:
        if self._pool is None:
            raise StorageError("database is closed")
        try:
            async with self._pool.connection() as conn:
                return await run(conn)
        except self._errors as exc:
            raise StorageError(f"query failed on {self.path}: {exc}") from exc

    async def close(self) -> None:
        """Close the pool (idempotent); transactions in flight finish first."""
        pool, self._pool = self._pool, None
        if pool is not None:
            with contextlib.suppress(Exception):
                await on_loop(self._loop, pool.close())


async def open_postgres(url: str, *, busy_timeout_s: float = 30.0, pool_min: int = 1, pool_max: int = 8,
                        migrate_to: int = SCHEMA_VERSION) -> PgDatabase:
    """Open (creating the schema if needed) the PostgreSQL database at ``url``.

    Args:
        url: ``postgresql://user:password@host:port/dbname`` (libpq URL; ``?host=/socket/dir`` for a socket).
        busy_timeout_s: seconds a statement or lock wait may take before it fails (``statement_timeout``,
            ``lock_timeout``), and the pool's connect timeout.
        pool_min, pool_max: connections the pool keeps open / may open.
        migrate_to: schema version wanted (only :data:`SCHEMA_VERSION` is created on this engine).

    Returns:
        An open :class:`PgDatabase`.

    Raises:
        SchemaVersionError, StorageError, ConfigError: see :meth:`PgDatabase.open`.
    """
    db = PgDatabase(url, busy_timeout_s=busy_timeout_s, pool_min=pool_min, pool_max=pool_max)
    await db.open(migrate_to=migrate_to)
    return db
