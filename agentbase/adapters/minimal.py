"""The smallest useful memory API: remember a text, recall by meaning, forget.

:class:`MinimalAdapter` is for scripts and agents that need nothing more than three verbs. Each verb has an
async twin (``aremember``, ``arecall``, ``aforget``). Everything goes through AgentBase's public API, so what
is remembered here is visible to every other adapter on the same file (``who`` is the entry's ``user_id``).
"""

from __future__ import annotations

import os
from typing import Any

from agentbase import AgentBase, SyncAgentBase, release_db, resolve_db, run_sync
from agentbase.errors import ValidationError

__all__ = ["MinimalAdapter"]

def _result(hit: Any) -> dict[str, Any]:
    e = hit.entry
    return {"id": e.id, "text": e.content, "score": hit.score,
            "tags": [t for t in e.tags if not t.startswith("ner_")], "created_at": e.created_at.isoformat()}


def _check_limit(limit: Any) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise ValidationError(f"limit must be an integer from 1 to 1000, got {limit!r}")


def _check_forget(entry_id: str | None, who: str | None) -> None:
    if entry_id is None and who is None:
        raise ValidationError("forget() needs entry_id, who, or both (it never deletes everything)")


class MinimalAdapter:
    """``remember`` / ``recall`` / ``forget`` on an AgentBase file.

    Args:
        db: an :class:`AgentBase`, a :class:`SyncAgentBase`, or a database path (the adapter then owns the
            database; :meth:`close` closes it).
        embedder: with a path: an embedder object or provider name for :class:`AgentBase`.
        settings: with a path: :class:`~agentbase.config.Settings` for :class:`AgentBase`.

    Raises:
        TypeError: ``db`` is none of the accepted types.

    Example:
        >>> mem = MinimalAdapter("./agent.db")                                    # doctest: +SKIP
        >>> entry_id = mem.remember("Alice prefers window seats", who="alice")    # doctest: +SKIP
        >>> mem.recall("seat preference", who="alice")[0]["text"]                 # doctest: +SKIP
        'Alice prefers window seats'
    """

    def __init__(self, db: AgentBase | SyncAgentBase | str | os.PathLike[str], *, embedder: Any = None,
                 settings: Any = None):
        self.db, self._owned = resolve_db(db, settings=settings, embedder=embedder)

    # ------------------------------------------------------------------ sync
    def remember(self, text: str, who: str | None = None, tags: list[str] | None = None) -> str:
        """Store ``text`` as a memory and wait until it is searchable by meaning.

        Remembering the same text again for the same ``who`` returns the existing entry's id (its confidence
        rises) instead of storing a copy.

        Args:
            text: what to remember (non-empty).
            who: the owner (stored as ``user_id``); ``None`` for a shared memory.
            tags: labels returned by :meth:`recall`.

        Returns:
            The entry id.

        Raises:
            ValidationError: empty text, bad tags or a malformed ``who``.
        """
        entry = self.db.sync.add_memory(text, user_id=who, tags=tags)
        self.db.sync.flush()
        return entry.id

    def recall(self, query: str, who: str | None = None, limit: int = 5) -> list[dict[str, Any]]:
        """Find the memories closest to ``query`` (hybrid keyword + vector search).

        Args:
            query: what to look for; an empty query gives ``[]``.
            who: only this owner's memories; ``None`` searches every memory.
            limit: at most this many results (1..1000).

        Returns:
            Best first: ``[{"id", "text", "score" (AgentBase final score, higher is better), "tags" (the
            caller's tags, without derived ``ner_`` entity tags), "created_at" (ISO 8601 UTC)}]``.

        Raises:
            ValidationError: ``limit`` out of range or a malformed ``who``.
        """
        _check_limit(limit)
        hits = self.db.sync.find(query, top_k=limit, user_id=who, context_type="memory")
        return [_result(h) for h in hits]

    def forget(self, entry_id: str | None = None, who: str | None = None) -> int:
        """Delete one memory, or all of someone's memories.

        Args:
            entry_id: the memory to delete; with ``who`` it is deleted only if it belongs to ``who``.
            who: without ``entry_id``: delete every memory of this owner.

        Returns:
            How many memories were deleted (0 when nothing matched).

        Raises:
            ValidationError: neither argument given, or a malformed id.
        """
        _check_forget(entry_id, who)
        if entry_id is not None:
            return int(self.db.sync.delete(entry_id, user_id=who))
        return self.db.sync.delete_all(user_id=who, context_type="memory")

    def close(self) -> None:
        """Close the database if this adapter opened it (idempotent)."""
        if self._owned:
            self._owned = False
            run_sync(release_db(self.db))

    def __enter__(self) -> MinimalAdapter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ async
    async def aremember(self, text: str, who: str | None = None, tags: list[str] | None = None) -> str:
        """Async :meth:`remember` (same arguments, return value and errors)."""
        entry = await self.db.add_memory(text, user_id=who, tags=tags)
        await self.db.flush()
        return entry.id

    async def arecall(self, query: str, who: str | None = None, limit: int = 5) -> list[dict[str, Any]]:
        """Async :meth:`recall` (same arguments, return value and errors)."""
        _check_limit(limit)
        hits = await self.db.find(query, top_k=limit, user_id=who, context_type="memory")
        return [_result(h) for h in hits]

    async def aforget(self, entry_id: str | None = None, who: str | None = None) -> int:
        """Async :meth:`forget` (same arguments, return value and errors)."""
        _check_forget(entry_id, who)
        if entry_id is not None:
            return int(await self.db.delete(entry_id, user_id=who))
        return await self.db.delete_all(user_id=who, context_type="memory")

    async def aclose(self) -> None:
        """Async :meth:`close`."""
        if self._owned:
            self._owned = False
            await release_db(self.db)

    async def __aenter__(self) -> MinimalAdapter:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()
