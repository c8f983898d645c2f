"""OpenAI Threads / Conversations adapter: object shapes, pagination, 404s, metadata, retrieve_context."""

from __future__ import annotations

import asyncio

import pytest

from agentbase import NotFoundError, ValidationError
from agentbase.adapters import AsyncOpenAIAssistantAdapter, OpenAIAssistantAdapter

from tests.conftest import make_db

THREAD_KEYS = {"id", "object", "created_at", "metadata", "tool_resources"}
MESSAGE_KEYS = {"id", "object", "created_at", "assistant_id", "thread_id", "run_id", "role", "content", "attachments",
                "metadata", "status", "completed_at", "incomplete_at", "incomplete_details"}


@pytest.fixture
def sdb(tmp_path):
    db = make_db(tmp_path / "oa.db")
    yield db
    db.sync.close()


@pytest.fixture
def oa(sdb):
    return OpenAIAssistantAdapter(sdb)


def texts(page):
    return [m["content"][0]["text"]["value"] for m in page["data"]]


def test_thread_and_message_objects_match_the_api_shapes(oa):
    t = oa.create_thread(messages=[{"role": "user", "content": "hello"}], metadata={"topic": "greeting"})
    assert set(t) == THREAD_KEYS and t["object"] == "thread" and t["id"].startswith("thread_")
    assert isinstance(t["created_at"], int) and t["metadata"] == {"topic": "greeting"} and t["tool_resources"] == {}
    m = oa.create_message(t["id"], "assistant", "hi there", metadata={"k": "v"},
                          attachments=[{"file_id": "file_1", "tools": [{"type": "file_search"}]}])
    assert set(m) == MESSAGE_KEYS and m["id"].startswith("msg_") and m["object"] == "thread.message"
    assert m["content"] == [{"type": "text", "text": {"value": "hi there", "annotations": []}}]
    assert (m["thread_id"], m["role"], m["assistant_id"], m["run_id"], m["status"]) == \
        (t["id"], "assistant", None, None, "completed")
    assert m["attachments"] == [{"file_id": "file_1", "tools": [{"type": "file_search"}]}] and m["metadata"] == {"k": "v"}
    assert isinstance(m["created_at"], int)
    assert oa.retrieve_message(t["id"], m["id"]) == m
    assert oa.retrieve_thread(t["id"]) == t


def test_content_parts_round_trip_and_text_is_searchable(oa, sdb):
    t = oa.create_thread()
    parts = [{"type": "text", "text": "first"}, {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
             {"type": "text", "text": "second"}]
    m = oa.create_message(t["id"], "user", parts)
    assert [p["type"] for p in m["content"]] == ["text", "image_url", "text"]
    assert m["content"][1] == {"type": "image_url", "image_url": {"url": "https://x/y.png"}}
    stored = sdb.sync.get_message(t["id"], m["id"])
    assert stored.content == "first\nsecond"  # the plain text is what AgentBase indexes


def test_pagination_orders_cursors_and_has_more(oa):
    t = oa.create_thread()
    ids = [oa.create_message(t["id"], "user", f"m{i}")["id"] for i in range(7)]
    assert texts(oa.list_messages(t["id"])) == [f"m{i}" for i in reversed(range(7))]  # default desc
    page = oa.list_messages(t["id"], limit=3, order="asc")
    assert texts(page) == ["m0", "m1", "m2"] and page["has_more"] is True
    assert page["object"] == "list" and page["first_id"] == ids[0] and page["last_id"] == ids[2]
    page = oa.list_messages(t["id"], limit=3, order="asc", after=page["last_id"])
    assert texts(page) == ["m3", "m4", "m5"] and page["has_more"] is True
    page = oa.list_messages(t["id"], limit=3, order="asc", after=page["last_id"])
    assert texts(page) == ["m6"] and page["has_more"] is False
    assert texts(oa.list_messages(t["id"], limit=2, after=ids[4])) == ["m3", "m2"]  # desc after
    assert texts(oa.list_messages(t["id"], limit=2, order="asc", before=ids[4])) == ["m2", "m3"]
    assert texts(oa.list_messages(t["id"], limit=2, before=ids[2])) == ["m4", "m3"]  # desc before: nearest
    assert texts(oa.list_messages(t["id"], order="asc", after=ids[1], before=ids[5])) == ["m2", "m3", "m4"]
    empty = oa.list_messages(t["id"], after=ids[0])
    assert empty == {"object": "list", "data": [], "first_id": None, "last_id": None, "has_more": False}
    assert oa.list_messages(t["id"], run_id="run_x")["data"] == []


def test_threads_hide_non_chat_messages_from_other_adapters(oa, sdb):
    s = sdb.sync.create_session(session_id="shared-session")
    sdb.sync.add_messages(s.id, [{"role": "system", "content": "be nice"}, {"role": "human", "content": "q"},
                                 {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "type": "function",
                                                                                      "function": {"name": "f",
                                                                                                   "arguments": "{}"}}]},
                                 {"role": "tool", "content": "out", "tool_call_id": "c"},
                                 {"role": "ai", "content": "a"}])
    page = oa.list_messages("shared-session", order="asc", limit=1)
    assert texts(page) == ["q"] and page["data"][0]["role"] == "user" and page["has_more"] is True
    assert [m["role"] for m in oa.list_messages("shared-session", order="asc")["data"]] == ["user", "assistant"]
    items = oa.list_items("shared-session", order="asc")["data"]
    assert [i["type"] for i in items] == ["message", "message", "function_call", "function_call_output", "message"]
    assert [i.get("role") for i in items] == ["system", "user", None, None, "assistant"]


