"""client.beta.threads / messages with the real OpenAI SDK 3.57 (sync, strict validation) over loopback HTTP."""

from __future__ import annotations

import time

import openai
import pytest
from openai.types.beta import Thread, ThreadDeleted
from openai.types.beta.threads import Message, MessageDeleted

from agentbase.adapters import OpenAIAssistantAdapter


def text(message: Message) -> str:
    return message.content[0].text.value  # type: ignore[union-attr]


@pytest.fixture
def thread(client: openai.OpenAI) -> Thread:
    return client.beta.threads.create()


def test_thread_create_retrieve_update_delete(client: openai.OpenAI) -> None:
    t = client.beta.threads.create(messages=[{"role": "user", "content": "hello"}], metadata={"team": "red"})
    assert isinstance(t, Thread) and t.object == "thread" and t.id.startswith("thread_")
    assert isinstance(t.created_at, int) and abs(t.created_at - time.time()) < 120
    assert t.metadata == {"team": "red"}
    got = client.beta.threads.retrieve(t.id)
    assert got.id == t.id and got.created_at == t.created_at and got.metadata == {"team": "red"}
    updated = client.beta.threads.update(t.id, metadata={"team": "blue", "stage": "2"})
    assert updated.metadata == {"team": "blue", "stage": "2"}
    assert client.beta.threads.retrieve(t.id).metadata == {"team": "blue", "stage": "2"}
    assert [text(m) for m in client.beta.threads.messages.list(t.id)] == ["hello"]
    deleted = client.beta.threads.delete(t.id)
    assert isinstance(deleted, ThreadDeleted) and (deleted.id, deleted.deleted, deleted.object) == \
        (t.id, True, "thread.deleted")
    with pytest.raises(openai.NotFoundError):
        client.beta.threads.retrieve(t.id)


def test_thread_with_tool_resources_round_trips(client: openai.OpenAI) -> None:
    t = client.beta.threads.create(tool_resources={"code_interpreter": {"file_ids": ["file-1"]}})
    assert t.tool_resources is not None and t.tool_resources.code_interpreter is not None
    assert t.tool_resources.code_interpreter.file_ids == ["file-1"]


def test_message_create_retrieve_update_delete(client: openai.OpenAI, thread: Thread) -> None:
    m = client.beta.threads.messages.create(thread.id, role="user", content="I moved to Lisbon",
                                            metadata={"source": "chat"})
    assert isinstance(m, Message) and m.object == "thread.message" and m.id.startswith("msg_")
    assert (m.thread_id, m.role, m.status, m.assistant_id, m.run_id) == (thread.id, "user", "completed", None, None)
    assert m.content[0].type == "text" and text(m) == "I moved to Lisbon" and m.content[0].text.annotations == []
    assert m.metadata == {"source": "chat"} and m.attachments == [] and isinstance(m.created_at, int)
    got = client.beta.threads.messages.retrieve(m.id, thread_id=thread.id)
    assert got.model_dump() == m.model_dump()
    upd = client.beta.threads.messages.update(m.id, thread_id=thread.id, metadata={"source": "email"})
    assert upd.metadata == {"source": "email"} and text(upd) == "I moved to Lisbon"
    assert client.beta.threads.messages.retrieve(m.id, thread_id=thread.id).metadata == {"source": "email"}
    gone = client.beta.threads.messages.delete(m.id, thread_id=thread.id)
    assert isinstance(gone, MessageDeleted) and (gone.id, gone.deleted, gone.object) == \
        (m.id, True, "thread.message.deleted")
    with pytest.raises(openai.NotFoundError):
        client.beta.threads.messages.retrieve(m.id, thread_id=thread.id)


def test_content_parts_and_attachments(client: openai.OpenAI, thread: Thread) -> None:
    m = client.beta.threads.messages.create(
        thread.id, role="assistant",
        content=[{"type": "text", "text": "part one"}, {"type": "image_url",
                                                        "image_url": {"url": "https://example.com/a.png"}},
                 {"type": "text", "text": "part two"}],
        attachments=[{"file_id": "file-9", "tools": [{"type": "file_search"}]}])
    assert [c.type for c in m.content] == ["text", "image_url", "text"]
    assert m.content[1].image_url.url == "https://example.com/a.png"  # type: ignore[union-attr]
    assert m.attachments is not None and m.attachments[0].file_id == "file-9"
    assert m.attachments[0].tools[0].type == "file_search"  # type: ignore[index]


