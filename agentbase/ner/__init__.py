"""Named-entity extraction: a small :class:`EntityExtractor` protocol, spaCy and regex implementations, tags.

Typical use::

    from agentbase.ner import create_extractor, entity_tags

    extractor = create_extractor("auto")          # spaCy when the [ner] extra is installed, else regex
    tags = entity_tags(extractor.extract("Alice works at Acme in Paris"))
    # ['ner_Alice', 'ner_Acme', 'ner_Paris']
"""

from __future__ import annotations

from typing import Literal

from ..errors import ConfigError
from .base import NON_TAG_LABELS, TAG_PREFIX, Entity, EntityExtractor, entity_tags, tag_for
from .regex_extractor import RegexExtractor
from .spacy_extractor import DEFAULT_SPACY_MODEL, SpacyExtractor

__all__ = [
    "DEFAULT_SPACY_MODEL",
    "NON_TAG_LABELS",
    "TAG_PREFIX",
    "Entity",
    "EntityExtractor",
    "RegexExtractor",
    "SpacyExtractor",
    "create_extractor",
    "entity_tags",
    "tag_for",
]


def create_extractor(
    kind: Literal["auto", "spacy", "regex"] = "auto", *, model: str = DEFAULT_SPACY_MODEL
) -> RegexExtractor | SpacyExtractor:
    """Build an entity extractor.

    Args:
        kind: ``"spacy"`` (requires the ``[ner]`` extra), ``"regex"`` (always available) or ``"auto"`` (spaCy
            when spaCy and ``model`` are importable, else regex). The choice is visible as ``extractor.name``.
        model: spaCy model package for ``"spacy"``/``"auto"``.

    Returns:
        A :class:`SpacyExtractor` or :class:`RegexExtractor`; the spaCy model itself loads on first use.

    Raises:
        ConfigError: ``kind`` is not one of the three values.
        MissingDependencyError: ``kind="spacy"`` but spaCy or the model is not installed.
    """
    if kind == "regex":
        return RegexExtractor()
    if kind == "spacy":
        return SpacyExtractor(model)
    if kind == "auto":
        return SpacyExtractor(model) if SpacyExtractor.available(model) else RegexExtractor()
    raise ConfigError(f"unknown NER extractor kind {kind!r}; use 'auto', 'spacy' or 'regex'")
