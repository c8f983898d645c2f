"""LangGraph / LangChain 1.x agents on AgentBase: a checkpointer that keeps threads in the AgentBase file.

Runs offline with LangChain's fake chat model (install with ``pip install 'agentbase[langgraph]'``):

    python examples/langgraph_checkpointer_example.py
"""

import tempfile
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage

from agentbase import AgentBase
from agentbase.adapters import AgentBaseSaver


def make_agent(db: AgentBase, replies: list[str]):
    """An agent whose fake model prints what it is given (the thread's messages) before answering."""

    class EchoingModel(FakeMessagesListChatModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            print("  model input:", [f"{m.type}: {m.content}" for m in messages])
            return super()._generate(messages, stop, run_manager, **kwargs)

    model = EchoingModel(responses=[AIMessage(r) for r in replies])
    return create_agent(model, tools=[], checkpointer=AgentBaseSaver(db))


def main() -> None:
    path = Path(tempfile.mkdtemp()) / "langgraph_agent.db"
    config = {"configurable": {"thread_id": "alice-thread"}}

    # 1. Two turns of one thread; every step is a checkpoint in the file.
    db = AgentBase(path)
    agent = make_agent(db, ["Nice to meet you, Alice!"])
    print("turn 1")
    agent.invoke({"messages": [{"role": "user", "content": "Hi, I'm Alice and I live in Lisbon."}]}, config)
    db.sync.close()

    # 2. A "restarted" program: a new engine on the same file resumes the thread where it stopped.
    db = AgentBase(path)
    agent = make_agent(db, ["You live in Lisbon."])
    print("turn 2 (after reopening the file)")
    result = agent.invoke({"messages": [{"role": "user", "content": "Where do I live?"}]}, config)
    print("reply:", result["messages"][-1].content)

    # 3. The history of the thread (time travel), newest first, straight from the saver.
    history = list(agent.get_state_history(config))
    print(f"checkpoints of the thread: {len(history)}; steps newest first:",
          [s.metadata["step"] for s in history])

    # 4. Checkpoints are not memories: find() and the entry counts do not see them.
    print("find('Lisbon') ->", db.sync.find("Lisbon"), "| entries:", db.sync.stats()["entries_total"])

    # 5. Housekeeping: keep only the newest checkpoint of the thread; the conversation is intact.
    saver = AgentBaseSaver(db)
    saver.prune(["alice-thread"], strategy="keep_latest")
    latest = saver.get_tuple(config)
    print(f"after prune: {len(list(saver.list(config)))} checkpoint, messages:",
          [m.content for m in latest.checkpoint["channel_values"]["messages"]])
    db.sync.close()


if __name__ == "__main__":
    main()
