"""``agentbase demo``: it rebuilds its own file and never deletes a database it did not write (names that need
URI escaping included)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from agentbase.cli import app
from tests.cli.conftest import ENV


def test_demo_never_deletes_a_database_it_did_not_write(cli):
    assert cli("add", "precious memory I must not lose").exit_code == 0
    res = cli("demo")
    assert res.exit_code != 0 and "not written by `agentbase demo`" in res.output
    found = cli("find", "precious memory", "--mode", "fts", "--json")
    assert "precious memory I must not lose" in found.output


def test_demo_rebuilds_its_own_file(tmp_path):
    runner = CliRunner()
    path = str(tmp_path / "demo.db")
    for _ in range(2):
        res = runner.invoke(app, ["demo", "--db", path], env=ENV)
        assert res.exit_code == 0, res.output


@pytest.mark.parametrize("name", ["a.db#notes", "b?x.db", "c%41.db"])
def test_demo_refuses_a_foreign_file_whose_name_needs_uri_escaping(tmp_path, name):
    import sqlite3

    marked = sqlite3.connect(tmp_path / "a.db")  # a demo's file, which the unescaped URI check read instead
    marked.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)")
    marked.execute("INSERT INTO meta VALUES ('created_by', 'agentbase demo')")
    marked.commit()
    marked.close()
    target = tmp_path / name
    target.write_text("my precious notes")
    res = subprocess.run([sys.executable, "-m", "agentbase.cli", "demo", "--db", str(target), "--embedder", "hash"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.returncode != 0 and "not written by `agentbase demo`" in res.stderr + res.stdout
    assert target.read_text() == "my precious notes"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({"a.db", name})
