"""``agentbase migrate --from FILE --to URL`` on a real SQLite file and a real PostgreSQL database."""

from __future__ import annotations

import json

from tests.cli.conftest import _run


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
