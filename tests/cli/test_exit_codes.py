"""CLI errors: one exit-code scheme (1 not found, 2 bad input), out-of-range options, bad settings and dates
as one error line, read commands that never create a missing database, failed exports, a closed pipe (141)."""

from __future__ import annotations

import asyncio

import pytest
from typer.testing import CliRunner

from agentbase import AgentBase, load_settings
from agentbase.cli import app
from tests.cli.conftest import ENV, _run


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


def test_read_commands_do_not_create_a_missing_database(tmp_path):
    from typer.testing import CliRunner

    from agentbase.cli import app

    missing = tmp_path / "typo.db"
    for args in (["get", "abcdefgh"], ["delete", "abcdefgh"], ["find", "pizza"], ["stats"], ["session", "show", "s1"]):
        result = CliRunner().invoke(app, [*args, "--db", str(missing)])
        assert result.exit_code == 2, (args, result.output)
        assert "no database at" in result.output
    assert not missing.exists()


@pytest.mark.parametrize("args", [
    ["import", "locomo", "x.json", "--limit", "-1"], ["import", "longmemeval", "x.json", "--limit", "0"],
    ["demo", "--questions", "-1"], ["serve", "--port", "99999"], ["serve", "--log-level", "bogus"],
    ["forget", "--decay", "--tau0-days", "inf"],
])
def test_out_of_range_options_are_usage_errors(tmp_path, args):
    result = _run(*args, "--db", str(tmp_path / "o.db"))
    assert result.exit_code == 2, result.output


def test_a_bad_setting_is_one_error_line(tmp_path):
    result = CliRunner().invoke(app, ["add", "a note", "--db", str(tmp_path / "s.db")],
                                env={**ENV, "AGENTBASE_RETRIEVAL__BOGUS": "1"})
    assert result.exit_code == 2
    assert result.output.strip() == "error: invalid settings: retrieval.bogus: Extra inputs are not permitted (got '1')"


def test_a_bad_as_of_date_is_an_error_even_for_an_unknown_entity(tmp_path):
    db = str(tmp_path / "g.db")
    assert _run("add", "Ann lives in Paris", "--db", db).exit_code == 0
    result = _run("graph", "facts", "nosuch", "--as-of", "banana", "--db", db)
    assert result.exit_code == 2 and "cannot parse time 'banana'" in result.output


def test_an_export_to_a_directory_or_empty_path_fails_cleanly(tmp_path):
    db = str(tmp_path / "e.db")
    assert _run("add", "something to export", "--db", db).exit_code == 0
    (tmp_path / "adir").mkdir()
    for target, message in ((str(tmp_path / "adir"), "error: the archive path must name a file"),
                            ("", "error: archive path is empty")):
        result = _run("export", target, "--db", db)
        assert result.exit_code == 2 and result.output.startswith(message)
    assert not (tmp_path / "adir.partial").exists()


def test_a_closed_pipe_ends_the_command_with_141_not_the_not_found_status(tmp_path):
    import os
    import subprocess
    import sys

    path = tmp_path / "many.db"

    async def fill() -> None:
        db = AgentBase(path, settings=load_settings(ner="regex"), embedder="none")
        try:
            for i in range(2500):  # about 200 KB of lines: more than a pipe buffers
                await db.create_session(user_id=f"user-{i}")
        finally:
            await db.close()
    asyncio.run(fill())
    proc = subprocess.Popen([sys.executable, "-c", "from agentbase.cli import app; app()", "session", "list",
                             "--db", str(path), "--limit", "2500"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, **ENV})
    first = proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    assert proc.wait(timeout=60) == 141 and b"user=user-2499" in first
    assert proc.stderr.read() == b""
    # --json writes its text at once: a reader that takes nothing (`| true`) ends it the same way
    cmd = f"'{sys.executable}' -c 'from agentbase.cli import app; app()' session list --db '{path}' --limit 2500 " \
          "--json | true; exit ${PIPESTATUS[0]}"
    done = subprocess.run(["bash", "-c", cmd], capture_output=True, env={**os.environ, **ENV}, timeout=60)
    assert done.returncode == 141 and done.stderr == b""
