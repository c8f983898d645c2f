"""Process-wide objects that a forked child must not inherit (threads do not survive ``fork``)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["PerProcess"]

T = TypeVar("T")


class PerProcess(Generic[T]):
    """One lazily created ``factory()`` object per process: a child forked after the parent created it gets its own.

    For thread pools and loop threads: a child forked from a multi-threaded process has only the forking thread,
    so the parent's pool would take work and never run it (every call hung). The lock is replaced too, since a
    parent thread may have held it at the fork.

    Args:
        factory: builds the object on first :meth:`get` in each process.
        after_fork: also called in a forked child (optional), for state that belongs with the object.
    """

    def __init__(self, factory: Callable[[], T], after_fork: Callable[[], None] | None = None) -> None:
        self._factory = factory
        self._after_fork = after_fork
        self._value: T | None = None
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forget)

    def get(self) -> T:
        """The object of this process, created on first use (thread-safe)."""
        with self._lock:
            if self._value is None:
                self._value = self._factory()
            return self._value

    def peek(self) -> T | None:
        """The object if this process has created it, else None (never creates it)."""
        return self._value

    def _forget(self) -> None:
        self._value, self._lock = None, threading.Lock()
        if self._after_fork is not None:
            self._after_fork()
