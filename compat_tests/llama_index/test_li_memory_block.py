"""``AgentBaseMemoryBlock`` as a block of llama-index-core 0.14.25's ``llama_index.core.memory.Memory``.

The contract comes from ``llama_index/core/memory/memory.py`` (``Memory._manage_queue`` hands the messages it
archives to ``block.aput``; ``Memory.aget`` asks every block, renders string content with
``memory_blocks_template`` and inserts it into the system or latest user message; ``_truncate_memory_blocks``
calls ``atruncate`` on blocks with ``priority`` > 0) and from ``memory_blocks/vector.py``
(``VectorMemoryBlock``: a ``name``, a ``format_template`` with a ``text`` variable, retrieved texts joined by
blank lines). Every test runs the real ``Memory`` (its default ``SQLAlchemyChatStore`` or
``AgentBaseDBChatStore``) on a real file.
"""

from __future__ import annotations

import asyncio
import pickle
import re

import pydantic
import pytest
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage, MockLLM
from llama_index.core.memory import Memory, StaticMemoryBlock
from llama_index.core.storage.chat_store.base_db import MessageStatus
from llama_index.core.utils import get_tokenizer

from agentbase.testing import database_for
from agentbase import ValidationError
from agentbase.adapters import AgentBaseDBChatStore, AgentBaseMemoryBlock

ACTIVE, ARCHIVED = MessageStatus.ACTIVE, MessageStatus.ARCHIVED

# An earlier conversation: the facts in the first turns are what a later session must recall.
FIRST_SESSION = [
    ("user", "Hi! I moved to Lisbon last month and I work at Nordlys Energy as a data engineer."),
    ("assistant", "Welcome to Lisbon! Data engineering at an energy company sounds interesting."),
    ("user", "My dog is called Pixel, she is a two year old beagle."),
    ("assistant", "Pixel is a lovely name for a beagle."),
    ("user", "I prefer green tea over coffee in the morning."),
    ("assistant", "Green tea it is, I will remember that."),
    ("user", "Can you suggest a quick dinner recipe with chickpeas and spinach?"),
    ("assistant", "Try a chickpea and spinach curry: onion, garlic, cumin, tomatoes, simmer ten minutes."),
    ("user", "Thanks, and what is a good stretch after running?"),
    ("assistant", "A standing quad stretch and a calf stretch against a wall, thirty seconds each."),
]


def msgs(pairs) -> list[ChatMessage]:
    return [ChatMessage(role=r, content=t) for r, t in pairs]


def small_memory(session_id: str, block: AgentBaseMemoryBlock, **kwargs) -> Memory:
    """A Memory whose short-term queue holds about 70 tokens, so the first session overflows it."""
    kwargs.setdefault("token_limit", 100)
    kwargs.setdefault("token_flush_size", 40)
    return Memory.from_defaults(session_id=session_id, memory_blocks=[block], **kwargs)


async def run_first_session(db, block: AgentBaseMemoryBlock, session_id: str = "alice-1", **kwargs) -> Memory:
    memory = small_memory(session_id, block, **kwargs)
    chat = msgs(FIRST_SESSION)
    await memory.aput_messages(chat[:4])  # a batch, then one message at a time
    for m in chat[4:]:
        await memory.aput(m)
    await db.flush()
    return memory


async def test_flushed_messages_are_stored_and_committed(db):
    block = AgentBaseMemoryBlock(db, user_id="alice")
    memory = await run_first_session(db, block)
    archived = await memory.aget_all(status=ARCHIVED)
    active = await memory.aget_all(status=ACTIVE)
    assert archived and active  # the queue overflowed and kept its newest turn(s)
    assert [m.content for m in archived + active] == [t for _, t in FIRST_SESSION]

    sid = block.session_for("alice-1")
    assert sid == "llama-memory-alice-1"
    session = await db.get_session(sid)
    assert session.user_id == "alice" and session.status == "committed"
    stored = await db.get_messages(sid)
    assert [(m.role, m.content) for m in stored] == [(m.role.value, m.content) for m in archived]
    assert all("session_id" not in m.metadata["llama_index"]["additional_kwargs"] for m in stored)
    assert session.committed_seq == stored[-1].seq  # every flushed message was committed

    facts = [e.content for e in await db.list(user_id="alice") if e.category not in ("turn", "summary")]
    assert "User's dog is Pixel" in facts and "User moved to Lisbon last month" in facts, facts
    turns = await db.list(user_id="alice", category="turn")
    assert {e.session_id for e in turns} == {sid}
    assert len(turns) == len(archived)  # user and assistant messages each became a turn


