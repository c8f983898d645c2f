"""Shared helpers of the LLM tests: an AgentBase on a real file pointed at the fake server, and a responder that
answers each use by the purpose tag its system prompt starts with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentbase import AgentBase, load_settings
from agentbase.embeddings import HashEmbedder


def make_llm_db(path: Path, url: str, **llm: Any) -> AgentBase:
    """An AgentBase with the hash embedder, the regex NER and ``llm`` settings aimed at ``url``."""
    cfg = {"base_url": url, "model": "fake-model", "max_retries": 1, "timeout_s": 5, **llm}
    settings = load_settings(ner="regex", llm=cfg, ingest={"enrich_idle_s": 0})
    return AgentBase(path, settings=settings, embedder=HashEmbedder(dims=64))


def purpose_of(request: dict[str, Any]) -> str:
    system = next((m["content"] for m in request["messages"] if m["role"] == "system"), "")
    first = system.splitlines()[0] if system else ""
    return first.removeprefix("[agentbase:").removesuffix("]")


def user_text(request: dict[str, Any]) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "user")


def scripted(**answers: Any):
    """A responder answering purpose ``p`` with ``answers[p]`` (a str, a JSON-able value, or a callable of the
    request); unknown purposes get ``{}``."""
    def respond(request: dict[str, Any]) -> str:
        answer = answers.get(purpose_of(request), {})
        if callable(answer):
            answer = answer(request)
        return answer if isinstance(answer, str) else json.dumps(answer)
    return respond
