"""Adapters opened from the same path share one engine per process (resolve_db / release_db).

LangChain's RunnableWithMessageHistory builds a history per request and rarely closes it: with one engine per
object each held ~4 file descriptors until the process ran out (a helper's finding).
"""

from __future__ import annotations

import os

import pytest

from agentbase import AgentBase, release_db, resolve_db, run_sync
from agentbase.adapters.minimal import MinimalAdapter


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_same_path_shares_one_engine_until_the_last_release(tmp_path):
    path = tmp_path / "shared.db"
    a, owned_a = resolve_db(str(path))
    b, owned_b = resolve_db(path)  # a Path to the same file
    own, owned_own = resolve_db(path, settings={"ner": "regex"})  # its own settings: its own engine
    try:
        assert owned_a and owned_b and owned_own
        assert a is b and own is not a
        run_sync(a.add_memory("User likes green tea", user_id="u"))
        run_sync(release_db(a))
        assert not b.closed  # the other user still has it
        assert [r.entry.l2_full for r in run_sync(b.find("green tea", user_id="u", mode="fts"))] == \
            ["User likes green tea"]
        run_sync(release_db(b))
        assert b.closed
        c, _ = resolve_db(path)  # a closed engine is never handed out again
        assert c is not b and not c.closed
        run_sync(release_db(c))
    finally:
        run_sync(release_db(own))
    assert own.closed


def test_an_engine_passed_in_is_not_shared_or_closed(tmp_path):
    ab = AgentBase(tmp_path / "mine.db", embedder="hash")
    got, owned = resolve_db(ab)
    assert got is ab and not owned
    adapter = MinimalAdapter(ab)
    adapter.close()
    assert not ab.closed
    run_sync(ab.close())


def test_many_unclosed_histories_do_not_leak_file_descriptors(tmp_path):
    pytest.importorskip("langchain_core")
    from agentbase.adapters import AgentBaseChatMessageHistory

    path = str(tmp_path / "lc.db")
    first = AgentBaseChatMessageHistory(path, "s0", user_id="bob")
    first.add_user_message("warm-up")  # opens the file
    before = _open_fds()
    for i in range(200):  # the RunnableWithMessageHistory pattern: a history per request, never closed
        AgentBaseChatMessageHistory(path, f"s{i % 3}", user_id="bob").add_user_message(f"message {i}")
    assert _open_fds() - before < 10
    assert len(AgentBaseChatMessageHistory(path, "s1", user_id="bob").messages) == 67
    first.close()


def test_closing_one_adapter_twice_releases_once(tmp_path):
    path = tmp_path / "twice.db"
    one, two = MinimalAdapter(path), MinimalAdapter(path)
    assert one.db is two.db
    one.close()
    one.close()  # idempotent: must not take the other adapter's share
    assert not two.db.closed
    two.remember("The user's dog is called Rex", who="u")
    assert [m["text"] for m in two.recall("dog", who="u")][:1] == ["The user's dog is called Rex"]
    two.close()
    assert two.db.closed


def _child_writes(path: str, queue) -> None:
    from agentbase.adapters.minimal import MinimalAdapter

    try:
        adapter = MinimalAdapter(path, embedder="hash")
        adapter.remember("written by the child", who="kid")
        adapter.close()
        queue.put("ok")
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        queue.put(f"{type(exc).__name__}: {exc}")


def test_a_forked_child_opens_its_own_engine(tmp_path):
    """The table of shared engines was inherited by a fork: the child's new adapter got the parent's engine and
    raised UsageError (a helper's finding)."""
    import multiprocessing

    path = str(tmp_path / "fork.db")
    parent = MinimalAdapter(path, embedder="hash")  # its own settings: not shared; share one as well
    shared, _ = resolve_db(path)
    run_sync(shared.add_memory("written by the parent", user_id="mum"))
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child_writes, args=(path, queue))
    proc.start()
    proc.join(60)
    assert queue.get(timeout=5) == "ok"
    assert [r.entry.l2_full for r in run_sync(shared.find("child", user_id="kid", mode="fts"))] == \
        ["written by the child"]
    run_sync(release_db(shared))
    parent.close()


def test_a_failed_constructor_and_copies_keep_the_count_right(tmp_path, monkeypatch):
    """A history whose constructor raised kept its share (the file never closed); a copied LlamaIndex store
    closed the original's share, closing the engine under other adapters (a helper's findings)."""
    import copy

    from agentbase import ValidationError, sync

    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    from agentbase.adapters import AgentBaseChatMessageHistory, AgentBaseChatStore

    path = str(tmp_path / "count.db")
    for _ in range(3):
        with pytest.raises(ValidationError):
            AgentBaseChatMessageHistory(path, "", messages=[])
    assert os.path.realpath(path) not in sync._shared
    other, store = MinimalAdapter(path), AgentBaseChatStore(path)
    for clone in (copy.copy(store), copy.deepcopy(store), store.model_copy()):
        clone.close()
        clone.close()
    other.remember("still open", who="u")
    store.close()
    other.close()
    assert os.path.realpath(path) not in sync._shared and other.db.closed
    # a relative path is the file of the directory it was given in, whatever the working directory is later
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    rel = MinimalAdapter("rel.db")
    monkeypatch.chdir(tmp_path / "sub")
    rel.remember("where am I", who="u")
    rel.close()
    assert (tmp_path / "rel.db").is_file() and not (tmp_path / "sub" / "rel.db").exists()


def test_the_langchain_memory_adapter_hands_its_share_back(tmp_path):
    """LangChainMemoryAdapter had no close() (a helper's finding): only its chat_memory could be closed."""
    pytest.importorskip("langchain_classic")
    from agentbase.adapters import LangChainMemoryAdapter

    path = str(tmp_path / "mem.db")
    memory = LangChainMemoryAdapter(path, owner_id="o")
    memory.save_context({"input": "I like green tea"}, {"output": "Noted."})
    engine = memory.db
    memory.close()
    memory.close()
    assert engine.closed