async def test_a_new_session_recalls_an_earlier_fact(db):
    await run_first_session(db, AgentBaseMemoryBlock(db, user_id="alice"))
    block = AgentBaseMemoryBlock(db, user_id="alice")  # a new block object: everything comes from the file
    memory = Memory.from_defaults(session_id="alice-2", token_limit=4000, memory_blocks=[block])
    await memory.aput(ChatMessage(role="user", content="What is my dog's name again?"))
    text = await block.aget(await memory.aget_all(), session_id="alice-2")
    # The extracted fact is one of the results (the hash embedder of this suite has no semantics, so only the
    # keyword leg is meaningful and the order within the top 5 is not asserted).
    assert "User's dog is Pixel" in text.split("\n\n"), text
    work = await block.aget([ChatMessage(role="user", content="Which company do I work for?")])
    assert work.split("\n\n")[0] == "User works at Nordlys Energy as a data engineer", work

    # Another user shares the file but not the memories.
    bob = AgentBaseMemoryBlock(db, user_id="bob")
    assert await bob.aget([ChatMessage(role="user", content="What is my dog's name again?")]) == ""


async def test_query_is_the_latest_user_message(db):
    await run_first_session(db, AgentBaseMemoryBlock(db, user_id="alice"))
    block = AgentBaseMemoryBlock(db, user_id="alice", top_k=1)
    history = [ChatMessage(role="user", content="What is my dog's name?"),
               ChatMessage(role="assistant", content="Let me check."),
               ChatMessage(role="user", content="Which company do I work for?")]
    assert "Nordlys" in await block.aget(history)
    both = AgentBaseMemoryBlock(db, user_id="alice", top_k=4, query_messages=2)
    text = await both.aget(history)
    assert "Nordlys" in text and "Pixel" in text
    assert await block.aget([]) == "" and await block.aget(None) == ""
    assert await block.aget([ChatMessage(role="user", content="   ")]) == ""


async def test_memory_get_puts_the_block_in_the_system_message(db):
    await run_first_session(db, AgentBaseMemoryBlock(db, user_id="alice"))
    block = AgentBaseMemoryBlock(db, user_id="alice")
    memory = Memory.from_defaults(session_id="alice-2", token_limit=4000, memory_blocks=[block])
    memory.put(ChatMessage(role="user", content="What is my dog's name again?"))  # the sync wrappers
    got = memory.get()
    assert [m.role.value for m in got] == ["system", "user"]
    block_text = await block.aget(memory.get_all())
    assert block_text in got[0].content
    assert got[0].content.startswith("<memory>\n<AgentBaseMemory>\n")
    assert got[0].content.endswith("</AgentBaseMemory>\n</memory>")

    # Formatted as LlamaIndex formats any block of that name and text (StaticMemoryBlock as reference).
    reference = Memory.from_defaults(session_id="ref", token_limit=4000, memory_blocks=[
        StaticMemoryBlock(name="AgentBaseMemory", static_content=block_text)])
    reference.put(ChatMessage(role="user", content="What is my dog's name again?"))
    assert [m.model_dump() for m in got] == [m.model_dump() for m in reference.get()]

    # insert_method="user": the block goes before the text of the latest user message.
    in_user = Memory.from_defaults(session_id="alice-3", token_limit=4000, memory_blocks=[block],
                                   insert_method="user")
    in_user.put(ChatMessage(role="user", content="What is my dog's name again?"))
    (only,) = in_user.get()
    assert only.role.value == "user" and "Pixel" in only.content
    assert only.content.endswith("What is my dog's name again?")


