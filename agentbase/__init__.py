"""AgentBase: a context database for AI agents in one SQLite file.

Memories, resources, skills, sessions and retrieval traces, found by FTS5 BM25 + vector search + entity tags fused
with reciprocal rank fusion. Start with :class:`AgentBase` (async) or :class:`SyncAgentBase` (blocking).
"""

from .config import Settings, load_settings
from .engine import AgentBase
from .errors import (
                     AgentBaseError,
                     ConfigError,
                     ConflictError,
                     DimensionMismatchError,
                     EmbeddingError,
                     MissingDependencyError,
                     NotFoundError,
                     SchemaVersionError,
                     StorageError,
                     UsageError,
                     ValidationError,
)
from .models import ContextType, Entry, HistoryEvent, Message, Scope, SearchResult, Session, Trace, TraceStep
from .retrieval.filters import Filters
from .sync import SyncAgentBase, release_db, resolve_db, run_sync
from .validation import check_json

__version__ = "0.1.0"

__all__ = [
    "AgentBase",
    "AgentBaseError",
    "ConfigError",
    "ConflictError",
    "ContextType",
    "DimensionMismatchError",
    "EmbeddingError",
    "Entry",
    "Filters",
    "HistoryEvent",
    "Message",
    "MissingDependencyError",
    "NotFoundError",
    "SchemaVersionError",
    "Scope",
    "SearchResult",
    "Session",
    "Settings",
    "StorageError",
    "SyncAgentBase",
    "Trace",
    "TraceStep",
    "check_json",
    "UsageError",
    "ValidationError",
    "load_settings",
    "release_db",
    "resolve_db",
    "run_sync",
]
