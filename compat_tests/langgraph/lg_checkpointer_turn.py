"""One agent turn in its own process, for test_checkpointer_agent.py (run as a script, not collected).

Usage: python lg_checkpointer_turn.py DB_PATH THREAD_ID USER_TEXT REPLY_TEXT [--async]

Builds ``langchain.agents.create_agent`` with a fake chat model (langchain-core ``FakeMessagesListChatModel``)
that records the messages it is given, and ``AgentBaseSaver`` on DB_PATH; runs one turn on THREAD_ID and prints
one JSON line: ``{"model_input": [[type, content], ...], "messages": [[type, content], ...]}``.
"""

from __future__ import annotations

import asyncio
import json
import sys

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage

from agentbase import AgentBase, load_settings
from agentbase.adapters import AgentBaseSaver

SEEN: list[list[list[str]]] = []


class RecordingModel(FakeMessagesListChatModel):
    """Answers from its list and records every model input (a pydantic model, so the record is module-level)."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        SEEN.append([[m.type, m.content] for m in messages])
        return super()._generate(messages, stop, run_manager, **kwargs)


def main() -> None:
    path, thread_id, text, reply = sys.argv[1:5]
    use_async = "--async" in sys.argv[5:]
    db = AgentBase(path, settings=load_settings(ner="regex", embedder={"provider": "hash", "dims": 64}))
    agent = create_agent(RecordingModel(responses=[AIMessage(reply)]), tools=[], checkpointer=AgentBaseSaver(db))
    config = {"configurable": {"thread_id": thread_id}}
    inputs = {"messages": [{"role": "user", "content": text}]}
    if use_async:
        result = asyncio.run(agent.ainvoke(inputs, config))
    else:
        result = agent.invoke(inputs, config)
    db.sync.close()
    print(json.dumps({"model_input": SEEN[-1], "messages": [[m.type, m.content] for m in result["messages"]]}))


if __name__ == "__main__":
    main()
