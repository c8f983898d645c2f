"""mem0's ``add(infer=True)`` algorithm with the configured model (``llm.mem0_infer``; docs/llm.md):

1. extract facts from the messages (purpose ``mem0_extract``);
2. retrieve the stored memories related to each fact (``find()``, the same owners);
3. ask the model, with those memories numbered 0..n-1 (so it never handles entry ids), for one decision per fact:
   ``ADD`` / ``UPDATE`` / ``DELETE`` / ``NONE`` (purpose ``mem0_update``);
4. apply them through the public API (``add_memory``, ``update``, ``delete``) and report mem0's event shapes:
   ``{"results": [{"id", "memory", "event": "ADD"|"UPDATE"|"DELETE", "previous_memory"?}]}``.

Both answers are validated before anything is written: a malformed one raises
:class:`~agentbase.errors.LLMOutputError` and nothing is stored (the mem0 adapter then uses its rule-based path
and logs why). The prompts are our own.
"""

from __future__ import annotations

from typing import Any

from ..errors import LLMOutputError, ValidationError
from .client import parse_json_answer
from .prompts import facts_messages, mem0_decision_messages

__all__ = ["MAX_RELATED", "infer_memories", "parse_decisions"]

MAX_RELATED = 10  # stored memories shown to the model (mem0 shows its top 10 too)
PER_FACT = 5  # related memories retrieved per fact
_SKIP_CATEGORIES = ("turn", "summary")
EVENTS = ("ADD", "UPDATE", "DELETE", "NONE")


def parse_decisions(data: Any, n_existing: int) -> list[dict[str, Any]]:
    """Validate ``{"memory": [{"id", "text", "event", "old_memory"?}]}``.

    Args:
        data: the parsed answer.
        n_existing: how many stored memories were numbered (ids ``0..n_existing-1``).

    Returns:
        ``[{"event", "index" (int or None for ADD), "text"}]`` in the model's order; ``NONE`` decisions dropped.

    Raises:
        LLMOutputError: not that shape, an unknown event, an UPDATE/DELETE whose id is not a numbered memory, or an
            ADD/UPDATE without text.
    """
    items = data.get("memory") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise LLMOutputError("the answer has no list 'memory'", purpose="mem0_update")
    out: list[dict[str, Any]] = []
    touched: set[int] = set()
    for item in items:
        if not isinstance(item, dict):
            raise LLMOutputError(f"a decision is not an object: {item!r}"[:200], purpose="mem0_update")
        event = str(item.get("event", "")).upper()
        if event not in EVENTS:
            raise LLMOutputError(f"unknown event {item.get('event')!r}", purpose="mem0_update")
        if event == "NONE":
            continue
        text = item.get("text")
        text = " ".join(text.split()) if isinstance(text, str) else ""
        index = None
        if event in ("UPDATE", "DELETE"):
            raw = item.get("id")
            try:
                index = int(str(raw).strip())
            except ValueError:
                index = -1
            if not 0 <= index < n_existing:
                raise LLMOutputError(f"{event} names {raw!r}, not a stored memory (0..{n_existing - 1})",
                                     purpose="mem0_update")
            if index in touched:
                continue  # one change per stored memory
            touched.add(index)
        if event in ("ADD", "UPDATE") and not text:
            raise LLMOutputError(f"{event} without text", purpose="mem0_update")
        out.append({"event": event, "index": index, "text": text})
    return out


def _transcript(messages: list[dict[str, Any]]) -> str:
    return "\n".join(f"{m.get('name') or m['role']}: {m['content']}" for m in messages)


async def infer_memories(ab: Any, messages: list[dict[str, Any]], *, user_id: str | None = None,
                         agent_id: str | None = None, session_id: str | None = None,
                         metadata: dict[str, Any] | None = None, event_time: Any = None,
                         scope: str = "global") -> dict[str, Any] | None:
    """See :meth:`AgentBase.infer_memories`."""
    llm = ab.settings.llm
    if ab.llm is None or not llm.use("mem0_infer"):
        return None
    usable = [m for m in messages if m.get("role") in ("user", "assistant") and str(m.get("content", "")).strip()]
    if not usable:
        return {"results": []}
    speaker = next((m.get("name") for m in usable if m["role"] == "user" and m.get("name")), None) or "User"
    extracted = await ab.llm.chat(facts_messages(_transcript(usable)[:8000], speaker=speaker, context=None),
                                  purpose="mem0_extract", json_mode=True, max_tokens=min(llm.max_tokens, 400))
    data = parse_json_answer(extracted.text, purpose="mem0_extract")
    raw = data.get("facts") if isinstance(data, dict) else None
    if not isinstance(raw, list) or not all(isinstance(f, str) for f in raw):
        raise LLMOutputError(f"the answer is not {{\"facts\": [str, ...]}}: {extracted.text[:200]!r}",
                             purpose="mem0_extract")
    facts = list(dict.fromkeys(" ".join(f.split()) for f in raw if f.strip()))[:20]
    if not facts:
        return {"results": []}
    owners = {k: v for k, v in (("user_id", user_id), ("agent_id", agent_id), ("session_id", session_id)) if v}
    related: dict[str, Any] = {}
    for fact in facts:
        for hit in await ab.find(fact, top_k=PER_FACT, context_type="memory", trace=False, **owners):
            if hit.entry.category not in _SKIP_CATEGORIES and hit.entry.id not in related:
                related[hit.entry.id] = hit.entry
    existing = list(related.values())[:MAX_RELATED]
    decided = await ab.llm.chat(mem0_decision_messages(facts, [(i, e.l2_full) for i, e in enumerate(existing)]),
                                purpose="mem0_update", json_mode=True, max_tokens=min(llm.max_tokens, 600))
    decisions = parse_decisions(parse_json_answer(decided.text, purpose="mem0_update"), len(existing))
    results: list[dict[str, Any]] = []
    for d in decisions:
        if d["event"] == "ADD":
            try:
                entry = await ab.add_memory(d["text"], metadata=dict(metadata or {}), event_time=event_time,
                                            scope=scope, **owners)
            except ValidationError:
                continue
            results.append({"id": entry.id, "memory": entry.l2_full, "event": "ADD"})
        elif d["event"] == "UPDATE":
            old = existing[d["index"]]
            if old.l2_full == d["text"]:
                continue
            entry = await ab.update(old.id, content=d["text"])
            results.append({"id": entry.id, "memory": entry.l2_full, "event": "UPDATE",
                            "previous_memory": old.l2_full})
        else:  # DELETE
            old = existing[d["index"]]
            if await ab.delete(old.id):
                results.append({"id": old.id, "memory": old.l2_full, "event": "DELETE"})
    return {"results": results}
