"""Benchmarks with an LLM (docs/llm.md, "Benchmarks with an LLM").

Two things, both driven by ``--llm-config FILE`` on ``agentbase bench longmemeval|locomo``:

* **Retrieval with the LLM uses on** (without ``--qa``): the benchmark runs twice, once zero-LLM and once with the
  file's ``llm`` section (its switches ``summaries``, ``retrieval_keys``, ``facts``, ``decompose``, ``rerank`` say
  which uses are on), and reports both rows side by side with the LLM tokens per ingested message and per query,
  taken from the database's own token accounting (``stats()["llm"]``: the server's ``usage`` counts).
* **End-to-end QA** (``--qa``): each question is answered by the reader model from AgentBase's context
  (``find(question, top_k)``, each result with its date) and graded by the judge model with a yes/no prompt per
  question type that implements the LongMemEval paper's rubric (Wu et al., "LongMemEval: Benchmarking Chat
  Assistants on Long-Term Interactive Memory", ICLR 2025, section 3 and appendix: GPT-4o judge; the prompt texts
  here are our own): exact-or-equivalent answers for the information-extraction types, temporal reasoning
  tolerant of off-by-one day/week/month counts, knowledge update accepting an answer that also mentions older
  values as long as the current one is given as current, single-session preference graded against the rubric
  (the answer must use the user's personal information, not cover every point), and abstention questions
  (``_abs`` ids, LoCoMo category 5) correct when the answer says the history does not tell. Reported: accuracy
  overall and per type, context tokens per question (``ceil(len(text)/4)`` summed over the context), and the
  reader's and judge's tokens.

The YAML file::

    llm:                      # the AgentBase llm settings section (docs/configuration.md)
      base_url: http://127.0.0.1:8080/v1
      model: smollm2-135m-instruct
      summaries: true         # ingest uses (default: on with a model)
      retrieval_keys: false
      facts: false
      rerank: false           # query uses (default: off)
    qa:                       # optional
      top_k: 10               # results given to the reader
      reader: {max_tokens: 128}              # overrides of the llm section for the reader
      judge: {model: other-model, max_tokens: 8}
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

__all__ = ["JUDGE_RUBRICS", "apply_llm", "judge_messages", "llm_usage", "load_llm_config", "parse_verdict",
           "reader_messages"]

INGEST_PURPOSES = ("summary", "tiers", "retrieval_key", "facts", "mem0_extract", "mem0_update")
QUERY_PURPOSES = ("decompose", "rerank")
QA_TOP_K = 10


def load_llm_config(path: str | Path) -> dict[str, Any]:
    """Read an ``--llm-config`` YAML file.

    Returns:
        ``{"llm": {...}, "qa": {"top_k", "reader", "judge"}}``.

    Raises:
        ConfigError: unreadable file, no ``llm`` mapping, or an ``llm`` section without ``base_url`` and ``model``.
    """
    from agentbase.config import LLMSettings
    from agentbase.errors import ConfigError

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read --llm-config {path}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("llm"), dict):
        raise ConfigError(f"--llm-config {path} needs an 'llm:' mapping (base_url, model, switches)")
    try:
        settings = LLMSettings(**data["llm"])
    except Exception as exc:  # pydantic's ValidationError: name the file and the field
        raise ConfigError(f"--llm-config {path}: invalid llm section: {exc}") from None
    if not settings.configured:
        raise ConfigError(f"--llm-config {path}: the llm section needs base_url and model")
    qa = data.get("qa") or {}
    if not isinstance(qa, dict):
        raise ConfigError(f"--llm-config {path}: 'qa' must be a mapping")
    top_k = qa.get("top_k", QA_TOP_K)
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= 100:
        raise ConfigError(f"--llm-config {path}: qa.top_k must be an integer 1-100")
    return {"llm": dict(data["llm"]), "qa": {"top_k": top_k, "reader": dict(qa.get("reader") or {}),
                                             "judge": dict(qa.get("judge") or {})}}


def apply_llm(settings: Any, llm: dict[str, Any] | None) -> Any:
    """A copy of ``settings`` with the ``llm`` section replaced by ``llm`` (None: the settings unchanged)."""
    if not llm:
        return settings
    from agentbase.config import LLMSettings

    out = settings.model_copy(deep=True)
    out.llm = LLMSettings(**llm)
    return out


def client_for(llm: dict[str, Any], overrides: dict[str, Any]) -> Any:
    """An :class:`agentbase.llm.LLMClient` for ``llm`` with ``overrides`` applied (the reader's or judge's)."""
    from agentbase.config import LLMSettings
    from agentbase.llm import LLMClient

    return LLMClient.from_settings(LLMSettings(**{**llm, **overrides}))


def llm_usage(stats_llm: dict[str, Any] | None, purposes: tuple[str, ...]) -> dict[str, int]:
    """Calls and tokens of ``purposes`` in one ``stats()["llm"]`` value: ``{"calls", "prompt_tokens",
    "completion_tokens", "errors"}`` (zeros when the value is None)."""
    out = {"calls": 0, "errors": 0, "prompt_tokens": 0, "completion_tokens": 0}
    for purpose, row in ((stats_llm or {}).get("by_purpose") or {}).items():
        if purpose in purposes:
            for key in out:
                out[key] += int(row.get(key) or 0)
    return out


def tokens_per(usage: dict[str, int], n: int) -> float | None:
    """(prompt + completion tokens) / n, or None for n = 0."""
    return (usage["prompt_tokens"] + usage["completion_tokens"]) / n if n else None


# ---------------------------------------------------------------------------------------------- QA prompts
READER_SYSTEM = ("You answer questions about a user from memories of earlier chat sessions with them. Use only "
                 "the memories. If they do not contain the answer, say that you do not know. Answer in one or "
                 "two short sentences.")

_BASE = ("I will give you a question, the correct answer, and a response from a model. Say yes if the response "
         "contains the correct answer or is equivalent to it; also yes if it shows the intermediate steps and "
         "arrives at the correct answer. Say no if the response gives only part of the required information, a "
         "different answer, or no answer.")
JUDGE_RUBRICS: dict[str, str] = {
    "default": _BASE,
    "temporal-reasoning": _BASE + (" Do not penalise off-by-one errors in a count of days, weeks or months: "
                                   "an answer of 18 days for a correct answer of 19 days is still correct."),
    "knowledge-update": _BASE + (" If the response also mentions older information, it is still correct as long "
                                 "as the updated answer is the one it gives as current."),
    "single-session-preference": ("I will give you a question, a rubric describing the user's personal "
                                  "preference, and a response from a model. Say yes if the response follows the "
                                  "rubric: it recalls the user's personal information and uses it correctly. It "
                                  "need not cover every point of the rubric. Say no otherwise."),
    "abstention": ("I will give you an unanswerable question, an explanation of why it cannot be answered, and a "
                   "response from a model. Say yes if the response says the question cannot be answered from the "
                   "conversation history (the information was never given, or it says it does not know). Say no "
                   "if it gives an answer as if the information were known."),
}
JUDGE_SUFFIX = "Answer yes or no only."


def reader_messages(question: str, context: list[tuple[str, str]], question_date: str | None) -> list[dict[str, str]]:
    """Chat messages for the reader: the memories (``(date, text)`` pairs, best first) and the question."""
    lines = [f"[{i + 1}] ({date}) {text}" if date else f"[{i + 1}] {text}" for i, (date, text) in enumerate(context)]
    memories = "\n".join(lines) if lines else "(no memories were found)"
    when = f"Current date: {question_date}\n" if question_date else ""
    return [{"role": "system", "content": READER_SYSTEM},
            {"role": "user", "content": f"Memories:\n{memories}\n\n{when}Question: {question}\nAnswer:"}]


def rubric_kind(question_type: str, abstention: bool) -> str:
    """The rubric a question is graded with: ``abstention`` first, then its type's, else ``default``."""
    if abstention:
        return "abstention"
    return question_type if question_type in JUDGE_RUBRICS else "default"


