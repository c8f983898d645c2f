"""``agentbase list`` with an offset past the last entry shows no range it does not hold ("0-100 of 10")."""

from __future__ import annotations

from typer.testing import CliRunner

from agentbase.cli import app

from .conftest import make_db


def test_list_past_the_end_reports_none_shown(tmp_path):
    path = tmp_path / "l.db"
    db = make_db(path)
    for i in range(10):
        db.sync.add_memory(f"note {i}", user_id="bob")
    db.sync.close()
    run = CliRunner()
    r = run.invoke(app, ["list", "--db", str(path), "--user-id", "bob", "--limit", "3", "--offset", "100"])
    assert r.exit_code == 0, r.output
    last = r.output.strip().splitlines()[-1]
    assert last == "0 of 10 entries (offset 100 is past the end)", last
    r = run.invoke(app, ["list", "--db", str(path), "--user-id", "bob", "--limit", "3", "--offset", "8"])
    assert r.output.strip().splitlines()[-1] == "9-10 of 10 entries"
    r = run.invoke(app, ["list", "--db", str(path), "--user-id", "nobody"])
    assert r.output.strip().splitlines()[-1] == "0 of 0 entries"
