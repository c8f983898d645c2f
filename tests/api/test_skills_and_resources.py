"""Skills (SKILL.md folder import with refusals, atomic replacement, intent lookup) and resource chunks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentbase import ValidationError
from agentbase.skills import parse_skill_md, safe_relpath
from tests._helpers import SKILL_MD, make_skill


async def fingerprint(db) -> tuple:
    """Everything an import could touch."""
    out = []
    for sql in ("SELECT id, l2_full, name, status, metadata FROM entries ORDER BY rid",
                "SELECT entry_id, event, new_value FROM entry_history ORDER BY seq",
                "SELECT skill_id, path, sha256 FROM skill_files ORDER BY skill_id, path",
                "SELECT kind, target, status FROM jobs ORDER BY id"):
        out.append(tuple(await db.db.fetchall(sql)))
    return tuple(out)


async def test_import_stores_entry_and_files(db, tmp_path):
    skill = await db.import_skill_dir(make_skill(tmp_path / "deploy"), user_id="u1")
    assert skill.context_type.value == "skill" and skill.name == "deploy-app"
    assert skill.description.startswith("Deploy the web application")
    assert skill.l2_full.startswith("# Deploy") and "---" not in skill.l2_full
    assert skill.metadata["front_matter"] == {"license": "MIT", "metadata": {"owner": "platform"}}
    files = await db.get_skill_files(skill.id)
    assert files == {"SKILL.md": SKILL_MD, "scripts/deploy.sh": "#!/bin/sh\necho deploy\n"}


async def test_same_name_is_replaced_atomically(db, tmp_path):
    first = await db.import_skill_dir(make_skill(tmp_path / "v1", files={"old.txt": "old", "keep.txt": "a"}))
    v2 = SKILL_MD.replace("Watch the health checks.", "Watch the dashboards.")
    second = await db.import_skill_dir(make_skill(tmp_path / "v2", v2, files={"keep.txt": "b"}))
    assert second.id == first.id
    assert await db.count(context_type="skill") == 1
    assert set(await db.get_skill_files(first.id)) == {"SKILL.md", "keep.txt"}  # old.txt is gone
    assert [h.event for h in await db.history(first.id)] == ["ADD", "UPDATE"]
    # a refused re-import leaves the second version in place
    await db.flush()
    before = await fingerprint(db)
    with pytest.raises(ValidationError):
        await db.import_skill_dir(make_skill(tmp_path / "v3", files={"bad.txt": "café".encode("latin-1")}))
    assert await fingerprint(db) == before
    assert (await db.get(first.id)).l2_full.endswith("Watch the dashboards.")


def _symlink_escape(root: Path) -> None:
    outside = root.parent.parent / "x"
    outside.write_text("secret")
    os.symlink("../../x", root / "link.txt")


def _backslash_escape(root: Path) -> None:
    (root / "..\\..\\x").write_text("escape on Windows")


def _latin1(root: Path) -> None:
    (root / "notes.txt").write_bytes("Ünïcödé in latin-1".encode("latin-1"))


def _no_skill_md(root: Path) -> None:
    (root / "SKILL.md").rename(root / "README.md")


def _too_many(root: Path) -> None:
    many = root / "many"
    many.mkdir()
    for i in range(500):  # + SKILL.md + scripts/deploy.sh = 502 files
        (many / f"f{i}.txt").write_text("x")


def _too_big(root: Path) -> None:
    (root / "big.txt").write_text("x" * (5 * 1024 * 1024 + 1))


def _symlinked_dir(root: Path) -> None:
    os.symlink("/", root / "rootfs")


def _bad_front_matter(root: Path) -> None:
    (root / "SKILL.md").write_text("# no front matter\n")


@pytest.mark.parametrize("damage, message", [
    (_symlink_escape, "symlink"), (_backslash_escape, "unsafe path"), (_latin1, "not UTF-8"),
    (_no_skill_md, "no SKILL.md"), (_too_many, "more than 500 files"), (_too_big, "larger than"),
    (_symlinked_dir, "symlink"), (_bad_front_matter, "front matter"),
])
async def test_refusals_leave_database_unchanged(db, tmp_path, damage, message):
    await db.add_skill("existing", "an existing skill", "body")
    await db.flush()
    before = await fingerprint(db)
    root = make_skill(tmp_path / "a" / "b" / "skill")
    damage(root)
    with pytest.raises(ValidationError, match=message):
        await db.import_skill_dir(root)
    assert await fingerprint(db) == before


async def test_limits_are_configurable_and_root_must_be_a_folder(db, tmp_path):
    root = make_skill(tmp_path / "s")
    with pytest.raises(ValidationError, match="more than 1 files"):
        await db.import_skill_dir(root, max_files=1)
    with pytest.raises(ValidationError, match="larger than 10 bytes"):
        await db.import_skill_dir(root, max_bytes=10)
    with pytest.raises(ValidationError, match="not a folder"):
        await db.import_skill_dir(tmp_path / "missing")
    os.symlink(root, tmp_path / "alias")
    with pytest.raises(ValidationError, match="symlink"):
        await db.import_skill_dir(tmp_path / "alias")
    assert await db.count(context_type="skill") == 0


def test_path_and_front_matter_helpers():
    assert safe_relpath("a/b.txt") == "a/b.txt"
    for bad in ("../x", "/etc/passwd", "a/../../x", "a\\..\\x", "C:/x", "a//b", "./a", "a\x00b"):
        with pytest.raises(ValidationError):
            safe_relpath(bad)
    front, body = parse_skill_md("\ufeff---\nname: x\ndescription: y\n---\nbody")
    assert front == {"name": "x", "description": "y"} and body == "body"
    for bad in ("---\nname: [unclosed\n---\n", "---\n- a list\n---\n", "---\nname: x\n---\n"):
        with pytest.raises(ValidationError):
            parse_skill_md(bad)


async def test_find_skills_answers_intent_queries(db, tmp_path):
    deploy = await db.import_skill_dir(make_skill(tmp_path / "deploy"))
    await db.add_skill("write-tests", "Write pytest unit tests for a Python module", "Use fixtures.")
    await db.add_skill("summarize-pdf", "Summarize a PDF document into bullet points", "Extract text first.")
    await db.add_memory("We talked about deploying last week")  # a memory never shows up in find_skills
    await db.flush()
    for query in ("how do I deploy?", "deployment steps", "How can I roll out the app to production"):
        results = await db.find_skills(query, top_k=3)
        assert results and results[0].entry.id == deploy.id, query
        assert all(r.entry.context_type.value == "skill" for r in results)
    top = (await db.find_skills("how do I write tests", top_k=1))[0]
    assert top.entry.name == "write-tests" and "skill_rrf" in top.score_parts
    assert await db.find_skills("", top_k=3) == []


def test_cli_skill_import(tmp_path):
    from agentbase.cli import app

    root = make_skill(tmp_path / "deploy")
    dbfile = tmp_path / "cli.db"
    res = CliRunner().invoke(app, ["skill", "import", str(root), "--db", str(dbfile), "--json"],
                             env={"AGENTBASE_EMBEDDER__PROVIDER": "hash", "AGENTBASE_NER": "regex"})
    assert res.exit_code == 0, res.output
    assert '"deploy-app"' in res.output and "scripts/deploy.sh" in res.output
    (root / "evil.txt").write_bytes(b"\xff\xfe")
    res = CliRunner().invoke(app, ["skill", "import", str(root), "--db", str(dbfile)],
                             env={"AGENTBASE_EMBEDDER__PROVIDER": "hash", "AGENTBASE_NER": "regex"})
    assert res.exit_code == 2 and "not UTF-8" in res.output
    # a folder without SKILL.md (or no folder) is refused before the database is opened: no file is created
    for bad in (tmp_path / "nope", tmp_path / "deploy" / "scripts"):
        fresh = tmp_path / "fresh.db"
        res = CliRunner().invoke(app, ["skill", "import", str(bad), "--db", str(fresh)],
                                 env={"AGENTBASE_EMBEDDER__PROVIDER": "hash", "AGENTBASE_NER": "regex"})
        assert res.exit_code == 2 and "no SKILL.md" in res.output and not fresh.exists(), res.output


# ------------------------------------------------------------------------------------------------ resources
async def test_resource_chunks_are_exact_slices_of_repeated_and_multiline_text(db):
    content = ("AgentBase stores memories. " * 40 + "The secret launch code is BLUE-42. "
               + "Filler sentence here.\n\n" * 60 + "段落一。" * 80 + "x" * 700)
    chunks = await db.add_resource("file:///notes.md", content, chunk_chars=500)
    starts = [c.metadata["char_start"] for c in chunks]
    assert len(set(starts)) == len(starts) == len(chunks) > 5 and starts == sorted(starts)
    for c in chunks:
        start = c.metadata["char_start"]
        assert content[start:start + len(c.l2_full)] == c.l2_full and 0 < len(c.l2_full) <= 500
    code = next(c for c in chunks if "BLUE-42" in c.l2_full)
    assert content[code.metadata["char_start"]:].startswith(code.l2_full)


async def test_resource_chunks_point_back_to_their_resource(db):
    sentences = [f"Section {i} explains how the frobnicator handles case {i} in detail." for i in range(40)]
    content = " ".join(sentences)
    chunks = await db.add_resource("https://docs.example.com/frob", content, mime_type="text/markdown",
                                   title="Frobnicator guide", chunk_chars=300)
    assert len(chunks) > 5
    for i, c in enumerate(chunks):
        assert c.context_type.value == "resource" and c.uri == "https://docs.example.com/frob"
        assert c.metadata["chunk_index"] == i and c.metadata["chunk_count"] == len(chunks)
        start = c.metadata["char_start"]
        assert content[start:start + len(c.l2_full)] == c.l2_full
        assert c.name == "Frobnicator guide" and c.mime_type == "text/markdown"
    starts = [c.metadata["char_start"] for c in chunks]
    assert starts == sorted(starts) and starts[0] == 0
    await db.flush()
    for mode in ("fts", "hybrid"):
        hits = await db.find("frobnicator case 33", top_k=3, context_type="resource", mode=mode)
        assert hits and hits[0].entry.uri == "https://docs.example.com/frob"
        best = hits[0].entry
        assert "case 33 " in best.l2_full
        assert content[best.metadata["char_start"]:].startswith(best.l2_full)


async def test_adding_a_skill_name_the_owners_have_replaces_it(db, tmp_path):
    # add_skill twice made two "deploy" skills (find_skills returned both); a name is a skill's identity, as for
    # import_skill_dir, and other owners keep their own skill of that name.
    first = await db.add_skill("deploy-app", "Deploy the web app", "1. run deploy.sh", user_id="a")
    other = await db.add_skill("deploy-app", "Deploy the other app", "run make deploy", user_id="b")
    again = await db.add_skill("deploy-app", "Deploy the web app safely", "1. run checks 2. run deploy.sh",
                               user_id="a")
    assert again.id == first.id and again.created_at == first.created_at and other.id != first.id
    assert (await db.get(first.id)).l2_full == "1. run checks 2. run deploy.sh"
    assert await db.count(context_type="skill") == 2
    assert [h.event for h in await db.history(first.id)] == ["ADD", "UPDATE"]
    imported = await db.import_skill_dir(make_skill(tmp_path / "s"), user_id="a")  # name: deploy-app
    assert imported.id == first.id and await db.get_skill_files(first.id)
    await db.add_skill("deploy-app", "Deploy by hand", "ssh and pull", user_id="a")
    assert await db.get_skill_files(first.id) == {}


async def test_resource_arguments_are_checked(db):
    with pytest.raises(ValidationError):
        await db.add_resource("u://4", "abc", mime_type=5)
    with pytest.raises(ValidationError, match="user_idd"):
        await db.add_resource("u://5", "abc", user_idd="alice")
    assert await db.list(context_type="resource") == []
