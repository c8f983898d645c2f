"""Zero-LLM ingest rules: L0/L1 tiers, fact extraction, session summaries and dedup (pure functions).

The embedding job worker lives in :mod:`agentbase.ingest.worker`; it is not imported here.
"""

from __future__ import annotations

from .dedup import (
    classify_update,
    content_hash,
    harden_confidence,
    is_near_duplicate,
    jaccard,
    normalize_for_hash,
    shingles,
)
from .facts import FACT_CATEGORIES, Fact, extract_facts
from .summary import session_keywords, summarize_session
from .tiers import L0_MAX_CHARS, L1_MAX_CHARS, l0_abstract, l1_overview

__all__ = [
    "FACT_CATEGORIES",
    "L0_MAX_CHARS",
    "L1_MAX_CHARS",
    "Fact",
    "classify_update",
    "content_hash",
    "extract_facts",
    "harden_confidence",
    "is_near_duplicate",
    "jaccard",
    "l0_abstract",
    "l1_overview",
    "normalize_for_hash",
    "session_keywords",
    "shingles",
    "summarize_session",
]
