"""Skills: intent-style lookup (``find_skills``) and import of a skill folder with ``SKILL.md`` at its root.

A skill folder follows the Agent Skills layout (https://agentskills.io/specification): ``SKILL.md`` starts with
YAML front matter holding at least ``name`` and ``description``, followed by Markdown instructions; other files
(scripts, references, templates) sit beside it. :func:`import_skill_dir` stores the skill as one entry
(``context_type="skill"``, content = the instructions) and every file of the folder, as relative path + text,
in ``skill_files``. It refuses the whole folder, before writing anything, on a symlink, a path that is not a
plain relative name (``..``, backslashes, control characters), a non-regular file, text that is not UTF-8, a
missing ``SKILL.md`` or bad front matter, or more than ``max_files`` files / ``max_bytes`` bytes. A skill with
the same name and owners is replaced atomically: same entry id, new text (an ``UPDATE`` history event), new files,
all in one transaction. Version-control and OS clutter (``.git``, ``__pycache__``, ``.DS_Store``) is skipped.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from .errors import ValidationError
from .index.fts import query_tokens
from .models import ContextType, Entry, Scope, SearchResult
from .storage.entries import delete_entry_row, insert_entry, row_to_entry, update_entry_row
from .timeutil import to_db_time
from .validation import check_id, check_limit, check_path

__all__ = ["MAX_SKILL_BYTES", "MAX_SKILL_FILES", "SkillFile", "parse_skill_md", "safe_relpath", "scan_skill_dir"]

MAX_SKILL_FILES = 500
MAX_SKILL_BYTES = 5 * 1024 * 1024
SKIPPED_NAMES = frozenset({".git", ".hg", ".svn", "__pycache__", ".DS_Store"})
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_UNSAFE = re.compile(r"[\x00-\x1f\x7f\\]")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_RRF_K = 60  # Cormack et al. 2009, as in the find() pipeline


class SkillFile(tuple):
    """``(path, text, size_bytes, sha256)`` of one file of a skill folder (``path`` is POSIX, relative)."""

    __slots__ = ()

    def __new__(cls, path: str, text: str, size_bytes: int, sha256: str) -> SkillFile:
        return super().__new__(cls, (path, text, size_bytes, sha256))

    @property
    def path(self) -> str:
        """Relative POSIX path inside the folder."""
        return self[0]

    @property
    def text(self) -> str:
        """The file's text."""
        return self[1]


def safe_relpath(rel: str) -> str:
    """Return ``rel`` if it is a plain relative POSIX path (no ``..``, ``.``, empty, absolute, backslash, control
    characters); used for skill folders and archive members.

    Raises:
        ValidationError: otherwise.
    """
    if not isinstance(rel, str) or not rel or rel.startswith("/") or _UNSAFE.search(rel) or len(rel) > 1024:
        raise ValidationError(f"unsafe path {rel!r}: must be a relative path without backslashes or control "
                              f"characters")
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts) or re.match(r"^[A-Za-z]:", rel):
        raise ValidationError(f"unsafe path {rel!r}: '..', '.', empty parts and drive letters are refused")
    return rel


