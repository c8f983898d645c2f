"""Metadata keys the adapters reserve on the messages and sessions they share through one database.

Each framework adapter keeps what it needs to rebuild its own objects under its own key (the exact LangChain
message, the LlamaIndex message and its archive status, the OpenAI fields that are not metadata). An adapter that
shows or replaces metadata (the OpenAI threads and conversations) hides the other adapters' keys and keeps them
when it writes, so a thread update cannot drop what LangChain or LlamaIndex stored on the same rows.
"""

from __future__ import annotations

LANGCHAIN_MESSAGE = "langchain"  # message: message_to_dict() of the LangChain message
LLAMA_INDEX_MESSAGE = "llama_index"  # message: the dumped ChatMessage
LLAMA_INDEX_STATUS = "llama_index_status"  # message: AsyncDBChatStore status ("archived")
LLAMA_INDEX_SESSION = "llama_index_chat_store"  # session: a key of the LlamaIndex chat stores
OPENAI = "_openai"  # message / session: OpenAI fields that are not user metadata
OPENAI_AGENTS_ITEM = "openai_agents"  # message: json.dumps() of the OpenAI Agents SDK session item

FRAMEWORK_KEYS = frozenset({LANGCHAIN_MESSAGE, LLAMA_INDEX_MESSAGE, LLAMA_INDEX_STATUS, LLAMA_INDEX_SESSION})
FRAMEWORK_KEYS |= {OPENAI_AGENTS_ITEM}
