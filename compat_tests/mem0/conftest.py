"""Fixtures for the mem0 compatibility suite: the adapter on a real SQLite file, the real mem0 offline.

mem0 is configured exactly as FRAMEWORK_CONTRACTS.md section 1.6 verified: telemetry off, ``MEM0_DIR`` in a
temp folder (importing mem0 writes there), LangChain fake LLM and embedder, embedded Qdrant in a temp folder.
These variables must be set before mem0 is imported, hence at the top of this file.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from pathlib import Path

os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-compat-"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402

from agentbase.testing import database_for  # noqa: E402
from agentbase import AgentBase, load_settings  # noqa: E402
from agentbase.adapters import AsyncMem0Adapter, Mem0Adapter  # noqa: E402
from agentbase.embeddings import HashEmbedder  # noqa: E402


def _no_spacy_download() -> None:
    """mem0 downloads en_core_web_sm when spaCy lacks it; mark the model as unavailable instead."""
    try:
        from mem0.utils import spacy_models
    except ImportError:
        return
    spacy_models._load_failed_full = True
    spacy_models._load_failed_lemma = True


_no_spacy_download()


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting how often each text is embedded."""

    def __init__(self, dims: int = 64):
        super().__init__(dims)
        self.calls: Counter[str] = Counter()

    def embed_documents(self, texts):
        self.calls.update(texts)
        return super().embed_documents(texts)


def make_db(path: Path, embedder=None) -> AgentBase:
    """An AgentBase on ``path`` with the hash embedder and the regex NER (fast, deterministic, offline)."""
    return AgentBase(database_for(path), settings=load_settings(ner="regex"), embedder=embedder or HashEmbedder(dims=64))


@pytest.fixture
def db(tmp_path):
    ab = make_db(tmp_path / "mem0-compat.db")
    yield ab
    ab.sync.close()


@pytest.fixture
def memory(db):
    """The drop-in, used where mem0's tests use ``Memory``."""
    return Mem0Adapter(db)


@pytest.fixture
def async_memory(db):
    """The drop-in, used where mem0's tests use ``AsyncMemory``."""
    return AsyncMem0Adapter(db)


def mem0_config(folder: Path, llm_responses: list[str] | None = None, dims: int = 8) -> dict:
    """A ``MemoryConfig`` dict that runs fully offline (contract section 1.6)."""
    from langchain_core.embeddings.fake import DeterministicFakeEmbedding
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    responses = llm_responses or ['{"memory": [{"text": "Likes tennis", "attributed_to": "user"}]}']
    return {
        "llm": {"provider": "langchain", "config": {"model": FakeListChatModel(responses=responses)}},
        "embedder": {"provider": "langchain", "config": {"model": DeterministicFakeEmbedding(size=dims)}},
        "vector_store": {"provider": "qdrant", "config": {
            "collection_name": "compat", "path": str(folder / "qdrant"), "embedding_model_dims": dims}},
        "history_db_path": str(folder / "history.db"),
    }


@pytest.fixture
def real_mem0(tmp_path):
    """A real ``mem0.Memory`` built by ``from_config`` with the offline config."""
    from mem0 import Memory

    m = Memory.from_config(mem0_config(tmp_path / "real"))
    yield m
    m.close()
    m.vector_store.client.close()


@pytest.fixture
def adapter_from_same_config(tmp_path):
    """``Mem0Adapter.from_config`` given the same kind of mem0 config (its LangChain embedder is reused)."""
    cfg = mem0_config(tmp_path / "adapter")
    cfg["agentbase"] = {"settings": {"ner": "regex"}}
    m = Mem0Adapter.from_config(cfg)
    yield m
    m.close()