def judge_messages(kind: str, question: str, answer: str, response: str) -> list[dict[str, str]]:
    """Chat messages for the judge with the rubric ``kind`` (a key of :data:`JUDGE_RUBRICS`)."""
    label = {"single-session-preference": "Rubric", "abstention": "Explanation"}.get(kind, "Correct answer")
    return [{"role": "system", "content": f"{JUDGE_RUBRICS[kind]} {JUDGE_SUFFIX}"},
            {"role": "user", "content": f"Question: {question}\n\n{label}: {answer}\n\nModel response: "
                                        f"{response}\n\nIs the model response correct? Answer yes or no only."}]


_VERDICT = re.compile(r"\b(yes|no)\b", re.I)


def parse_verdict(text: str) -> bool | None:
    """True for a judge answer whose first yes/no word is yes, False for no, None when it has neither."""
    m = _VERDICT.search(text or "")
    return None if m is None else m.group(1).lower() == "yes"


# ---------------------------------------------------------------------------------------------- QA run
async def answer_and_judge(reader: Any, judge: Any, *, question: str, answer: str, question_type: str,
                           abstention: bool, context: list[tuple[str, str]],
                           question_date: str | None) -> dict[str, Any]:
    """Ask the reader, then the judge; returns the per-question record (answers, verdict, tokens)."""
    from agentbase.errors import LLMError

    record: dict[str, Any] = {"rubric": rubric_kind(question_type, abstention)}
    try:
        r = await reader.chat(reader_messages(question, context, question_date), purpose="qa_reader")
        record.update(response=r.text, reader_tokens=r.prompt_tokens + r.completion_tokens)
        j = await judge.chat(judge_messages(record["rubric"], question, answer, r.text), purpose="qa_judge")
        record.update(judge_text=j.text, judge_tokens=j.prompt_tokens + j.completion_tokens,
                      correct=parse_verdict(j.text))
    except LLMError as exc:
        record.update(error=f"{type(exc).__name__}: {exc}", correct=None)
    return record


