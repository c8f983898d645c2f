"""Helpers that more than one test module uses (fixtures shared by every test live in conftest.py)."""

from __future__ import annotations

from pathlib import Path

from agentbase import AgentBase, load_settings
from agentbase.embeddings import HashEmbedder

SKILL_MD = """---
name: deploy-app
description: Deploy the web application to production with a blue-green rollout.
license: MIT
metadata:
  owner: platform
---
# Deploy

1. Run `scripts/deploy.sh`.
2. Watch the health checks.
"""


def make_skill(root: Path, skill_md: str = SKILL_MD, files: dict[str, str | bytes] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "SKILL.md").write_text(skill_md, encoding="utf-8")
    for rel, body in (files or {"scripts/deploy.sh": "#!/bin/sh\necho deploy\n"}).items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(body if isinstance(body, bytes) else body.encode("utf-8"))
    return root


def _db(path: Path, dims: int = 64, cache_mb: int = 512) -> AgentBase:
    settings = load_settings(ner="regex")
    settings.storage.vector_cache_mb = cache_mb
    return AgentBase(path, settings=settings, embedder=HashEmbedder(dims=dims))


async def _session_saying(db, user_id: str, text: str) -> str:
    s = await db.create_session(user_id=user_id)
    await db.add_message(s.id, "user", text)
    await db.commit_session(s.id)
    return s.id


async def _prefs(db, user_id: str) -> list[str]:
    return [e.l2_full for e in await db.list(user_id=user_id, category="preference")]
