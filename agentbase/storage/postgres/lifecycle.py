"""Lifecycle operations on PostgreSQL: recall counts, strength inputs, archive status, and online backups.

The same functions, arguments and row shapes as :mod:`agentbase.storage.sqlite.lifecycle`. What differs, and why:

- ``count_recall`` is one ``UPDATE ... SET access_count = access_count + 1``: the row lock makes concurrent
  recalls from several hosts add up (none is lost), as the single writer does on SQLite.
- Id lists bind as one ``text[]`` (``= ANY(%s)``).
- :func:`backup_file` has no file to copy: it runs ``pg_dump --format=custom`` (the PostgreSQL tool for a
  consistent online copy, https://www.postgresql.org/docs/current/app-pgdump.html) into ``<target>.partial``,
  checks the dump reads back with ``pg_restore --list`` (the counterpart of SQLite's ``quick_check``), then
  renames it, so ``target`` is whole or absent. Restore with ``pg_restore --dbname=URL target``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from ...errors import ConfigError, StorageError
from .connection import redact_url

#: Environment variable naming the ``pg_dump`` program (else ``pg_dump`` on PATH); ``pg_restore`` is looked up
#: beside it first. pg_dump must be at least the server's major version.
PG_DUMP_ENV = "AGENTBASE_PG_DUMP"


async def count_recall(conn: Any, entry_id: str, when: str) -> int:
    """``access_count`` + 1 and ``last_accessed_at`` = ``when`` (DB time text); returns 1, or 0 for an unknown
    id."""
    cur = await conn.execute("UPDATE entries SET access_count = access_count + 1, last_accessed_at = %s "
                             "WHERE id = %s", (when, entry_id))
    return cur.rowcount


async def recall_rows(c: Any, entry_ids: Sequence[str]) -> list[tuple]:
    """``(id, created_at, last_accessed_at, access_count)`` of these entries (unknown ids are absent)."""
    return await c.fetchall("SELECT id, created_at, last_accessed_at, access_count FROM entries "
                            "WHERE id = ANY(%s)", (list(entry_ids),))


async def decay_candidates(c: Any, context_types: Sequence[str], *, active_only: bool) -> list[tuple]:
    """``(rid, id, created_at, last_accessed_at, access_count, status)`` of every entry not superseded, of these
    context types (empty: all), only active ones when ``active_only``."""
    sql = "SELECT rid, id, created_at, last_accessed_at, access_count, status FROM entries WHERE superseded_by IS NULL"
    params: list[Any] = []
    if context_types:
        sql += " AND context_type = ANY(%s)"
        params.append(list(context_types))
    if active_only:
        sql += " AND status = 'active'"
    return await c.fetchall(sql, params)


async def text_and_status(c: Any, entry_id: str) -> tuple[str, str] | None:
    """``(l2_full, status)`` of the entry, or None."""
    row = await c.fetchone("SELECT l2_full, status FROM entries WHERE id = %s", (entry_id,))
    return (row[0], row[1]) if row else None


async def set_status(conn: Any, entry_id: str, status: str, stamp: str, *, touch: bool) -> None:
    """Set the entry's status and ``updated_at`` (and ``last_accessed_at`` too when ``touch``) to ``stamp``."""
    extra = ", last_accessed_at = %s" if touch else ""
    params: list[Any] = [status, stamp] + ([stamp] if touch else []) + [entry_id]
    await conn.execute(f"UPDATE entries SET status = %s, updated_at = %s{extra} WHERE id = %s", params)


def _tools() -> tuple[str, str]:
    dump = os.environ.get(PG_DUMP_ENV) or shutil.which("pg_dump")
    if not dump or not os.path.exists(dump):
        raise ConfigError(f"a PostgreSQL backup needs pg_dump: install the PostgreSQL client tools or set "
                          f"{PG_DUMP_ENV} to the pg_dump program")
    beside = os.path.join(os.path.dirname(dump), "pg_restore")
    restore = beside if os.path.exists(beside) else shutil.which("pg_restore")
    if not restore:
        raise ConfigError(f"pg_restore is neither beside {dump} nor on PATH")
    return dump, restore


def _run(argv: list[str], env: dict[str, str], timeout_s: float | None, url: str) -> None:
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise StorageError(f"{os.path.basename(argv[0])} of {redact_url(url)} took over {timeout_s} s") from exc
    if done.returncode != 0:
        raise StorageError(f"{os.path.basename(argv[0])} of {redact_url(url)} failed: "
                           f"{done.stderr.strip()[-2000:]}")


def backup_file(src_path: Path | str, target: Path, driver: str, busy_timeout_s: float) -> None:
    """Dump the live database to ``target`` (blocking; run it in a thread): ``pg_dump --format=custom`` written as
    ``<target>.partial``, checked with ``pg_restore --list``, then renamed, so ``target`` is whole or absent.

    Args:
        src_path: the database's ``postgresql://`` URL (the SQLite engine's file path). Its password goes to
            pg_dump through ``PGPASSWORD``, never on the command line.
        target: the dump file to write.
        driver: unused (the SQLite engine picks its driver with it).
        busy_timeout_s: seconds pg_dump may wait for a table lock (``--lock-wait-timeout``); the dump itself has
            no time limit.

    Raises:
        ConfigError: pg_dump / pg_restore are not installed.
        StorageError: pg_dump failed or its output does not read back (nothing is left at ``target``).
        OSError: the file cannot be written or renamed.
    """
    del driver
    url = str(src_path)
    dump, restore = _tools()
    parts = urlsplit(url)
    env = dict(os.environ)
    if parts.password is not None:
        env["PGPASSWORD"] = unquote(parts.password)
        user = parts.netloc.rsplit("@", 1)[0].split(":", 1)[0]
        parts = parts._replace(netloc=f"{user}@{parts.netloc.rsplit('@', 1)[1]}")
    bare = urlunsplit(parts._replace(scheme="postgresql"))
    target = Path(target)
    partial = target.with_name(target.name + ".partial")
    try:
        _run([dump, "--format=custom", "--no-owner", f"--lock-wait-timeout={max(1, int(busy_timeout_s * 1000))}",
              f"--file={partial}", f"--dbname={bare}"], env, None, url)
        _run([restore, "--list", str(partial)], env, max(30.0, busy_timeout_s), url)
        partial.replace(target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
