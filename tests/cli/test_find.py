"""``agentbase find``: time words read from ``--reference-time``, a warning on stderr when vectors cannot be
used, no trace id when another process holds the write lock."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from agentbase.cli import app
from tests.cli.conftest import ENV, _run


def test_find_reads_time_words_from_reference_time(tmp_path):
    import json

    from tests.conftest import make_db

    db = str(tmp_path / "t.db")
    ab = make_db(tmp_path / "t.db")
    ab.sync.add_memory("went hiking in the Alps", event_time="2024-05-08")
    ab.sync.add_memory("last week was busy", event_time="2024-05-14")
    ab.sync.close()

    def first(*extra: str) -> str:
        result = _run("find", "what did I do last week", "--db", db, "--json", *extra)
        assert result.exit_code == 0, result.output
        return json.loads(result.output)[0]["entry"]["l2_full"]

    assert first("--reference-time", "2024-05-15") == "went hiking in the Alps"
    assert first() == "last week was busy"  # read from today: a week that holds nothing
    result = _run("find", "hiking", "--db", db, "--reference-time", "banana")
    assert result.exit_code == 2 and "cannot parse time 'banana'" in result.output


def test_find_warns_on_stderr_when_vectors_cannot_be_used(cli, tmp_path):
    assert cli("add", "quarterly planning meeting").exit_code == 0
    runner = CliRunner()
    res = runner.invoke(app, ["find", "meeting", "--json", "--db", cli.db],
                        env={**ENV, "AGENTBASE_EMBEDDER__PROVIDER": "none"})
    assert res.exit_code == 0 and "no embedder configured" in res.stderr
    assert [r["entry"]["l2_full"] for r in json.loads(res.stdout)] == ["quarterly planning meeting"]


def test_find_prints_no_trace_id_when_another_process_held_the_write_lock(cli):
    import subprocess
    import sys

    assert cli("add", "Caroline moved to Lisbon in May").exit_code == 0
    holder = subprocess.Popen(  # another process writing: holds the file's write lock until its stdin closes
        [sys.executable, "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
         "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); sys.stdin.read()", cli.db],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        env = {**ENV, "AGENTBASE_STORAGE__BUSY_TIMEOUT_S": "0.2"}
        res = CliRunner().invoke(app, ["find", "Lisbon", "--db", cli.db], env=env)
        as_json = CliRunner().invoke(app, ["find", "Lisbon", "--json", "--db", cli.db], env=env)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert res.exit_code == 0 and "Lisbon" in res.output, res.output
    assert "could not be stored" in res.output and "trace:" not in res.output
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)[0]["trace_id"] is None
    assert cli("find", "Lisbon").output.count("trace:") == 1  # once the lock is gone the trace is stored again
