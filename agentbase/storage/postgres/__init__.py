"""The PostgreSQL + pgvector engine's named operations, grouped as in ``storage/sqlite/`` (same module and
function names, same signatures and row shapes), reached through a :class:`~.connection.PgDatabase` as
``db.ops.<group>``. Install with ``pip install 'agentbase[postgres]'`` (psycopg 3, psycopg-pool, pgvector)."""

from . import filters as filters
from . import jobs as jobs
from . import scopes as scopes
from . import sessions as sessions
from . import traces as traces
from . import skills as skills
from . import keyword as keyword
from . import vectors as vectors
from . import load as load
from . import entries as entries
from . import meta as meta
from . import checkpoints as checkpoints
from . import graph as graph
from . import lifecycle as lifecycle
from . import archives as archives
from . import embeddings as embeddings
from . import ingest as ingest
from . import retrieval as retrieval
