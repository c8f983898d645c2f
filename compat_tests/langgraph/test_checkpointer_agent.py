"""LangChain 1.x agents and LangGraph graphs on AgentBaseSaver: threads survive the process, offline.

``langchain.agents.create_agent(model, tools=[], checkpointer=AgentBaseSaver(db))`` runs one turn per process
(lg_checkpointer_turn.py, with a fake chat model that records its input); the next process on the same file
must hand the model the earlier turns. Also: interrupt/resume across processes (pending writes), state
history, and that checkpoints never show up as memories.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TypedDict

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from agentbase.testing import database_for
from agentbase.adapters import AgentBaseSaver

HERE = Path(__file__).parent


def _turn(db_path: Path, thread_id: str, text: str, reply: str, *extra: str) -> dict:
    """Run one agent turn in a fresh Python process; return its JSON report."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, str(HERE / "lg_checkpointer_turn.py"), str(database_for(db_path)), thread_id, text,
                          reply, *extra], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_agent_thread_survives_two_processes(db_path: Path, opener) -> None:
    first = _turn(db_path, "chat-1", "Hello, I am Ann and I like tea", "Nice to meet you, Ann")
    assert first["model_input"] == [["human", "Hello, I am Ann and I like tea"]]
    second = _turn(db_path, "chat-1", "What do I like?", "You like tea")
    # the second process's model saw the first process's turn, in order
    assert second["model_input"] == [["human", "Hello, I am Ann and I like tea"], ["ai", "Nice to meet you, Ann"],
                                     ["human", "What do I like?"]]
    assert [c for _, c in second["messages"]] == ["Hello, I am Ann and I like tea", "Nice to meet you, Ann",
                                                  "What do I like?", "You like tea"]
    # another thread on the same file starts empty
    other = _turn(db_path, "chat-2", "Who am I?", "I do not know yet")
    assert other["model_input"] == [["human", "Who am I?"]]
    # this process reads the same state through the saver, and checkpoints are not memories
    db = opener(db_path)
    try:
        saver = AgentBaseSaver(db)
        latest = saver.get_tuple({"configurable": {"thread_id": "chat-1"}})
        assert [m.content for m in latest.checkpoint["channel_values"]["messages"]] == [
            "Hello, I am Ann and I like tea", "Nice to meet you, Ann", "What do I like?", "You like tea"]
        assert db.sync.find("Ann tea") == []
        assert db.sync.count() == 0
        stats = db.sync.stats()
        assert stats["entries_total"] == 0 and stats["sessions"] == 0 and stats["messages"] == 0
    finally:
        db.sync.close()


def test_async_agent_resumes_in_another_process(db_path: Path) -> None:
    _turn(db_path, "async-chat", "My code word is heron", "Noted", "--async")
    second = _turn(db_path, "async-chat", "What is my code word?", "heron", "--async")
    assert second["model_input"][:2] == [["human", "My code word is heron"], ["ai", "Noted"]]


class _Approval(TypedDict):
    request: str
    decision: str


def _approval_graph(checkpointer):
    def ask(state: _Approval) -> dict:
        return {"decision": interrupt({"question": f"approve {state['request']}?"})}

    builder = StateGraph(_Approval)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=checkpointer)


def test_interrupt_then_resume_from_a_reopened_file(db_path: Path, opener) -> None:
    """An interrupt is a pending write: a new engine on the file (as a new process would) resumes it."""
    config = {"configurable": {"thread_id": "approval-1"}}
    db = opener(db_path)
    paused = _approval_graph(AgentBaseSaver(db)).invoke({"request": "deploy", "decision": ""}, config)
    assert paused["__interrupt__"][0].value == {"question": "approve deploy?"}
    db.sync.close()

    db = opener(db_path)
    try:
        graph = _approval_graph(AgentBaseSaver(db))
        state = graph.get_state(config)
        assert state.next == ("ask",) and state.interrupts[0].value == {"question": "approve deploy?"}
        done = graph.invoke(Command(resume="yes"), config)
        assert done == {"request": "deploy", "decision": "yes"}
        assert graph.get_state(config).next == ()
    finally:
        db.sync.close()


def _agent(checkpointer, replies: list[str]):
    model = FakeMessagesListChatModel(responses=[AIMessage(r) for r in replies])
    return create_agent(model, tools=[], checkpointer=checkpointer)


def test_state_history_matches_in_memory_saver(db) -> None:
    """The same two turns on InMemorySaver and on AgentBaseSaver give the same history (values, steps, sources,
    parent links), newest first; ``limit`` and ``before`` page it the same way."""
    config = {"configurable": {"thread_id": "hist"}}
    runs = {}
    for name, saver in (("memory", InMemorySaver()), ("agentbase", AgentBaseSaver(db))):
        agent = _agent(saver, ["one", "two"])
        agent.invoke({"messages": [HumanMessage("first")]}, config)
        agent.invoke({"messages": [HumanMessage("second")]}, config)
        history = list(agent.get_state_history(config))
        runs[name] = {
            "history": [([m.content for m in s.values.get("messages", [])], s.metadata["step"], s.metadata["source"],
                         s.next, s.parent_config is None) for s in history],
            "limited": len(list(agent.get_state_history(config, limit=2))),
            "before": [s.metadata["step"] for s in agent.get_state_history(config, before=history[1].config)],
        }
    assert runs["agentbase"] == runs["memory"]
    assert runs["agentbase"]["limited"] == 2
    assert len(runs["agentbase"]["history"]) >= 6


async def test_async_graph_and_time_travel(db) -> None:
    """``ainvoke`` and a replay from an earlier checkpoint (fork) work on the async path."""
    saver = AgentBaseSaver(db)
    agent = _agent(saver, ["a1", "a2", "a3"])
    config = {"configurable": {"thread_id": "tt"}}
    await agent.ainvoke({"messages": [HumanMessage("q1")]}, config)
    await agent.ainvoke({"messages": [HumanMessage("q2")]}, config)
    history = [s async for s in agent.aget_state_history(config)]
    after_first = next(s for s in history if [m.content for m in s.values.get("messages", [])] == ["q1", "a1"])
    forked = await agent.ainvoke({"messages": [HumanMessage("q2 again")]}, after_first.config)
    assert [m.content for m in forked["messages"]] == ["q1", "a1", "q2 again", "a3"]
    latest = await saver.aget_tuple(config)
    assert [m.content for m in latest.checkpoint["channel_values"]["messages"]] == ["q1", "a1", "q2 again", "a3"]
