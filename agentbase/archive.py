"""Portable archives: one tar file with everything an agent remembers, importable into any AgentBase file.

Layout (format version 1), every member a regular UTF-8 file at the top level of the tar::

    manifest.json         {"format": "agentbase-archive", "format_version": 1, "created_at", "agentbase_version",
                           "schema_version", "counts": {member: rows}, "files": {member: {"sha256", "bytes"}}}
    entries.jsonl         every entry with all three layers, tags, metadata, owners, times, access counts,
                          supersession and status, plus "embedded" (whether it had a vector or one queued)
    history.jsonl         entry_history events (ADD / UPDATE / DELETE), in order
    sessions.jsonl        sessions;  messages.jsonl: their messages;  links.jsonl: session_memory_links
    entities.jsonl        graph entities;  entity_aliases.jsonl;  relations.jsonl: relations with validity
    skill_files.jsonl     the files of imported skill folders

Vectors are not exported: they are derived data and the importing side may use another embedder; imported entries
queue embedding jobs instead (``flush()`` waits for them).

:func:`import_archive` validates the whole archive before writing anything and refuses it with
:class:`ArchiveError` on: a member that is not a regular file (symlink, hard link, device, folder), a member name
that is not one of the names above (``../x``, absolute paths), duplicate members, more than ``max_bytes`` bytes,
a checksum or size that disagrees with the manifest, a damaged tar, text that is not UTF-8 or JSON, rows that
miss required fields, or a newer ``format_version``. Members are read into memory, never extracted, so nothing is
ever written outside the database file. Merge rules: missing entries are created (with their history); present
entries with different content are revised (an ``UPDATE`` history event); sessions whose id already exists are
skipped with their messages and links; entities merge by name/alias; nothing missing from the archive is deleted.
All writes happen in one transaction.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import lzma
import math
import tarfile
import time
import zlib
from datetime import datetime
from pathlib import Path
from typing import Any

from .errors import StorageError, ValidationError
from .models import ContextType, Entry, Scope, utcnow
from .storage import DRIVER_ERRORS
from .storage.entries import ENTRY_COLUMNS, _fts_source, row_to_entry, update_entry_row
from .timeutil import to_db_time
from .validation import check_id, check_path

__all__ = ["DEFAULT_MAX_BYTES", "FORMAT_VERSION", "MEMBERS", "ArchiveError", "read_archive"]

FORMAT = "agentbase-archive"
FORMAT_VERSION = 1
DEFAULT_MAX_BYTES = 1 << 30  # 1 GiB of member data

_ENTRY_NAMES = [c.strip() for c in ENTRY_COLUMNS.split(",")][1:]  # row_to_entry's order, without rid
# member -> the fields every row must have (the SQL that reads and writes them is storage/<engine>/archives.py)
_TABLES: dict[str, tuple[str, ...]] = {
    "entries.jsonl": ("id", "l2_full", "context_type", "scope", "status", "created_at", "updated_at", "tags",
                      "metadata", "content_hash"),
    "history.jsonl": ("id", "entry_id", "event", "created_at"),
    "sessions.jsonl": ("id", "created_at", "updated_at"),
    "messages.jsonl": ("id", "session_id", "seq", "role", "content", "created_at"),
    "links.jsonl": ("session_id", "entry_id", "kind"),
    "entities.jsonl": ("id", "name", "norm_name", "created_at"),
    "entity_aliases.jsonl": ("norm_alias", "entity_id"),
    "relations.jsonl": ("id", "subject_id", "predicate", "object_id", "created_at"),
    "skill_files.jsonl": ("skill_id", "path", "content"),
}
_JSON_FIELDS = {"entries.jsonl": ("tags", "metadata"), "history.jsonl": ("metadata",),
                "sessions.jsonl": ("metadata",), "messages.jsonl": ("metadata",), "entities.jsonl": ("aliases",)}
_TIME_FIELDS = ("created_at", "updated_at", "event_time", "last_accessed_at", "valid_from", "valid_to")
MEMBERS = ("manifest.json", *_TABLES)


class ArchiveError(ValidationError):
    """An archive was refused as a whole (unsafe, corrupt, oversize or too new); nothing was written."""


# ------------------------------------------------------------------------------------------------- export
def _add_member(tar: tarfile.TarFile, name: str, data: bytes, mtime: float) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(mtime)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


async def export_archive(ab: Any, path: str | Path) -> dict[str, Any]:
    """See :meth:`AgentBase.export_archive`."""
    from . import __version__

    db = await ab._open()
    await ab._drain_background()
    target = check_path(path, "archive path")
    if not target.name or target.is_dir():
        raise ValidationError(f"the archive path must name a file, got {str(path)!r}")
    try:
        data = await asyncio.to_thread(db.ops.archives.snapshot, ab.path, db.driver,
                                       ab.settings.storage.busy_timeout_s)
    except DRIVER_ERRORS as exc:
        raise StorageError(f"export failed reading {ab.path}: {exc}") from exc
    for row in data["entries.jsonl"]:
        row["embedded"] = bool(row["embedded"])
    blobs = {m: "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows).encode()
             for m, rows in data.items()}
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "created_at": utcnow().isoformat(),
                "agentbase_version": __version__, "schema_version": await db.ops.archives.schema_version(db),
                "counts": {m: len(rows) for m, rows in data.items()},
                "files": {m: {"sha256": hashlib.sha256(b).hexdigest(), "bytes": len(b)} for m, b in blobs.items()}}

    def write() -> None:
        partial = target.with_name(target.name + ".partial")
        mode = "w:gz" if target.name.endswith((".tgz", ".tar.gz")) else "w"
        now = time.time()
        try:
            with tarfile.open(partial, mode, format=tarfile.PAX_FORMAT) as tar:
                _add_member(tar, "manifest.json", json.dumps(manifest, indent=2).encode(), now)
                for m, b in blobs.items():
                    _add_member(tar, m, b, now)
            partial.replace(target)
        except BaseException:
            partial.unlink(missing_ok=True)  # a failed export (the target is a directory, the disk is full)
            raise

    try:
        await asyncio.to_thread(write)
    except OSError as exc:
        raise StorageError(f"cannot write archive {target}: {exc}") from exc
    return {"path": str(target), "size_bytes": target.stat().st_size, "counts": manifest["counts"],
            "format_version": FORMAT_VERSION}


# ------------------------------------------------------------------------------------------------- import
def read_archive(path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[dict[str, Any], dict[str, list]]:
    """Open, check and parse an archive without writing anything.

    Args:
        path: the tar (optionally gzip/xz compressed) file.
        max_bytes: refuse archives whose members hold more bytes than this in total (and larger files).

    Returns:
        ``(manifest, {member: rows})``.

    Raises:
        ArchiveError: any reason listed in the module docstring.
    """
    p = check_path(path, "archive path")
    if not p.is_file():
        raise ArchiveError(f"archive {p} does not exist or is not a file")
    if p.stat().st_size > max_bytes:
        raise ArchiveError(f"archive {p} is larger than the limit of {max_bytes} bytes")
    raw: dict[str, bytes] = {}
    try:
        with tarfile.open(p, "r:*") as tar:
            total = 0
            for info in tar:
                name = info.name
                if info.issym() or info.islnk():
                    raise ArchiveError(f"archive member {name!r} is a link; links are refused")
                if not info.isfile():
                    raise ArchiveError(f"archive member {name!r} is not a regular file")
                if name.startswith("/") or ".." in name.replace("\\", "/").split("/") or name not in MEMBERS:
                    raise ArchiveError(f"archive member {name!r} is not an expected file name (unsafe path?)")
                if name in raw:
                    raise ArchiveError(f"archive member {name!r} appears twice")
                total += info.size
                if total > max_bytes:
                    raise ArchiveError(f"archive expands to more than the limit of {max_bytes} bytes")
                fh = tar.extractfile(info)
                assert fh is not None
                raw[name] = fh.read(info.size + 1)
                if len(raw[name]) != info.size:
                    raise ArchiveError(f"archive member {name!r} is truncated")
    except ArchiveError:
        raise
    except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError, ValueError) as exc:
        raise ArchiveError(f"archive {p} is damaged or not a tar file: {exc}") from None
    if "manifest.json" not in raw:
        raise ArchiveError("archive has no manifest.json")
    manifest = _json(raw.pop("manifest.json"), "manifest.json")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArchiveError("manifest.json does not describe an agentbase archive")
    version = manifest.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ArchiveError("manifest.json has no valid format_version")
    if version > FORMAT_VERSION:
        raise ArchiveError(f"archive format version {version} is newer than this AgentBase supports "
                           f"({FORMAT_VERSION}); upgrade agentbase to import it")
    files = manifest.get("files")
    if not isinstance(files, dict) or set(files) - set(_TABLES):
        raise ArchiveError("manifest.json lists unexpected files")
    if set(raw) != set(files):
        raise ArchiveError(f"archive members {sorted(raw)} do not match the manifest {sorted(files)}")
    tables: dict[str, list] = {m: [] for m in _TABLES}
    for name, blob in raw.items():
        want = files[name]
        if not isinstance(want, dict) or hashlib.sha256(blob).hexdigest() != want.get("sha256") \
                or len(blob) != want.get("bytes"):
            raise ArchiveError(f"archive member {name!r} does not match its checksum in the manifest (corrupt)")
        text = _utf8(blob, name)
        rows = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.strip():
                rows.append(_check_row(name, _json(line.encode(), f"{name} line {lineno}"), lineno))
        tables[name] = rows
    _check_references(tables)
    return manifest, tables


def _utf8(blob: bytes, name: str) -> str:
    try:
        return blob.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ArchiveError(f"archive member {name!r} is not UTF-8 ({exc.reason} at byte {exc.start})") from None


def _json(blob: bytes, where: str) -> Any:
    try:
        return json.loads(_utf8(blob, where))
    except json.JSONDecodeError as exc:
        raise ArchiveError(f"{where} is not valid JSON: {exc}") from None


def _check_values(row: dict[str, Any]) -> None:
    """Values the API never writes: NaN or infinite numbers (JSON text may spell them), text with lone surrogates
    (valid JSON escapes, not encodable), and for entries and relations scores outside 0..1 and negative counts.

    Raises:
        ValueError: naming the field.
    """
    for key, value in row.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{key} is not a finite number")
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(f"{key} holds a lone surrogate") from None
    for key in ("confidence", "importance"):
        value = row.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not 0.0 <= value <= 1.0):
            raise ValueError(f"{key} must be a number between 0 and 1")
    count = row.get("access_count")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
        raise ValueError("access_count must be a non-negative integer")


def _check_row(member: str, row: Any, lineno: int) -> dict[str, Any]:
    where = f"{member} line {lineno}"
    if not isinstance(row, dict):
        raise ArchiveError(f"{where}: expected a JSON object")
    for key in _TABLES[member]:
        if row.get(key) is None:
            raise ArchiveError(f"{where}: missing {key!r}")
    try:
        _check_values(row)
        for key in _TIME_FIELDS:
            if row.get(key) is not None:
                row[key] = to_db_time(datetime.fromisoformat(str(row[key])))
        for key in _JSON_FIELDS.get(member, ()):
            if row.get(key) is not None:
                json.loads(row[key])
        for key in ("id", "entry_id", "session_id", "skill_id", "subject_id", "object_id"):
            if row.get(key) is not None:
                check_id(row[key], key)
        if member == "entries.jsonl":
            ContextType(row["context_type"])
            Scope(row["scope"])
            if row["status"] not in ("active", "archived") or not isinstance(row["l2_full"], str):
                raise ValueError("bad status or content")
            _entry(row)  # every field must load as an Entry (types, ranges)
        if member == "history.jsonl" and row["event"] not in ("ADD", "UPDATE", "DELETE"):
            raise ValueError(f"bad event {row['event']!r}")
        if member == "messages.jsonl" and (isinstance(row["seq"], bool) or not isinstance(row["seq"], int)):
            raise ValueError("seq must be an integer")
        if member == "skill_files.jsonl":
            from .skills import safe_relpath

            safe_relpath(row["path"])
    except (ValueError, TypeError) as exc:
        raise ArchiveError(f"{where}: {exc}") from None
    return row


def _check_references(t: dict[str, list]) -> None:
    sessions = {r["id"] for r in t["sessions.jsonl"]}
    for r in t["messages.jsonl"]:
        if r["session_id"] not in sessions:
            raise ArchiveError(f"message {r['id']!r} belongs to a session missing from the archive")
    skills = {r["id"] for r in t["entries.jsonl"] if r["context_type"] == "skill"}
    for r in t["skill_files.jsonl"]:
        if r["skill_id"] not in skills:
            raise ArchiveError(f"skill file {r['path']!r} belongs to a skill missing from the archive")
    entities = {r["id"] for r in t["entities.jsonl"]}
    for r in t["relations.jsonl"]:
        if r["subject_id"] not in entities or r["object_id"] not in entities:
            raise ArchiveError(f"relation {r['id']!r} names an entity missing from the archive")
    for r in t["entity_aliases.jsonl"]:
        if r["entity_id"] not in entities:
            raise ArchiveError(f"alias {r['norm_alias']!r} names an entity missing from the archive")


def _entry(row: dict[str, Any]) -> Entry:
    return row_to_entry(tuple([0, *(row.get(c) for c in _ENTRY_NAMES)]))


async def _import_entries(ab: Any, conn: Any, t: dict[str, list], stats: dict[str, int]) -> None:
    db = ab.db
    history: dict[str, list[dict[str, Any]]] = {}
    for h in t["history.jsonl"]:
        history.setdefault(h["entry_id"], []).append(h)
    archived_ids = {r["id"] for r in t["entries.jsonl"]}
    now = to_db_time(utcnow())
    ops = conn.ops.archives
    table = await ops.entry_table_columns(conn)
    for row in t["entries.jsonl"]:
        local = await conn.ops.entries.row_by_id(conn, row["id"])
        new = _entry(row)
        if local is None:
            await ops.insert_entry_columns(
                conn, {c: row[c] for c in table if c in row and c not in ops.DERIVED_ENTRY_COLUMNS},
                _fts_source(new), new.tags)
            events = history.get(row["id"], [])
            await ops.insert_history_events(conn, events)
            if not events:
                await conn.ops.entries.record_history(conn, row["id"], "ADD", None, new.l2_full, now, {"source": "archive"})
            if row.get("embedded", True):
                await conn.ops.jobs.enqueue(conn, "embed", row["id"], now)
            stats["entries_added"] += 1
            continue
        old = row_to_entry(local)
        fields = ("l2_full", "tags", "metadata", "category", "status", "superseded_by", "name", "description",
                  "event_time", "confidence", "importance", "scope", "uri", "mime_type")
        if all(getattr(old, f) == getattr(new, f) for f in fields):
            stats["entries_unchanged"] += 1
            continue
        revised = new.model_copy(update={"created_at": old.created_at, "updated_at": utcnow()})
        await update_entry_row(conn, local[0], old, revised, engine=db.vector_engine)
        if old.status != new.status and all(getattr(old, f) == getattr(new, f)
                                            for f in ("l2_full", "metadata", "tags", "category")):
            await conn.ops.entries.record_history(conn, old.id, "UPDATE", old.l2_full, new.l2_full, now,
                                 {"fields": ["status"], "source": "archive"})
        stats["entries_updated"] += 1
    # the audit trail of entries deleted before the export
    orphans = [h for eid, hs in history.items() if eid not in archived_ids for h in hs]
    await ops.insert_history_events(conn, orphans)


async def _import_sessions(conn: Any, t: dict[str, list], stats: dict[str, int]) -> None:
    ops = conn.ops.archives
    added: set[str] = set()
    for s in t["sessions.jsonl"]:
        if await conn.ops.sessions.session_exists(conn, s["id"]):
            stats["sessions_skipped"] += 1
            continue
        row = {"user_id": None, "agent_id": None, "project_id": None, "status": "open", "metadata": "{}",
               "committed_seq": 0, **s}
        # An archive from before schema v7 has no enriched_seq: its commits were enriched inline.
        row.setdefault("enriched_seq", row["committed_seq"])
        await ops.insert_session(conn, row)
        seqs = (row["enriched_seq"], row["committed_seq"])
        if all(isinstance(v, int) for v in seqs) and seqs[0] < seqs[1]:  # exported with its enrichment queued
            await conn.ops.jobs.enqueue(conn, "enrich", row["id"], to_db_time(utcnow()))
        added.add(s["id"])
        stats["sessions_added"] += 1
    msgs = [{"name": None, "tool_calls": None, "tool_call_id": None, "metadata": "{}", **m}
            for m in t["messages.jsonl"] if m["session_id"] in added]
    await ops.insert_messages(conn, msgs)
    stats["messages_added"] += len(msgs)
    await ops.insert_links(conn, [{"message_seq": None, **link} for link in t["links.jsonl"]
                                  if link["session_id"] in added])


async def _import_graph(conn: Any, t: dict[str, list], stats: dict[str, int]) -> None:
    from .graph import normalize_name

    ops = conn.ops.archives
    aliases: dict[str, list[str]] = {}
    for a in t["entity_aliases.jsonl"]:
        aliases.setdefault(a["entity_id"], []).append(a["norm_alias"])
    mapping: dict[str, str] = {}
    for e in t["entities.jsonl"]:
        keys = [e["norm_name"], *aliases.get(e["id"], [])]
        names = json.loads(e.get("aliases") or "[]")
        local = None
        for key in keys:
            local = await conn.ops.graph.entity_id_for_alias(conn, key)
            if local:
                break
        if local is None:
            if await ops.entity_collides(conn, e["id"], e["norm_name"]):
                raise ArchiveError(f"entity {e['name']!r} collides with a local entity of another name")
            await ops.insert_entity_row(conn, e["id"], e["name"], e["norm_name"], e.get("type"),
                                        json.dumps(names, ensure_ascii=False), e["created_at"])
            local = e["id"]
            stats["entities_added"] += 1
        else:
            _id, name, _type, stored, _created = (await conn.ops.graph.entity_rows(conn, [local]))[0]
            have = json.loads(stored)
            known = {normalize_name(n) for n in [name, *have]}
            extra = [n for n in [e["name"], *names] if normalize_name(n) not in known]
            if extra:
                await ops.set_entity_alias_list(conn, local,
                                                json.dumps(have + list(dict.fromkeys(extra)), ensure_ascii=False))
        mapping[e["id"]] = local
        await ops.index_aliases(conn, local, keys)
    for r in t["relations.jsonl"]:
        exists, valid_to = await ops.relation_end(conn, r["id"])
        if exists:
            if valid_to is None and r.get("valid_to") is not None:
                await ops.set_relation_end(conn, r["id"], r["valid_to"])
            continue
        await conn.ops.graph.insert_relation(
            conn, r["id"], mapping[r["subject_id"]], r["predicate"], mapping[r["object_id"]],
            valid_from=r.get("valid_from"), valid_to=r.get("valid_to"), source_entry_id=r.get("source_entry_id"),
            confidence=float(r.get("confidence", 1.0)), now=r["created_at"])
        stats["relations_added"] += 1


async def import_archive(ab: Any, path: str | Path, *, max_bytes: int) -> dict[str, Any]:
    """See :meth:`AgentBase.import_archive`."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValidationError("max_bytes must be a positive integer")
    manifest, t = await asyncio.to_thread(read_archive, path, max_bytes=max_bytes)
    db = await ab._open()
    stats = dict.fromkeys(("entries_added", "entries_updated", "entries_unchanged", "sessions_added",
                           "sessions_skipped", "messages_added", "entities_added", "relations_added",
                           "skill_files"), 0)
    async with db.transaction() as conn:
        await _import_entries(ab, conn, t, stats)
        await _import_sessions(conn, t, stats)
        await _import_graph(conn, t, stats)
        await conn.ops.archives.upsert_skill_files(
            conn, [(f["skill_id"], f["path"], f["content"], int(f.get("size_bytes") or len(f["content"].encode())),
                    f.get("sha256") or hashlib.sha256(f["content"].encode()).hexdigest())
                   for f in t["skill_files.jsonl"]])
        stats["skill_files"] = len(t["skill_files.jsonl"])
    ab._notify()
    return {**stats, "format_version": manifest["format_version"], "created_at": manifest.get("created_at")}


