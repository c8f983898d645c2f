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
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    return env


def _run_script(tmp_path: Path, source: str, name: str) -> tuple[subprocess.CompletedProcess, Path]:
    """Run ``source`` as a script on ``tmp_path/<name>.db``; it must exit 0 without an embedding failure logged."""
    path = tmp_path / f"{name}.db"
    script = tmp_path / f"{name}.py"
    script.write_text(source)
    proc = subprocess.run([sys.executable, str(script), str(path)], env=_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "embedding failed" not in proc.stderr
    return proc, path


def _jobs(path: Path, columns: str) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute(f"SELECT {columns} FROM jobs ORDER BY id").fetchall()
    finally:
        con.close()


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


FORKER = """
import os, sys
from agentbase import SyncAgentBase, UsageError, load_settings
from agentbase.embeddings import HashEmbedder
path = sys.argv[1]
db = SyncAgentBase(path, settings=load_settings(ner="regex"), embedder=HashEmbedder(dims=16))
db.add_memory("parent wrote this note", user_id="u")
assert db.find("note", user_id="u")
pid = os.fork()
if pid == 0:
    try:
        db.find("note", user_id="u")
        print("parent's database was usable in the child", flush=True)
        os._exit(3)
    except UsageError as exc:
        print("refused:", exc, flush=True)
    db.close()  # must not wait for the parent's threads
    child = SyncAgentBase(path, settings=load_settings(ner="regex"), embedder=HashEmbedder(dims=16))
    child.add_memory("child wrote this note", user_id="u")
    found = sorted(r.entry.l2_full for r in child.find("note", user_id="u"))
    child.close()
    print("child found", found, flush=True)
    os._exit(0 if found == ["child wrote this note", "parent wrote this note"] else 4)
_, status = os.waitpid(pid, 0)
assert db.find("child", user_id="u")[0].entry.l2_full == "child wrote this note"
db.close()
print("child status", os.waitstatus_to_exitcode(status), flush=True)
sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_forked_child_opens_its_own_database_and_refuses_the_parents(tmp_path):
    """A child forked after the parent used AgentBase gets its own engine thread (it hung on the parent's)."""
    script = tmp_path / "forker.py"
    script.write_text(FORKER)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "fork.db")], env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "refused: this AgentBase was opened in the parent" in proc.stdout


EXITER = """
import sys, time
from agentbase import SyncAgentBase, load_settings
from agentbase.embeddings import HashEmbedder

class SlowEmbedder(HashEmbedder):
    def embed_documents(self, texts):
        time.sleep(0.4)  # a batch is still embedding when the script ends
        return super().embed_documents(texts)

settings = load_settings(ner="regex", embedder={"batch_size": 8})
db = SyncAgentBase(sys.argv[1], settings=settings, embedder=SlowEmbedder(dims=16))
for i in range(40):
    db.add_memory(f"exit note number {i}", user_id="u", dedup=False)
time.sleep(0.6)
print("ending without close", flush=True)
"""


def test_script_ending_mid_embedding_leaves_its_jobs_due_with_no_attempt_counted(tmp_path):
    """A script that ends without close() while a batch is embedding: the batch goes back to the queue, due at
    once (not claimed until its 30 s lease expires), and the interrupted call counts no failed attempt (it was
    recorded as "cannot schedule new futures after shutdown", with a warning on stderr)."""
    _, path = _run_script(tmp_path, EXITER, "exit")
    rows = _jobs(path, "status, attempts, last_error, next_run_at")
    assert len(rows) == 40
    statuses = {r[0] for r in rows}
    assert "pending" in statuses, "the script should have ended before every batch was embedded"
    assert "running" not in statuses
    assert {r[1] for r in rows} == {0} and {r[2] for r in rows} == {None}
    from agentbase import SyncAgentBase, load_settings
    from agentbase.embeddings import HashEmbedder

    db = SyncAgentBase(path, settings=load_settings(ner="regex"), embedder=HashEmbedder(dims=16))
    try:
        started = time.monotonic()
        db.flush()
        assert time.monotonic() - started < 10  # due at once, not after the 30 s lease
        assert db.stats()["embeddings"] == 40
    finally:
        db.close()


MAIN_ENDS = """
import sys, threading, time
from agentbase import SyncAgentBase, UsageError, load_settings
from agentbase.embeddings import HashEmbedder

db = SyncAgentBase(sys.argv[1], settings=load_settings(ner="regex"), embedder=HashEmbedder(dims=32))
db.add_memory("apples are red", user_id="u")
db.flush(timeout=10)

def work():
    time.sleep(0.5)  # the main thread has returned by now: Python is shutting down
    print("fts", len(db.find("apples", user_id="u", mode="fts")), flush=True)
    try:
        db.find("apples", user_id="u", mode="hybrid")
    except UsageError as exc:
        print("hybrid UsageError", "main thread has ended" in str(exc), flush=True)
    try:
        db.backup(sys.argv[1] + ".backups")  # any call that needs a worker thread, not only vector search
    except UsageError as exc:
        print("backup UsageError", "main thread has ended" in str(exc), flush=True)
    db.add_memory("bananas are yellow", user_id="u")
    print("flush", db.flush(), flush=True)

threading.Thread(target=work).start()
"""


