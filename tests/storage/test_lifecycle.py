"""Lifecycle: recall-reinforced strength, decay passes (archive / purge), archive history, online backups."""

from __future__ import annotations

import asyncio
import math
import sqlite3
from datetime import timedelta

import pytest
from typer.testing import CliRunner

from agentbase import ValidationError
from agentbase.lifecycle import strength
from agentbase.models import utcnow


def test_strength_formula():
    t0 = utcnow()
    assert strength(t0, None, 0, t0) == 1.0
    assert strength(t0, None, 0, t0 + timedelta(days=30)) == pytest.approx(math.exp(-1))
    assert strength(t0, None, 2, t0 + timedelta(days=30), tau0_days=10) == pytest.approx(math.exp(-30 / 22.5))
    # age counts from the last recall
    assert strength(t0, t0 + timedelta(days=30), 1, t0 + timedelta(days=30)) == 1.0
    assert strength(t0, None, 0, t0 - timedelta(days=1)) == 1.0  # future memories are not stronger than 1


async def test_recalled_memory_outlives_unrecalled_one_of_same_age(db):
    recalled = await db.add_memory("User's locker code is 4512")
    forgotten = await db.add_memory("User parked on level 3 yesterday")
    for _ in range(5):
        assert await db.recall([recalled.id]) == 1
    assert (await db.get(recalled.id)).access_count == 5
    later = utcnow() + timedelta(days=120)
    s = await db.strengths([recalled.id, forgotten.id], now=later)
    assert s[recalled.id] == pytest.approx(math.exp(-120 / (30 * 1.5 ** 5)), rel=1e-3)  # ~0.59
    assert s[forgotten.id] == pytest.approx(math.exp(-120 / 30), rel=1e-3)  # ~0.018
    assert s[recalled.id] > 0.5 > 0.05 > s[forgotten.id]

    out = await db.decay_pass(0.05, now=later)
    assert out["archived"] == [forgotten.id] and out["deleted"] == [] and out["scanned"] == 2
    assert (await db.get(recalled.id)).status == "active"
    assert (await db.get(forgotten.id)).status == "archived"
    # archived entries are hidden from find and list by default, but kept
    await db.flush()
    assert [r.entry.id for r in await db.find("parked level", mode="fts")] == []
    assert [e.id for e in await db.list()] == [recalled.id]
    assert {e.id for e in await db.list(include_archived=True)} == {recalled.id, forgotten.id}
    # a second pass finds nothing new
    assert (await db.decay_pass(0.05, now=later))["archived"] == []


async def test_archive_and_unarchive_record_history(db):
    e = await db.add_memory("User likes green tea")
    assert await db.archive_entries([e.id], reason="test") == [e.id]
    assert await db.archive_entries([e.id]) == []  # already archived: no change, no event
    hist = await db.history(e.id)
    assert [h.event for h in hist] == ["ADD", "UPDATE"]
    assert hist[1].metadata["status"] == {"old": "active", "new": "archived"} and hist[1].metadata["reason"] == "test"
    assert hist[1].old_value == hist[1].new_value == "User likes green tea"
    assert await db.unarchive_entries([e.id]) == [e.id]
    hist = await db.history(e.id)
    assert [h.event for h in hist] == ["ADD", "UPDATE", "UPDATE"]
    assert hist[2].metadata["status"] == {"old": "archived", "new": "active"}
    again = await db.get(e.id)
    assert again.status == "active" and again.last_accessed_at is not None  # the decay clock restarted
    await db.flush()
    assert [r.entry.id for r in await db.find("green tea", mode="fts")] == [e.id]


async def test_purge_deletes_and_only_memories_decay_by_default(db):
    old = await db.add_memory("Temporary note about a parcel")
    skill = await db.add_skill("parcel-tracker", "Track a parcel", "steps")
    later = utcnow() + timedelta(days=365)
    out = await db.decay_pass(0.5, purge=True, now=later)
    assert out["deleted"] == [old.id]
    assert await db.get(old.id) is None and await db.get(skill.id) is not None
    assert [h.event for h in await db.history(old.id)] == ["ADD", "DELETE"]
    # purge also removes entries that an earlier pass archived
    arch = await db.add_memory("Archived note about shoes")
    await db.archive_entries([arch.id])
    out = await db.decay_pass(0.5, purge=True, now=later, context_type=None)
    assert set(out["deleted"]) == {arch.id, skill.id}
    assert await db.get(arch.id) is None


async def test_decay_rejects_bad_arguments(db):
    for kwargs in ({"threshold": 2}, {"threshold": -0.1}, {"threshold": 0.1, "tau0_days": 0}):
        with pytest.raises(ValidationError):
            await db.decay_pass(**kwargs)
    with pytest.raises(ValidationError):
        await db.recall("not-a-list")
    with pytest.raises(ValidationError):
        await db.backup("/tmp", keep=0)


