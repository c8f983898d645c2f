"""Multi-agent scopes: isolation on the FTS, vector and hybrid paths; heartbeats and active sibling sessions."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agentbase import NotFoundError, ValidationError
from agentbase.models import utcnow
from agentbase.scopes import visibility_clause, visible_to

ROWS = [
    ("global", {}),
    ("agent", {"agent_id": "a1"}),
    ("agent", {"agent_id": "a2"}),
    ("project", {"project_id": "p1"}),
    ("project", {"project_id": "p2"}),
    ("session", {"session_id": "s1"}),
    ("session", {"session_id": "s2"}),
    ("global", {"user_id": "bob"}),
    ("agent", {}),  # agent scope without an agent id: visible to nobody but unfiltered queries
]


@pytest.fixture
async def scoped(db):
    ids = {}
    for i, (scope, owners) in enumerate(ROWS):
        label = scope + ":" + ",".join(f"{k}={v}" for k, v in owners.items())
        e = await db.add_memory(f"deploy checklist number {i} for {label}", scope=scope, **owners)
        ids[label] = e.id
    await db.flush()
    return db, ids


@pytest.mark.parametrize("mode", ["fts", "vector", "hybrid"])
async def test_isolation_on_every_path(scoped, mode):
    db, ids = scoped
    viewer = visible_to(user_id="alice", agent_id="a1", project_id="p1", session_id="s1")
    got = {r.entry.id for r in await db.find("deploy checklist", top_k=50, mode=mode, **viewer)}
    assert got == {ids["global:"], ids["agent:agent_id=a1"], ids["project:project_id=p1"],
                   ids["session:session_id=s1"]}
    other = visible_to(agent_id="a2", session_id="s2")
    got = {r.entry.id for r in await db.find("deploy checklist", top_k=50, mode=mode, **other)}
    assert got == {ids["global:"], ids["agent:agent_id=a2"], ids["session:session_id=s2"], ids["global:user_id=bob"]}
    nobody = {r.entry.id for r in await db.find("deploy checklist", top_k=50, mode=mode, **visible_to())}
    assert nobody == {ids["global:"], ids["global:user_id=bob"]}
    # top_k is applied after isolation, never before: the single best visible result is always returned
    one = await db.find("deploy checklist", top_k=1, mode=mode, **visible_to(project_id="p2"))
    assert len(one) == 1 and one[0].entry.id in {ids["global:"], ids["project:project_id=p2"],
                                                 ids["global:user_id=bob"]}


async def test_isolation_in_list_and_count(scoped):
    db, ids = scoped
    viewer = visible_to(project_id="p2", user_id="bob")
    assert {e.id for e in await db.list(**viewer)} == {ids["global:"], ids["project:project_id=p2"],
                                                       ids["global:user_id=bob"]}
    assert await db.count(**viewer) == 3
    assert await db.count() == len(ROWS)  # no viewer: no isolation
    # combines with ordinary filters
    assert await db.count(category="fact", **visible_to(agent_id="a1")) == 3


def test_visibility_clause_validates():
    sql, params = visibility_clause({"agent_id": "a1"})
    assert "e.scope = 'global'" in sql and params == ["a1"]
    with pytest.raises(ValidationError):
        visibility_clause({"team_id": "x"})
    with pytest.raises(ValidationError):
        visible_to(agent_id="")
    with pytest.raises(ValidationError):
        visibility_clause({"agent_id": "a"}, alias="e; DROP TABLE entries")


async def test_heartbeats_and_active_sibling_sessions(db):
    now = utcnow()
    await db.create_session(session_id="s-plan", agent_id="planner", project_id="acme")
    for sid in ("s-code", "s-old", "s-else", "s"):
        await db.create_session(session_id=sid)
    hb = await db.heartbeat("s-plan", task="planning the release", now=now)
    assert (hb.agent_id, hb.project_id, hb.task) == ("planner", "acme", "planning the release")  # from the session
    await db.heartbeat("s-code", "coder", "writing the migration", project_id="acme", now=now - timedelta(seconds=60))
    await db.heartbeat("s-old", "tester", "idle", project_id="acme", now=now - timedelta(seconds=400))
    await db.heartbeat("s-else", "writer", "docs", project_id="other", now=now)

    active = await db.active_sessions("acme", now=now)
    assert [a.session_id for a in active] == ["s-plan", "s-code"]  # s-old is stale, s-else another project
    assert active[1].age_s == pytest.approx(60) and active[1].task == "writing the migration"
    siblings = await db.active_sessions("acme", exclude_session_id="s-plan", now=now)
    assert [a.session_id for a in siblings] == ["s-code"]
    assert {a.session_id for a in await db.active_sessions(now=now)} == {"s-plan", "s-code", "s-else"}
    assert [a.session_id for a in await db.active_sessions("acme", stale_after_s=30, now=now)] == ["s-plan"]

    # a later heartbeat without a task keeps the task and revives a stale session
    revived = await db.heartbeat("s-old", now=now)
    assert revived.task == "idle" and revived.started_at < revived.last_seen_at
    assert "s-old" in {a.session_id for a in await db.active_sessions("acme", now=now)}
    assert await db.end_heartbeat("s-old") is True and await db.end_heartbeat("s-old") is False
    with pytest.raises(ValidationError):
        await db.active_sessions(stale_after_s=0)
    with pytest.raises(ValidationError):
        await db.heartbeat("s", task="x" * 2001)


async def test_heartbeat_for_an_unknown_session_is_refused_and_writes_nothing(db):
    with pytest.raises(NotFoundError, match="s-typo"):
        await db.heartbeat("s-typo", "coder", "writing")
    assert await db.active_sessions() == []
    assert await db.db.fetchall("SELECT * FROM agent_heartbeats") == []
