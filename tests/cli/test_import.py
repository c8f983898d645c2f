"""``agentbase import`` and ``import-archive``: concurrent imports of one conversation; malformed, non-UTF-8
or truncated data files and wrong archives are one error line and create no database; a second import adds
nothing."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta, timezone

import pytest

from agentbase import AgentBase, load_settings
from agentbase.datasets import Conversation, SessionData, ingest_conversation
from tests.cli.conftest import _run


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


def test_importing_the_same_file_twice_adds_nothing(cli):
    from pathlib import Path

    locomo = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev.json"
    if not locomo.exists():
        pytest.skip(f"LoCoMo data not found at {locomo}")
    first = json.loads(cli("import", "locomo", str(locomo), "--json").stdout)
    second = json.loads(cli("import", "locomo", str(locomo), "--json").stdout)
    assert first["messages"] > 0 and first["sessions_existing"] == 0
    assert second == {"sessions": 0, "messages": 0, "entries": 0, "sessions_existing": first["sessions"]}
    stats = json.loads(cli("stats", "--json").stdout)
    assert stats["messages"] == first["messages"] and stats["entries_total"] == first["entries"]