def test_metadata_updates_replace_and_keep_openai_fields(oa):
    t = oa.create_thread(metadata={"a": "1"}, tool_resources={"code_interpreter": {"file_ids": ["f1"]}})
    t2 = oa.modify_thread(t["id"], metadata={"b": "2"})
    assert t2["metadata"] == {"b": "2"} and t2["tool_resources"] == {"code_interpreter": {"file_ids": ["f1"]}}
    assert oa.modify_thread(t["id"])["metadata"] == {"b": "2"}
    m = oa.create_message(t["id"], "user", "x", attachments=[{"file_id": "f"}])
    m2 = oa.modify_message(t["id"], m["id"], metadata={"tag": "y"})
    assert m2["metadata"] == {"tag": "y"} and m2["attachments"] == [{"file_id": "f"}]


@pytest.mark.parametrize("bad", [{"k": 1}, {"x" * 65: "v"}, {f"k{i}": "v" for i in range(17)}, {"k": "v" * 513},
                                 {"_openai": "v"}, ["not", "a", "dict"]])
def test_bad_metadata_is_rejected_with_its_param(oa, bad):
    with pytest.raises(ValidationError) as info:
        oa.create_thread(metadata=bad)
    assert info.value.param.startswith("metadata")


def test_bad_input_writes_nothing(oa, sdb):
    before = sdb.sync.stats()["sessions"]
    with pytest.raises(ValidationError):
        oa.create_thread(messages=[{"role": "user", "content": "ok"}, {"role": "system", "content": "no"}])
    with pytest.raises(ValidationError):
        oa.create_thread(messages=[{"role": "user", "content": [{"type": "audio"}]}])
    assert sdb.sync.stats()["sessions"] == before
    t = oa.create_thread()
    for kwargs in ({"limit": 0}, {"limit": 101}, {"order": "up"}):
        with pytest.raises(ValidationError):
            oa.list_messages(t["id"], **kwargs)


def test_unknown_ids_raise_not_found(oa):
    t = oa.create_thread()
    m = oa.create_message(t["id"], "user", "x")
    calls = [lambda: oa.retrieve_thread("thread_missing"), lambda: oa.modify_thread("thread_missing", metadata={}),
             lambda: oa.delete_thread("thread_missing"), lambda: oa.create_message("thread_missing", "user", "x"),
             lambda: oa.list_messages("thread_missing"), lambda: oa.retrieve_message(t["id"], "msg_missing"),
             lambda: oa.modify_message(t["id"], "msg_missing", metadata={}),
             lambda: oa.delete_message(t["id"], "msg_missing"), lambda: oa.list_messages(t["id"], after="msg_gone"),
             lambda: oa.retrieve_conversation("conv_missing"), lambda: oa.list_items("conv_missing"),
             lambda: oa.retrieve_item(t["id"], "msg_missing"), lambda: oa.retrieve_context("thread_missing", "x")]
    for call in calls:
        with pytest.raises(NotFoundError) as info:
            call()
        assert "No " in str(info.value) and "found with id" in str(info.value)
    assert oa.delete_message(t["id"], m["id"]) == {"id": m["id"], "object": "thread.message.deleted", "deleted": True}
    with pytest.raises(NotFoundError):
        oa.retrieve_message(t["id"], m["id"])
    assert oa.delete_thread(t["id"]) == {"id": t["id"], "object": "thread.deleted", "deleted": True}
    with pytest.raises(NotFoundError):
        oa.retrieve_thread(t["id"])


