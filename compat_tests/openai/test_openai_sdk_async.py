"""AsyncOpenAI against the live server and in process (httpx2.ASGITransport, bearer auth)."""

from __future__ import annotations

import asyncio

import httpx2
import openai
import pytest

from agentbase.web import create_app


def text(message) -> str:
    return message.content[0].text.value


async def test_async_threads_messages_and_pagination(async_client: openai.AsyncOpenAI) -> None:
    t = await async_client.beta.threads.create(metadata={"mode": "async"})
    assert (await async_client.beta.threads.retrieve(t.id)).metadata == {"mode": "async"}
    first = await async_client.beta.threads.messages.create(t.id, role="user", content="first")
    # concurrent writers still get strict insertion order (one seq per message)
    await asyncio.gather(*(async_client.beta.threads.messages.create(t.id, role="assistant", content=f"r{i}")
                           for i in range(5)))
    seen = [text(m) async for m in async_client.beta.threads.messages.list(t.id, limit=2, order="asc")]
    assert seen[0] == "first" and sorted(seen[1:]) == [f"r{i}" for i in range(5)]
    page = await async_client.beta.threads.messages.list(t.id, limit=4)
    assert len(page.data) == 4 and page.has_more is True and text(page.data[-1]) != "first"
    nxt = await page.get_next_page()
    assert [text(m) for m in nxt.data][-1] == "first" and nxt.has_more is False
    upd = await async_client.beta.threads.messages.update(first.id, thread_id=t.id, metadata={"pin": "yes"})
    assert upd.metadata == {"pin": "yes"}
    assert (await async_client.beta.threads.messages.delete(first.id, thread_id=t.id)).deleted is True
    assert (await async_client.beta.threads.delete(t.id)).deleted is True
    with pytest.raises(openai.NotFoundError):
        await async_client.beta.threads.retrieve(t.id)


async def test_async_conversations(async_client: openai.AsyncOpenAI) -> None:
    conv = await async_client.conversations.create(items=[{"role": "user", "content": "ping"}])
    await async_client.conversations.items.create(conv.id, items=[{"role": "assistant", "content": "pong"}])
    items = [i async for i in async_client.conversations.items.list(conv.id, order="asc", limit=1)]
    assert [i.content[0].text for i in items] == ["ping", "pong"]
    assert [i.content[0].type for i in items] == ["input_text", "output_text"]
    assert (await async_client.conversations.items.delete(items[0].id, conversation_id=conv.id)).id == conv.id
    assert (await async_client.conversations.delete(conv.id)).deleted is True


async def test_in_process_asgi_transport_with_bearer_auth(asgi_client: openai.AsyncOpenAI, db, token: str) -> None:
    t = await asgi_client.beta.threads.create(messages=[{"role": "user", "content": "in process"}])
    assert [text(m) async for m in asgi_client.beta.threads.messages.list(t.id)] == ["in process"]
    conv = await asgi_client.conversations.create(metadata={"via": "asgi"})
    assert (await asgi_client.conversations.retrieve(conv.id)).metadata == {"via": "asgi"}
    transport = httpx2.ASGITransport(app=create_app(db, tokens=[token]))
    async with httpx2.AsyncClient(transport=transport) as http:
        async with openai.AsyncOpenAI(base_url="http://agentbase.test/v1", api_key="wrong-key", http_client=http,
                                      max_retries=0, _strict_response_validation=True) as wrong:
            with pytest.raises(openai.AuthenticationError) as info:
                await wrong.beta.threads.retrieve(t.id)
    assert info.value.status_code == 401 and info.value.code == "invalid_api_key"