async def test_format_template_name_and_results(db):
    await run_first_session(db, AgentBaseMemoryBlock(db, user_id="alice"))
    question = [ChatMessage(role="user", content="What is my dog's name?")]
    plain = AgentBaseMemoryBlock(db, user_id="alice", name="LongTerm",
                                 format_template="Known about the user:\n{text}")
    text = await plain.aget(question)
    assert text.startswith("Known about the user:\n") and "Pixel" in text
    jinja = AgentBaseMemoryBlock(db, user_id="alice", top_k=2, format_template=(
        "{% for r in results %}- [{{ r.category }}] {{ r.text }}\n{% endfor %}"))
    lines = (await jinja.aget(question)).splitlines()
    assert len(lines) == 2 and all(line.startswith("- [") for line in lines)
    dated = AgentBaseMemoryBlock(db, user_id="alice", top_k=1, format_template=(
        "{% for r in results %}- [{{ r.created_at[:10] }}] {{ r.text }}\n{% endfor %}"))
    assert re.fullmatch(r"- \[\d{4}-\d\d-\d\d\] .+\n", await dated.aget(question))
    # find_kwargs narrow the search: one session only, as VectorMemoryBlock does by default
    one = AgentBaseMemoryBlock(db, user_id="alice", find_kwargs={"session_id": plain.session_for("alice-1")})
    assert "Pixel" in await one.aget(question)
    other = AgentBaseMemoryBlock(db, user_id="alice", find_kwargs={"session_id": plain.session_for("nope")})
    assert await other.aget(question) == ""
    memory = Memory.from_defaults(session_id="x", token_limit=4000, memory_blocks=[plain])
    await memory.aput(question[0])
    assert "<LongTerm>" in (await memory.aget())[0].content


async def test_token_budget_and_priority_truncation(db):
    await run_first_session(db, AgentBaseMemoryBlock(db, user_id="alice"))
    tokens = get_tokenizer()
    question = [ChatMessage(role="user", content="Tell me about my dog Pixel, Lisbon, tea and dinner")]
    wide = await AgentBaseMemoryBlock(db, user_id="alice", top_k=8, token_budget=None).aget(question)
    budgeted = await AgentBaseMemoryBlock(db, user_id="alice", top_k=8, token_budget=40).aget(question)
    assert 0 < len(tokens(budgeted)) <= 40 < len(tokens(wide))
    assert wide.startswith(budgeted.split("\n\n")[0])  # the best result is kept, lower ones dropped

    # priority 0 (the default): never truncated by Memory, even over its token_limit.
    history = question[0].content + " " + "filler " * 30
    for priority, kept in ((0, wide), (1, None)):
        block = AgentBaseMemoryBlock(db, user_id="alice", top_k=8, token_budget=None, priority=priority)
        memory = Memory.from_defaults(session_id=f"p{priority}", token_limit=len(tokens(wide)) + 20,
                                      memory_blocks=[block])
        await memory.aput(ChatMessage(role="user", content=history))
        system = (await memory.aget())[0]
        if kept is not None:
            assert kept in system.content
        else:  # truncated to its best results, which still fit
            assert system.role.value == "system"
            body = system.content.split("<AgentBaseMemory>\n", 1)[1].rsplit("\n</AgentBaseMemory>", 1)[0]
            assert wide.startswith(body) and len(body) < len(wide)
    # atruncate: the lowest-ranked results go first; all of it when asked for everything; foreign text -> None
    block = AgentBaseMemoryBlock(db, user_id="alice", top_k=8, token_budget=None)
    content = await block.aget(question)
    shorter = await block.atruncate(content, 10)
    assert shorter and content.startswith(shorter) and len(tokens(shorter)) <= len(tokens(content)) - 10
    assert await block.atruncate(content, len(tokens(content))) is None
    assert await block.atruncate("not rendered by this block", 1) is None


async def test_recall_survives_reopening_the_file(db_path, opener):
    first = opener(db_path)
    await run_first_session(first, AgentBaseMemoryBlock(first, user_id="alice"))
    await first.close()
    again = opener(db_path)
    try:
        block = AgentBaseMemoryBlock(again, user_id="alice")
        memory = Memory.from_defaults(session_id="alice-9", token_limit=4000, memory_blocks=[block])
        await memory.aput(ChatMessage(role="user", content="What is my dog's name?"))
        assert "Pixel" in (await memory.aget())[0].content
    finally:
        await again.close()