def test_retrieve_context_finds_a_message_and_the_owners_memories(oa, sdb):
    sdb.sync.add_memory("Alice is allergic to peanuts", user_id="alice", category="profile")
    t = oa.create_thread(metadata={"user_id": "alice"})
    assert sdb.sync.get_session(t["id"]).user_id == "alice"
    m = oa.create_message(t["id"], "user", "My favourite city is Lisbon, I go there every summer")
    oa.create_message(t["id"], "assistant", "Noted, Lisbon in summer!")
    hits = oa.retrieve_context(t["id"], "favourite city Lisbon", top_k=5)
    assert hits and all(set(h) == {"entry_id", "source", "category", "role", "message_id", "content", "score",
                                   "matched_by", "created_at"} for h in hits)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    turn = next(h for h in hits if h["message_id"] == m["id"] and h["category"] == "turn")
    assert "Lisbon" in turn["content"] and turn["source"] == "thread" and turn["role"] == "user"
    assert not any("peanuts" in h["content"] for h in oa.retrieve_context(t["id"], "peanuts allergy"))
    allergy = oa.retrieve_context(t["id"], "peanuts allergy", top_k=3, scope="owner")
    assert allergy[0]["source"] == "memory" and "peanuts" in allergy[0]["content"]
    assert sdb.sync.commit_session(t["id"])["messages"] == 0  # retrieve_context already committed
    for bad in ({"top_k": 0}, {"scope": "world"}):
        with pytest.raises(ValidationError):
            oa.retrieve_context(t["id"], "x", **bad)


def test_adapter_default_owner(sdb):
    oa = OpenAIAssistantAdapter(sdb, user_id="bob", agent_id="agent-1")
    s = sdb.sync.get_session(oa.create_thread()["id"])
    assert (s.user_id, s.agent_id) == ("bob", "agent-1")
    assert sdb.sync.get_session(oa.create_thread(user_id="carol")["id"]).user_id == "carol"


