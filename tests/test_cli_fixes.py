"""The CLI against a real SQLite file: short id prefixes, one exit-code scheme, session speaker names."""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from agentbase import AgentBase, load_settings
from agentbase.cli import app

ENV = {"AGENTBASE_EMBEDDER__PROVIDER": "hash", "AGENTBASE_NER": "regex"}
A1 = "abcdef12-0000-4000-8000-000000000001"
A2 = "abcdef12-9999-4000-8000-000000000002"
B1 = "abcdef13-0000-4000-8000-000000000003"


@pytest.fixture
def cli(tmp_path):
    """Run ``agentbase ARGS --db <tmp file>`` in-process; returns the Click result."""
    dbfile = str(tmp_path / "cli.db")
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, [*args, "--db", dbfile], env=ENV)

    invoke.db = dbfile
    return invoke


def _seed(path: str, ids: list[str]) -> None:
    async def go() -> None:
        async with AgentBase(path, settings=load_settings(ner="regex"), embedder="none") as ab:
            for i, eid in enumerate(ids):
                await ab.add_memory(f"seeded note number {i}", entry_id=eid, dedup=False)
    asyncio.run(go())


def test_get_and_delete_accept_the_short_id_printed_by_find(cli):
    res = cli("add", "Caroline moved to Lisbon in May", "--json")
    assert res.exit_code == 0, res.output
    full = json.loads(res.output)["id"]
    short = full[:8]
    res = cli("find", "Lisbon")
    assert res.exit_code == 0 and short in res.output and full not in res.output
    res = cli("get", short, "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["id"] == full
    res = cli("delete", short)
    assert res.exit_code == 0 and f"deleted {full}" in res.output
    res = cli("get", short)
    assert res.exit_code == 1 and "not found" in res.output


def test_ambiguous_prefix_names_candidates_and_ids_stay_parameters(cli):
    _seed(cli.db, [A1, A2, B1])
    for command in ("get", "delete"):
        res = cli(command, "abcdef12")
        assert res.exit_code == 2, res.output
        assert "ambiguous" in res.output and A1 in res.output and A2 in res.output and B1 not in res.output
    assert json.loads(cli("get", "abcdef13", "--json").output)["id"] == B1       # unique prefix
    assert json.loads(cli("get", "abcdef12-9", "--json").output)["id"] == A2          # longer unique prefix
    res = cli("get", "abcdef1")                                                   # under 8 characters
    assert res.exit_code == 1 and "at least 8 characters" in res.output
    for hostile in ("abcdef1%", "abcdef1_", "x' OR '1'='1", "'; DELETE FROM entries; --"):
        res = cli("delete", hostile)
        assert res.exit_code == 1 and "not found" in res.output, (hostile, res.output)
    for eid in (A1, A2, B1):
        assert cli("get", eid).exit_code == 0, eid                                # nothing was deleted


def test_every_command_uses_one_exit_code_scheme(cli):
    assert cli("init").exit_code == 0
    not_found = [("get", "nope-nope-nope"), ("delete", "nope-nope-nope"), ("trace", "nope"),
                 ("session", "show", "nope"), ("session", "add-message", "nope", "user", "hi"),
                 ("session", "commit", "nope")]
    for args in not_found:
        res = cli(*args)
        assert res.exit_code == 1 and "not found" in res.output, (args, res.output)
    bad_input = [("get", ""), ("find", "x", "--mode", "bogus"), ("forget",),
                 ("import", "locomo", "/nonexistent/locomo.json"), ("find", "x", "--no-such-option")]
    for args in bad_input:
        res = cli(*args)
        assert res.exit_code == 2, (args, res.output)


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


def test_read_commands_do_not_create_a_missing_database(tmp_path):
    from typer.testing import CliRunner

    from agentbase.cli import app

    missing = tmp_path / "typo.db"
    for args in (["get", "abcdefgh"], ["delete", "abcdefgh"], ["find", "pizza"], ["stats"], ["session", "show", "s1"]):
        result = CliRunner().invoke(app, [*args, "--db", str(missing)])
        assert result.exit_code == 2, (args, result.output)
        assert "no database at" in result.output
    assert not missing.exists()


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


def test_importing_the_same_file_twice_adds_nothing(cli):
    from pathlib import Path

    locomo = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_dev.json"
    if not locomo.exists():
        pytest.skip(f"LoCoMo data not found at {locomo}")
    first = json.loads(cli("import", "locomo", str(locomo), "--json").stdout)
    second = json.loads(cli("import", "locomo", str(locomo), "--json").stdout)
    assert first["messages"] > 0 and first["sessions_existing"] == 0
    assert second == {"sessions": 0, "messages": 0, "entries": 0, "sessions_existing": first["sessions"]}
    stats = json.loads(cli("stats", "--json").stdout)
    assert stats["messages"] == first["messages"] and stats["entries_total"] == first["entries"]


def test_version_flag_and_integer_vector_dims(cli):
    from agentbase import __version__

    res = CliRunner().invoke(app, ["--version"])
    assert res.exit_code == 0 and res.output.strip() == f"agentbase {__version__}"
    assert cli("add", "one note").exit_code == 0
    assert json.loads(cli("stats", "--json").stdout)["vector_dims"] == 64


def test_find_warns_on_stderr_when_vectors_cannot_be_used(cli, tmp_path):
    assert cli("add", "quarterly planning meeting").exit_code == 0
    runner = CliRunner()
    res = runner.invoke(app, ["find", "meeting", "--json", "--db", cli.db],
                        env={**ENV, "AGENTBASE_EMBEDDER__PROVIDER": "none"})
    assert res.exit_code == 0 and "no embedder configured" in res.stderr
    assert [r["entry"]["l2_full"] for r in json.loads(res.stdout)] == ["quarterly planning meeting"]


def test_records_print_as_key_value_lines_with_nothing_raw(cli):
    """Without --json a record is one "key: value" line per field (it was a Python dict repr); text that is not
    printable is JSON-quoted with every such character escaped (C1 controls, line separators, bidi overrides)."""
    text = "note a\x85b \u202eevil\u2028end"
    added = cli("add", text, "--json")
    assert added.exit_code == 0, added.output
    eid = json.loads(added.output)["id"]
    shown = cli("get", eid)
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert f"id: {eid}" in lines
    [full] = [line for line in lines if line.startswith("l2_full: ")]
    assert full == 'l2_full: "note a\\u0085b \\u202eevil\\u2028end"'
    assert not any(c in shown.output for c in "\x85\u202e\u2028")
    stats = cli("stats")
    assert stats.exit_code == 0 and any(line.startswith("entries_total: ") for line in stats.output.splitlines())


def test_add_says_when_it_merged_into_an_existing_memory(cli):
    first = cli("add", "maya prefers short answers")
    assert first.exit_code == 0 and first.output.startswith("added ")
    eid = first.output.split()[1]
    again = cli("add", "maya prefers short answers!")  # the same memory (normalised text)
    assert again.exit_code == 0, again.output
    assert again.output.startswith(f"merged into {eid}")


def test_trace_accepts_the_unique_prefix_of_the_id_find_printed(cli):
    assert cli("add", "Caroline moved to Lisbon in May").exit_code == 0
    res = cli("find", "Lisbon", "--json")
    assert res.exit_code == 0, res.output
    full = json.loads(res.output)[0]["trace_id"]
    shown = json.loads(cli("trace", full[:8], "--json").output)
    assert shown["id"] == full and shown["steps"]
    res = cli("trace", full[:7])
    assert res.exit_code == 1 and "at least 8 characters" in res.output


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
