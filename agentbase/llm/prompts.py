"""The prompts of the LLM uses (our own wording). Each system prompt starts with a one-line purpose tag
(``[agentbase:<purpose>]``) so a server log, or a test's fake server, can tell the uses apart; each asks for one
JSON value and says its exact shape, which small local models follow better than free text.

Every builder returns an OpenAI ``messages`` list.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["decompose_messages", "facts_messages", "mem0_decision_messages", "rerank_messages",
           "summary_messages", "turn_messages"]


def _system(purpose: str, body: str) -> dict[str, str]:
    return {"role": "system", "content": f"[agentbase:{purpose}]\n{body.strip()}"}


def summary_messages(transcript: str) -> list[dict[str, str]]:
    """Ask for a session summary in three lengths (``summary`` <= 600, ``overview`` <= 300, ``abstract`` <= 50
    characters) as one JSON object."""
    return [_system("summary", """
You summarise a conversation so that it can be found and understood later without reading it.
Write in the conversation's language. Keep names, places, dates, numbers and decisions; leave out greetings.
Answer with one JSON object and nothing else:
{"summary": "<at most 600 characters>", "overview": "<at most 300 characters>", "abstract": "<at most 50 characters>"}
"""), {"role": "user", "content": f"Conversation:\n{transcript}"}]


def turn_messages(text: str, *, speaker: str, context: str | None, key: bool, tiers: bool,
                  overview: bool) -> list[dict[str, str]]:
    """Ask for a turn's one-line retrieval key (``key``) and/or its abstract (<= 50 characters) and overview
    (<= 300 characters, only for long turns)."""
    fields = []
    if key:
        fields.append('"key": "<one line, at most 150 characters: who says what, with the names, things, dates '
                      'and numbers someone might later search for>"')
    if tiers:
        fields.append('"abstract": "<at most 50 characters>"')
        if overview:
            fields.append('"overview": "<at most 300 characters>"')
    shape = "{" + ", ".join(fields) + "}"
    before = f"It replies to: {context}\n" if context else ""
    return [_system("turn", f"""
You condense one message of a conversation into short index text.
Write in the message's language, in the third person, naming the speaker. Resolve "I", "you", "it" where the
context allows. Answer with one JSON object and nothing else:
{shape}
"""), {"role": "user", "content": f"{before}Speaker: {speaker}\nMessage: {text}"}]


def facts_messages(text: str, *, speaker: str, context: str | None) -> list[dict[str, str]]:
    """Ask for the durable facts a user message states about its speaker, as ``{"facts": [str, ...]}``."""
    before = f"It replies to: {context}\n" if context else ""
    return [_system("facts", f"""
You extract durable personal facts from one message: who the speaker is, where they live or work, people and
pets in their life, their preferences, plans, possessions, habits, and events with their dates.
Each fact is one short standalone sentence in the third person that names the speaker ("{speaker} ..."), in the
message's language. Ignore questions, small talk, and anything the message does not state. At most 8 facts; an
empty list when there are none. Answer with one JSON object and nothing else:
{{"facts": ["<fact>", ...]}}
"""), {"role": "user", "content": f"{before}Speaker: {speaker}\nMessage: {text}"}]


def mem0_decision_messages(facts: Sequence[str], existing: Sequence[tuple[int, str]]) -> list[dict[str, str]]:
    """Ask how new facts change stored memories: one decision per fact and per affected memory, as
    ``{"memory": [{"id", "text", "event": "ADD"|"UPDATE"|"DELETE"|"NONE", "old_memory"?}]}``. Stored memories are
    numbered with small integers so the model never sees or invents entry ids."""
    stored = "\n".join(f"{i}: {text}" for i, text in existing) or "(none)"
    new = "\n".join(f"- {f}" for f in facts)
    return [_system("mem0_update", """
You keep a user's memory store consistent. You get the stored memories, each with a number, and new facts.
For each new fact decide:
- ADD: it is new information; give it a new number after the stored ones.
- UPDATE: it refines or corrects a stored memory about the same thing; keep that memory's number and give the
  merged text, plus the stored text as "old_memory".
- DELETE: it says a stored memory is no longer true; keep that memory's number.
- NONE: a stored memory already says it; keep that memory's number.
Answer with one JSON object and nothing else:
{"memory": [{"id": "<number>", "text": "<memory text>", "event": "ADD|UPDATE|DELETE|NONE", "old_memory": "<only for UPDATE>"}]}
"""), {"role": "user", "content": f"Stored memories:\n{stored}\n\nNew facts:\n{new}"}]


def decompose_messages(query: str, max_queries: int) -> list[dict[str, str]]:
    """Ask for up to ``max_queries`` typed sub-queries: ``{"queries": [{"type": "keyword"|"semantic", "text"}]}``."""
    return [_system("decompose", f"""
You turn a question about past conversations and memories into search queries for a hybrid search engine.
Write at most {max_queries} queries, each for one thing the answer needs. Type "keyword" is a few exact words,
names or numbers for a keyword index; type "semantic" is a short natural sentence for a vector index. Keep the
question's language. Answer with one JSON object and nothing else:
{{"queries": [{{"type": "keyword", "text": "..."}}, {{"type": "semantic", "text": "..."}}]}}
"""), {"role": "user", "content": f"Question: {query}"}]


def rerank_messages(query: str, texts: Sequence[str], max_chars: int = 400) -> list[dict[str, str]]:
    """Ask for a listwise ranking of numbered candidates: ``{"ranking": [index, ...]}``, most relevant first."""
    listed = "\n".join(f"[{i}] {' '.join(t.split())[:max_chars]}" for i, t in enumerate(texts))
    return [_system("rerank", """
You rank search results for a question. The candidates are numbered. Order the numbers from the most to the
least useful for answering the question; put every number you judge relevant, most useful first.
Answer with one JSON object and nothing else:
{"ranking": [<number>, <number>, ...]}
"""), {"role": "user", "content": f"Question: {query}\n\nCandidates:\n{listed}"}]