def test_a_thread_outliving_the_main_thread_gets_typed_errors_and_a_flush_that_returns(tmp_path):
    """Once the main thread has ended, Python's thread pools refuse new work: vector search and a backup raise
    UsageError (they raised a bare RuntimeError), keyword search still works, and flush() returns the pending count
    (it waited forever) while the job stays queued for the next process."""
    proc, path = _run_script(tmp_path, MAIN_ENDS, "main_ends")
    assert proc.stdout.splitlines() == ["fts 1", "hybrid UsageError True", "backup UsageError True", "flush 1"], \
        proc.stdout + proc.stderr
    assert _jobs(path, "status, attempts") == [("done", 0), ("pending", 0)]


FLUSH_AT_EXIT = """
import sys, threading, time
from agentbase import SyncAgentBase, load_settings
from agentbase.embeddings import HashEmbedder

class SlowEmbedder(HashEmbedder):
    def embed_documents(self, texts):
        time.sleep(0.05)
        return super().embed_documents(texts)

settings = load_settings(ner="regex", embedder={"batch_size": 8})
db = SyncAgentBase(sys.argv[1], settings=settings, embedder=SlowEmbedder(dims=16))
for i in range(300):
    db.add_memory(f"memory number {i} about topic {i * 7}", user_id="a", dedup=False)

def work():  # its flush() is still running when the main thread returns
    print("flush", db.flush(), flush=True)
    db.close()

threading.Thread(target=work).start()
time.sleep(0.3)
"""


def test_a_flush_running_when_the_main_thread_ends_counts_no_failed_attempt(tmp_path):
    """Python refuses new thread-pool work a moment before it marks the main thread as ended; batches refused in
    that window were recorded as failures (attempts + 1, last_error "cannot schedule new futures", a warning per
    batch). They must go back to the queue like any batch interrupted by the exit."""
    proc, path = _run_script(tmp_path, FLUSH_AT_EXIT, "flush_exit")
    rows = _jobs(path, "status, attempts, last_error")
    assert len(rows) == 300
    assert {r[0] for r in rows} <= {"done", "pending"}
    assert {(r[1], r[2]) for r in rows} == {(0, None)}
    # flush() returns the jobs left when it stops; a batch the background worker was already embedding may still
    # finish after that (Python waits for running threads at exit), at most one batch of 8.
    pending = sum(r[0] == "pending" for r in rows)
    flushed = int(proc.stdout.split()[-1])
    assert pending <= flushed <= pending + 8, (flushed, pending)


LLAMA_WRITER = """
import sys
from llama_index.core.llms import ChatMessage
from agentbase.adapters import AgentBaseChatStore
store = AgentBaseChatStore(db_path=sys.argv[1])
tag, n, idx = sys.argv[2], int(sys.argv[3]), sys.argv[4]
for i in range(n):
    msg = ChatMessage(role="user", content=f"{tag} {i}")
    store.add_message("shared", msg, idx=None if idx == "-" else int(idx))
store.close()
"""


