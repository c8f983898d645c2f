"""An embedder answering NaN or infinity gets the same answer on both engines (a SQLite file, a PostgreSQL
database): the embedding job fails at once with an EmbeddingError on the job row (not left running, nothing
stored), flush() returns, other entries of the batch are embedded, and a non-finite query vector makes find()
raise EmbeddingError."""

from __future__ import annotations

import numpy as np
import pytest

from agentbase import AgentBase, load_settings
from agentbase.embeddings import HashEmbedder
from agentbase.errors import EmbeddingError


class Broken(HashEmbedder):
    """The hash embedder, except that a text containing ``poison`` (or any query while ``bad_query`` is set) gets
    ``value`` in its first component."""

    def __init__(self, value: float):
        super().__init__(dims=16)
        self.value = value
        self.bad_query = False

    def embed_documents(self, texts):
        out = np.array(super().embed_documents(texts), dtype=np.float32)
        for i, t in enumerate(texts):
            if "poison" in t:
                out[i, 0] = self.value
        return out

    def embed_query(self, text):
        out = np.array(super().embed_query(text), dtype=np.float32)
        if self.bad_query:
            out[0] = self.value
        return out


@pytest.fixture(params=[float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
async def ab(engine, tmp_path, request):
    target = tmp_path / "nf.db" if engine == "sqlite" else request.getfixturevalue("pg_url")
    db = AgentBase(target, settings=load_settings(ner="regex"), embedder=Broken(request.param))
    await db.initialize()
    yield db
    await db.close()


async def test_non_finite_document_vector_fails_its_job_only(ab):
    good = await ab.add_memory("Dana moved to Lisbon")
    bad = await ab.add_memory("poison apple in the orchard")
    assert await ab.flush(timeout=30) == 0
    db = await ab._open()
    rows = await db.fetchall("SELECT target, status, attempts, last_error FROM jobs WHERE kind = 'embed' "
                             "ORDER BY target")
    by_target = {r[0]: r[1:] for r in rows}
    assert by_target[good.id] == ("done", 0, None)
    status, attempts, error = by_target[bad.id]
    assert status == "failed" and attempts == 1
    assert error.startswith("EmbeddingError:") and "non-finite" in error
    assert (await ab.stats())["embeddings"] == 1
    hits = await ab.find("Lisbon", mode="vector")
    assert [h.entry.id for h in hits] == [good.id]
    hits = await ab.find("poison orchard", mode="fts")  # still found by its words
    assert [h.entry.id for h in hits] == [bad.id]


async def test_non_finite_query_vector_is_an_embedding_error(ab):
    await ab.add_memory("Dana moved to Lisbon")
    await ab.flush(timeout=30)
    ab.embedder.bad_query = True
    for mode in ("hybrid", "vector"):
        with pytest.raises(EmbeddingError, match="non-finite"):
            await ab.find("Lisbon", mode=mode)
    assert [h.entry.l2_full for h in await ab.find("Lisbon", mode="fts")] == ["Dana moved to Lisbon"]
