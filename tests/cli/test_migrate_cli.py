"""``agentbase migrate --from FILE --to URL`` on a real SQLite file and a real PostgreSQL database."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from tests.cli.conftest import ENV, _run


def test_migrate_prints_counts_and_a_second_run_refuses(cli, pg_url):
    assert cli("add", "Rotate the API keys on Friday").exit_code == 0
    assert cli("add", "Lisbon trip in May").exit_code == 0
    first = _run("migrate", "--from", cli.db, "--to", pg_url, "--json")
    assert first.exit_code == 0, first.output
    out = json.loads(first.output)
    assert out["tables"]["entries"] == {"source": 2, "copied": 2}
    assert "***" in out["to"] or "@" not in out["to"]
    again = _run("migrate", "--from", cli.db, "--to", pg_url)
    assert again.exit_code != 0 and "already holds AgentBase data" in again.output


def test_migrate_refuses_a_path_as_target_and_a_missing_source(cli, tmp_path):
    bad = _run("migrate", "--from", str(tmp_path / "none.db"), "--to", str(tmp_path / "other.db"))
    assert bad.exit_code != 0 and "postgresql:// URL" in bad.output
    assert not (tmp_path / "other.db").exists()


@pytest.mark.parametrize("kind", ["missing", "directory", "empty", "corrupt", "foreign"])
def test_a_bad_source_exits_2_and_is_left_unchanged(tmp_path, pg_url, kind):
    source = tmp_path / "source.db"
    expected = {"missing": "does not exist", "directory": "is a directory", "empty": "it is empty",
                "corrupt": "it is not an SQLite database", "foreign": "another SQLite database"}[kind]
    if kind == "directory":
        source.mkdir()
    elif kind == "empty":
        source.write_bytes(b"")
    elif kind == "corrupt":
        source.write_bytes(b"\x00garbage, not SQLite\n" * 100)
    elif kind == "foreign":
        con = sqlite3.connect(source)
        con.execute("CREATE TABLE notes (body TEXT)")
        con.commit()
        con.close()
    before = source.read_bytes() if source.is_file() else None
    result = _run("migrate", "--from", str(source), "--to", pg_url)
    assert result.exit_code == 2, result.output
    assert expected in result.output and "error:" in result.output
    if kind == "directory":
        assert "does not exist" not in result.output
    if before is not None:  # a 0-byte file stays 0 bytes: no schema was created in it
        assert source.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if kind == "missing" else ["source.db"])


def test_two_migrate_processes_at_once_one_copies_the_other_says_already_holds(cli, pg_url):
    assert cli("add", "Rotate the API keys on Friday").exit_code == 0
    assert cli("add", "Lisbon trip in May").exit_code == 0
    argv = [sys.executable, "-c", "from agentbase.cli import app; app()", "migrate", "--from", cli.db, "--to", pg_url]
    env = {**os.environ, **ENV}
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    outs = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in outs)
    assert codes == [0, 3], outs
    loser = next(err for code, _, err in outs if code == 3)
    assert "already holds AgentBase data" in loser and "duplicate key" not in loser, loser