def accuracy(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Accuracy overall and per ``key`` value; an unparsed verdict or a failed call counts as wrong and is
    counted in ``unparsed``."""
    def acc(sub: list[dict[str, Any]]) -> dict[str, Any]:
        return {"n": len(sub), "accuracy": sum(bool(r["qa"].get("correct")) for r in sub) / len(sub) if sub else None,
                "unparsed": sum(r["qa"].get("correct") is None for r in sub)}
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(str(r[key]), []).append(r)
    return {"all": acc(rows), **{k: acc(v) for k, v in sorted(groups.items())}}


def add_llm_args(p: Any) -> None:
    """``--llm-config`` and ``--qa`` for a benchmark's argument parser."""
    p.add_argument("--llm-config", default=None,
                   help="YAML with an llm section (and optional qa section): retrieval runs zero-LLM and with the "
                        "LLM uses on, side by side, with LLM tokens per message and per query")
    p.add_argument("--qa", action="store_true",
                   help="with --llm-config: end-to-end QA, the reader model answers from AgentBase's context and "
                        "the judge model grades it (accuracy overall and per type)")


def read_llm_args(p: Any, args: Any) -> None:
    """Check ``--qa``/``--llm-config`` after parsing and set ``args.llm`` (the loaded config, or None); a bad
    combination or file is the parser's usage error (exit status 2)."""
    from agentbase.errors import ConfigError

    if args.qa and not args.llm_config:
        p.error("--qa needs --llm-config FILE (the reader and judge models)")
    try:
        args.llm = load_llm_config(args.llm_config) if args.llm_config else None
    except ConfigError as exc:
        p.error(str(exc))


def _date(entry: Any) -> str:
    when = entry.event_time or entry.created_at
    return when.strftime("%Y-%m-%d") if when is not None else ""


async def context_for(built: Any, question: str, top_k: int, reference_time: Any) -> tuple[list[tuple[str, str]], int]:
    """AgentBase's context for a question: ``(date, text)`` of ``find(top_k)`` and its tokens (ceil(len/4))."""
    from .common import context_tokens

    results = await built.db.find(question, top_k=top_k, user_id=built.user_id, reference_time=reference_time)
    context = [(_date(r.entry), r.text or r.entry.content) for r in results]
    return context, context_tokens(t for _, t in context)


async def run_qa(args: Any, bench: str) -> dict[str, Any]:
    """End-to-end QA over LongMemEval (``bench="longmemeval"``) or LoCoMo (``"locomo"``); see the module doc."""
    import tempfile
    import time

    from agentbase.datasets import load_json, locomo_conversations, longmemeval_conversation
    from agentbase.timeutil import parse_time

    from .common import (build_embedder, build_settings, config_snapshot, console, git_info, machine_info, now_iso,
                         open_cache)
    from .systems import build_agentbase

    cfg = args.llm
    settings = apply_llm(build_settings(args.config, args.embedder, args.model_path), cfg["llm"])
    embedder = build_embedder(settings)
    cache = open_cache(args.cache, embedder)
    reader, judge = client_for(cfg["llm"], cfg["qa"]["reader"]), client_for(cfg["llm"], cfg["qa"]["judge"])
    top_k = cfg["qa"]["top_k"]
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="agentbase-qa-"))
    workdir.mkdir(parents=True, exist_ok=True)
    data = load_json(args.data)
    jobs: list[tuple[Any, list[dict[str, Any]], str]] = []  # (conversation, qa items, scope)
    if bench == "longmemeval":
        from .longmemeval import stratified

        if args.question:
            data = [r for r in data if r["question_id"] in set(args.question)]
        if args.limit and args.stratified:
            keep = set(stratified(data, args.limit))
            data = [r for r in data if r["question_id"] in keep]
        elif args.limit:
            data = data[: args.limit]
        for rec in data:
            conv = longmemeval_conversation(rec)
            jobs.append((conv, conv.qa, rec["question_id"]))
    else:
        convs = list(locomo_conversations(data[: args.limit] if args.limit else data))
        for conv in convs:
            jobs.append((conv, conv.qa[: args.qa_limit] if args.qa_limit else conv.qa, conv.conversation_id))
    from .longmemeval import turn_key as lme_turn_key
    from .locomo import CATEGORIES
    from .locomo import turn_key as locomo_turn_key

    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for conv, items, scope in jobs:
        built = await build_agentbase(workdir / f"{scope}.db", settings, embedder, conv, cache=cache, scope=scope,
                                      turn_key=lme_turn_key if bench == "longmemeval" else locomo_turn_key)
        try:
            ref_locomo = max(s.date for s in conv.sessions)
            for qa in items:
                if bench == "longmemeval":
                    qtype, abst = qa["question_type"], qa["question_id"].endswith("_abs")
                    qdate, ref = qa["question_date"], parse_time(qa["question_date"])
                    gold = str(qa["answer"])
                else:
                    cat = int(qa.get("category", 0))
                    qtype, abst = CATEGORIES.get(cat, str(cat)), cat == 5
                    qdate, ref = ref_locomo.strftime("%Y-%m-%d"), ref_locomo
                    gold = str(qa.get("answer") if not abst else
                               "the conversation does not say this (adversarial question); the misleading answer "
                               f"would be: {qa.get('adversarial_answer', '')}")
                context, ctx_tokens = await context_for(built, qa["question"], top_k, ref)
                record = await answer_and_judge(reader, judge, question=qa["question"], answer=gold,
                                                question_type=qtype, abstention=abst, context=context,
                                                question_date=qdate)
                rows.append({"id": qa.get("question_id") or f"{scope}#{len(rows)}", "type": qtype,
                             "abstention": abst, "context_tokens": ctx_tokens, "context_results": len(context),
                             "qa": record})
                verdict = {True: "yes", False: "no", None: "?"}[record.get("correct")]
                console.print(f"[{len(rows)}] {qtype}: {verdict} ({ctx_tokens} context tokens) "
                              f"{time.perf_counter() - started:.0f}s", markup=False)
            build_llm = (await built.db.stats())["llm"]
            for r in rows[-len(items):] if items else []:
                r["ingest_llm"] = llm_usage(build_llm, INGEST_PURPOSES)
                r["messages"] = built.build["messages"]
        finally:
            await built.close(cache, scope, keep=args.keep_dbs)
    await reader.aclose()
    await judge.aclose()
    if cache is not None:
        cache.close()
    n = len(rows)
    return {"benchmark": f"{bench}_qa", "data": str(Path(args.data).resolve()), "started_at": now_iso(),
            "machine": machine_info(), "git": git_info(), "config": config_snapshot(settings, embedder, args),
            "llm": {k: v for k, v in cfg["llm"].items() if k != "api_key"}, "qa_config": cfg["qa"],
            "protocol": {"context": f"find(question, top_k={top_k}) texts with their dates",
                         "tokens": "context: ceil(len(text)/4) per result; reader/judge: the server's usage",
                         "judge": "yes/no per question type (LongMemEval rubric, our prompt text)"},
            "elapsed_s": time.perf_counter() - started, "n_questions": n,
            "accuracy": accuracy(rows, "type"),
            "context_tokens_per_question": sum(r["context_tokens"] for r in rows) / n if n else None,
            "reader_tokens_per_question": sum(r["qa"].get("reader_tokens", 0) for r in rows) / n if n else None,
            "judge_tokens_per_question": sum(r["qa"].get("judge_tokens", 0) for r in rows) / n if n else None,
            "questions": rows}


