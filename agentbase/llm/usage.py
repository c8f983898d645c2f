"""Token accounting of the LLM calls, kept in the file (``meta`` key ``llm_usage``) so ``stats()`` reports the
calls of every process and session, the background jobs' included.

The value is a JSON object ``{purpose: {"calls", "errors", "prompt_tokens", "completion_tokens",
"latency_ms"}}``; tokens are the server's own counts (``usage`` of each response), latency is the sum in
milliseconds. No message text and no key is stored. :func:`traced_calls` also records a block's calls, one by one,
as a trace.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from .client import LLMCall, LLMClient

__all__ = ["USAGE_KEY", "load_usage", "save_usage", "traced_calls"]

USAGE_KEY = "llm_usage"
_FIELDS = ("calls", "errors", "prompt_tokens", "completion_tokens")


def _add(total: dict[str, dict[str, Any]], calls: list[LLMCall]) -> dict[str, dict[str, Any]]:
    for call in calls:
        t = total.setdefault(call.purpose, {"calls": 0, "errors": 0, "prompt_tokens": 0, "completion_tokens": 0,
                                            "latency_ms": 0.0})
        t["calls"] += 1
        t["errors"] += call.outcome != "ok"
        t["prompt_tokens"] += call.prompt_tokens
        t["completion_tokens"] += call.completion_tokens
        t["latency_ms"] = round(float(t.get("latency_ms", 0.0)) + call.latency_s * 1000, 3)
    return total


async def save_usage(db: Any, calls: list[LLMCall]) -> None:
    """Add ``calls`` to the file's totals, in one transaction (read and write under the write lock, so two
    processes never lose each other's counts).

    Raises:
        StorageError: the write failed (the caller keeps the calls and tries again later).
    """
    if not calls:
        return
    async with db.transaction(durable=False) as conn:
        total = _parse(await conn.ops.meta.get_value(conn, USAGE_KEY))
        await conn.ops.meta.set_value(conn, USAGE_KEY, json.dumps(_add(total, calls), sort_keys=True))


def _parse(raw: str | None) -> dict[str, dict[str, Any]]:
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return {k: v for k, v in value.items() if isinstance(v, dict)} if isinstance(value, dict) else {}


async def load_usage(db: Any, pending: list[LLMCall] | None = None) -> dict[str, Any]:
    """The totals per purpose plus ``"total"`` (the sums), the calls not yet written (``pending``) included.

    Returns:
        ``{"by_purpose": {purpose: {"calls", "errors", "prompt_tokens", "completion_tokens", "latency_ms"}},
        "total": {"calls", "errors", "prompt_tokens", "completion_tokens"}}``.
    """
    by = _add(_parse(await db.ops.meta.get_value(db, USAGE_KEY)), list(pending or []))
    total = {f: sum(int(v.get(f, 0)) for v in by.values()) for f in _FIELDS}
    return {"by_purpose": by, "total": total}


@contextlib.asynccontextmanager
async def traced_calls(ab: Any, query: str, params: dict[str, Any]) -> AsyncIterator[None]:
    """Record the model calls made inside the block (by any client, in this task and the tasks it starts) as one
    trace beside find()'s: ``query`` and ``params`` as given, one ``llm_call`` step per call whose details are
    :meth:`LLMCall.as_dict` (purpose, model, prompt and completion tokens, latency in ms, outcome, attempts,
    error; never the prompt or the key). Nothing is written when no call was made, when ``retrieval.trace`` is
    off, or before the engine has opened its trace buffer. Calls made by a ``find()`` inside the block are in
    that find's own trace, not this one. Must run on the engine loop."""
    from ..observability import Tracer

    tracer = Tracer(query, params)
    with LLMClient.collect() as calls:
        try:
            yield
        finally:
            buffer = getattr(ab, "traces", None)
            if calls and buffer is not None and ab.settings.retrieval.trace:
                for call in calls:
                    tracer.step("llm_call", **call.as_dict())
                buffer.add(tracer.finish([]), None)
