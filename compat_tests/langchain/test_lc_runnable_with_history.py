"""``RunnableWithMessageHistory`` (langchain-core 1.8.3) over AgentBase histories, sync and async.

Covers the behaviours of langchain-core's ``tests/unit_tests/runnables/test_history.py`` (message, dict and
str inputs, history key, message/list/dict outputs, chat-model outputs, custom history factory config,
factories without a session id) plus a prompt | FakeListChatModel chain. ``get_session_history`` builds a
new history object on each call, so everything a turn sees comes from the database file.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_core.runnables.utils import ConfigurableFieldSpec

from agentbase.adapters import AgentBaseChatMessageHistory

pytestmark = pytest.mark.filterwarnings("ignore::langchain_core._api.deprecation.LangChainDeprecationWarning")

MODES = ["sync", "async"]


def invoke(runnable: Any, value: Any, config: Any, mode: str) -> Any:
    if mode == "sync":
        return runnable.invoke(value, config)
    return asyncio.run(runnable.ainvoke(value, config))


def stream(runnable: Any, value: Any, config: Any, mode: str) -> list:
    if mode == "sync":
        return list(runnable.stream(value, config))

    async def collect() -> list:
        return [chunk async for chunk in runnable.astream(value, config)]

    return asyncio.run(collect())


def said(messages: list[BaseMessage], extra: list[str] = ()) -> str:
    """The echo the fake runnables answer with: every human text so far."""
    humans = [str(m.content) for m in messages if isinstance(m, HumanMessage)]
    return "you said: " + "\n".join(humans + list(extra))


def cfg(session_id: str) -> dict:
    return {"configurable": {"session_id": session_id}}


@pytest.mark.parametrize("mode", MODES)
def test_list_of_messages_in_and_text_out(history_for, mode):
    chain = RunnableWithMessageHistory(RunnableLambda(said), history_for)
    assert invoke(chain, [HumanMessage("hello")], cfg("1"), mode) == "you said: hello"
    assert invoke(chain, [HumanMessage("good bye")], cfg("1"), mode) == "you said: hello\ngood bye"
    streamed = stream(chain, [HumanMessage("hi again")], cfg("1"), mode)
    assert streamed == ["you said: hello\ngood bye\nhi again"]
    assert history_for("1").messages == [
        HumanMessage("hello"), AIMessage("you said: hello"),
        HumanMessage("good bye"), AIMessage("you said: hello\ngood bye"),
        HumanMessage("hi again"), AIMessage("you said: hello\ngood bye\nhi again")]


@pytest.mark.parametrize("mode", MODES)
def test_dict_input_with_a_messages_key(history_for, mode):
    chain = RunnableWithMessageHistory(RunnableLambda(lambda d: said(d["messages"])), history_for,
                                       input_messages_key="messages")
    assert invoke(chain, {"messages": [HumanMessage("hello")]}, cfg("2"), mode) == "you said: hello"
    second = invoke(chain, {"messages": [HumanMessage("good bye")]}, cfg("2"), mode)
    assert second == "you said: hello\ngood bye"


@pytest.mark.parametrize("mode", MODES)
def test_text_input_with_a_separate_history_key(history_for, mode):
    echo = RunnableLambda(lambda d: said(d["history"], [d["input"]]))
    chain = RunnableWithMessageHistory(echo, history_for, input_messages_key="input",
                                       history_messages_key="history")
    assert invoke(chain, {"input": "hello"}, cfg("3"), mode) == "you said: hello"
    assert invoke(chain, {"input": "good bye"}, cfg("3"), mode) == "you said: hello\ngood bye"
    assert [m.type for m in history_for("3").messages] == ["human", "ai", "human", "ai"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", ["message", "list", "dict"])
def test_message_shaped_outputs(history_for, mode, shape):
    def answer(d: dict) -> Any:
        msg = AIMessage(said(d["history"], [d["input"]]))
        return {"message": msg, "list": [msg], "dict": {"output": [msg]}}[shape]

    chain = RunnableWithMessageHistory(RunnableLambda(answer), history_for, input_messages_key="input",
                                       history_messages_key="history",
                                       output_messages_key="output" if shape == "dict" else None)
    wrap = {"message": lambda m: m, "list": lambda m: [m], "dict": lambda m: {"output": [m]}}[shape]
    assert invoke(chain, {"input": "hello"}, cfg("4"), mode) == wrap(AIMessage("you said: hello"))
    second = invoke(chain, {"input": "good bye"}, cfg("4"), mode)
    assert second == wrap(AIMessage("you said: hello\ngood bye"))
    assert history_for("4").messages[-1] == AIMessage("you said: hello\ngood bye")


class CountingChatModel(BaseChatModel):
    """Answers with the number of messages it was given."""

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(str(len(messages))))])

    @property
    def _llm_type(self) -> str:
        return "counting-chat-model"


@pytest.mark.parametrize("mode", MODES)
def test_chat_model_sees_the_whole_history(history_for, mode):
    chain = RunnableWithMessageHistory(CountingChatModel(), history_for)
    assert invoke(chain, [HumanMessage("hi")], cfg("5"), mode).content == "1"
    assert invoke(chain, [HumanMessage("hi")], cfg("5"), mode).content == "3"
    assert invoke(chain, "plain text becomes a human message", cfg("5"), mode).content == "5"


@pytest.mark.parametrize("mode", MODES)
def test_custom_history_factory_config(db, mode):
    def get_history(user_id: str, conversation_id: str) -> AgentBaseChatMessageHistory:
        return AgentBaseChatMessageHistory(db, f"{user_id}/{conversation_id}", user_id=user_id)

    def reply(d: dict) -> list:
        return [AIMessage(said(d["messages"]))]

    chain = RunnableWithMessageHistory(
        RunnableLambda(reply), get_session_history=get_history, input_messages_key="messages",
        history_messages_key="history",
        history_factory_config=[
            ConfigurableFieldSpec(id="user_id", annotation=str, name="User ID", default="", is_shared=True),
            ConfigurableFieldSpec(id="conversation_id", annotation=str, name="Conversation ID", default=None,
                                  is_shared=True)])

    def turn(text: str, user: str, conv: str) -> Any:
        return invoke(chain, {"messages": [HumanMessage(text)]},
                      {"configurable": {"user_id": user, "conversation_id": conv}}, mode)

    assert turn("hello", "user1", "1") == [AIMessage("you said: hello")]
    assert turn("goodbye", "user1", "1") == [AIMessage("you said: goodbye")]  # history is under "history"
    assert turn("meow", "user2", "1") == [AIMessage("you said: meow")]
    assert get_history("user1", "1").messages == [HumanMessage("hello"), AIMessage("you said: hello"),
                                                  HumanMessage("goodbye"), AIMessage("you said: goodbye")]
    assert get_history("user2", "1").messages == [HumanMessage("meow"), AIMessage("you said: meow")]
    assert [s.id for s in db.sync.list_sessions(user_id="user1")] == ["user1/1"]


@pytest.mark.parametrize("mode", MODES)
def test_factory_without_session_id(db, mode):
    history = AgentBaseChatMessageHistory(db, "fixed")
    chain = RunnableWithMessageHistory(RunnableLambda(lambda ms: [AIMessage(said(ms))]), lambda: history)
    invoke(chain, "hello", {}, mode)
    invoke(chain, "hello again", {}, mode)
    assert len(history.messages) == 4


def test_output_that_is_not_messages_stores_nothing(history_for):
    chain = RunnableWithMessageHistory(RunnableLambda(lambda _: 123), history_for)
    assert chain.invoke("hi", cfg("bad")) == 123  # the listener error is logged by LangChain, not raised
    assert history_for("bad").messages == []


@pytest.mark.parametrize("mode", MODES)
def test_prompt_and_fake_chat_model_chain(history_for, mode):
    prompt = ChatPromptTemplate.from_messages([("system", "You are helpful."), MessagesPlaceholder("history"),
                                               ("human", "{question}")])
    seen: list[int] = []
    model = FakeListChatModel(responses=["Hi Alice!", "You are Alice."])
    count = RunnableLambda(lambda p: seen.append(len(p.messages)) or p)
    chain = RunnableWithMessageHistory(prompt | count | model, history_for, input_messages_key="question",
                                       history_messages_key="history")
    assert invoke(chain, {"question": "I am Alice"}, cfg("chat"), mode).content == "Hi Alice!"
    assert invoke(chain, {"question": "Who am I?"}, cfg("chat"), mode).content == "You are Alice."
    assert seen == [2, 4]  # system + question, then system + 2 history messages + question
    assert [(m.type, m.content) for m in history_for("chat").messages] == [
        ("human", "I am Alice"), ("ai", "Hi Alice!"), ("human", "Who am I?"), ("ai", "You are Alice.")]
