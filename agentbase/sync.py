"""The sync facade: a blocking twin of every public :class:`~agentbase.engine.AgentBase` coroutine.

Works anywhere, including inside ``async def main()`` (the call blocks the caller's thread while the engine loop,
a separate thread, does the work), so sync adapters can be used from async code as the seed examples do.
"""

from __future__ import annotations

import functools
import inspect
import os
import threading
from pathlib import Path
from typing import Any

from ._loop import engine_loop
from .engine import DEFAULT_PATH, AgentBase

__all__ = ["SyncAgentBase", "release_db", "resolve_db", "run_sync"]

# Engines that resolve_db opened from a bare path, by real path, with the number of adapters using each. LangChain's
# RunnableWithMessageHistory builds a history per request (``lambda sid: History(PATH, sid)``) and rarely closes
# it: one engine per object held ~4 file descriptors each until the process ran out of them (a helper's finding).
_shared: dict[str, tuple[AgentBase, int]] = {}
_shared_lock = threading.Lock()


def _forget_shared() -> None:
    """In a forked child: the parent's engines are unusable here (docs/api.md), so new adapters open their own."""
    global _shared_lock
    _shared.clear()
    _shared_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_shared)


def resolve_db(db: Any, **kwargs: Any) -> tuple[AgentBase, bool]:
    """Accept what an adapter's ``db`` argument may be and return the async engine behind it.

    Adapters given the same file path (and no settings or embedder of their own) share one engine per process:
    one connection pool, embedding worker and vector cache per file however many adapter objects are made.

    Args:
        db: an :class:`AgentBase`, a :class:`SyncAgentBase` (its ``aio``), or a file path (opened here).
        **kwargs: with a path, passed to :class:`AgentBase` (``settings``, ``embedder``, ``config_file``); any
            value other than None gives the caller an engine of its own.

    Returns:
        ``(engine, owned)``; ``owned`` is True when this call opened (or shares) the file: the caller hands the
        engine back with :func:`release_db` when done, which closes it once its last user has.

    Raises:
        TypeError: ``db`` is none of these.
        ConfigError: a path :class:`AgentBase` refuses (empty, a directory).
    """
    if isinstance(db, AgentBase):
        return db, False
    if isinstance(db, SyncAgentBase):
        return db.aio, False
    if isinstance(db, (str, os.PathLike)):
        engine = AgentBase(db, **kwargs)  # checks the path (and settings) before anything is shared
        # one file whatever the working directory is when it opens (lazily, maybe after a chdir)
        engine.path = Path(os.path.abspath(engine.path))
        if any(v is not None for v in kwargs.values()):
            return engine, True
        key = os.path.realpath(engine.path)
        with _shared_lock:
            shared, users = _shared.get(key, (None, 0))
            if shared is None or shared.closed:
                shared, users = engine, 0
            _shared[key] = (shared, users + 1)
        return shared, True
    raise TypeError(f"db must be an AgentBase, a SyncAgentBase or a path, got {type(db).__name__}")


async def release_db(engine: AgentBase) -> None:
    """Hand back an engine :func:`resolve_db` returned with ``owned`` True; it is closed once no other adapter
    shares it (an engine of its own is closed at once). Call once per :func:`resolve_db` call."""
    with _shared_lock:
        key = next((k for k, (e, _) in _shared.items() if e is engine), None)
        if key is not None:
            users = _shared[key][1] - 1
            if users > 0:
                _shared[key] = (engine, users)
                return
            del _shared[key]
    await engine.close()


def run_sync(coro: Any, timeout: float | None = None) -> Any:
    """Run a coroutine that uses AgentBase on the engine loop and block until it returns.

    For adapters and applications that compose several async AgentBase calls into one blocking call; works in
    plain scripts, other threads and inside a running event loop.

    Args:
        coro: the coroutine.
        timeout: seconds to wait (None waits forever).

    Returns:
        The coroutine's result (its exception is re-raised).

    Raises:
        UsageError: called from the engine loop's own thread (it would deadlock).
    """
    return engine_loop().run_sync(coro, timeout)


class SyncAgentBase:
    """Blocking version of :class:`AgentBase` with the same method names and arguments.

    Args:
        path: database file or ``postgresql://`` URL (ignored when ``db`` is given); not given: the same as
            :class:`AgentBase` with no path (``url`` in ``kwargs``, else ``storage.url`` of the settings, e.g.
            ``AGENTBASE_STORAGE__URL``, else ``agentbase.db``).
        db: an existing :class:`AgentBase` to wrap (shares its connections).
        **kwargs: passed to :class:`AgentBase` (``settings``, ``embedder``, ``config_file``).

    Example:
        >>> db = SyncAgentBase(path="./my_agent.db")                      # doctest: +SKIP
        >>> db.add_memory("User prefers Python 3.12", user_id="alice")   # doctest: +SKIP
    """

    def __init__(self, path: str | Path = DEFAULT_PATH, *, db: AgentBase | None = None, **kwargs: Any):
        self.aio = db if db is not None else AgentBase(path, **kwargs)

    def __enter__(self) -> SyncAgentBase:
        self.initialize()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.aio, name)
        if not inspect.iscoroutinefunction(attr):
            return attr
        impl = getattr(attr, "__wrapped__", None)

        @functools.wraps(impl or attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            coro = impl(self.aio, *args, **kwargs) if impl is not None else attr(*args, **kwargs)
            result = engine_loop().run_sync(coro)
            return self if result is self.aio else result

        return call
