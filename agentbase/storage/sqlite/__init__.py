"""The SQLite engine's named operations, grouped by what they serve (one module per group).

Callers reach them through the connection they hold, ``db.ops.<group>`` or ``conn.ops.<group>`` (a
:class:`~agentbase.storage.sqlite.connection.Database` or the ``Writer`` of its transaction), never by importing this
package, so the code that calls them does not name the engine. Each operation takes that connection first: reads
accept either (the reader or the open transaction), writes need the ``Writer``. Rows come back as tuples in the
column order each function documents; turning them into models is the caller's (engine-neutral) work.

Groups moved here so far: ``graph``, ``scopes`` (heartbeats), ``lifecycle``, ``skills``, ``sessions`` (and
messages), ``archives``, ``traces`` (and the debug views), ``checkpoints`` (LangGraph), the job queue (``jobs``),
the keyword leg (``keyword``), the vector leg, its index and the matrix's reads (``vectors``), find()'s other
reads (``retrieval``), ``entries`` (entry rows, tags, history), ``meta`` (key/value facts, stats counts,
index rebuilds), the session commit and LLM ingest jobs (``ingest``), the embedding cache and vectors rows
(``embeddings``), plus the filter SQL (``filters``). The rest of the package's SQL (migrations) lives in
``storage/sqlite/connection.py``,
``storage/sqlite/schema.py`` and the modules that use it, and moves group by group (issue 25).
"""

from . import archives, checkpoints, dump, graph, jobs, lifecycle, scopes, sessions, skills, traces
from . import keyword  # (the keyword leg)
from . import vectors  # (the vector leg, its index writes, the matrix's reads)
from . import retrieval  # (find()'s other reads)
from . import entries, meta
from . import embeddings, ingest
from . import filters as filters  # db.ops.filters: the engine's filter SQL

__all__ = ["archives", "checkpoints", "dump", "graph", "jobs", "lifecycle", "scopes", "sessions", "skills", "traces"]
__all__ += ["keyword"]
__all__ += ["vectors"]
__all__ += ["retrieval"]
__all__ += ["entries", "meta"]
__all__ += ["embeddings", "ingest"]