async def test_block_opened_from_a_path(db_path):
    block = AgentBaseMemoryBlock(str(database_for(db_path)), user_id="alice")
    await run_first_session(block.db, block)
    assert "Pixel" in await block.aget([ChatMessage(role="user", content="dog name?")])
    block.close()


async def test_chat_history_and_block_in_one_agentbase_file(db_path, opener):
    """Memory's own queue in AgentBaseDBChatStore and the long-term block on the same file."""
    db = opener(db_path)
    store = AgentBaseDBChatStore(db, user_id="alice")
    block = AgentBaseMemoryBlock(db, user_id="alice")
    await run_first_session(db, block, chat_store=store)
    assert await store.count_messages("alice-1", status=ARCHIVED) == len(await db.get_messages(
        block.session_for("alice-1")))
    assert await store.count_messages("alice-1", status=None) == len(FIRST_SESSION)
    await db.close()

    db = opener(db_path)
    try:
        store, block = AgentBaseDBChatStore(db, user_id="alice"), AgentBaseMemoryBlock(db, user_id="alice")
        resumed = Memory.from_defaults(session_id="alice-1", token_limit=100, token_flush_size=40,
                                       chat_store=store, memory_blocks=[block])
        active = await resumed.aget_all(status=ACTIVE)
        assert active and active[-1].content == FIRST_SESSION[-1][1]  # the short-term queue came back
        await resumed.aput(ChatMessage(role="user", content="Remind me of my dog's name?"))
        got = await resumed.aget()
        assert got[0].role.value == "system" and "Pixel" in got[0].content
        assert "alice-1" in await store.get_keys()
        assert block.session_for("alice-1") not in await store.get_keys()  # the block's session: no chat key
    finally:
        await db.close()


def test_simple_chat_engine_uses_the_memory(db):
    asyncio.run(run_first_session(db, AgentBaseMemoryBlock(db, user_id="alice")))
    memory = Memory.from_defaults(session_id="engine-1", token_limit=4000,
                                  memory_blocks=[AgentBaseMemoryBlock(db, user_id="alice")])
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory)
    reply = engine.chat("What is my dog's name?")
    assert "Pixel" in str(reply)  # MockLLM echoes its prompt: the recalled fact was in it
    assert [m.content for m in memory.get_all()][0] == "What is my dog's name?"  # block text not stored


# llama-index-workflows inspects the agent (a pydantic model), which trips pydantic's own deprecation warnings
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_function_agent_turn_sees_the_recalled_fact(db):
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    await run_first_session(db, AgentBaseMemoryBlock(db, user_id="alice"))
    seen: list[list[ChatMessage]] = []

    def answer(messages, **kwargs):
        seen.append(list(messages))
        return ChatMessage(role="assistant", content="Your dog is Pixel.")

    memory = Memory.from_defaults(session_id="agent-2", token_limit=4000,
                                  memory_blocks=[AgentBaseMemoryBlock(db, user_id="alice")])
    agent = FunctionAgent(tools=[], llm=MockFunctionCallingLLM(response_generator=answer))
    result = await agent.run(user_msg="What is my dog's name?", memory=memory)
    assert "Pixel" in str(result)
    system = [m for m in seen[0] if m.role.value == "system"]
    assert system and "Pixel" in system[-1].content and "<AgentBaseMemory>" in system[-1].content


async def test_accept_short_term_memory_false_stores_nothing(db):
    block = AgentBaseMemoryBlock(db, user_id="alice", accept_short_term_memory=False)
    memory = await run_first_session(db, block)
    assert await memory.aget_all(status=ARCHIVED)  # flushed, but the block declined it
    assert await db.list_sessions() == [] and await db.count(user_id="alice") == 0


@pytest.mark.parametrize("kwargs", [
    {"user_id": ""}, {"user_id": "   "}, {"user_id": None}, {"user_id": "x" * 257},
    {"user_id": "alice", "token_budget": -1}, {"user_id": "alice", "token_budget": 0},
    {"user_id": "alice", "top_k": 0}, {"user_id": "alice", "query_messages": 0},
    {"user_id": "alice", "find_kwargs": {"user_id": "bob"}}, {"user_id": "alice", "agent_id": ""},
])
def test_bad_settings_raise_pydantic_errors(db, kwargs):
    with pytest.raises(pydantic.ValidationError):
        AgentBaseMemoryBlock(db, **kwargs)