def qa_report(payload: dict[str, Any]) -> str:
    """Print and return (Markdown) the QA accuracy table."""
    from .common import fmt, markdown_table, out_console, table

    cols = ["type", "n", "accuracy", "unparsed"]
    rows = [[k, v["n"], fmt(v["accuracy"]), v["unparsed"]] for k, v in payload["accuracy"].items()]
    out_console.print(table(f"{payload['benchmark']} ({payload['llm'].get('model')})", cols, rows))
    extra = [["context tokens / question", fmt(payload["context_tokens_per_question"], 1)],
             ["reader tokens / question", fmt(payload["reader_tokens_per_question"], 1)],
             ["judge tokens / question", fmt(payload["judge_tokens_per_question"], 1)],
             ["elapsed s", fmt(payload["elapsed_s"], 1)]]
    out_console.print(table("tokens", ["figure", "value"], extra))
    return markdown_table(cols, rows) + "\n\n" + markdown_table(["figure", "value"], extra)


async def run_retrieval_pair(args: Any, run: Any) -> dict[str, Any]:
    """The retrieval benchmark ``run`` twice: zero-LLM, then with the ``--llm-config`` uses on."""
    llm = args.llm
    args.llm = None
    base = await run(args)
    args.llm = llm
    with_llm = await run(args)
    return {"benchmark": with_llm["benchmark"] + "_llm_pair", "zero_llm": base, "llm": with_llm,
            "llm_settings": {k: v for k, v in llm["llm"].items() if k != "api_key"},
            "llm_tokens": pair_tokens(with_llm)}