def test_pagination_asc_desc_after_before_and_auto_iteration(client: openai.OpenAI, thread: Thread) -> None:
    ids = [client.beta.threads.messages.create(thread.id, role="user" if i % 2 == 0 else "assistant",
                                               content=f"m{i}").id for i in range(7)]
    default = client.beta.threads.messages.list(thread.id)
    assert [text(m) for m in default.data] == [f"m{i}" for i in reversed(range(7))]  # desc by default
    page = client.beta.threads.messages.list(thread.id, limit=3, order="asc")
    assert [m.id for m in page.data] == ids[:3] and page.has_more is True
    assert page.first_id == ids[0] and page.last_id == ids[2] and page.object == "list"  # extra attributes
    assert page.has_next_page()
    second = page.get_next_page()
    assert [m.id for m in second.data] == ids[3:6]
    assert [m.id for m in client.beta.threads.messages.list(thread.id, limit=2, order="asc", after=ids[4])] == \
        ids[5:]
    desc_after = client.beta.threads.messages.list(thread.id, limit=2, order="desc", after=ids[4])
    assert [m.id for m in desc_after.data] == [ids[3], ids[2]] and desc_after.has_more is True
    before = client.beta.threads.messages.list(thread.id, limit=2, order="asc", before=ids[4])
    assert [m.id for m in before.data] == [ids[2], ids[3]]
    desc_before = client.beta.threads.messages.list(thread.id, limit=10, order="desc", before=ids[2])
    assert [m.id for m in desc_before.data] == [ids[6], ids[5], ids[4], ids[3]] and desc_before.has_more is False
    # auto-iteration: the SDK follows has_more with after=<last id> until the end
    assert [m.id for m in client.beta.threads.messages.list(thread.id, limit=2, order="asc")] == ids
    assert [m.id for m in client.beta.threads.messages.list(thread.id, limit=3)] == ids[::-1]
    pages = list(client.beta.threads.messages.list(thread.id, limit=3, order="asc").iter_pages())
    assert [len(p.data) for p in pages] == [3, 3, 1] and pages[-1].has_more is False
    assert [m.role for m in client.beta.threads.messages.list(thread.id, limit=2, order="asc")] == \
        ["user", "assistant"] * 3 + ["user"]


def test_unknown_ids_raise_not_found_with_the_openai_body(client: openai.OpenAI, thread: Thread) -> None:
    calls = [lambda: client.beta.threads.retrieve("thread_missing"),
             lambda: client.beta.threads.update("thread_missing", metadata={"a": "b"}),
             lambda: client.beta.threads.delete("thread_missing"),
             lambda: client.beta.threads.messages.create("thread_missing", role="user", content="x"),
             lambda: client.beta.threads.messages.list("thread_missing"),
             lambda: client.beta.threads.messages.retrieve("msg_missing", thread_id=thread.id),
             lambda: client.beta.threads.messages.update("msg_missing", thread_id=thread.id, metadata={}),
             lambda: client.beta.threads.messages.delete("msg_missing", thread_id=thread.id)]
    for call in calls:
        with pytest.raises(openai.NotFoundError) as info:
            call()
        err = info.value
        assert err.status_code == 404 and err.type == "invalid_request_error"
        assert isinstance(err.body, dict) and set(err.body) == {"message", "type", "param", "code"}
        assert "found with id" in err.message


def test_bad_requests_raise_bad_request_error(client: openai.OpenAI, thread: Thread) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.beta.threads.create(metadata={f"k{i}": "v" for i in range(17)})
    assert info.value.param == "metadata"
    with pytest.raises(openai.BadRequestError) as info:
        client.beta.threads.messages.list(thread.id, limit=101)
    assert info.value.param == "limit"
    with pytest.raises(openai.BadRequestError):
        client.beta.threads.messages.create(thread.id, role="system", content="x")  # type: ignore[arg-type]


def test_runs_answer_501_and_are_not_retried(server) -> None:
    with openai.OpenAI(base_url=server.url, api_key="x", max_retries=3) as retrying:
        t = retrying.beta.threads.create()
        start = time.monotonic()
        with pytest.raises(openai.APIStatusError) as info:
            retrying.beta.threads.runs.create(t.id, assistant_id="asst_1")
        assert info.value.status_code == 501 and time.monotonic() - start < 0.4  # x-should-retry: false
        assert info.value.body["code"] == "not_implemented"  # type: ignore[index]
        with pytest.raises(openai.APIStatusError):
            retrying.beta.threads.runs.list(t.id)
        with pytest.raises(openai.APIStatusError):
            retrying.beta.threads.create_and_run(assistant_id="asst_1")


def test_sdk_writes_are_agentbase_sessions(client: openai.OpenAI, db) -> None:
    """The façade stores plain AgentBase sessions: the Python adapter and find() see what the SDK wrote."""
    t = client.beta.threads.create(metadata={"user_id": "dana"})
    client.beta.threads.messages.create(t.id, role="user", content="My dentist appointment is on Friday")
    session = db.sync.get_session(t.id)
    assert session.user_id == "dana" and [m.content for m in db.sync.get_messages(t.id)] == \
        ["My dentist appointment is on Friday"]
    hits = OpenAIAssistantAdapter(db).retrieve_context(t.id, "dentist appointment")
    assert hits and "dentist" in hits[0]["content"]
    db.sync.add_message(t.id, "assistant", "Reminder set.")
    assert [text(m) for m in client.beta.threads.messages.list(t.id, order="asc")] == \
        ["My dentist appointment is on Friday", "Reminder set."]