def test_conversations_items_and_delete_returns_the_conversation(oa):
    conv = oa.create_conversation(items=[{"type": "message", "role": "user", "content": "hi"},
                                         {"role": "developer", "content": [{"type": "input_text", "text": "rule"}]}],
                                  metadata={"m": "1"})
    assert set(conv) == {"id", "object", "created_at", "metadata"} and conv["object"] == "conversation"
    assert conv["id"].startswith("conv_") and conv["metadata"] == {"m": "1"}
    created = oa.create_items(conv["id"], [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "yo", "annotations": []}],
         "phase": "final_answer"},
        {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": '{"city": "Oslo"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "12C"}])
    assert created["object"] == "list" and created["has_more"] is False and len(created["data"]) == 3
    reply, call, out = created["data"]
    assert reply == {"id": reply["id"], "type": "message", "role": "assistant", "status": "completed",
                     "content": [{"type": "output_text", "text": "yo", "annotations": []}], "phase": "final_answer"}
    assert call["type"] == "function_call" and call["id"].startswith("fc_") and call["arguments"] == '{"city": "Oslo"}'
    assert out == {"id": out["id"], "type": "function_call_output", "call_id": "call_1", "output": "12C",
                   "status": "completed"}
    listed = oa.list_items(conv["id"], limit=2)
    assert [i["id"] for i in listed["data"]] == [out["id"], call["id"]] and listed["has_more"] is True
    rest = oa.list_items(conv["id"], limit=10, after=listed["last_id"])
    assert [i.get("role") for i in rest["data"]] == ["assistant", "developer", "user"]
    assert rest["data"][2]["content"] == [{"type": "input_text", "text": "hi"}]
    assert oa.retrieve_item(conv["id"], call["id"]) == call
    assert oa.delete_item(conv["id"], call["id"]) == oa.retrieve_conversation(conv["id"])
    assert oa.update_conversation(conv["id"], metadata={"m": "2"})["metadata"] == {"m": "2"}
    assert oa.delete_conversation(conv["id"]) == {"id": conv["id"], "object": "conversation.deleted",
                                                  "deleted": True}
    with pytest.raises(NotFoundError):
        oa.retrieve_conversation(conv["id"])


def test_conversation_input_errors(oa):
    conv = oa.create_conversation()
    bad = [[], [{"type": "reasoning"}], [{"role": "critic", "content": "x"}],
           [{"role": "user", "content": [{"type": "input_image", "image_url": "u"}]}],
           [{"type": "function_call", "call_id": "c"}], [{"role": "user", "content": "x"}] * 21,
           [{"role": "user", "content": "x", "contnet": "y"}]]  # a misspelt key is not dropped silently
    for items in bad:
        with pytest.raises(ValidationError):
            oa.create_items(conv["id"], items)
    assert oa.list_items(conv["id"])["data"] == []
    with pytest.raises(ValidationError, match=r"Unknown parameter: 'items\[0\]\.contnet'"):
        oa.create_items(conv["id"], [{"role": "user", "content": "x", "contnet": "y"}])
    with pytest.raises(ValidationError, match=r"Unknown parameter: 'messages\[0\]\.metdata'"):
        oa.create_thread(messages=[{"role": "user", "content": "x", "metdata": {"a": "b"}}])
    # the SDK types conversations.update's metadata Required[Optional[...]]: null clears it
    oa.update_conversation(conv["id"], metadata={"m": "1"})
    assert oa.update_conversation(conv["id"], metadata=None)["metadata"] == {}


async def test_async_adapter_inside_a_running_loop(db):
    oa = AsyncOpenAIAssistantAdapter(db)
    t = await oa.create_thread(messages=[{"role": "user", "content": "a"}])
    await asyncio.gather(*(oa.create_message(t["id"], "assistant", f"r{i}") for i in range(3)))
    page = await oa.list_messages(t["id"], order="asc")
    assert len(page["data"]) == 4 and page["data"][0]["content"][0]["text"]["value"] == "a"
    assert (await oa.retrieve_thread(t["id"]))["id"] == t["id"]
    # the sync twin also works from inside a running event loop (it blocks through db.sync)
    assert OpenAIAssistantAdapter(db).retrieve_thread(t["id"]) == await oa.retrieve_thread(t["id"])
    with pytest.raises(NotFoundError):
        await oa.retrieve_thread("thread_nope")


def test_sync_methods_keep_names_and_docs(oa):
    assert OpenAIAssistantAdapter.list_messages.__doc__ == AsyncOpenAIAssistantAdapter.list_messages.__doc__
    assert not asyncio.iscoroutinefunction(OpenAIAssistantAdapter.create_thread)
    assert isinstance(oa.aio, AsyncOpenAIAssistantAdapter)


def test_a_path_opens_a_database_the_adapter_closes(tmp_path, monkeypatch):
    """Like the other adapters, the OpenAI ones take a file path (a new user's first try) and close what they
    opened; an AgentBase passed in stays open."""
    monkeypatch.setenv("AGENTBASE_EMBEDDER__PROVIDER", "hash")
    path = tmp_path / "threads.db"
    with OpenAIAssistantAdapter(str(path), user_id="alice") as oa:
        t = oa.create_thread(messages=[{"role": "user", "content": "I moved to Lisbon last spring."}])
    assert oa._impl._aio._closed
    with OpenAIAssistantAdapter(path, user_id="alice") as oa:
        assert texts(oa.list_messages(t["id"])) == ["I moved to Lisbon last spring."]
        with pytest.raises(NotFoundError):
            OpenAIAssistantAdapter(oa._impl._aio, user_id="bob").retrieve_thread(t["id"])

    async def go():
        async with AsyncOpenAIAssistantAdapter(path, user_id="alice") as aoa:
            return (await aoa.retrieve_thread(t["id"]))["id"], aoa
    got, aoa = asyncio.run(go())
    assert got == t["id"] and aoa._aio._closed
    db = make_db(tmp_path / "mine.db")
    try:
        with OpenAIAssistantAdapter(db) as oa:
            oa.create_thread()
        assert not db._closed  # not the adapter's to close
    finally:
        db.sync.close()
    for bad in (42, b"x.db"):  # the same error as the other adapters give
        with pytest.raises(TypeError, match="db must be an AgentBase, a SyncAgentBase or a path, got"):
            OpenAIAssistantAdapter(bad)
async def test_reserved_fields_written_through_another_api_are_not_echoed_in_a_broken_shape(tmp_path):
    """``_openai`` is refused by the adapter's own calls, but the core API stores any metadata: a value of the
    wrong shape there ("attachments": "bad") is left out of the OpenAI objects instead of breaking their schema;
    the reserved fields the adapter wrote survive an update."""
    from agentbase import AgentBase
    from agentbase.adapters import AsyncOpenAIAssistantAdapter

    db = AgentBase(tmp_path / "r.db", embedder=None)
    api = AsyncOpenAIAssistantAdapter(db)
    s = await db.create_session(session_id="poison", metadata={"_openai": {"tool_resources": "bad"}})
    await db.add_message(s.id, role="user", content="x",
                         metadata={"_openai": {"attachments": "bad", "parts": [{"type": "text"}], "run_id": 7}})
    thread = await api.retrieve_thread("poison")
    assert thread["tool_resources"] == {}
    [msg] = (await api.list_messages("poison"))["data"]
    assert msg["attachments"] == [] and msg["run_id"] is None
    assert msg["content"] == [{"type": "text", "text": {"value": "x", "annotations": []}}]
    t = await api.create_thread(tool_resources={"code_interpreter": {"file_ids": ["f1"]}})
    t = await api.modify_thread(t["id"], metadata={"k": "v"})
    assert t["tool_resources"] == {"code_interpreter": {"file_ids": ["f1"]}} and t["metadata"] == {"k": "v"}
    assert (await db.get_session(t["id"])).metadata["_openai"]["object"] == "thread"
    await db.close()


def test_openai_updates_keep_what_langchain_and_llama_index_store_on_shared_rows(sdb, oa):
    # A message or thread update replaced the whole metadata: it dropped the exact LangChain message (ids and
    # response_metadata were rebuilt from columns), brought archived LlamaIndex messages back and hid a LlamaIndex
    # key from get_keys(); those keys were also shown as OpenAI metadata, too long for the API's own 512 limit.
    messages = pytest.importorskip("langchain_core.messages")
    llms = pytest.importorskip("llama_index.core.llms")
    from agentbase.adapters import AgentBaseChatMessageHistory, AgentBaseChatStore, AgentBaseDBChatStore

    history = AgentBaseChatMessageHistory(sdb, "lc")
    history.add_messages([messages.HumanMessage("hello", id="my-id-1"),
                          messages.AIMessage("hi", id="my-id-2", response_metadata={"model": "m"})])
    before = history.messages
    page = oa.list_messages("lc", order="asc")
    assert [m["metadata"] for m in page["data"]] == [{}, {}]
    for m in page["data"]:
        assert oa.modify_message("lc", m["id"], metadata={**m["metadata"], "tag": "x"})["metadata"] == {"tag": "x"}
    assert history.messages == before

    store = AgentBaseDBChatStore(sdb)

    async def archived() -> tuple[list[str], int]:
        return ([m.content for m in await store.get_messages("li")],
                await store.count_messages("li", status="archived"))

    async def fill() -> None:
        await store.add_messages("li", [llms.ChatMessage(role="user", content=f"q{i}") for i in range(4)])
        await store.archive_oldest_messages("li", 2)

    asyncio.run(fill())
    first = oa.list_messages("li", order="asc")["data"][0]
    assert first["metadata"] == {}
    oa.modify_message("li", first["id"], metadata={"k": "v"})
    assert asyncio.run(archived()) == (["q2", "q3"], 2)

    chat = AgentBaseChatStore(sdb)
    chat.add_message("li2", llms.ChatMessage(role="user", content="x"))
    oa.modify_thread("li2", metadata={"channel": "web"})
    oa.update_conversation("li", metadata={"k": "v"})
    assert {"li", "li2"} <= set(chat.get_keys())
    assert oa.retrieve_thread("li2")["metadata"] == {"channel": "web"}
    for key in ("langchain", "llama_index_status", "_openai"):
        with pytest.raises(ValidationError, match="keys must be"):
            oa.modify_thread("li2", metadata={key: "x"})