def pair_tokens(payload: dict[str, Any]) -> dict[str, Any]:
    """LLM tokens per ingested message and per query of one retrieval payload (rows carry ``llm`` stats)."""
    rows = payload.get("questions") or payload.get("items") or []
    ingest = {"calls": 0, "errors": 0, "prompt_tokens": 0, "completion_tokens": 0}
    query = dict(ingest)
    messages = finds = 0
    for r in rows:
        if not r.get("llm"):
            continue
        for total, purposes in ((ingest, INGEST_PURPOSES), (query, QUERY_PURPOSES)):
            for k, v in llm_usage(r["llm"], purposes).items():
                total[k] += v
        messages += int(r.get("build", {}).get("messages") or r.get("messages") or 0)
        finds += int(r.get("finds") or 0)
    return {"ingest": ingest, "query": query, "messages": messages, "finds": finds,
            "ingest_tokens_per_message": tokens_per(ingest, messages),
            "query_tokens_per_query": tokens_per(query, finds)}


def pair_report(payload: dict[str, Any], report: Any, metric_rows: Any) -> str:
    """Both runs' reports, then the side-by-side table of ``metric_rows(payload) -> [(name, zero, llm)]``."""
    from .common import fmt, markdown_table, out_console, table

    report(payload["zero_llm"])
    report(payload["llm"])
    t = payload["llm_tokens"]
    rows = [[name, fmt(a), fmt(b)] for name, a, b in metric_rows(payload)]
    rows += [["LLM tokens / ingested message", "0", fmt(t["ingest_tokens_per_message"], 1)],
             ["LLM tokens / query", "0", fmt(t["query_tokens_per_query"], 1)],
             ["LLM calls (ingest / query)", "0 / 0", f"{t['ingest']['calls']} / {t['query']['calls']}"],
             ["LLM errors", "0", str(t["ingest"]["errors"] + t["query"]["errors"])]]
    cols = ["figure", "zero-LLM", f"LLM ({payload['llm_settings'].get('model')})"]
    out_console.print(table("zero-LLM vs LLM", cols, rows))
    return markdown_table(cols, rows)
