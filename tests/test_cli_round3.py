"""CLI and dataset fixes from a break-it pass: concurrent imports, markup in stored text, malformed data files,
out-of-range options, failed exports."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta, timezone

import pytest
from typer.testing import CliRunner

from agentbase import AgentBase, load_settings
from agentbase.cli import app
from agentbase.datasets import Conversation, SessionData, ingest_conversation

ENV = {"AGENTBASE_EMBEDDER__PROVIDER": "hash", "AGENTBASE_NER": "regex"}


def _run(*args: str):
    return CliRunner().invoke(app, list(args), env=ENV)


def _conversation() -> Conversation:
    base = datetime(2024, 5, 1, tzinfo=timezone.utc)
    sessions = [SessionData(f"conv:s{i}", base + timedelta(days=i), [
        {"role": "user", "name": "Ann", "content": f"Session {i}: I went hiking in the Alps with Bob."},
        {"role": "user", "name": "Bob", "content": f"Session {i}: that sounds great, Ann!"}]) for i in range(8)]
    return Conversation("conv", sessions)


async def test_two_imports_of_one_conversation_at_once_write_each_session_once(tmp_path):
    path = tmp_path / "cc.db"
    dbs = [AgentBase(path, settings=load_settings(ner="regex"), embedder="none") for _ in range(2)]
    try:
        counts = await asyncio.gather(*(ingest_conversation(d, _conversation()) for d in dbs))
        assert sum(c["sessions"] for c in counts) == 8
        assert sum(c["sessions"] + c["sessions_existing"] for c in counts) == 16
        for i in range(8):
            assert len(await dbs[0].get_messages(f"conv:s{i}")) == 2
        again = await ingest_conversation(dbs[0], _conversation())
        assert again["sessions"] == 0 and again["sessions_existing"] == 8
    finally:
        for d in dbs:
            await d.close()


def test_stored_text_that_looks_like_markup_is_printed_as_is(tmp_path):
    db = str(tmp_path / "m.db")
    for text in ("closing tag [/bold] first", "a [red]red[/red] word and [link=http://x.example]link[/link]"):
        assert _run("add", text, "--db", db).exit_code == 0
    found = _run("find", "closing red word", "--db", db)
    assert found.exit_code == 0, found.output
    assert "[/bold]" in found.output and "[red]red[/red]" in found.output
    made = _run("session", "create", "--session-id", "[/x]", "--db", db)
    assert made.exit_code == 0 and "[/x]" in made.output


def test_terminal_escape_sequences_in_stored_text_never_reach_the_terminal_raw(tmp_path):
    """A stored OSC title sequence or clear-screen code was printed raw by `find` and `session show`."""
    db = str(tmp_path / "esc.db")
    evil = "Zed esc\x1b]0;PWNED\x07title \x1b[2Jclear"
    assert _run("add", evil, "--db", db).exit_code == 0
    made = _run("session", "create", "--db", db)
    sid = made.output.strip()
    assert _run("session", "add-message", sid, "user", "evil\x1b[31mred\nnewline", "--db", db).exit_code == 0
    for args in (("find", "Zed esc", "--mode", "fts"), ("session", "show", sid)):
        out = _run(*args, "--db", db)
        assert out.exit_code == 0, out.output
        assert "\x1b" not in out.output and "\x07" not in out.output and "\\u001b" in out.output, args
    assert "\\nnewline" in _run("session", "show", sid, "--db", db).output


@pytest.mark.parametrize("content", ["[1, 2]", "null", "[{}]", "{}", '"text"'])
@pytest.mark.parametrize("kind", ["locomo", "longmemeval"])
def test_a_malformed_data_file_is_one_error_line_and_creates_no_database(tmp_path, kind, content):
    data = tmp_path / "bad.json"
    data.write_text(content)
    db = tmp_path / "new.db"
    result = _run("import", kind, str(data), "--db", str(db))
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and "Traceback" not in result.output
    assert not db.exists()


def test_non_utf8_and_truncated_files_are_errors(tmp_path):
    raw = tmp_path / "latin1.json"
    raw.write_bytes('[{"conversation": "caf\xe9"}]'.encode("latin-1"))
    result = _run("import", "locomo", str(raw), "--db", str(tmp_path / "a.db"))
    assert result.exit_code == 2 and "UnicodeDecodeError" in result.output
    import lzma
    xz = tmp_path / "cut.json.xz"
    xz.write_bytes(lzma.compress(json.dumps([{"a": "b" * 5000}]).encode())[:60])
    result = _run("import", "longmemeval", str(xz), "--db", str(tmp_path / "b.db"))
    assert result.exit_code == 2 and result.output.startswith("error: cannot read")


@pytest.mark.parametrize("args", [
    ["import", "locomo", "x.json", "--limit", "-1"], ["import", "longmemeval", "x.json", "--limit", "0"],
    ["demo", "--questions", "-1"], ["serve", "--port", "99999"], ["serve", "--log-level", "bogus"],
    ["forget", "--decay", "--tau0-days", "inf"],
])
def test_out_of_range_options_are_usage_errors(tmp_path, args):
    result = _run(*args, "--db", str(tmp_path / "o.db"))
    assert result.exit_code == 2, result.output


def test_an_export_to_a_directory_or_empty_path_fails_cleanly(tmp_path):
    db = str(tmp_path / "e.db")
    assert _run("add", "something to export", "--db", db).exit_code == 0
    (tmp_path / "adir").mkdir()
    for target, message in ((str(tmp_path / "adir"), "error: the archive path must name a file"),
                            ("", "error: archive path is empty")):
        result = _run("export", target, "--db", db)
        assert result.exit_code == 2 and result.output.startswith(message)
    assert not (tmp_path / "adir.partial").exists()


def test_a_bad_as_of_date_is_an_error_even_for_an_unknown_entity(tmp_path):
    db = str(tmp_path / "g.db")
    assert _run("add", "Ann lives in Paris", "--db", db).exit_code == 0
    result = _run("graph", "facts", "nosuch", "--as-of", "banana", "--db", db)
    assert result.exit_code == 2 and "cannot parse time 'banana'" in result.output


def test_a_bad_setting_is_one_error_line(tmp_path):
    result = CliRunner().invoke(app, ["add", "a note", "--db", str(tmp_path / "s.db")],
                                env={**ENV, "AGENTBASE_RETRIEVAL__BOGUS": "1"})
    assert result.exit_code == 2
    assert result.output.strip() == "error: invalid settings: retrieval.bogus: Extra inputs are not permitted (got '1')"


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


def test_import_archive_of_a_wrong_file_creates_no_database(tmp_path):
    """docs/cli.md: a data file is checked before the database is opened (import-archive opened it first)."""
    db = tmp_path / "typo.db"
    junk = tmp_path / "junk.tar"
    junk.write_text("not a tar")
    for archive in (tmp_path / "missing.tar", junk):
        out = _run("import-archive", str(archive), "--db", str(db))
        assert out.exit_code == 2 and not db.exists()
    src = str(tmp_path / "src.db")
    assert _run("add", "Alice planted tomatoes", "--db", src).exit_code == 0
    assert _run("export", str(tmp_path / "a.tgz"), "--db", src).exit_code == 0
    assert _run("import-archive", str(tmp_path / "a.tgz"), "--db", str(db), "--json").exit_code == 0
    assert json.loads(_run("stats", "--db", str(db), "--json").stdout)["entries_total"] == 1


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


def test_find_reads_time_words_from_reference_time(tmp_path):
    import json

    from .conftest import make_db

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
