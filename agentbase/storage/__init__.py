"""Storage: the engines behind AgentBase (one package per engine) and the engine-neutral row helpers
(``entries.py``) and filter walk (``filters.py``, over each engine's SQL text in its ``filters.py``).

``storage/sqlite/`` holds the default engine: its connections (driver choice, PRAGMAs, extension loading), schema,
migrations and named operations. Code outside ``storage/`` reaches an engine's operations through the connection
it holds (``db.ops.<group>``), never by importing the engine package.
"""

from .sqlite.connection import DRIVER_ERRORS, Database, open_database
from .migrate import migrate_to_postgres
from .sqlite.schema import SCHEMA_VERSION

__all__ = ["DRIVER_ERRORS", "SCHEMA_VERSION", "Database", "migrate_to_postgres", "open_database"]