def test_missing_user_or_db(db):
    with pytest.raises(pydantic.ValidationError):
        AgentBaseMemoryBlock(db)
    with pytest.raises(TypeError):
        AgentBaseMemoryBlock(user_id="alice")


@pytest.mark.parametrize("bad", [["hello"], [ChatMessage(role="user", content="I live in Porto"),
                                              {"role": "user"}], "I live in Porto", None])
async def test_bad_messages_write_nothing(db, bad):
    block = AgentBaseMemoryBlock(db, user_id="alice")
    with pytest.raises(ValidationError):
        await block.aput(bad, from_short_term_memory=True, session_id="s")
    with pytest.raises(ValidationError):
        await block.aget(bad if isinstance(bad, list) else [bad])
    assert await db.list_sessions() == [] and await db.count(user_id="alice") == 0


async def test_another_owners_session_is_refused(db):
    alice = AgentBaseMemoryBlock(db, user_id="alice")
    await alice.aput([ChatMessage(role="user", content="I live in Porto")], session_id="shared")
    bob = AgentBaseMemoryBlock(db, user_id="bob")
    with pytest.raises(ValidationError, match="another user_id"):
        await bob.aput([ChatMessage(role="user", content="I live in Faro")], session_id="shared")
    assert [m.content for m in await db.get_messages(bob.session_for("shared"))] == ["I live in Porto"]
    assert await db.count(user_id="bob") == 0


async def test_direct_put_without_session_and_long_session_ids(db):
    block = AgentBaseMemoryBlock(db, user_id="alice")
    await block.aput([ChatMessage(role="user", content="My sister Ana lives in Madrid."),
                      ChatMessage(role="assistant", content="")])  # no text: skipped
    rows = await db.get_messages(block.session_for(None))
    assert block.session_for(None) == "llama-memory-alice" and [m.content for m in rows] == [
        "My sister Ana lives in Madrid."]
    long_id = "s" * 300
    sid = block.session_for(long_id)
    assert len(sid) <= 256 and sid.startswith("llama-memory-") and sid == block.session_for(long_id)
    await block.aput([ChatMessage(role="user", content="I play the cello.")], session_id=long_id)
    assert [m.content for m in await db.get_messages(sid)] == ["I play the cello."]
    assert "Madrid" in await block.aget([ChatMessage(role="user", content="Where does my sister live?")])


async def test_results_already_in_the_prompt_are_left_out(db):
    """A chat-store session the user committed is memory too; its messages still queued are not repeated."""
    store = AgentBaseDBChatStore(db, user_id="alice")
    await store.add_messages("chat", msgs(FIRST_SESSION[:2]))
    await db.commit_session("chat")
    block = AgentBaseMemoryBlock(db, user_id="alice", top_k=10, token_budget=None)
    question = ChatMessage(role="user", content="When did I move to Lisbon?")
    alone = (await block.aget([question])).split("\n\n")
    assert FIRST_SESSION[0][1] in alone  # found when it is not in the prompt
    with_history = (await block.aget(await store.get_messages("chat") + [question])).split("\n\n")
    assert FIRST_SESSION[0][1] not in with_history and FIRST_SESSION[1][1] not in with_history
    assert "User moved to Lisbon last month" in with_history


async def test_a_pickled_block_reopens_its_file(db, db_path):
    block = AgentBaseMemoryBlock(db, user_id="alice", top_k=3)
    await run_first_session(db, block)
    restored = pickle.loads(pickle.dumps(block))  # carries db_path, not the engine
    assert restored.db_path == str(database_for(db_path)) and (restored.user_id, restored.top_k) == ("alice", 3)
    try:
        assert "Pixel" in await restored.aget([ChatMessage(role="user", content="What is my dog's name?")])
    finally:
        restored.close()
    assert "Pixel" in await block.aget([ChatMessage(role="user", content="What is my dog's name?")])
