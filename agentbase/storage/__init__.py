"""Storage: connections (driver choice, PRAGMAs, extension loading), schema and migrations."""

from .connection import Database, open_database
from .schema import SCHEMA_VERSION

__all__ = ["SCHEMA_VERSION", "Database", "open_database"]
