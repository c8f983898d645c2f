"""LangChain on AgentBase: a persistent chat history, a classic ConversationChain, and long-term recall.

Runs offline with LangChain's fake models (install with ``pip install 'agentbase[langchain]'``):

    python examples/langchain_example.py
"""

import tempfile
import warnings
from pathlib import Path

from langchain_classic.chains import ConversationChain
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder, PromptTemplate
from langchain_core.runnables.history import RunnableWithMessageHistory

from agentbase import AgentBase
from agentbase.adapters import AgentBaseChatMessageHistory, LangChainMemoryAdapter

# RunnableWithMessageHistory and ConversationChain are deprecated upstream but still widely used.
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", message=".*deprecated.*")


def main() -> None:
    path = Path(tempfile.mkdtemp()) / "langchain_agent.db"
    db = AgentBase(path)

    # 1. RunnableWithMessageHistory: every session id is an AgentBase session in the file.
    prompt = ChatPromptTemplate.from_messages([("system", "You are a helpful assistant."),
                                               MessagesPlaceholder("history"), ("human", "{question}")])
    model = FakeListChatModel(responses=["Nice to meet you, Alice!", "You told me you live in Lisbon."])
    chat = RunnableWithMessageHistory(
        prompt | model, lambda session_id: AgentBaseChatMessageHistory(db, session_id, user_id="alice"),
        input_messages_key="question", history_messages_key="history")
    config = {"configurable": {"session_id": "alice-thread-1"}}
    for question in ("Hi, I'm Alice and I live in Lisbon.", "Where do I live?"):
        answer = chat.invoke({"question": question}, config)
        print(f"user: {question}\n  bot: {answer.content}")
    print("\nstored history:\n" + str(AgentBaseChatMessageHistory(db, "alice-thread-1")))

    # 2. A classic ConversationChain whose memory is AgentBase (history survives restarts).
    memory = LangChainMemoryAdapter(db, owner_id="alice", session_id="alice-thread-2")
    llm = FakeListLLM(responses=["Noted: your favorite color is green."])
    chain = ConversationChain(llm=llm, memory=memory)
    print("\nConversationChain:", chain.invoke({"input": "My favorite color is green."})["response"])

    # 3. Commit the conversations into long-term memories (zero LLM calls) and recall them in a new session.
    print("commit:", memory.commit())
    print("commit:", db.sync.commit_session("alice-thread-1"))
    db.sync.flush()
    recall = LangChainMemoryAdapter(db, owner_id="alice", session_id="alice-thread-3", k_long_term=3)
    recall_prompt = PromptTemplate.from_template(
        "What you know about the user:\n{long_term}\n\n{history}\nHuman: {input}\nAI:")
    chain = ConversationChain(llm=FakeListLLM(responses=["Green, and you live in Lisbon."]), memory=recall,
                              prompt=recall_prompt)
    question = "What is my favorite color?"
    long_term = recall.load_memory_variables({"input": question})["long_term"]
    print(f"\nlong-term memories for {question!r}:\n{long_term}")
    print("answer:", chain.invoke({"input": question})["response"])
    db.sync.close()

    # 4. Reopen the file: the conversation is still there.
    reopened = AgentBase(path)
    history = AgentBaseChatMessageHistory(reopened, "alice-thread-1")
    print("\nafter reopening, thread 1 has", len(history.messages), "messages")
    reopened.sync.close()


if __name__ == "__main__":
    main()
