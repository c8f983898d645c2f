"""Several processes on one file, and crash safety with SIGKILL (real subprocesses)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

WRITER = """
import sys
from agentbase import SyncAgentBase, load_settings
from agentbase.embeddings import HashEmbedder
db = SyncAgentBase(sys.argv[1], settings=load_settings(ner="regex"), embedder=HashEmbedder(dims=16))
tag, n = sys.argv[2], int(sys.argv[3])
for i in range(n):
    db.add_memory(f"{tag} note number {i}", user_id=tag, dedup=False)
    print(i, flush=True)
db.close()
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    return env


@pytest.mark.slow
def test_cli_and_script_write_concurrently(tmp_path):
    db = tmp_path / "shared.db"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    n = 60
    procs = [subprocess.Popen([sys.executable, str(script), str(db), "script", str(n)], env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)]
    cli = [sys.executable, "-m", "agentbase.cli"]
    cli_errors = []
    for i in range(n // 3):
        r = subprocess.run([*cli, "add", f"cli note {i}", "--db", str(db), "--user-id", "cli"], env={
            **_env(), "AGENTBASE_EMBEDDER__PROVIDER": "hash", "AGENTBASE_NER": "regex"},
            capture_output=True, text=True)
        if r.returncode != 0:
            cli_errors.append(r.stderr)
    out, errors = procs[0].communicate(timeout=300)
    assert procs[0].returncode == 0, errors
    assert not cli_errors, cli_errors[0]
    assert "locked" not in errors
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM entries WHERE user_id='script'").fetchone()[0] == n
    assert con.execute("SELECT COUNT(*) FROM entries WHERE user_id='cli'").fetchone()[0] == n // 3
    con.close()


@pytest.mark.slow
def test_sigkill_mid_ingest_keeps_every_acknowledged_write(tmp_path):
    db = tmp_path / "crash.db"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    proc = subprocess.Popen([sys.executable, str(script), str(db), "k", "100000"], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    acked = -1
    deadline = time.monotonic() + 120
    while acked < 150 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        acked = int(line.split()[0])
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert acked >= 150, proc.stderr.read()
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    stored = {r[0] for r in con.execute("SELECT l2_full FROM entries")}
    assert all(f"k note number {i}" in stored for i in range(acked + 1))
    # FTS rows agree with the entries (external-content integrity check raises on drift)
    con.execute("INSERT INTO entries_fts(entries_fts) VALUES ('integrity-check')")
    con.close()
    # the file reopens and the queued embedding jobs drain
    from agentbase import SyncAgentBase, load_settings
    from agentbase.embeddings import HashEmbedder

    sdb = SyncAgentBase(db, settings=load_settings(ner="regex"), embedder=HashEmbedder(dims=16))
    assert sdb.flush(timeout=120) == 0
    assert sdb.stats()["embeddings"] == sdb.stats()["entries_total"]
    sdb.close()
