"""OpenAI Threads and Conversations stored in AgentBase: the Python adapter, then the real SDK over HTTP.

Runs offline: part 1 uses the adapter in process; part 2 serves the OpenAI-compatible API with uvicorn on
127.0.0.1 (a background thread) and points ``openai.OpenAI(base_url=...)`` at it.
Needs ``agentbase[web,openai]``.

    python examples/openai_assistants_example.py

The same server runs from the command line with ``agentbase serve --db my_agent.db`` (add ``--token`` before
binding to anything but loopback).
"""

from __future__ import annotations

import socket
import tempfile
import threading
import time
import warnings
from pathlib import Path

import openai
import uvicorn

from agentbase import AgentBase
from agentbase.adapters import OpenAIAssistantAdapter
from agentbase.web import create_app

warnings.filterwarnings("ignore", "The Assistants API is deprecated", DeprecationWarning)


def adapter_demo(db: AgentBase) -> str:
    """Part 1: threads through the sync adapter; returns the thread id."""
    threads = OpenAIAssistantAdapter(db, user_id="alice")
    thread = threads.create_thread(messages=[{"role": "user", "content": "I moved to Lisbon last month."}],
                                   metadata={"channel": "web"})
    threads.create_message(thread["id"], "assistant", "Welcome to Lisbon! How is it going?")
    threads.create_message(thread["id"], "user", "Great, and my favorite food here is pastel de nata.")
    page = threads.list_messages(thread["id"], order="asc", limit=2)
    print("thread", thread["id"], "first page:", [m["content"][0]["text"]["value"] for m in page["data"]],
          "has_more:", page["has_more"])
    print("context for 'favorite food':")
    for hit in threads.retrieve_context(thread["id"], "favorite food", top_k=3):
        print(f"  {hit['score']:.3f} {hit['category']:<10} {hit['content']}")
    return thread["id"]


def sdk_demo(db: AgentBase, thread_id: str) -> None:
    """Part 2: the unmodified OpenAI SDK against AgentBase's /v1 routes on 127.0.0.1."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(db), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    base_url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    try:
        client = openai.OpenAI(base_url=base_url, api_key="unused-locally", max_retries=0)
        # the thread written by the adapter is an ordinary thread for the SDK
        messages = client.beta.threads.messages.list(thread_id, order="asc")
        print(f"\nSDK at {base_url} sees {len(messages.data)} messages in {thread_id}")
        msg = client.beta.threads.messages.create(thread_id, role="user", content="Any bakery tips?")
        client.beta.threads.messages.update(msg.id, thread_id=thread_id, metadata={"intent": "question"})
        print("auto-paginated:", [m.content[0].text.value for m in
                                  client.beta.threads.messages.list(thread_id, order="asc", limit=2)])
        try:
            client.beta.threads.retrieve("thread_does_not_exist")
        except openai.NotFoundError as exc:
            print("404 ->", exc.body)

        conv = client.conversations.create(items=[{"type": "message", "role": "user", "content": "hi"}],
                                           metadata={"demo": "yes"})
        client.conversations.items.create(conv.id, items=[{"type": "message", "role": "assistant",
                                                           "content": "Hello! How can I help?"}])
        print("conversation items:", [(i.role, i.content[0].text) for i in
                                      client.conversations.items.list(conv.id, order="asc")])
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def main() -> None:
    """Run both parts against one fresh database file."""
    path = Path(tempfile.mkdtemp()) / "openai_demo.db"
    db = AgentBase(path)
    try:
        thread_id = adapter_demo(db)
        sdk_demo(db, thread_id)
    finally:
        db.sync.close()


if __name__ == "__main__":
    main()
