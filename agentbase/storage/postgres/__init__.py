"""The PostgreSQL + pgvector engine's named operations, grouped as in ``storage/sqlite/`` (same module and
function names, same signatures and row shapes), reached through a :class:`~.connection.PgDatabase` as
``db.ops.<group>``. Install with ``pip install 'agentbase[postgres]'`` (psycopg 3, psycopg-pool, pgvector)."""
from . import load  # noqa: E402,F401

from . import checkpoints  # noqa: E402,F401
from . import graph  # noqa: E402,F401
from . import lifecycle  # noqa: E402,F401
from . import archives  # noqa: E402,F401
