"""Sentence-transformers models exported to ONNX, run with onnxruntime + tokenizers (``agentbase[onnx]``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, EmbeddingError, MissingDependencyError
from .base import normalize_rows

__all__ = ["OnnxEmbedder"]

_DEFAULT_MAX_LENGTH = 256


class OnnxEmbedder:
    """A sentence-transformers model folder exported to ONNX (e.g. all-MiniLM-L6-v2), run on the CPU.

    The folder holds ``model.onnx`` (or ``onnx/model.onnx``) and ``tokenizer.json``; optional
    ``1_Pooling/config.json`` selects mean (default), CLS or max pooling, ``sentence_bert_config.json`` gives
    ``max_seq_length`` and ``config.json`` gives ``max_position_embeddings`` / ``hidden_size``. Texts are
    truncated to ``max_length`` word pieces (the model only sees the beginning of a long text: use
    :func:`~agentbase.embeddings.embed_long_documents` for those). No query/document prefixes are added;
    models that need them are symmetric-only here.

    Attributes:
        model_id: ``"onnx/<folder name>"``.
        dims: output dimension (from the model's output shape or the pooling/model config).
        max_length: maximum tokens per text.
    """

    def __init__(self, folder: str | Path, batch_size: int = 32, max_length: int | None = None,
                 threads: int = 2):
        """Load the tokenizer and the ONNX session.

        Args:
            folder: sentence-transformers ONNX folder.
            batch_size: texts per ``session.run`` call (>= 1).
            max_length: truncation length in tokens; default ``max_seq_length`` from
                ``sentence_bert_config.json``, else 256, capped at ``max_position_embeddings``.
            threads: onnxruntime intra-op threads (default 2, so the embedder does not starve the process).

        Raises:
            MissingDependencyError: onnxruntime or tokenizers is missing (``pip install 'agentbase[onnx]'``).
            ConfigError: the folder lacks ``model.onnx`` / ``tokenizer.json``, a config file is malformed, or
                the pooling mode is unsupported.
            EmbeddingError: onnxruntime or tokenizers failed to load the files.
        """
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise MissingDependencyError("onnxruntime", "onnx") from exc
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise MissingDependencyError("tokenizers", "onnx") from exc
        if batch_size < 1 or threads < 1:
            raise ConfigError(f"batch_size and threads must be >= 1, got {batch_size} and {threads}")
        root = Path(folder).expanduser()
        candidates = (root / "model.onnx", root / "onnx" / "model.onnx")
        model_file = next((p for p in candidates if p.is_file()), None)
        tok_file = root / "tokenizer.json"
        if model_file is None or not tok_file.is_file():
            raise ConfigError(f"{root} is not an ONNX sentence-transformers folder (needs model.onnx and "
                              f"tokenizer.json)")
        config = _read_json(root / "config.json")
        pooling = _read_json(root / "1_Pooling" / "config.json")
        st_config = _read_json(root / "sentence_bert_config.json")

        if pooling.get("pooling_mode_cls_token"):
            self.pooling = "cls"
        elif pooling.get("pooling_mode_max_tokens"):
            self.pooling = "max"
        elif not pooling or pooling.get("pooling_mode_mean_tokens"):
            self.pooling = "mean"
        else:
            raise ConfigError(f"unsupported pooling in {root / '1_Pooling' / 'config.json'}: {pooling}")
        limit = int(max_length or st_config.get("max_seq_length") or _DEFAULT_MAX_LENGTH)
        self.max_length = min(limit, int(config.get("max_position_embeddings") or limit))
        self.batch_size = batch_size
        self.model_id = f"onnx/{root.resolve().name}"

        try:
            self._tokenizer = Tokenizer.from_file(str(tok_file))
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            self._session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime/tokenizers raise their own exception types
            raise EmbeddingError(f"failed to load {root}: {exc}") from exc
        self._tokenizer.enable_truncation(max_length=self.max_length)
        pad_id = config.get("pad_token_id")
        pad_token = self._tokenizer.id_to_token(pad_id) if isinstance(pad_id, int) else None
        if pad_token is None:
            known = [t for t in ("[PAD]", "<pad>") if self._tokenizer.token_to_id(t) is not None]
            pad_token = known[0] if known else "[PAD]"
            pad_id = self._tokenizer.token_to_id(pad_token) or 0
        # pad to the longest text of each batch (tokenizer.json files often ship a fixed padding length)
        self._tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token)
        self._input_names = {i.name for i in self._session.get_inputs()}
        output = self._session.get_outputs()[0]
        self._output_name = output.name
        last = output.shape[-1] if output.shape else None
        if not isinstance(last, int):
            last = pooling.get("word_embedding_dimension") or config.get("hidden_size")
        self.dims: int = int(last) if last else int(self._encode(["dimension probe"]).shape[1])

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Embed documents in batches of ``batch_size`` (sorted by length internally to minimise padding).

        Args:
            texts: ``n`` strings.

        Returns:
            float32 array of shape ``(n, dims)``, L2-normalised rows, in input order.

        Raises:
            EmbeddingError: tokenization or inference failed.
        """
        out = np.empty((len(texts), self.dims), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            out[idx] = self._encode([texts[i] for i in idx])
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query (same encoder as documents).

        Args:
            text: the query.

        Returns:
            float32 array of shape ``(dims,)``, L2-normalised.

        Raises:
            EmbeddingError: tokenization or inference failed.
        """
        return self._encode([text])[0]

    def _encode(self, texts: list[str]) -> np.ndarray:
        try:
            encodings = self._tokenizer.encode_batch(texts)
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feed["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
            feed = {k: v for k, v in feed.items() if k in self._input_names}
            hidden = np.asarray(self._session.run([self._output_name], feed)[0], dtype=np.float32)
        except Exception as exc:
            raise EmbeddingError(f"{self.model_id} failed on a batch of {len(texts)}: {exc}") from exc
        if hidden.ndim == 2:  # the export already pools (e.g. a "sentence_embedding" output)
            return normalize_rows(hidden)
        if self.pooling == "cls":
            pooled = hidden[:, 0]
        elif self.pooling == "max":
            pooled = np.where(mask[:, :, None] > 0, hidden, -np.inf).max(axis=1)
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalize_rows(pooled)

    def __repr__(self) -> str:
        return f"OnnxEmbedder(model_id={self.model_id!r}, dims={self.dims}, max_length={self.max_length})"


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    return data if isinstance(data, dict) else {}
