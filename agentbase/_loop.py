"""The loop-thread bridge: one background event loop owns every engine connection.

Async calls made from any other loop are forwarded with ``asyncio.run_coroutine_threadsafe`` and awaited through
``asyncio.wrap_future``; sync calls block on the same future. So the same engine works from plain scripts, from
inside ``async def main()`` (where a sync adapter call would otherwise hit "event loop is running"), and from
several threads. Library code never calls ``asyncio.run()``.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from ._perprocess import PerProcess
from .errors import AgentBaseError, UsageError

__all__ = ["EngineLoop", "bridged", "engine_loop", "flush_at_exit", "interpreter_exiting", "loop_ended", "on_loop"]

P = ParamSpec("P")
T = TypeVar("T")


_REFUSED = "cannot schedule new futures"  # ThreadPoolExecutor.submit's words once its pools are shut down


def interpreter_exiting(exc: BaseException | None = None) -> bool:
    """Whether Python is shutting down while this thread still runs, so thread pools refuse new work.

    True once the main thread has ended, or when ``exc`` (or an exception it was raised from) is a thread pool's
    refusal ("cannot schedule new futures after shutdown"): the refusals start a moment earlier, since
    ``concurrent.futures`` shuts its pools down before the main thread is marked as ended (CPython's
    ``threading._shutdown``).

    Args:
        exc: an exception to check, or None.

    Returns:
        True when Python is shutting down.
    """
    if not threading.main_thread().is_alive():
        return True
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, RuntimeError) and _REFUSED in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


async def _exit_aware(coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro``; a bare RuntimeError raised while Python shuts down (:func:`interpreter_exiting`: a thread
    pool refusing work) becomes a UsageError that says why."""
    try:
        return await coro
    except RuntimeError as exc:
        if isinstance(exc, AgentBaseError) or not interpreter_exiting(exc):
            raise
        raise UsageError(f"this call needs a worker thread, and Python's thread pools refuse new work once the main "
                         f"thread has ended ({exc}); join your threads before the main thread returns (keyword "
                         f"search, mode='fts', needs none)") from exc


class EngineLoop:
    """A daemon thread running an asyncio event loop forever."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="agentbase-engine", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def in_loop_thread(self) -> bool:
        """True when called from the engine loop's own thread."""
        return threading.current_thread() is self._thread

    async def run_async(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the engine loop from any loop (directly if already on it)."""
        if self.in_loop_thread():
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_exit_aware(coro), self.loop))

    def run_sync(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the engine loop and block until it finishes.

        Raises:
            UsageError: called from the engine loop's own thread (it would deadlock).
        """
        if self.in_loop_thread():
            coro.close()
            raise UsageError("a sync AgentBase method was called from the engine's own event loop; "
                             "await the async method instead")
        return asyncio.run_coroutine_threadsafe(_exit_aware(coro), self.loop).result(timeout)


def _forget_exit_drains() -> None:
    _at_exit.clear()  # the parent's databases are not usable in a forked child, nor drained at its exit


# A forked child has none of the parent's threads: the parent's engine loop would never run anything it is given
# (every call hung). The child starts its own on first use; AgentBase raises UsageError for a database the parent
# opened.
_engine: PerProcess[EngineLoop] = PerProcess(EngineLoop, after_fork=_forget_exit_drains)


def engine_loop() -> EngineLoop:
    """Return the process-wide engine loop, starting it on first use."""
    return _engine.get()


def bridged(fn: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """Decorate an ``async`` method so it always executes on the engine loop.

    The undecorated coroutine function stays reachable as ``wrapper.__wrapped__`` (used by the sync facade).
    """

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        return await engine_loop().run_async(fn(*args, **kwargs))

    return wrapper


def loop_ended(loop: asyncio.AbstractEventLoop | None) -> bool:
    """True when ``loop`` is closed or no longer running (an ``asyncio.run()`` that has returned), so nothing
    handed to it would run; False for None (nothing opened yet) and for a running loop."""
    return loop is not None and (loop.is_closed() or not loop.is_running())


async def on_loop(loop: asyncio.AbstractEventLoop | None, coro: Coroutine[Any, Any, T], *,
                  undo: Callable[[T], Coroutine[Any, Any, Any]] | None = None, finish: bool = False) -> T:
    """Await ``coro`` on ``loop``: directly when it is the running loop (or None), else forwarded to it.

    A database's connections, pool and locks belong to the loop that opened it: asyncio's primitives are not
    thread-safe, so a lock or pool queue touched from a second loop's thread loses wake-ups, and a waiter then
    sleeps until its timeout or forever
    (https://docs.python.org/3/library/asyncio-dev.html#concurrency-and-multithreading).
    Both engines' connections route every use of that state through this function.

    Cancelling the caller of a forwarded call cancels it there too, unless it takes or gives back a resource:
    with ``undo`` (taking one: a lock, a pooled connection) the call is left to finish and, if it got the
    resource, ``undo(result)`` gives it back on ``loop``; with ``finish`` (giving one back) the call is left to
    finish. Without them a cancelled caller could leave the lock held or the connection lost for good.

    Args:
        loop: the loop that owns what ``coro`` touches, or None (not opened yet: run here).
        coro: the coroutine to run.
        undo: for a call that acquires something, what releases it (a coroutine function of the result).
        finish: for a call that releases something: never cancel it.

    Returns:
        What ``coro`` returns.

    Raises:
        UsageError: ``loop`` is closed or not running (the database was opened inside an ``asyncio.run()`` that
            has ended), so nothing forwarded to it would ever run.
    """
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if loop is None or running is loop:
        return await coro
    if loop_ended(loop):
        coro.close()
        raise UsageError("this database was opened on an event loop that is no longer running (an asyncio.run() "
                         "that has ended); open it again on the running loop, or use AgentBase, whose calls all "
                         "run on its own engine loop")
    forwarded = asyncio.run_coroutine_threadsafe(coro, loop)
    if undo is None and not finish:
        return await asyncio.wrap_future(forwarded)
    try:
        return await asyncio.shield(asyncio.wrap_future(forwarded))
    except asyncio.CancelledError:
        if undo is not None:
            def give_back(done: Any) -> None:  # runs on ``loop``'s thread, or here when already done
                if not done.cancelled() and done.exception() is None:
                    asyncio.run_coroutine_threadsafe(undo(done.result()), loop)

            forwarded.add_done_callback(give_back)
        raise


_at_exit: weakref.WeakSet[Any] = weakref.WeakSet()
EXIT_FLUSH_S = 5.0  # seconds each open database gets at interpreter exit to write its queued bookkeeping


def flush_at_exit(obj: Any) -> None:
    """Have ``obj._at_exit()`` (a coroutine method) awaited on the engine loop at interpreter exit.

    Held weakly: a closed and dropped database is forgotten. Used so a script that ends without ``close()``
    still writes the traces and recall counts its last ``find()`` calls queued, and returns an unfinished embedding
    batch to the queue.
    """
    _at_exit.add(obj)


@atexit.register
def _shutdown() -> None:  # pragma: no cover - interpreter exit
    engine = _engine.peek()
    if engine is None:
        return
    for obj in list(_at_exit):
        try:
            asyncio.run_coroutine_threadsafe(obj._at_exit(), engine.loop).result(EXIT_FLUSH_S)
        except Exception:  # noqa: BLE001 - best effort while the interpreter shuts down
            pass
    engine.loop.call_soon_threadsafe(engine.loop.stop)
