"""The SQLite engine's named operations, grouped by what they serve (one module per group).

Callers reach them through the connection they hold, ``db.ops.<group>`` or ``conn.ops.<group>`` (a
:class:`~agentbase.storage.sqlite.connection.Database` or the ``Writer`` of its transaction), never by importing this
package, so the code that calls them does not name the engine. Each operation takes that connection first: reads
accept either (the reader or the open transaction), writes need the ``Writer``. Rows come back as tuples in the
column order each function documents; turning them into models is the caller's (engine-neutral) work.

Groups moved here so far: ``graph``, ``scopes`` (heartbeats), ``lifecycle``, ``skills``, ``sessions`` (and
messages), ``archives``, ``traces`` (and the debug views), ``checkpoints`` (LangGraph), the job queue (``jobs``),
plus the filter SQL (``filters``). The rest of the package's SQL (entries, the keyword and vector legs, the
embedding cache, migrations) still lives in ``storage/entries.py``, ``storage/sqlite/connection.py``,
``storage/sqlite/schema.py`` and the modules that use it, and moves group by group (issue 25).
"""

from . import archives, checkpoints, dump, graph, jobs, lifecycle, scopes, sessions, skills, traces

__all__ = ["archives", "checkpoints", "dump", "graph", "jobs", "lifecycle", "scopes", "sessions", "skills", "traces"]
