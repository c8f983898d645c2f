"""Temporal entity-relation graph: entities with aliases, relations with validity intervals (ARCHITECTURE.md 2).

Relations are extracted at ingest without an LLM: named entities (from the configured NER extractor) plus a
first-person pronoun resolved to the speaker are joined by short verb patterns ("X works at Y", "X joined Y",
"X moved to Y", "X lives in Y", "X is married to Y", "my X is Y", "X left Y"). A relation is valid from the
event time of its source (the message's or entry's ``event_time``, else its creation time). For a *functional*
predicate (one object at a time: ``works_at``, ``lives_in``, ``married_to``, ...) a new fact with another object
closes the open one (``valid_to`` = the new ``valid_from``) instead of deleting it, so ``facts(entity,
as_of=date)`` answers "what was true then". Facts that arrive out of order are fitted into the timeline: an
older fact is closed where the next known state begins.

Entities are merged case- and alias-insensitively: names are normalised like entity tags (NFKC, surrounding
punctuation, leading lower-case article and trailing possessive removed, case-folded) and looked up in
``entity_aliases``; :func:`add_entity` with aliases that name two existing entities merges them.

Functions taking ``ab`` are called by :class:`~agentbase.engine.AgentBase` methods on the engine loop; functions
taking ``conn`` run inside an open write transaction.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from ._graph_rules import GATE, RelationMention, extract_relation_mentions, normalize_predicate
from .errors import ValidationError
from .models import utcnow
from .ner import TAG_PREFIX, Entity, tag_for
from .timeutil import from_db_time, parse_time, to_db_time
from .validation import check_text

__all__ = [
    "FUNCTIONAL_PREDICATES",
    "GraphEntity",
    "Neighborhood",
    "Relation",
    "RelationMention",
    "extract_relation_mentions",
    "graph_candidates",
    "normalize_name",
    "normalize_predicate",
]

#: Predicates that hold for one object at a time; a new object closes the open relation.
FUNCTIONAL_PREDICATES: frozenset[str] = frozenset({
    "works_at", "lives_in", "comes_from", "married_to", "wife", "husband", "spouse", "partner", "boyfriend",
    "girlfriend", "fiance", "fiancee", "manager", "boss",
})
EXTRACTED_CONFIDENCE = 0.8  # rule-based relations; explicit add_relation defaults to 1.0
MAX_DEPTH = 5

# ------------------------------------------------------------------------------------------------ models
class GraphEntity(BaseModel):
    """A node of the graph: canonical name, NER type and the aliases it is also known by."""

    id: str
    name: str
    type: str | None = None
    aliases: list[str] = Field(default_factory=list)
    created_at: datetime


class Relation(BaseModel):
    """A directed, time-bounded edge ``subject -predicate-> object``.

    ``valid_from``/``valid_to`` are UTC; ``valid_to`` None means still valid. ``source_entry_id`` is the entry
    (turn or memory) the relation was read from, None for explicit :meth:`AgentBase.add_relation` calls.
    """

    id: str
    subject: str
    subject_id: str
    predicate: str
    object: str
    object_id: str
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    source_entry_id: str | None = None
    confidence: float = 1.0
    created_at: datetime

    def valid_at(self, when: datetime | str | int | float) -> bool:
        """True if the relation held at ``when`` (``valid_from <= when < valid_to``).

        Args:
            when: any time :func:`~agentbase.timeutil.parse_time` reads (a naive datetime is UTC; a date or a
                string without a clock time is its first moment).

        Raises:
            ValidationError: ``when`` is not a time.
        """
        when = parse_time(when)
        if when is None:
            raise ValidationError("valid_at needs a time, got None")
        return (self.valid_from is None or self.valid_from <= when) and (self.valid_to is None or when < self.valid_to)


class Neighborhood(BaseModel):
    """The result of :meth:`AgentBase.neighbors`: entities within ``depth`` hops and the relations between them.

    Attributes:
        center: the entity asked about. entities: reached entities (center excluded), nearest first.
        depths: entity id -> hops from the center. relations: the traversed relations.
    """

    center: GraphEntity
    entities: list[GraphEntity] = Field(default_factory=list)
    depths: dict[str, int] = Field(default_factory=dict)
    relations: list[Relation] = Field(default_factory=list)


# ------------------------------------------------------------------------------------------------ helpers
def normalize_name(name: str) -> str:
    """Normalise an entity name for matching: ``"  the ALICE's "`` -> ``"alice"`` (like entity tags, case-folded).

    Raises:
        ValidationError: not a string, or no letter/digit.
    """
    return tag_for(name)[len(TAG_PREFIX):].replace("_", " ").casefold()


def _clean_name(name: str, what: str = "entity name") -> str:
    check_text(name, what)
    clean = " ".join(name.split())
    if len(clean) > 200:
        raise ValidationError(f"{what} must be at most 200 characters")
    normalize_name(clean)
    return clean


def _relation(row: tuple) -> Relation:  # a RELATION_COLUMNS row (storage/<engine>/graph.py)
    return Relation(id=row[0], subject=row[1], subject_id=row[2], predicate=row[3], object=row[4], object_id=row[5],
                    valid_from=from_db_time(row[6]), valid_to=from_db_time(row[7]), source_entry_id=row[8],
                    confidence=row[9], created_at=from_db_time(row[10]))


def _entity(row: tuple) -> GraphEntity:  # an ENTITY_COLUMNS row
    return GraphEntity(id=row[0], name=row[1], type=row[2], aliases=json.loads(row[3]),
                       created_at=from_db_time(row[4]))


async def _lookup(conn: Any, name: str) -> str | None:
    """Entity id for a name or alias (``conn`` may be the writer or the reader Database)."""
    return await conn.ops.graph.entity_id_for_alias(conn, normalize_name(name))


async def upsert_entity(conn: Any, name: str, type: str | None = None, aliases: Iterable[str] = (),
                        now: str | None = None) -> str:
    """Return the id of the entity called ``name`` (or one of ``aliases``), creating or merging as needed.

    Runs inside a write transaction. When the name and aliases resolve to several existing entities, they are
    merged into the first: relations are re-pointed, aliases united, the others deleted.
    """
    name = _clean_name(name)
    names = [name, *(_clean_name(a, "alias") for a in aliases)]
    found: list[str] = []
    for n in names:
        eid = await _lookup(conn, n)
        if eid and eid not in found:
            found.append(eid)
    now = now or to_db_time(utcnow())
    ops = conn.ops.graph
    if not found:
        eid = str(uuid.uuid4())
        await ops.insert_entity(conn, eid, name, normalize_name(name), type, now)
        found = [eid]
    keep = found[0]
    rows = {r[0]: r for r in await ops.entity_rows(conn, found)}  # ENTITY_COLUMNS: id, name, type, aliases, ...
    row = rows[keep][1:4]
    all_aliases: list[str] = json.loads(row[2])
    for other in found[1:]:
        all_aliases += [rows[other][1], *json.loads(rows[other][3])]
        await ops.merge_entity(conn, keep, other)
    canon = normalize_name(row[0])
    seen = {canon}
    merged: list[str] = []
    for n in [*all_aliases, *names]:
        key = normalize_name(n)
        if key not in seen:
            seen.add(key)
            merged.append(n)
    await ops.set_aliases(conn, keep, [normalize_name(n) for n in [row[0], *merged]],
                          json.dumps(merged, ensure_ascii=False), type)
    return keep


async def store_relation(conn: Any, subject_id: str, predicate: str, object_id: str, *, valid_from: str,
                         valid_to: str | None = None, source_entry_id: str | None = None, confidence: float = 1.0,
                         functional: bool | None = None) -> tuple[str, bool]:
    """Insert a relation inside a write transaction, fitting it into the subject's timeline.

    The same fact already valid at ``valid_from`` is reused (confidence raised to the max; an open one starting
    later is extended back to ``valid_from``). For functional predicates, a relation with another object that
    is valid at ``valid_from`` is closed there, and the new relation is closed where the next known state begins.

    Returns:
        ``(relation id, created)``.
    """
    functional = predicate in FUNCTIONAL_PREDICATES if functional is None else functional
    ops = conn.ops.graph
    same = await ops.same_relation_at(conn, subject_id, predicate, object_id, valid_from)
    if same is not None:
        await ops.raise_confidence(conn, same, confidence)
        return same, False
    # The same fact known to hold from a later time: it started earlier (unless another state came between).
    later = await ops.next_same_relation(conn, subject_id, predicate, object_id, valid_from)
    if later is not None and functional and await ops.state_starts_between(conn, subject_id, predicate, valid_from,
                                                                           later[1]):
        later = None
    if functional:
        await ops.close_other_objects(conn, subject_id, predicate, object_id, valid_from)
    if later is not None:
        await ops.move_start(conn, later[0], valid_from, confidence)
        return later[0], False
    if functional:
        nxt = await ops.next_state_start(conn, subject_id, predicate, valid_from)
        if nxt is not None and (valid_to is None or nxt < valid_to):
            valid_to = nxt
    rid = str(uuid.uuid4())
    await ops.insert_relation(conn, rid, subject_id, predicate, object_id, valid_from=valid_from, valid_to=valid_to,
                              source_entry_id=source_entry_id, confidence=confidence, now=to_db_time(utcnow()))
    return rid, True


async def end_relation(conn: Any, subject_id: str, predicate: str, object_id: str, when: str) -> int:
    """Close the open ``subject -predicate-> object`` relation at ``when``; returns how many were closed."""
    return await conn.ops.graph.end_open_relation(conn, subject_id, predicate, object_id, when)


# ------------------------------------------------------------------------------------------- ingest hooks
async def ingest_text(conn: Any, text: str, entities: Sequence[Entity] | None, *, extractor: Any,
                      speaker: str | None, when: str, source_entry_id: str | None, max_chars: int = 2000) -> int:
    """Extract relations from ``text`` and store them (inside a write transaction).

    Args:
        entities: NER output for ``text``, or None to run ``extractor`` (only when the verb gate matches).
        when: valid_from for the relations (DB time text). source_entry_id: provenance.

    Returns:
        Number of relations created or ended.
    """
    if not text or not GATE.search(text[:max_chars]):
        return 0
    if entities is None:
        entities = extractor.extract(text[:max_chars]) if extractor is not None else []
    n = 0
    for m in extract_relation_mentions(text, entities, speaker=speaker, max_chars=max_chars):
        try:
            sid = await upsert_entity(conn, m.subject, m.subject_type)
            oid = await upsert_entity(conn, m.object, m.object_type)
        except ValidationError:
            continue
        if sid == oid:
            continue
        if m.ends:
            n += await end_relation(conn, sid, m.predicate, oid, when)
        else:
            n += (await store_relation(conn, sid, m.predicate, oid, valid_from=when, source_entry_id=source_entry_id,
                                       confidence=EXTRACTED_CONFIDENCE))[1]
    return n


def speaker_for(entry: Any) -> str | None:
    """Who "I" means in an entry: ``metadata["speaker"]``, else the user for user turns and memories."""
    meta = entry.metadata or {}
    if meta.get("speaker"):
        return str(meta["speaker"])
    if meta.get("role") not in (None, "user"):
        return None
    return entry.user_id


async def extract_entry_relations(ab: Any, conn: Any, entry: Any) -> int:
    """Relations from one entry, valid from its ``event_time`` (else ``created_at``), written on ``conn``."""
    when = to_db_time(entry.event_time or entry.created_at)
    limit = ab.settings.ingest.ner_max_chars
    return await ingest_text(conn, entry.l2_full, None, extractor=ab.extractor, speaker=speaker_for(entry),
                             when=when, source_entry_id=entry.id, max_chars=limit)


RELATIONS_JOB = "relations"  # jobs.kind of a memory's queued relation extraction; jobs.target is the entry id


def may_state_relations(text: str, settings: Any) -> bool:
    """Whether ``text`` can give a relation: one of the relation verbs occurs in the part that is read (the first
    ``ingest.ner_max_chars`` characters; :data:`~agentbase._graph_rules.GATE`). Memories without one queue no
    ``relations`` job."""
    return bool(GATE.search(text[:settings.ingest.ner_max_chars]))


async def relations_job(ab: Any, entry_id: str) -> bool:
    """Queued by ``add_memory``: the graph relations of one memory, valid from its ``event_time`` (else
    ``created_at``), in one transaction. Idempotent (a relation already stored is kept, not duplicated).

    Args:
        ab: an initialised AgentBase. entry_id: the memory's id.

    Returns:
        True (the job is done), also when the entry was deleted or archived meanwhile (nothing to read).
    """
    from .storage.entries import row_to_entry

    db = await ab._open()
    async with db.transaction() as conn:
        row = await conn.ops.graph.active_memory_row(conn, entry_id)
        if row is not None:
            await extract_entry_relations(ab, conn, row_to_entry(row))
    return True


async def ingest_session_relations(ab: Any, conn: Any, session: Any, turns: Sequence[Any],
                                   entity_lists: Sequence[Sequence[Entity]], links: Sequence[tuple]) -> int:
    """Hook for ``commit_session``: relations from the committed turns, valid from each message's time.

    Args:
        session: the session. turns: the committed messages. entity_lists: their NER output (same order).
        links: ``(session_id, entry_id, kind, message_seq)`` rows written by the commit (to find turn entries).
    """
    by_seq = {seq: eid for _sid, eid, kind, seq in links if kind == "turn"}
    limit = ab.settings.ingest.ner_max_chars
    n = 0
    for msg, ents in zip(turns, entity_lists):
        speaker = msg.name or (session.user_id if msg.role == "user" else None)
        n += await ingest_text(conn, msg.content[:limit], ents, extractor=None, speaker=speaker,
                               when=to_db_time(msg.created_at), source_entry_id=by_seq.get(msg.seq),
                               max_chars=limit)
    return n


# -------------------------------------------------------------------------------------------- public API
async def add_entity(ab: Any, name: str, type: str | None, aliases: list[str] | None) -> GraphEntity:
    """See :meth:`AgentBase.add_entity`."""
    if aliases is not None and (isinstance(aliases, str) or not isinstance(aliases, list)):
        raise ValidationError("aliases must be a list of strings")
    if type is not None:
        check_text(type, "entity_type")
    db = await ab._open()
    async with db.transaction() as conn:
        eid = await upsert_entity(conn, name, type, aliases or [])
    found = await get_entity(ab, eid, by_id=True)
    assert found is not None
    return found


async def get_entity(ab: Any, name: str, *, by_id: bool = False) -> GraphEntity | None:
    """See :meth:`AgentBase.get_entity`."""
    db = await ab._open()
    eid = name if by_id else await _lookup(db, _clean_name(name))
    if eid is None:
        return None
    rows = await db.ops.graph.entity_rows(db, [eid])
    return _entity(rows[0]) if rows else None


async def add_relation(ab: Any, subject: str, predicate: str, obj: str, *, valid_from: Any, valid_to: Any,
                       source_entry_id: str | None, confidence: float, functional: bool | None,
                       subject_type: str | None, object_type: str | None) -> Relation:
    """See :meth:`AgentBase.add_relation`."""
    pred = normalize_predicate(predicate)
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
        raise ValidationError("confidence must be a number between 0 and 1")
    vf = to_db_time(parse_time(valid_from) or utcnow())
    vt = to_db_time(parse_time(valid_to)) if valid_to is not None else None
    if vt is not None and vt <= vf:
        raise ValidationError("valid_to must be later than valid_from")
    _clean_name(subject, "subject")
    _clean_name(obj, "object")
    for kind, value in (("subject_type", subject_type), ("object_type", object_type)):
        if value is not None:
            check_text(value, kind)
    db = await ab._open()
    async with db.transaction() as conn:
        sid = await upsert_entity(conn, subject, subject_type)
        oid = await upsert_entity(conn, obj, object_type)
        if sid == oid:
            raise ValidationError("subject and object are the same entity")
        rid, _ = await store_relation(conn, sid, pred, oid, valid_from=vf, valid_to=vt,
                                      source_entry_id=source_entry_id, confidence=float(confidence),
                                      functional=functional)
    return _relation(await db.ops.graph.relation_row(db, rid))


def _as_of(as_of: Any) -> str:
    return to_db_time(parse_time(as_of) or utcnow())


async def facts(ab: Any, entity: str, *, as_of: Any, predicate: str | None, direction: str) -> list[Relation]:
    """See :meth:`AgentBase.facts`."""
    if direction not in ("out", "in", "both"):
        raise ValidationError("direction must be 'out', 'in' or 'both'")
    when = _as_of(as_of)  # a bad date is an error whether or not the entity exists
    db = await ab._open()
    eid = await _lookup(db, _clean_name(entity))
    if eid is None:
        return []
    rows = await db.ops.graph.relations_at(db, eid, direction=direction, when=when,
                                           predicate=None if predicate is None else normalize_predicate(predicate))
    return [_relation(r) for r in rows]


async def timeline(ab: Any, entity: str) -> list[Relation]:
    """See :meth:`AgentBase.timeline`."""
    db = await ab._open()
    eid = await _lookup(db, _clean_name(entity))
    if eid is None:
        return []
    return [_relation(r) for r in await db.ops.graph.timeline_rows(db, eid)]


async def neighbors(ab: Any, entity: str, *, depth: int, as_of: Any, include_expired: bool,
                    limit: int) -> Neighborhood | None:
    """See :meth:`AgentBase.neighbors`."""
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise ValidationError(f"depth must be an integer between 1 and {MAX_DEPTH}")
    when = _as_of(as_of)
    center = await get_entity(ab, entity)
    if center is None:
        return None
    db = ab.db
    depths = {center.id: 0}
    relations: dict[str, Relation] = {}
    frontier = [center.id]
    for hop in range(1, depth + 1):
        if not frontier or len(depths) > limit:
            break
        rows = await db.ops.graph.relations_touching(db, frontier, None if include_expired else when)
        nxt: list[str] = []
        for row in rows:
            rel = _relation(row)
            relations.setdefault(rel.id, rel)
            for eid in (rel.subject_id, rel.object_id):
                if eid not in depths and len(depths) <= limit:
                    depths[eid] = hop
                    nxt.append(eid)
        frontier = nxt
    ids = [e for e in depths if e != center.id]
    ents: list[GraphEntity] = []
    if ids:
        rows = await db.ops.graph.entity_rows(db, ids)
        ents = sorted((_entity(r) for r in rows), key=lambda e: (depths[e.id], e.name.casefold()))
    kept = set(depths)
    rels = [r for r in relations.values() if r.subject_id in kept and r.object_id in kept]
    return Neighborhood(center=center, entities=ents, depths={k: v for k, v in depths.items() if k != center.id},
                        relations=rels)


async def extract_relations(ab: Any, entry_ids: list[str] | None, batch: int = 200) -> int:
    """See :meth:`AgentBase.extract_relations`."""
    from .storage.entries import row_to_entry

    db = await ab._open()
    if entry_ids is not None:
        if not isinstance(entry_ids, list) or not all(isinstance(i, str) for i in entry_ids):
            raise ValidationError("entry_ids must be a list of strings")
        if not entry_ids:
            return 0
    # A session's relations come from its turns at commit, each at its message's time; the facts and summary the
    # commit derived restate those turns (the summary dated at the session's end), so reading them again would
    # reopen ended relations ("I quit Google" -> "Ann joined Google" again at the summary's time): the operation
    # leaves them out.
    rows = await db.ops.graph.memory_rows_to_read(db, entry_ids)
    total = 0
    for start in range(0, len(rows), batch):
        async with db.transaction() as conn:
            for row in rows[start:start + batch]:
                total += await extract_entry_relations(ab, conn, row_to_entry(row))
    return total


async def graph_candidates(ab: Any, query_entities: Iterable[str], filters: Any = None, *,
                           limit: int = 100) -> list[int]:
    """Entry row ids that are the source of relations about the query's entities (a retrieval signal).

    Args:
        ab: an initialised AgentBase.
        query_entities: entity names found in the query (any case; aliases resolve).
        filters: a :class:`~agentbase.retrieval.filters.Filters` applied inside the SQL (None: active entries).
        limit: maximum rids.

    Returns:
        Entry rids (``entries.rid``), currently valid relations first, then by ``valid_from`` descending.
    """
    from .retrieval.filters import Filters

    db = ab.db
    ids: list[str] = []
    for name in query_entities:
        try:
            eid = await _lookup(db, name)
        except ValidationError:
            continue
        if eid and eid not in ids:
            ids.append(eid)
    if not ids:
        return []
    return await db.ops.graph.source_rids(db, ids, filters or Filters(), limit)
