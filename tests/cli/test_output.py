"""What the CLI prints: stored text that looks like markup is printed as is, terminal escapes never reach the
terminal raw, records are "key: value" lines, a duplicate add says "merged into", ``--version``."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from agentbase.cli import app
from tests.cli.conftest import _run


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


def test_version_flag_and_integer_vector_dims(cli):
    from agentbase import __version__

    res = CliRunner().invoke(app, ["--version"])
    assert res.exit_code == 0 and res.output.strip() == f"agentbase {__version__}"
    assert cli("add", "one note").exit_code == 0
    assert json.loads(cli("stats", "--json").stdout)["vector_dims"] == 64