def scan_skill_dir(path: str | Path, *, max_files: int = MAX_SKILL_FILES,
                   max_bytes: int = MAX_SKILL_BYTES) -> list[SkillFile]:
    """Read and check every file of a skill folder (blocking; nothing is written).

    Args:
        path: the folder (``SKILL.md`` must be directly inside it).
        max_files: most files accepted. max_bytes: most bytes accepted, summed over all files.

    Returns:
        The files sorted by path, ``SKILL.md`` included.

    Raises:
        ValidationError: not a folder, a symlink anywhere (the folder itself included), an unsafe name, a
            non-regular file, non-UTF-8 text, no ``SKILL.md``, or a limit exceeded.
    """
    root = check_path(path, "skill folder")
    if root.is_symlink():
        raise ValidationError(f"skill folder {root} is a symlink; refusing it")
    if not root.is_dir():
        raise ValidationError(f"skill folder {root} does not exist or is not a folder")
    real_root = os.path.realpath(root)
    files: list[SkillFile] = []
    total = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_NAMES)
        for name in [*dirnames, *sorted(filenames)]:
            full = os.path.join(dirpath, name)
            rel = Path(os.path.relpath(full, root)).as_posix()
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                raise ValidationError(f"skill folder contains a symlink ({rel}); refusing the whole folder")
            safe_relpath(rel)
            if not os.path.realpath(full).startswith(real_root + os.sep):
                raise ValidationError(f"path {rel!r} escapes the skill folder")
            if name in dirnames or name in SKIPPED_NAMES:
                continue
            if not stat.S_ISREG(st.st_mode):
                raise ValidationError(f"{rel} is not a regular file")
            if len(files) + 1 > max_files:
                raise ValidationError(f"skill folder has more than {max_files} files")
            total += st.st_size
            if total > max_bytes:
                raise ValidationError(f"skill folder is larger than {max_bytes} bytes")
            with open(full, "rb") as fh:
                data = fh.read(max_bytes + 1)
            total += len(data) - st.st_size  # the file may have changed since lstat
            if total > max_bytes:
                raise ValidationError(f"skill folder is larger than {max_bytes} bytes")
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValidationError(f"{rel} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
            files.append(SkillFile(rel, text, len(data), hashlib.sha256(data).hexdigest()))
    if not any(f.path == "SKILL.md" for f in files):
        raise ValidationError(f"skill folder {root} has no SKILL.md at its root")
    return sorted(files, key=lambda f: f.path)


def parse_skill_md(text: str) -> tuple[dict[str, Any], str]:
    """Split ``SKILL.md`` into its YAML front matter and Markdown body.

    Returns:
        ``(front_matter, body)``; ``front_matter`` has non-empty string ``name`` and ``description``.

    Raises:
        ValidationError: no front matter, invalid YAML, not a mapping, or missing/empty name or description.
    """
    m = _FRONT.match(text.lstrip("\ufeff"))
    if not m:
        raise ValidationError("SKILL.md must start with YAML front matter between '---' lines")
    try:
        front = yaml.safe_load(m.group(1))
    except yaml.YAMLError as exc:
        raise ValidationError(f"SKILL.md front matter is not valid YAML: {exc}") from None
    if not isinstance(front, dict):
        raise ValidationError("SKILL.md front matter must be a mapping")
    for key in ("name", "description"):
        value = front.get(key)
        if not isinstance(value, str) or not value.strip():
            raise ValidationError(f"SKILL.md front matter needs a non-empty string {key!r}")
    return front, text.lstrip("\ufeff")[m.end():].strip()


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)  # YAML dates and the like


async def import_skill_dir(ab: Any, path: str | Path, *, max_files: int, max_bytes: int, tags: list[str] | None,
                           owners: dict[str, Any]) -> Entry:
    """See :meth:`AgentBase.import_skill_dir`."""
    check_limit(max_files, "max_files", maximum=1_000_000)
    check_limit(max_bytes, "max_bytes", maximum=1 << 40)
    scope = owners.pop("scope", Scope.GLOBAL)
    unknown = set(owners) - {"user_id", "agent_id", "project_id", "session_id"}
    if unknown:
        raise ValidationError(f"unexpected arguments: {sorted(unknown)}")
    files = await asyncio.to_thread(scan_skill_dir, path, max_files=max_files, max_bytes=max_bytes)
    skill_md = next(f for f in files if f.path == "SKILL.md")
    front, body = parse_skill_md(skill_md.text)
    name, description = " ".join(front["name"].split()), front["description"].strip()
    extra_front = _jsonable({k: v for k, v in front.items() if k not in ("name", "description")})
    meta = {"source": "skill_dir", "files": len(files), "size_bytes": sum(f[2] for f in files),
            "front_matter": extra_front}
    built = ab._build_entry(body or description, category="procedure", tags=tags, metadata=meta, scope=scope,
                            owners={k: owners.get(k) for k in ("user_id", "agent_id", "project_id", "session_id")},
                            confidence=1.0, importance=0.5, event_time=None, context_type=ContextType.SKILL,
                            entry_id=None, extra={"name": name, "description": description})
    return await store_skill(ab, built, files)


