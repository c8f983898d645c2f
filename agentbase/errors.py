"""The AgentBase exception tree.

Every error the library raises on purpose derives from :class:`AgentBaseError`. Subclasses also inherit the
builtin a caller would naturally catch::

    AgentBaseError
    ├── ConfigError (ValueError)            bad settings or arguments
    │   ├── ValidationError (ValueError)    bad user input (text, ids, filters); nothing was written
    │   └── DimensionMismatchError          stored vectors have another dimension than the embedder
    ├── NotFoundError (LookupError)         an id that does not exist
    ├── MissingDependencyError (ImportError) an optional extra is not installed; names the pip command
    ├── UsageError (RuntimeError)           API misuse (closed database, sync call on the engine loop)
    ├── ConflictError (RuntimeError)        a conditional write found the data changed since it was read
    ├── StorageError (RuntimeError)         the SQLite driver failed (translated once, at the storage seam)
    │   └── SchemaVersionError              the file was written by a newer AgentBase
    ├── EmbeddingError (RuntimeError)       an embedder failed (recorded on the job, retried with backoff)
    └── LLMError (RuntimeError)             a configured LLM failed permanently (4xx other than 429)
        ├── LLMOutputError                  the model's answer was not the JSON/shape asked for
        └── LLMRetryable                    429/5xx/timeout still failing after the client's retries
            └── LLMUnavailable              the endpoint cannot be reached (refused, DNS, dead): defer
"""

from __future__ import annotations

__all__ = [
    "AgentBaseError",
    "ConfigError",
    "ConflictError",
    "DimensionMismatchError",
    "EmbeddingError",
    "LLMError",
    "LLMOutputError",
    "LLMRetryable",
    "LLMUnavailable",
    "MissingDependencyError",
    "NotFoundError",
    "SchemaVersionError",
    "StorageError",
    "UsageError",
    "ValidationError",
]


class AgentBaseError(Exception):
    """Root of every error AgentBase raises on purpose."""


class ConfigError(AgentBaseError, ValueError):
    """Settings or arguments that cannot be used."""


class ValidationError(ConfigError):
    """User input that is rejected before anything is written (empty text, lone surrogates, bad filters)."""


class DimensionMismatchError(ConfigError):
    """The embedder's dimension differs from the vectors already stored in the file.

    Attributes:
        stored: dimension of the vectors in the file.
        configured: dimension of the configured embedder.
    """

    def __init__(self, stored: int, configured: int, stored_model: str = "", configured_model: str = ""):
        self.stored = stored
        self.configured = configured
        super().__init__(
            f"the database holds {stored}-dimensional vectors (model {stored_model or '?'}) but the configured "
            f"embedder gives {configured} dimensions (model {configured_model or '?'}); run `agentbase reindex` "
            f"to re-embed every entry with the new model, or configure the original embedder. Keyword search "
            f"still works meanwhile."
        )


class NotFoundError(AgentBaseError, LookupError):
    """An entry, session or trace id that does not exist (or is not visible to the caller's scope)."""


class MissingDependencyError(AgentBaseError, ImportError):
    """An optional dependency is missing; the message names the pip command that installs it."""

    def __init__(self, package: str, extra: str):
        self.package = package
        self.extra = extra
        super().__init__(f"{package} is not installed; run: pip install 'agentbase[{extra}]'")


class UsageError(AgentBaseError, RuntimeError):
    """The API was used in a way that cannot work (closed database, sync call from the engine's own loop)."""


class ConflictError(AgentBaseError, RuntimeError):
    """A conditional write (``replace_messages(..., expected_ids=...)``) found that another writer changed the
    data after the caller read it; nothing was written. Read again and retry."""


class StorageError(AgentBaseError, RuntimeError):
    """The SQLite layer failed; the original driver error is chained as ``__cause__``."""


class SchemaVersionError(StorageError):
    """The file was written by a newer AgentBase schema than this code understands (raised on open, or on a write
    when a newer AgentBase upgraded the file after this process opened it)."""


class EmbeddingError(AgentBaseError, RuntimeError):
    """An embedder failed to produce vectors."""


class LLMError(AgentBaseError, RuntimeError):
    """A configured LLM endpoint failed permanently: an HTTP 4xx other than 429 (bad model name, bad key, a
    request the server refuses) or a response body that is not a chat completion. Retrying the same request
    will not help; callers keep their rule-based output.

    Attributes:
        purpose: the call's purpose label (``"summary"``, ``"rerank"``...).
        status: the HTTP status, or None when there was no response.
    """

    def __init__(self, message: str, *, purpose: str = "", status: int | None = None):
        self.purpose = purpose
        self.status = status
        super().__init__(message)


class LLMOutputError(LLMError):
    """The model answered, but not in the shape asked for (invalid JSON, missing keys, an index out of range).
    Callers fall back to the rule-based path and say so."""


class LLMRetryable(LLMError):
    """A transient failure (HTTP 429, 5xx, a timeout) that was still failing after the client's own retries.
    A job handler records it and retries the job later with backoff.

    Attributes:
        retry_after_s: the server's last ``Retry-After`` in seconds, or None.
    """

    def __init__(self, message: str, *, purpose: str = "", status: int | None = None,
                 retry_after_s: float | None = None):
        self.retry_after_s = retry_after_s
        super().__init__(message, purpose=purpose, status=status)


class LLMUnavailable(LLMRetryable):
    """The endpoint could not be reached at all after the client's retries (connection refused, DNS failure, a
    closed port). Job handlers defer the job (it is not failed and keeps its rule-based output)."""
