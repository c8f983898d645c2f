"""``agentbase demo``: ingest a multi-session conversation, then answer questions with evidence and traces."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from .errors import UsageError
from .datasets import (Conversation, SessionData, load_json, locomo_conversations, longmemeval_conversation,
                       records)

__all__ = ["SAMPLE", "run_demo", "sample_conversation"]

# A sample conversation written for this project: three sessions over two months.
SAMPLE: list[tuple[str, list[tuple[str, str]]]] = [
    ("2025-03-02T09:15:00", [
        ("user", "Hi! I'm Maya. I just moved to Lisbon for a new job at Nordlys Energy as a data engineer."),
        ("assistant", "Welcome to Lisbon, Maya! How are you settling in at Nordlys Energy?"),
        ("user", "Pretty well. My favorite food here is pastel de nata, and I love the tram 28 ride."),
        ("assistant", "Both are classics. Anything you need help with at work?"),
        ("user", "I'm planning to migrate our ETL jobs from cron to Airflow next month."),
    ]),
    ("2025-03-20T18:40:00", [
        ("user", "I adopted a rescue dog yesterday, a beagle named Pixel."),
        ("assistant", "Congratulations! How old is Pixel?"),
        ("user", "She is three years old. I also bought a bike so we can ride along the river."),
        ("user", "By the way, I prefer Python 3.12 for the Airflow DAGs; our team uses Poetry."),
    ]),
    ("2025-04-28T07:05:00", [
        ("user", "Update: the Airflow migration is done, we moved 42 DAGs in three weeks."),
        ("assistant", "That's a big milestone. What's next?"),
        ("user", "Now I'm learning Portuguese on Tuesdays and Thursdays. My favorite food is now bacalhau."),
        ("user", "Also my sister Ana is visiting from Toronto on May 10."),
    ]),
]
SAMPLE_QUESTIONS = [
    "Where do I work?",
    "What is my dog's name?",
    "What is my favorite food now?",
    "How many DAGs did we migrate to Airflow?",
    "When is Ana visiting?",
    "Which Python version do I prefer?",
]


def sample_conversation() -> Conversation:
    """The built-in sample conversation as a :class:`~agentbase.datasets.Conversation`."""
    sessions = []
    for i, (when, turns) in enumerate(SAMPLE, 1):
        base = datetime.fromisoformat(when).replace(tzinfo=timezone.utc)
        sessions.append(SessionData(f"demo-session-{i}", base, [
            {"role": r, "content": c, "created_at": base + timedelta(minutes=j)} for j, (r, c) in enumerate(turns)]))
    qa = [{"question": q, "question_date": "2025-05-01T12:00:00"} for q in SAMPLE_QUESTIONS]
    return Conversation("demo", sessions, qa, user_id="maya")


def _load(data: Path | None) -> tuple[Conversation, str]:
    if data is None:
        return sample_conversation(), "sample conversation (built in)"
    raw = records(load_json(data), "LongMemEval or LoCoMo")
    if "haystack_sessions" in raw[0]:
        # the first question that has an answer in the haystack (ids ending in _abs are abstention questions)
        record = next((r for r in raw if not str(r.get("question_id", "")).endswith("_abs")), raw[0])
        return longmemeval_conversation(record), f"LongMemEval question {record['question_id']} from {data}"
    if "conversation" in raw[0]:
        return next(iter(locomo_conversations(raw))), f"LoCoMo conversation {raw[0].get('sample_id')} from {data}"
    from .errors import ConfigError

    raise ConfigError(f"{data} is neither a LongMemEval nor a LoCoMo file")


_DEMO_MARK = ("created_by", "agentbase demo")


def _is_demo_file(path: str) -> bool:
    """Whether ``path`` is an SQLite file holding the demo's mark (read-only check: nothing is created or changed)."""
    from .storage.sqlite.meta import read_only_value

    return read_only_value(path, _DEMO_MARK[0]) == _DEMO_MARK[1]


async def run_demo(data: Path | None, db_path: str, questions: int, embedder: str | None, console: Any,
                   ingest_all: Any, print_trace: Any) -> None:
    """Build ``db_path`` from the conversation (replacing an older demo file) and answer questions.

    Raises:
        UsageError: ``db_path`` exists and is not a file an earlier demo wrote (it is never deleted then).
    """
    from .engine import AgentBase

    conv, label = _load(data)
    if Path(db_path).exists() and not _is_demo_file(db_path):
        raise UsageError(f"{db_path} exists and was not written by `agentbase demo`; it is left untouched. "
                         f"Pass another --db (the demo rebuilds its file on every run).")
    for suffix in ("", "-wal", "-shm"):
        Path(db_path + suffix).unlink(missing_ok=True)
    ab = AgentBase(db_path, embedder=embedder) if embedder else AgentBase(db_path)
    async with ab:
        async with ab.db.transaction() as conn:
            await conn.ops.meta.set_value(conn, *_DEMO_MARK)
        stats = await ab.stats()
        console.print(Text("AgentBase demo", style="bold") + Text(f": {label}"))
        console.print(f"database {db_path}; embedder {stats['embedder']}; vector engine {stats['vector_engine']}; "
                      f"NER {stats['ner']}")
        counts = await ingest_all(ab, [conv])
        console.print(f"ingested {counts['sessions']} sessions, {counts['messages']} messages -> "
                      f"{counts['entries']} entries (zero LLM calls)")
        for qa in conv.qa[:questions]:
            question = qa["question"]
            results = await ab.find(question, top_k=3, user_id=conv.user_id,
                                    reference_time=qa.get("question_date"))
            console.print(Text("\nQ:", style="bold cyan") + Text(f" {question}"))
            if "answer" in qa:
                console.print(Text(f"gold answer: {qa['answer']}", style="dim"))
            table = Table("#", "score", "matched_by", "when", "session", "evidence")
            for i, r in enumerate(results, 1):
                when = (r.entry.event_time or r.entry.created_at).strftime("%Y-%m-%d")
                table.add_row(str(i), f"{r.score:.3f}", r.matched_by, when, str(r.entry.session_id)[-18:],
                              r.text[:110])
            console.print(table)
            if results and results[0].trace_id:
                t = await ab.get_trace(results[0].trace_id)
                console.print(f"trace {t.id}: {t.total_ms:.1f} ms, steps: " + ", ".join(
                    f"{s.name} {s.latency_ms:.1f}ms ({s.candidates_out})" for s in t.steps))
            if "answer_session_ids" in qa:
                hit = any(r.entry.session_id in qa["answer_session_ids"] for r in results)
                console.print(f"answer session in top 3: {'yes' if hit else 'no'}")