async def store_skill(ab: Any, built: Entry, files: list[SkillFile]) -> Entry:
    """Insert a skill entry, or replace the skill of the same name and owners in one transaction: same entry id
    and ``created_at``, new text (an ``UPDATE`` history event), ``files`` as its whole file set (older
    duplicates of the name, left by versions that did not replace, are deleted).

    Args:
        built: the new version (from ``AgentBase._build_entry``, ``context_type="skill"``, ``name`` set).
        files: its folder's files (empty for :meth:`AgentBase.add_skill`).

    Returns:
        The stored entry.
    """
    db = await ab._open()
    async with db.transaction() as conn:
        rows = await conn.ops.skills.skill_rows_named(conn, built.name, built.user_id, built.agent_id,
                                                      built.project_id)
        if rows:
            old = row_to_entry(rows[0])
            entry = built.model_copy(update={"id": old.id, "created_at": old.created_at,
                                             "access_count": old.access_count,
                                             "last_accessed_at": old.last_accessed_at})
            await update_entry_row(conn, rows[0][0], old, entry, engine=db.vector_engine)
            for dup in rows[1:]:
                await delete_entry_row(conn, dup[0], row_to_entry(dup), engine=db.vector_engine,
                                       now=to_db_time(entry.updated_at))
        else:
            entry = built
            await insert_entry(conn, entry, fact_key=None)
        await conn.ops.skills.replace_files(conn, entry.id, files)
    ab._notify()
    return entry


async def get_skill_files(ab: Any, skill_id: str) -> dict[str, str]:
    """See :meth:`AgentBase.get_skill_files`."""
    db = await ab._open()
    return dict(await db.ops.skills.files(db, check_id(skill_id, "skill_id")))


def _words(text: str | None) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text or "")}


def _hit(token: str, words: set[str]) -> bool:
    """Exact word, or a shared stem: one is a prefix of the other and the shorter has >= 4 letters."""
    if token in words:
        return True
    return len(token) >= 4 and any(len(w) >= 4 and (w.startswith(token) or token.startswith(w)) for w in words)


async def find_skills(ab: Any, query: str, *, top_k: int, filters: dict[str, Any]) -> list[SearchResult]:
    """See :meth:`AgentBase.find_skills`."""
    from .engine import _filters

    check_limit(top_k, "top_k", maximum=1000)
    filters = {k: v for k, v in filters.items() if k != "context_type"}
    hits = await ab.find(query, top_k=max(3 * top_k, 20), context_type="skill", trace=False, **filters)
    tokens = [t for t in query_tokens(query) if any(ch.isalnum() for ch in t)]
    db = await ab._open()
    lexical: list[tuple[float, int, str]] = []
    if tokens:
        rows = await db.ops.skills.name_rows(db, _filters({**filters, "context_type": "skill"}))
        for rid, eid, name, description in rows:
            name_w, desc_w = _words(name), _words(description)
            score = sum(2.0 if _hit(t, name_w) else 1.0 if _hit(t, desc_w) else 0.0 for t in tokens) / len(tokens)
            if score > 0:
                lexical.append((score, rid, eid))
    lexical.sort(key=lambda x: (-x[0], x[1]))
    fused: dict[str, float] = {}
    parts: dict[str, dict[str, float]] = {}
    for rank, r in enumerate(hits, 1):
        fused[r.entry.id] = 1.0 / (_RRF_K + rank)
        parts[r.entry.id] = {"find_rank": float(rank)}
    for rank, (score, _rid, eid) in enumerate(lexical, 1):
        fused[eid] = fused.get(eid, 0.0) + 1.0 / (_RRF_K + rank)
        parts.setdefault(eid, {}).update(name_rank=float(rank), name_match=score)
    by_id = {r.entry.id: r for r in hits}
    missing = [eid for eid in fused if eid not in by_id]
    if missing:
        for row in await db.ops.skills.entry_rows(db, missing):
            e = row_to_entry(row)
            by_id[e.id] = SearchResult(entry=e, score=0.0, matched_by="name", text=e.l2_full)
    out: list[SearchResult] = []
    for eid in sorted(fused, key=lambda i: -fused[i])[:top_k]:
        r = by_id[eid]
        matched = r.matched_by if eid in {h.entry.id for h in hits} else "name"
        if "name_rank" in parts[eid] and matched != "name":
            matched = f"name+{matched}"
        out.append(r.model_copy(update={"score": fused[eid], "matched_by": matched,
                                        "score_parts": {**r.score_parts, **parts[eid], "skill_rrf": fused[eid]}}))
    return out
