"""The owner check the chat adapters share: an adapter bound to a user (or agent) never reads or writes a session
that belongs to another one, whatever key or thread id it is given."""

from __future__ import annotations

from typing import Any


def foreign_owner(session: Any, user_id: str | None, agent_id: str | None, *,
                  unowned_is_foreign: bool = False) -> str | None:
    """Which owner of ``session`` differs from the adapter's, or None when the adapter may use it.

    Args:
        session: a :class:`~agentbase.models.Session`, or None (an unknown session: usable, it will be created).
        user_id, agent_id: the adapter's owners; None accepts any.
        unowned_is_foreign: a session owner stored as None counts as another owner (the owner-scoped HTTP API
            hides unowned sessions from a scoped request); by default it matches any.

    Returns:
        ``"user_id"`` or ``"agent_id"`` for a session owned by someone else, else None.
    """
    if session is None:
        return None
    for key, want in (("user_id", user_id), ("agent_id", agent_id)):
        have = getattr(session, key)
        if want is not None and have != want and (have is not None or unowned_is_foreign):
            return key
    return None
