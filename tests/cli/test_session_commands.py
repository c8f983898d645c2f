"""``agentbase session``: ``list`` (newest first, by owner, paged, one line per session) and ``show`` (role
and speaker name)."""

from __future__ import annotations

import json

from tests.cli.conftest import _run


def test_session_list_newest_first_by_owner_and_paged(tmp_path):
    db = str(tmp_path / "sl.db")
    assert _run("init", "--db", db).exit_code == 0
    ids = [_run("session", "create", "--db", db, "--user-id", user, "--session-id", sid).stdout.strip()
           for user, sid in (("alice", "s-old"), ("bob", "s-mid"), ("alice", "s-new"))]
    assert ids == ["s-old", "s-mid", "s-new"]
    assert _run("session", "add-message", "s-new", "user", "hello", "--db", db).exit_code == 0
    assert _run("session", "commit", "s-new", "--db", db).exit_code == 0
    out = _run("session", "list", "--db", db)
    assert out.exit_code == 0
    lines = out.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["s-new", "s-mid", "s-old"]
    assert "user=alice" in lines[0] and "committed=1" in lines[0] and "committed=0" in lines[2]
    alice = json.loads(_run("session", "list", "--db", db, "--user-id", "alice", "--json").stdout)
    assert [s["id"] for s in alice] == ["s-new", "s-old"]
    paged = _run("session", "list", "--db", db, "--limit", "1", "--offset", "1")
    assert [line.split()[0] for line in paged.stdout.splitlines()] == ["s-mid"]
    assert _run("session", "list", "--db", db, "--limit", "0").exit_code == 2
    none = _run("session", "list", "--db", db, "--user-id", "nobody")
    assert none.exit_code == 0 and none.stdout == ""
    assert _run("session", "list", "--db", str(tmp_path / "missing.db")).exit_code != 0
    # an owner id with a line break stays on its session's line, quoted
    assert _run("session", "create", "--db", db, "--user-id", "eve\nmallory", "--session-id", "s-eve").exit_code == 0
    eve = _run("session", "list", "--db", db, "--limit", "1").stdout.splitlines()
    assert len(eve) == 1 and eve[0].startswith("s-eve  user='eve\\nmallory'")


def test_session_show_prints_role_and_speaker_name(cli):
    assert cli("session", "create", "--session-id", "s1").exit_code == 0
    assert cli("session", "add-message", "s1", "user", "I adopted a [bold]cat[/bold]", "--name",
               "Caroline").exit_code == 0
    assert cli("session", "add-message", "s1", "assistant", "Congratulations!").exit_code == 0
    res = cli("session", "show", "s1")
    assert res.exit_code == 0, res.output
    assert "user (Caroline): I adopted a [bold]cat[/bold]" in res.output
    assert "assistant: Congratulations!" in res.output
    assert " Caroline:" not in res.output
