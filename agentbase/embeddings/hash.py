"""A deterministic, dependency-free feature-hashing embedder for tests."""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

import numpy as np

from ..errors import ConfigError
from .base import normalize_rows

__all__ = ["HashEmbedder"]

_TOKEN = re.compile(r"\w+")
_EMPTY_TOKEN = "\x00<empty>"


class HashEmbedder:
    """Feature hashing of lower-cased word tokens into ``dims`` signed buckets, L2-normalised.

    Deterministic across processes and platforms (BLAKE2b, not Python's salted ``hash``). It has no semantics:
    texts are similar only when they share words, which makes retrieval tests predictable. It exists for tests
    and for explicitly configured ``provider="hash"``; never choose it silently outside tests, since search
    results would look plausible while meaning nothing. Queries and documents are embedded the same way.

    Attributes:
        model_id: ``"hash/<dims>"``.
        dims: vector dimension.
    """

    def __init__(self, dims: int = 64):
        """Create the embedder.

        Args:
            dims: vector dimension (>= 2).

        Raises:
            ConfigError: ``dims`` < 2.
        """
        if dims < 2:
            raise ConfigError(f"dims must be >= 2, got {dims}")
        self.dims = int(dims)
        self.model_id = f"hash/{self.dims}"

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Embed texts by hashing their word tokens.

        Args:
            texts: ``n`` strings.

        Returns:
            float32 array of shape ``(n, dims)``, L2-normalised rows (a text without word characters gets a
            fixed unit vector).
        """
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            tokens = _TOKEN.findall(text.lower()) or [_EMPTY_TOKEN]
            buckets, signs = zip(*(_slot(token, self.dims) for token in tokens))
            out[row] = np.bincount(buckets, weights=signs, minlength=self.dims)
        return normalize_rows(_fix_zero_rows(out))

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query (same as a one-element :meth:`embed_documents`).

        Args:
            text: the query.

        Returns:
            float32 array of shape ``(dims,)``, L2-normalised.
        """
        return self.embed_documents([text])[0]

    def __repr__(self) -> str:
        return f"HashEmbedder(dims={self.dims})"


@lru_cache(maxsize=65536)
def _slot(token: str, dims: int) -> tuple[int, float]:
    raw = hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    digest = int.from_bytes(raw, "little")
    return digest % dims, (1.0 if (digest >> 63) & 1 else -1.0)


def _fix_zero_rows(out: np.ndarray) -> np.ndarray:
    # Signed counts can cancel out exactly ("a b" with opposite signs in one bucket); keep every row
    # unit-length.
    zero = ~out.any(axis=1)
    if zero.any():
        bucket, sign = _slot(_EMPTY_TOKEN, out.shape[1])
        out[zero, bucket] = sign
    return out
