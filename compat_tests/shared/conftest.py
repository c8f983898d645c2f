"""One SQLite file, one AgentBase, all five adapters on it (hash embedder + regex NER: fast and offline)."""

from __future__ import annotations

import os
import tempfile
import warnings

os.environ["MEM0_TELEMETRY"] = "False"  # before anything imports mem0 (it writes to $MEM0_DIR on import)
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-shared-"))

import pytest  # noqa: E402

from agentbase.testing import database_for
from agentbase import AgentBase, load_settings  # noqa: E402
from agentbase.embeddings import HashEmbedder  # noqa: E402

warnings.filterwarnings("ignore", category=DeprecationWarning)


@pytest.fixture
def db(tmp_path):
    ab = AgentBase(database_for(tmp_path / "shared.db"), settings=load_settings(ner="regex"),
                   embedder=HashEmbedder(dims=64))
    yield ab
    ab.sync.close()


@pytest.fixture
def adapters(db):
    """The five adapters, each handed the same AgentBase object."""
    from agentbase.adapters import (AgentBaseChatStore, Mem0Adapter, MinimalAdapter, OpenAIAssistantAdapter)

    return {"mem0": Mem0Adapter(db), "minimal": MinimalAdapter(db),
            "openai": OpenAIAssistantAdapter(db, user_id="alice"), "llama_index": AgentBaseChatStore(db)}