@pytest.mark.slow
def test_llama_index_inserts_never_drop_another_process_appends(tmp_path):
    """add_message(idx=...) rewrites the key; appends another process acknowledged meanwhile all survive."""
    pytest.importorskip("llama_index.core")
    db = tmp_path / "chat.db"
    script = tmp_path / "llama_writer.py"
    script.write_text(LLAMA_WRITER)
    env = {**_env(), "AGENTBASE_EMBEDDER__PROVIDER": "hash", "AGENTBASE_NER": "regex"}
    n = 80
    procs = [subprocess.Popen([sys.executable, str(script), str(db), tag, str(n), idx], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for tag, idx in (("append", "-"), ("insert", "0"), ("middle", "1"))]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    con = sqlite3.connect(db)
    try:
        stored = [r[0] for r in con.execute(
            "SELECT content FROM messages WHERE session_id = 'shared' ORDER BY seq")]
    finally:
        con.close()
    assert sorted(stored) == sorted(f"{tag} {i}" for tag in ("append", "insert", "middle") for i in range(n))
    appended = [s for s in stored if s.startswith("append")]
    assert appended == [f"append {i}" for i in range(n)]  # each process's own order is kept


LLAMA_POPPER = """
import sys
from agentbase.adapters import AgentBaseChatStore, AgentBaseDBChatStore
how = sys.argv[2]
store = (AgentBaseDBChatStore if how.startswith("db") else AgentBaseChatStore)(db_path=sys.argv[1])
if how == "db_oldest":
    import asyncio
    async def run():
        while True:
            got = await store.delete_oldest_messages("pile", 3)
            if not got:
                return
            for m in got:
                print(m.content, flush=True)
    asyncio.run(run())
else:
    while (m := store.delete_last_message("pile") if how == "last" else store.delete_message("pile", 1)):
        print(m.content, flush=True)
store.close()
"""


def _seed_pile(db: Path) -> dict[str, str]:
    """Write the LlamaIndex key "pile" with messages m0..m119 into ``db`` (hash embedder, regex NER, as the child
    processes run) and return the children's environment."""
    pytest.importorskip("llama_index.core")
    from llama_index.core.llms import ChatMessage

    from agentbase.adapters import AgentBaseChatStore

    env = {**_env(), "AGENTBASE_EMBEDDER__PROVIDER": "hash", "AGENTBASE_NER": "regex"}
    os.environ.update({k: env[k] for k in ("AGENTBASE_EMBEDDER__PROVIDER", "AGENTBASE_NER")})
    try:
        store = AgentBaseChatStore(db_path=str(db))
        store.set_messages("pile", [ChatMessage(role="user", content=f"m{i}") for i in range(120)])
        store.close()
    finally:
        for k in ("AGENTBASE_EMBEDDER__PROVIDER", "AGENTBASE_NER"):
            os.environ.pop(k, None)
    return env


@pytest.mark.slow
@pytest.mark.parametrize("how", ["last", "index1", "db_oldest"])
def test_llama_index_pops_from_two_processes_hand_out_each_message_once(tmp_path, how):
    """Two processes popping one key: every message is returned to exactly one of them and none is left
    (a helper saw 13 of 120 returned to both while 16 stayed in the file)."""
    db = tmp_path / "pile.db"
    env = _seed_pile(db)
    script = tmp_path / "popper.py"
    script.write_text(LLAMA_POPPER)
    procs = [subprocess.Popen([sys.executable, str(script), str(db), how], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        outs.append(out.split())
    returned = outs[0] + outs[1]
    assert len(returned) == len(set(returned)), "a message was returned to both processes"
    con = sqlite3.connect(db)
    try:
        left = [r[0] for r in con.execute("SELECT content FROM messages WHERE session_id = 'pile'")]
    finally:
        con.close()
    expect_left = ["m0"] if how == "index1" else []
    assert left == expect_left and sorted(returned + left) == sorted(f"m{i}" for i in range(120))


MEM0_INFER = """
import sys
from agentbase.adapters import Mem0Adapter
m = Mem0Adapter(sys.argv[1])
tag = sys.argv[2]
for i in range(int(sys.argv[3])):
    out = m.add(f"I like fruit {tag}{i:03d}.", user_id="u")
    print(len(out["results"]), flush=True)
"""


@pytest.mark.slow
def test_mem0_infer_from_three_processes_stores_only_facts(tmp_path):
    """Three processes add(infer=True) for one user: each call gives exactly its fact, and reads show only facts
    (the calls shared one private session, so one process committed another's messages: verbatim duplicates
    and a leftover summary, a helper's finding)."""
    db = tmp_path / "mem0.db"
    script = tmp_path / "mem0_infer.py"
    script.write_text(MEM0_INFER)
    env = {**_env(), "AGENTBASE_EMBEDDER__PROVIDER": "hash", "AGENTBASE_NER": "regex"}
    n = 15
    procs = [subprocess.Popen([sys.executable, str(script), str(db), tag, str(n)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for tag in "abc"]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert out.split() == ["1"] * n  # one ADD event per call
    con = sqlite3.connect(db)
    try:
        memories = sorted(r[0] for r in con.execute("SELECT l2_full FROM entries WHERE context_type = 'memory'"))
        sessions = con.execute("SELECT count(*) FROM sessions").fetchone()[0]
    finally:
        con.close()
    assert memories == sorted(f"User likes fruit {t}{i:03d}" for t in "abc" for i in range(n))
    assert sessions == 0


LLAMA_ARCHIVER = """
import asyncio, sys
from agentbase.adapters import AgentBaseDBChatStore
store = AgentBaseDBChatStore(db_path=sys.argv[1])
how = sys.argv[2]
async def run():
    while True:
        got = await (store.archive_oldest_messages("pile", 3) if how == "arch"
                     else store.delete_oldest_messages("pile", 2))
        if not got:
            return
        for m in got:
            print(how, m.content, flush=True)
asyncio.run(run())
"""


@pytest.mark.slow
def test_llama_index_archive_and_delete_from_two_processes_take_each_message_once(tmp_path):
    """One process archives the oldest messages while another deletes them: a message was returned to both
    (archived, then deleted by a caller that had read it active; a README-only helper saw 14-41 of 200)."""
    db = tmp_path / "mixed.db"
    env = _seed_pile(db)
    script = tmp_path / "archiver.py"
    script.write_text(LLAMA_ARCHIVER)
    procs = [subprocess.Popen([sys.executable, str(script), str(db), how], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for how in ("arch", "del")]
    taken = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        taken += [line.split() for line in out.splitlines()]
    contents = [c for _, c in taken]
    assert len(contents) == len(set(contents)) == 120  # every message to exactly one caller
    con = sqlite3.connect(db)
    try:
        left = {r[0] for r in con.execute("SELECT content FROM messages WHERE session_id = 'pile'")}
    finally:
        con.close()
    assert left == {c for how, c in taken if how == "arch"}  # the archived ones stay, the deleted ones are gone
