"""Drop-in adapters: each lives in one module, imports its framework lazily, and uses only the public API.

Names resolve on first access, so ``from agentbase.adapters import MinimalAdapter`` never imports LangChain; a
missing framework raises :class:`~agentbase.errors.MissingDependencyError` naming the pip extra.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Mem0Adapter": "mem0",
    "AsyncMem0Adapter": "mem0",
    "AgentBaseChatMessageHistory": "langchain",
    "LangChainMemoryAdapter": "langchain",
    "AgentBaseChatStore": "llama_index",
    "AgentBaseDBChatStore": "llama_index",
    "AgentBaseMemoryBlock": "llama_index_memory",
    "OpenAIAssistantAdapter": "openai_assistants",
    "AsyncOpenAIAssistantAdapter": "openai_assistants",
    "MinimalAdapter": "minimal",
    "AgentBaseSession": "openai_agents",
    "AgentBaseStore": "langgraph_store",
    "AgentBaseSaver": "langgraph_checkpoint",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agentbase.adapters' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
