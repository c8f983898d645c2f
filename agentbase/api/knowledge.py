"""Graph, lifecycle, scopes and heartbeats, skills, and portable archives."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from .. import archive, graph, lifecycle, scopes, skills
from .._loop import bridged
from ..models import Entry, SearchResult

__all__ = ["KnowledgeAPI"]


class KnowledgeAPI:
    """Methods mixed into :class:`~agentbase.engine.AgentBase`; see its docstring for construction."""

    # ------------------------------------------------------------------ graph, lifecycle, scopes, archives
    # (issue 6: methods delegate to graph.py, lifecycle.py, archive.py; add new public methods in this section)

    # --- graph (agentbase/graph.py)
    @bridged
    async def add_entity(self, name: str, *, entity_type: str | None = None,
                         aliases: list[str] | None = None) -> Any:
        """Create a graph entity, or merge into the one already known by this name or an alias.

        Names match case- and alias-insensitively (``"ACME corp"`` finds ``"Acme Corp"``); aliases that name two
        existing entities merge them (relations are re-pointed).

        Args:
            name: the canonical name (1-200 characters). entity_type: e.g. ``PERSON``, ``ORG``, ``GPE``.
            aliases: other names of the same entity.

        Returns:
            The :class:`~agentbase.graph.GraphEntity` (``id``, ``name``, ``type``, ``aliases``, ``created_at``).

        Raises:
            ValidationError: an empty or over-long name, or aliases that are not a list of strings.
        """
        return await graph.add_entity(self, name, entity_type, aliases)

    @bridged
    async def get_entity(self, name: str) -> Any:
        """Look up a graph entity by name or alias (case-insensitive); returns a ``GraphEntity`` or None.

        Raises:
            ValidationError: an empty name.
        """
        return await graph.get_entity(self, name)

    @bridged
    async def add_relation(self, subject: str, predicate: str, obj: str, *,
                           valid_from: datetime | str | None = None, valid_to: datetime | str | None = None,
                           source_entry_id: str | None = None, confidence: float = 1.0,
                           functional: bool | None = None, subject_type: str | None = None,
                           object_type: str | None = None) -> Any:
        """Record an explicit fact ``subject -predicate-> object`` in the temporal graph.

        Entities are created or matched by name/alias. For a functional predicate (``works_at``, ``lives_in``,
        ``married_to``, ...; see :data:`agentbase.graph.FUNCTIONAL_PREDICATES`) an open relation of the subject
        with another object is closed at ``valid_from`` (never deleted). Repeating a fact that already holds
        returns the existing relation.

        Args:
            subject, obj: entity names. predicate: e.g. ``"works at"`` or ``"works_at"`` (normalised to
                ``[a-z0-9_]``, at most 64 characters).
            valid_from: when it became true (UTC; default now). valid_to: when it stopped (None = still true).
            source_entry_id: the entry this fact comes from (provenance). confidence: 0..1.
            functional: override whether the predicate allows one object at a time.
            subject_type, object_type: entity types for newly created entities.

        Returns:
            The :class:`~agentbase.graph.Relation` with names, ids and validity interval.

        Raises:
            ValidationError: bad names, predicate, confidence, times, or subject == object.
        """
        return await graph.add_relation(self, subject, predicate, obj, valid_from=valid_from, valid_to=valid_to,
                                        source_entry_id=source_entry_id, confidence=confidence,
                                        functional=functional, subject_type=subject_type, object_type=object_type)

    @bridged
    async def facts(self, entity: str, *, as_of: datetime | str | None = None, predicate: str | None = None,
                    direction: str = "both") -> list[Any]:
        """What was true about ``entity`` at a point in time: relations with ``valid_from <= as_of < valid_to``.

        Args:
            entity: name or alias. as_of: the moment (UTC; default now). predicate: only this predicate.
            direction: ``"out"`` (entity is the subject), ``"in"`` (the object) or ``"both"``.

        Returns:
            :class:`~agentbase.graph.Relation` objects, newest ``valid_from`` first; ``[]`` for an unknown entity.

        Raises:
            ValidationError: bad direction, predicate or time.
        """
        return await graph.facts(self, entity, as_of=as_of, predicate=predicate, direction=direction)

    @bridged
    async def timeline(self, entity: str) -> list[Any]:
        """Every relation of ``entity`` (open and closed), ordered by ``valid_from``; ``[]`` if unknown."""
        return await graph.timeline(self, entity)

    @bridged
    async def neighbors(self, entity: str, *, depth: int = 1, as_of: datetime | str | None = None,
                        include_expired: bool = False, limit: int = 200) -> Any:
        """Entities within ``depth`` hops of ``entity`` (relations followed in both directions).

        Args:
            entity: name or alias. depth: hops, 1..5. as_of: follow relations valid at this time (default now).
            include_expired: follow closed relations too. limit: stop expanding after this many entities.

        Returns:
            A :class:`~agentbase.graph.Neighborhood` (``center``, ``entities``, ``depths``, ``relations``), or None
            for an unknown entity.

        Raises:
            ValidationError: depth out of range.
        """
        return await graph.neighbors(self, entity, depth=depth, as_of=as_of, include_expired=include_expired,
                                     limit=limit)

    @bridged
    async def extract_relations(self, entry_ids: list[str] | None = None) -> int:
        """(Re)extract graph relations from stored memory entries, oldest event first (idempotent).

        ``commit_session`` extracts relations from each committed turn; use this for memories written with
        ``add_memory`` or before the graph existed. Each relation is valid from the entry's ``event_time`` (else
        its ``created_at``); "I"/"my" refer to ``metadata["speaker"]`` or the entry's ``user_id``.

        Args:
            entry_ids: only these entries (default: every memory entry).

        Returns:
            Number of relations created or ended.
        """
        return await graph.extract_relations(self, entry_ids)

    # --- lifecycle (agentbase/lifecycle.py)
    @bridged
    async def recall(self, entry_ids: list[str], *, now: datetime | str | None = None) -> int:
        """Count a recall of these entries: ``access_count`` + 1 and ``last_accessed_at`` = ``now``.

        Each recall multiplies the memory's decay time constant by 1.5 (see :mod:`agentbase.lifecycle`).

        Returns:
            Number of entries updated (unknown ids are ignored).

        Raises:
            ValidationError: ``entry_ids`` is not a list of ids.
        """
        return await lifecycle.recall(self, entry_ids, now)

    @bridged
    async def strengths(self, entry_ids: list[str], *, now: datetime | str | None = None,
                        tau0_days: float = 30.0) -> dict[str, float]:
        """Current strength ``exp(-age / (tau0 * 1.5 ** access_count))`` of each entry, in ``(0, 1]``.

        Args:
            entry_ids: the entries. now: reference time (UTC; default now).
            tau0_days: time constant of a never-recalled memory, in days.

        Returns:
            ``{entry_id: strength}`` (unknown ids are absent).
        """
        return await lifecycle.strengths(self, entry_ids, now=now, tau0_days=tau0_days)

    @bridged
    async def decay_pass(self, threshold: float = 0.05, *, purge: bool = False, now: datetime | str | None = None,
                         tau0_days: float = 30.0, context_type: str | list[str] | None = "memory") -> dict[str, Any]:
        """Archive (or with ``purge`` delete) entries whose strength fell below ``threshold``.

        Archived entries keep their row, indexes and history but are hidden from ``find``/``list`` unless
        ``include_archived=True``; each archive records an ``UPDATE`` history event. Superseded entries are skipped.

        Args:
            threshold: 0..1 (0.05 = about 3 time constants without recall). purge: delete instead of archive
                (archived entries below the threshold are deleted too). now: reference time (UTC; default now).
            tau0_days: time constant of a never-recalled memory, in days. context_type: which entries decay
                (one type or a list; default memories only; None for all; an empty list for none).

        Returns:
            ``{"scanned", "archived": [ids], "deleted": [ids], "threshold", "tau0_days", "now"}``.

        Raises:
            ValidationError: threshold outside 0..1, a non-positive tau0_days, or an unknown context_type.
        """
        await self._settle_for()  # queued enrichment first: its facts decay (or are purged) with the rest
        return await lifecycle.decay_pass(self, threshold=threshold, purge=purge, now=now, tau0_days=tau0_days,
                                          context_type=context_type)

    @bridged
    async def archive_entries(self, entry_ids: list[str], *, reason: str | None = None) -> list[str]:
        """Set ``status='archived'`` (hidden from find/list by default), recording an ``UPDATE`` history event.

        Returns:
            The ids whose status changed.
        """
        await self._settle_for()  # a queued enrichment would otherwise write an archived fact again
        return await lifecycle.set_status(self, entry_ids, "archived", reason)

    @bridged
    async def unarchive_entries(self, entry_ids: list[str], *, reason: str | None = None) -> list[str]:
        """Make archived entries active again (``UPDATE`` history event; the decay clock restarts).

        Returns:
            The ids whose status changed.
        """
        await self._settle_for()
        return await lifecycle.set_status(self, entry_ids, "active", reason)

    @bridged
    async def backup(self, dest_dir: str | Path, *, keep: int | None = None) -> dict[str, Any]:
        """Copy the database with SQLite's online backup API to ``dest_dir/<stem>-<UTC timestamp>Z.db``; on
        PostgreSQL, dump it with ``pg_dump --format=custom`` to ``dest_dir/<database>-<UTC timestamp>Z.dump``
        (restore with ``pg_restore``; ``pg_dump`` is found through ``AGENTBASE_PG_DUMP`` or ``PATH``).

        Safe while other connections read and write; the copy passes ``PRAGMA quick_check`` before it is renamed
        into place.

        Args:
            dest_dir: folder (created if missing). keep: keep only the newest ``keep`` backups of this database
                in that folder (None keeps all).

        Returns:
            ``{"path", "size_bytes", "created_at", "removed": [paths], "kept": [paths]}``.

        Raises:
            ValidationError: bad keep, or ``dest_dir`` empty or not a path. StorageError: the copy failed.
        """
        return await lifecycle.backup(self, dest_dir, keep=keep)

    # --- scopes and heartbeats (agentbase/scopes.py)
    @bridged
    async def heartbeat(self, session_id: str, agent_id: str | None = None, task: str | None = None, *,
                        project_id: str | None = None, metadata: dict[str, Any] | None = None,
                        now: datetime | str | None = None) -> Any:
        """Register that an agent is working in a session (call every few seconds while it works).

        Args:
            session_id: an existing session (:meth:`create_session`). agent_id: the agent (default the session's). task: what it is doing now
                (None keeps the previous task). project_id: default the session's. metadata: replaces the stored
                one when given. now: heartbeat time (UTC; default now).

        Returns:
            The :class:`~agentbase.scopes.ActiveSession` row.

        Raises:
            ValidationError: malformed ids, task over 2000 characters, non-JSON metadata.
            NotFoundError: no session has this id (nothing is written).
        """
        return await scopes.heartbeat(self, session_id, agent_id, task, project_id=project_id, metadata=metadata,
                                      now=now)

    @bridged
    async def active_sessions(self, project_id: str | None = None, *, stale_after_s: float = 300.0,
                              exclude_session_id: str | None = None,
                              now: datetime | str | None = None) -> list[Any]:
        """Sessions whose last heartbeat is younger than ``stale_after_s`` seconds, most recent first.

        Args:
            project_id: only this project's sessions (the siblings of an agent). stale_after_s: seconds.
            exclude_session_id: leave out the caller's own session. now: reference time (UTC; default now).

        Returns:
            :class:`~agentbase.scopes.ActiveSession` objects (``session_id``, ``agent_id``, ``task``, ``age_s``...).
        """
        return await scopes.active_sessions(self, project_id=project_id, stale_after_s=stale_after_s,
                                            exclude_session_id=exclude_session_id, now=now)

    @bridged
    async def end_heartbeat(self, session_id: str) -> bool:
        """Remove a session from the active list at once (instead of waiting for it to go stale)."""
        return await scopes.end_heartbeat(self, session_id)

    # --- skills (agentbase/skills.py)
    @bridged
    async def find_skills(self, query: str, *, top_k: int = 5, **filters: Any) -> list[SearchResult]:
        """Find skills for an intent-style query ("how do I deploy?").

        Fuses ``find(query, context_type="skill")`` with a match of the query's words (and their stems, e.g.
        "deploy" ~ "deployment") against skill names (weight 2) and descriptions (weight 1), by RRF (k = 60).

        Args:
            query: the request. top_k: 1..1000. **filters: as for :meth:`find` (owners, tags, ``visible_to``...).

        Returns:
            :class:`SearchResult` objects for skill entries; ``score_parts`` has ``find_rank``, ``name_rank``,
            ``name_match`` and ``skill_rrf``.

        Raises:
            ValidationError: bad top_k or filters.
        """
        return await skills.find_skills(self, query, top_k=top_k, filters=filters)

    @bridged
    async def import_skill_dir(self, path: str | Path, *, max_files: int = 500, max_bytes: int = 5 * 1024 * 1024,
                               tags: list[str] | None = None, **owners: Any) -> Entry:
        """Import a skill folder with ``SKILL.md`` (YAML front matter ``name``, ``description``) at its root.

        The skill entry and every file of the folder (relative path + text, in ``skill_files``) are written in one
        transaction; a skill with the same name and owners is replaced in place (same id, ``UPDATE`` history).

        Args:
            path: the folder. max_files: most files accepted. max_bytes: most bytes accepted (all files).
            tags: tags for the entry. **owners: ``user_id``, ``agent_id``, ``project_id``, ``session_id``, ``scope``.

        Returns:
            The skill :class:`Entry` (content = the SKILL.md body; ``metadata["front_matter"]`` = other keys).

        Raises:
            ValidationError: refused as a whole, database unchanged: an empty path, symlinks, unsafe names,
                non-regular files, non-UTF-8 text, no SKILL.md or bad front matter, more than ``max_files`` files or
                ``max_bytes``.
        """
        return await skills.import_skill_dir(self, path, max_files=max_files, max_bytes=max_bytes, tags=tags,
                                             owners=owners)

    @bridged
    async def get_skill_files(self, skill_id: str) -> dict[str, str]:
        """The files imported with a skill folder: ``{relative_path: text}`` (``{}`` for other skills)."""
        return await skills.get_skill_files(self, skill_id)

    # --- archives (agentbase/archive.py)
    @bridged
    async def export_archive(self, path: str | Path) -> dict[str, Any]:
        """Write everything (entries with history, sessions with messages and links, graph, skill files) to a tar.

        Read from one consistent snapshot; written to ``path + ".partial"`` and renamed. A name ending in
        ``.tar.gz``/``.tgz`` is gzip-compressed. Vectors are not included (imports re-embed).

        Returns:
            ``{"path", "size_bytes", "counts": {member: rows}, "format_version"}``.

        Raises:
            ValidationError: ``path`` is empty, not a path, or a folder.
            StorageError: the file cannot be read or the archive cannot be written.
        """
        await self._settle_for()  # the archive holds enriched sessions, so importing it back reverts nothing
        return await archive.export_archive(self, path)

    @bridged
    async def import_archive(self, path: str | Path, *, max_bytes: int = 1 << 30,
                             flush: bool = True) -> dict[str, Any]:
        """Merge an archive written by :meth:`export_archive` into this database, in one transaction.

        Missing entries are created with their history; present ones with other content are revised (``UPDATE``
        history); sessions whose id exists are skipped; entities merge by name; nothing is deleted. Imported
        entries queue embedding jobs; with ``flush`` the call waits for them.

        Args:
            path: the archive. max_bytes: refuse archives holding more bytes than this. flush: wait for vectors.

        Returns:
            Counts: ``entries_added``, ``entries_updated``, ``entries_unchanged``, ``sessions_added``,
            ``sessions_skipped``, ``messages_added``, ``entities_added``, ``relations_added``, ``skill_files``,
            plus ``format_version`` and ``created_at`` of the archive.

        Raises:
            ArchiveError (a ValidationError): refused as a whole, nothing written: link or non-file members,
                unexpected or unsafe member names, oversize, checksum mismatch, damage, non-UTF-8 or bad JSON,
                or a newer format version; ValidationError for an empty ``path``.
        """
        out = await archive.import_archive(self, path, max_bytes=max_bytes)
        if flush:
            await self.flush()
        return out
