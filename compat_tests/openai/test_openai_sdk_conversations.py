"""client.conversations / conversations.items with the real OpenAI SDK 3.57 (sync, strict validation)."""

from __future__ import annotations

import openai
import pytest
from openai.types.conversations import Conversation, ConversationDeletedResource, ConversationItemList
from openai.types.conversations import Message as ItemMessage
from openai.types.responses import ResponseFunctionToolCallItem, ResponseFunctionToolCallOutputItem


def test_conversation_crud(client: openai.OpenAI) -> None:
    conv = client.conversations.create(items=[{"type": "message", "role": "user", "content": "hi"}],
                                       metadata={"topic": "demo"})
    assert isinstance(conv, Conversation) and conv.object == "conversation" and conv.id.startswith("conv_")
    assert conv.metadata == {"topic": "demo"} and isinstance(conv.created_at, int)
    assert client.conversations.retrieve(conv.id).model_dump() == conv.model_dump()
    updated = client.conversations.update(conv.id, metadata={"topic": "changed"})
    assert updated.metadata == {"topic": "changed"}
    deleted = client.conversations.delete(conv.id)
    assert isinstance(deleted, ConversationDeletedResource)
    assert (deleted.id, deleted.deleted, deleted.object) == (conv.id, True, "conversation.deleted")
    with pytest.raises(openai.NotFoundError):
        client.conversations.retrieve(conv.id)


def test_items_create_list_retrieve_delete(client: openai.OpenAI) -> None:
    conv = client.conversations.create(items=[
        {"role": "developer", "content": "Answer briefly."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What's the weather?"}]}])
    created = client.conversations.items.create(conv.id, items=[
        {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": '{"city": "Oslo"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "12C and sunny"},
        {"type": "message", "role": "assistant", "content": "It is 12C and sunny in Oslo."}])
    assert isinstance(created, ConversationItemList) and created.has_more is False and len(created.data) == 3
    call, output, reply = created.data
    assert isinstance(call, ResponseFunctionToolCallItem) and call.name == "weather" and call.call_id == "call_1"
    assert call.arguments == '{"city": "Oslo"}' and call.status == "completed"
    assert isinstance(output, ResponseFunctionToolCallOutputItem) and output.output == "12C and sunny"
    assert isinstance(reply, ItemMessage) and reply.role == "assistant"
    assert reply.content[0].type == "output_text" and reply.content[0].text == "It is 12C and sunny in Oslo."
    assert created.first_id == call.id and created.last_id == reply.id

    items = list(client.conversations.items.list(conv.id, order="asc"))
    assert [getattr(i, "role", i.type) for i in items] == ["developer", "user", "function_call",
                                                            "function_call_output", "assistant"]
    assert items[1].content[0].type == "input_text" and items[1].content[0].text == "What's the weather?"
    desc = client.conversations.items.list(conv.id, limit=2)
    assert [i.id for i in desc.data] == [reply.id, output.id] and desc.has_more is True
    assert desc.last_id == output.id
    after = client.conversations.items.list(conv.id, limit=2, after=desc.last_id)
    assert [i.id for i in after.data] == [call.id, items[1].id]
    assert [i.id for i in client.conversations.items.list(conv.id, limit=2)] == [i.id for i in reversed(items)]
    assert [len(p.data) for p in client.conversations.items.list(conv.id, limit=2).iter_pages()] == [2, 2, 1]

    got = client.conversations.items.retrieve(call.id, conversation_id=conv.id)
    assert isinstance(got, ResponseFunctionToolCallItem) and got.id == call.id
    after_delete = client.conversations.items.delete(call.id, conversation_id=conv.id)
    assert isinstance(after_delete, Conversation) and after_delete.id == conv.id
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.retrieve(call.id, conversation_id=conv.id)
    assert len(list(client.conversations.items.list(conv.id))) == 4


def test_item_errors(client: openai.OpenAI) -> None:
    conv = client.conversations.create()
    assert list(client.conversations.items.list(conv.id)) == []
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.list("conv_missing")
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.delete("msg_missing", conversation_id=conv.id)
    with pytest.raises(openai.NotFoundError):
        client.conversations.update("conv_missing", metadata={"a": "b"})
    with pytest.raises(openai.NotFoundError):
        client.conversations.delete("conv_missing")
    with pytest.raises(openai.BadRequestError) as info:
        client.conversations.items.create(conv.id, items=[{"type": "reasoning", "summary": []}])  # type: ignore
    assert info.value.param == "items[0].type"
    with pytest.raises(openai.BadRequestError):
        client.conversations.items.create(conv.id, items=[{"role": "user", "content": "x"}] * 21)