async def test_backup_is_consistent_and_rotates(db, tmp_path):
    for i in range(20):
        await db.add_memory(f"memory number {i}")
    dest = tmp_path / "backups"
    paths = []
    for _ in range(3):
        # writes keep flowing while the backup copies pages
        writer = asyncio.ensure_future(asyncio.gather(*(db.add_memory(f"concurrent {i}") for i in range(5))))
        out = await db.backup(dest, keep=2)
        await writer
        paths.append(out["path"])
    kept = sorted(p.name for p in dest.iterdir())
    assert len(kept) == 2 and kept == sorted(p.split("/")[-1] for p in paths[1:])
    assert all(name.startswith("agent-") and name.endswith("Z.db") for name in kept)
    con = sqlite3.connect(paths[-1])
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        n = con.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
        assert 20 <= n <= 35
        assert con.execute("SELECT COUNT(*) FROM entries_fts WHERE entries_fts MATCH 'memory'").fetchone()[0] == 20
    finally:
        con.close()


def test_cli_forget_and_backup(tmp_path):
    from agentbase.cli import app

    env = {"AGENTBASE_EMBEDDER__PROVIDER": "hash", "AGENTBASE_NER": "regex"}
    dbfile = tmp_path / "cli.db"
    runner = CliRunner()
    assert runner.invoke(app, ["add", "a note", "--db", str(dbfile)], env=env).exit_code == 0
    res = runner.invoke(app, ["forget", "--db", str(dbfile)], env=env)
    assert res.exit_code == 2 and "--decay" in res.output
    res = runner.invoke(app, ["forget", "--decay", "--threshold", "0.5", "--db", str(dbfile), "--json"], env=env)
    assert res.exit_code == 0 and '"archived": []' in res.output  # a fresh memory has strength 1
    res = runner.invoke(app, ["backup", "--db", str(dbfile), "--dir", str(tmp_path / "bk"), "--keep", "1"], env=env)
    assert res.exit_code == 0, res.output
    assert len(list((tmp_path / "bk").iterdir())) == 1


async def test_decay_pass_refuses_an_unknown_context_type_and_changes_nothing(db):
    e = await db.add_memory("an old note")
    later = utcnow() + timedelta(days=365)
    for bad in ("memroy", ["memory", "nope"], 5):
        with pytest.raises(ValidationError):
            await db.decay_pass(0.05, now=later, context_type=bad)  # a typo silently turned decay off
    assert (await db.get(e.id)).status == "active"
    assert (await db.decay_pass(0.05, now=later, context_type=["memory"]))["archived"] == [e.id]


async def test_an_empty_path_is_refused_not_read_as_the_current_folder(db, tmp_path, monkeypatch):
    # Path("") is ".": backup("") wrote into, and import_skill_dir("") imported, the folder the program ran in.
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    (work / "SKILL.md").write_text("---\nname: here\ndescription: the working folder\n---\nbody\n")
    for call in (lambda: db.backup(""), lambda: db.import_skill_dir(""), lambda: db.export_archive(" "),
                 lambda: db.import_archive(""), lambda: db.backup(5)):
        with pytest.raises(ValidationError):
            await call()
    assert sorted(p.name for p in work.iterdir()) == ["SKILL.md"]
    assert await db.count(context_type="skill") == 0


def test_cli_refuses_an_empty_path_argument(tmp_path, monkeypatch):
    # typer turned "" into Path(""), the current folder: `backup --dir ""` wrote the copy there
    from agentbase.cli import app

    env = {"AGENTBASE_EMBEDDER__PROVIDER": "hash", "AGENTBASE_NER": "regex"}
    dbfile = tmp_path / "cli.db"
    runner = CliRunner()
    assert runner.invoke(app, ["add", "a note", "--db", str(dbfile)], env=env).exit_code == 0
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    for args in (["backup", "--dir", ""], ["export", " "], ["import-archive", ""], ["skill", "import", ""]):
        res = runner.invoke(app, [*args, "--db", str(dbfile)], env=env)
        assert res.exit_code == 2 and "is empty" in res.output, (args, res.output)
    assert list(work.iterdir()) == []


async def test_decay_pass_with_an_empty_type_list_decays_nothing(db):
    # an empty list asks for nothing in every filter; here it decayed (or with purge=True deleted) every type
    e = await db.add_memory("an old note")
    out = await db.decay_pass(0.05, now=utcnow() + timedelta(days=365), context_type=[], purge=True)
    assert out["scanned"] == 0 and out["deleted"] == [] and await db.get(e.id) is not None
