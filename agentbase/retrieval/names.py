"""The text embedded for the vector leg: the query without the names that tag much of the visible memory.

In a conversation between Caroline and Melanie, "Caroline" tags half of everything stored, so it tells the
keyword leg little (BM25 gives it a low IDF) but it dominates the query's embedding: short entries that also carry
the name ("Caroline wants to help people") then match "What did Caroline research?" better than the turn that
answers it. A name whose entity tag is on at least ``retrieval.vector_name_share`` of the entries the query may
see (its owners' latest entries) is left out of the embedded text, as a very common term would be; the keyword
leg and the entity boost still use it, so the person's own turns are still preferred. The share is estimated on
the latest ``retrieval.vector_name_sample`` entries of the query's owners, so the cost does not grow with the file
(one bounded read), and only a name on at least :data:`MIN_TAGGED` of them counts as common: in a handful of
memories a share says nothing (and mem0's search, which the mem0 adapter mirrors, embeds the query as it is).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..errors import ValidationError
from ..ner import NON_TAG_LABELS, tag_for
from ..ner.base import Entity
from .filters import Filters

__all__ = ["MIN_TAGGED", "names_in_query", "owner_names", "vector_query_text"]

#: The fewest sampled entries a name must tag to be left out of the embedded query.
MIN_TAGGED = 20
_WORDS = re.compile(r"[\w'-]+")  # a query's words, as names are written (O'Brien, Mary-Ann)


async def owner_names(db: Any, filters: Filters) -> set[str]:
    """The names the query's user goes by, normalised (:func:`~.fusion.norm_name`): the ``user_id`` itself and the
    value of the user's current ``name`` fact ("My name is Erin Walsh": "erin walsh" and "erin").

    An agent asks about its user in the third person ("Which marathon is Erin running?"), but the user's own
    turns say "I": a name the user goes by marks the user's turns, not the entries that mention the name.

    Args:
        db: the storage ``Database``.
        filters: the query's filters; without ``user_id`` the set is empty.

    Returns:
        A set of normalised names (at most a few; one indexed read).
    """
    from .fusion import norm_name

    if not filters.user_id:
        return set()
    names = {norm_name(filters.user_id)}
    for value in await db.ops.retrieval.name_fact_values(db, filters.user_id, 20):
        if isinstance(value, str) and norm_name(value):
            names.update((norm_name(value), norm_name(value).split()[0]))
    return names


def names_in_query(query: str, names: set[str]) -> set[str]:
    """The user's names (from :func:`owner_names`) that the query holds as whole words in any case.

    Entity extraction reads a name from its capital ("Bob"), so a query typed in lower case ("what does bob
    like") names the user without an entity; a name that is also a common word (an FTS stopword, such as a
    user_id "me" or "will") is not read this way.

    Args:
        query: the query text. names: normalised names (:func:`~.fusion.norm_name`).

    Returns:
        The subset of ``names`` found in ``query``.
    """
    from ..index.fts import STOPWORDS
    from .fusion import norm_name

    words = f" {' '.join(_WORDS.findall(norm_name(query)))} "
    return {n for n in names if n not in STOPWORDS and any(c.isalpha() for c in n) and f" {n} " in words}


async def vector_query_text(db: Any, query: str, entities: Sequence[Entity], filters: Filters, *,
                            share: float, sample: int) -> tuple[str, list[str]]:
    """The query text to embed and the names left out of it.

    Args:
        db: the storage ``Database``.
        query: the normalised query; ``entities`` index it.
        entities: the query's entities (:class:`~agentbase.ner.base.Entity`, offsets into ``query``).
        filters: the query's filters; the sample is the latest entries of its owners and visibility only (an
            indexed read of at most ``sample`` rows: a selective metadata or date filter is not applied, so it
            cannot turn the sample into a scan of the file).
        share: the fraction (0..1] of sampled entries a name's tag must be on (and at least :data:`MIN_TAGGED`
            of them) to be left out; 0 turns this off.
        sample: how many of the latest visible entries the share is estimated on.

    Returns:
        ``(text, dropped)``: ``query`` with the spans of the common names (and a possessive after them) removed,
        or ``query`` itself when nothing is dropped or nothing alphanumeric would remain.
    """
    names: dict[str, list[Entity]] = {}
    for ent in entities:
        if ent.label in NON_TAG_LABELS:
            continue
        try:
            names.setdefault(tag_for(ent.text), []).append(ent)
        except ValidationError:
            continue
    if share <= 0 or not names:
        return query, []
    tags = list(names)
    owners = Filters(user_id=filters.user_id, agent_id=filters.agent_id, project_id=filters.project_id,
                     session_id=filters.session_id, visible_to=filters.visible_to, include_archived=True,
                     exclude_superseded=False)
    where, params = owners.where("e", db.ops)
    total, tagged = await db.ops.retrieval.tag_counts_in_latest(db, tags, where, params, sample)
    if not total:
        return query, []
    common = [tag for tag, n in zip(tags, tagged) if n >= MIN_TAGGED and n / total >= share]
    spans = sorted((e.start, e.end) for tag in common for e in names[tag])
    if not spans:
        return query, []
    out, pos = [], 0
    for start, end in spans:
        out.append(query[pos:start])
        pos = end
        for tail in ("'s", "’s", "'", "’"):
            if query.startswith(tail, pos):
                pos += len(tail)
                break
    out.append(query[pos:])
    text = " ".join("".join(out).split())
    if not any(ch.isalnum() for ch in text):
        return query, []
    return text, [e.text for tag in common for e in names[tag]]
