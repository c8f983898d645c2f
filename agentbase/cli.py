"""The ``agentbase`` command line (Typer + Rich). Every command takes ``--db`` and most take ``--json``.

Exit status of every command: 0 success, 1 not found (:class:`NotFoundError`), 2 bad input or usage
(:class:`ConfigError`, :class:`ValidationError`, :class:`UsageError`, a missing extra, a bad option),
3 any other AgentBase failure (storage, embedder). Entry ids may be given as a unique prefix of at least
8 characters.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from .cli_bench import bench_app
from .errors import (AgentBaseError, ConfigError, MissingDependencyError, NotFoundError, UsageError,
                     ValidationError)
from .validation import check_path

app = typer.Typer(help="AgentBase: a context database for AI agents in one SQLite file.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
session_app = typer.Typer(help="Conversation sessions.", no_args_is_help=True)
import_app = typer.Typer(help="Import benchmark conversations (one session per haystack/LoCoMo session).",
                         no_args_is_help=True)
app.add_typer(session_app, name="session")


def _version(value: bool) -> None:
    if value:
        from . import __version__

        console.print(f"agentbase {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """AgentBase: a context database for AI agents in one SQLite file."""
app.add_typer(import_app, name="import")
app.add_typer(bench_app, name="bench")

# Markup off: stored text, ids and paths are data ("[/x]" in a memory crashed Rich's markup parser after the
# write had landed, and "[red]...[/red]" lost its brackets). Styled prefixes are built with rich.text.Text.
class _Console(Console):
    """Rich's console, ending the command with status 141 (128 + SIGPIPE, what the shell reports for a program
    killed by a closed pipe) when stdout closes early (``agentbase session list | head``); Rich's own exit is 1,
    which this CLI uses for "not found"."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(141)


console = _Console(markup=False)
err = _Console(stderr=True, markup=False)


def _tagged(label: str, style: str, message: str) -> Text:
    """``label`` in ``style`` followed by ``message`` as plain text."""
    return Text(label, style=style) + Text(f" {message}")

DbOpt = typer.Option(None, "--db", show_default=False, envvar="AGENTBASE_DB",
                     help="Database file or postgresql:// URL (default: $AGENTBASE_DB, else storage.url, i.e. "
                          "AGENTBASE_STORAGE__URL, else agentbase.db).")
JsonOpt = typer.Option(False, "--json", help="Print JSON.")
EmbOpt = typer.Option(None, "--embedder", help="Embedder provider: local, onnx, openai, hash, none.")


def _db(path: str | None, embedder: str | None = None, *, existing: bool = False) -> Any:
    """An AgentBase on ``path`` (a SQLite file or a ``postgresql://`` URL); ``None`` (no ``--db``, no
    ``AGENTBASE_DB``) is what ``AgentBase()`` opens without a path: ``storage.url`` (``AGENTBASE_STORAGE__URL``)
    when set, else ``agentbase.db``. With ``existing=True`` a missing file is a UsageError (exit 2), so reading or
    deleting through a mistyped ``--db`` never creates an empty database. A URL is never looked up as a file: the
    database is opened, and a server that cannot be reached, a database that does not exist or a wrong password is
    a StorageError (exit 3) naming the URL with its password hidden. The URL's passwords are remembered so that
    :func:`_fail` hides them in any message (see :func:`_secrets`).

    Raises:
        UsageError: ``existing`` and no file at the path. ConfigError: see :class:`~agentbase.engine.AgentBase`."""
    from .engine import DEFAULT_PATH, AgentBase

    ab = AgentBase(DEFAULT_PATH if path is None else path, **({"embedder": embedder} if embedder else {}))
    if ab.url is not None:
        _SECRETS.update(_secrets(ab.url))
    elif existing and not ab.path.exists():
        raise UsageError(f"no database at {ab.path}; create one with `agentbase init --db {ab.path}`")
    return ab


_SECRETS: set[str] = set()  # passwords of the URLs this process was given; _fail replaces them by ***
_SECRET_MIN = 4  # shorter strings are not scrubbed from messages (they would mangle ordinary words)


def _secrets(url: str) -> set[str]:
    """The passwords in ``url``, as written and percent-decoded: the ``user:password@`` one and every ``password=``
    query value (what :func:`redact_url` hides), those of at least ``_SECRET_MIN`` characters."""
    from urllib.parse import unquote, urlsplit

    try:
        parts = urlsplit(url.strip())
        found = [parts.netloc.rpartition("@")[0].partition(":")[2]] if "@" in parts.netloc else []
    except ValueError:
        return set()
    found += [v for k, _, v in (p.partition("=") for p in parts.query.split("&"))
              if unquote(k).strip().lower() == "password"]
    return {x for v in found for x in (v, unquote(v)) if len(x) >= _SECRET_MIN}


def _scrub(message: str) -> str:
    """``message`` with each remembered URL password (:data:`_SECRETS`) replaced by ``***``, longest first."""
    for secret in sorted(_SECRETS, key=len, reverse=True):
        message = message.replace(secret, "***")
    return message


EXIT_NOT_FOUND, EXIT_USAGE, EXIT_FAILED = 1, 2, 3
ID_PREFIX_MIN = 8


def _fail(exc: AgentBaseError) -> typer.Exit:
    """Print ``exc`` and return the Exit with its documented status (1 not found, 2 bad input, 3 other)."""
    err.print(_tagged("error:", "red", _scrub(str(exc))), soft_wrap=True)
    if isinstance(exc, NotFoundError):
        return typer.Exit(EXIT_NOT_FOUND)
    if isinstance(exc, (ConfigError, UsageError, MissingDependencyError)):
        return typer.Exit(EXIT_USAGE)
    return typer.Exit(EXIT_FAILED)


def _path(value: str, what: str) -> Path:
    """A path argument; an empty one is refused (typer's ``Path("")`` would be the current folder)."""
    try:
        return check_path(value, what, error=UsageError)
    except UsageError as exc:
        raise _fail(exc) from None


def _run(coro: Any) -> Any:
    try:
        return asyncio.run(coro)
    except AgentBaseError as exc:
        raise _fail(exc) from None


async def _full_id(ref: str, what: str, exists: Any, with_prefix: Any) -> str:
    """The one full id that is ``ref`` or starts with ``ref`` (a prefix of at least 8 characters, as git takes a
    short commit id). Generated ids are lower-case uuids, so a ``ref`` that finds nothing as typed is tried in lower
    case too ("BEC56117" names bec56117-...).

    Args:
        ref: what the user typed. what: ``"entry"`` or ``"trace"`` (for messages).
        exists: coroutine function ``id -> bool``. with_prefix: public ``*_ids_with_prefix(prefix, limit=)``; the
            id reaches SQL only as a bound parameter.

    Raises:
        NotFoundError: nothing matches.
        ValidationError: a malformed id, or a prefix shared by several (they are named).
    """
    if await exists(ref):
        return ref
    matches = await with_prefix(ref, limit=11) if len(ref) >= ID_PREFIX_MIN else []
    if not matches and ref != ref.lower():
        return await _full_id(ref.lower(), what, exists, with_prefix)
    if not matches:
        short = len(ref) < ID_PREFIX_MIN
        raise NotFoundError(f"{what} {ref!r} not found"
                            + (f" (an id prefix needs at least {ID_PREFIX_MIN} characters)" if short else ""))
    if len(matches) > 1:
        many = len(matches) > 10
        shown = ", ".join(matches[:10]) + (", ..." if many else "")
        count = "more than 10" if many else str(len(matches))
        raise ValidationError(f"id prefix {ref!r} is ambiguous: it matches {count} {what} ids: {shown}")
    return matches[0]


async def _find_entry(ab: Any, ref: str) -> Any:
    """The entry whose id is ``ref`` or starts with ``ref`` (see :func:`_full_id`)."""
    async def exists(i: str) -> bool:
        return await ab.get(i) is not None
    return await ab.get(await _full_id(ref, "entry", exists, ab.ids_with_prefix))


async def _find_trace(ab: Any, ref: str) -> Any:
    """The persisted trace whose id is ``ref`` or starts with ``ref`` (see :func:`_full_id`)."""
    async def exists(i: str) -> bool:
        try:
            await ab.get_trace(i)
        except NotFoundError:
            return False
        return True
    return await ab.get_trace(await _full_id(ref, "trace", exists, ab.trace_ids_with_prefix))


def _out(obj: Any, as_json: bool) -> None:
    if as_json:
        if sys.stdout is None:  # started with stdout closed (`>&-`): nothing can be shown
            return
        try:
            sys.stdout.write(json.dumps(obj, default=str, ensure_ascii=False, indent=2) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:  # the reader left early (`| head`): 141, as for the console's output
            console.on_broken_pipe()
    elif isinstance(obj, dict):  # one "key: value" line each; nested values as compact JSON
        for key, value in obj.items():
            console.print(f"{key}: {_shown(value)}", soft_wrap=True)
    else:
        console.print(obj)


def _shown(value: Any) -> str:
    """A record field on one line: printable text as it is, anything else as JSON with every character that is
    not printable escaped (line breaks, C0/C1 controls, bidi overrides: nothing reaches the terminal raw)."""
    if isinstance(value, str) and value.isprintable():
        return value
    text = json.dumps(value, default=str, ensure_ascii=False)
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"
                   for c in text)


def _cell(value: Any) -> Text:
    """Stored text for a table cell or a line: :func:`_shown`, and never read as Rich markup ("[red]")."""
    return Text(_shown(value))


def _dump(model: Any) -> Any:
    return model.model_dump(mode="json") if hasattr(model, "model_dump") else model


@app.command()
def init(db: Optional[str] = DbOpt, as_json: bool = JsonOpt) -> None:
    """Create (or upgrade) the database file and print its facts."""
    async def go() -> Any:
        async with _db(db) as ab:
            return await ab.stats()
    _out(_run(go()), as_json)


@app.command()
def add(content: str, db: Optional[str] = DbOpt, category: str = "fact", tag: list[str] = typer.Option([], "--tag"),
        user_id: Optional[str] = None, agent_id: Optional[str] = None, as_json: bool = JsonOpt) -> None:
    """Add a memory (a duplicate of one the owners already have is merged into it: its confidence rises)."""
    started = datetime.now(timezone.utc)

    async def go() -> Any:
        async with _db(db) as ab:
            e = await ab.add_memory(content, category=category, tags=tag, user_id=user_id, agent_id=agent_id)
            await ab.flush(timeout=60)
            return e
    e = _run(go())
    if as_json:
        _out(_dump(e), as_json)
    elif e.created_at < started:
        console.print(f"merged into {e.id} (a duplicate of it; confidence now {e.confidence:.2f})", soft_wrap=True)
    else:
        console.print(f"added {e.id}")


@app.command()
def find(query: str, db: Optional[str] = DbOpt, top_k: int = typer.Option(5, "--top-k", "-k"), user_id: Optional[str] = None,
         mode: str = "hybrid", embedder: Optional[str] = EmbOpt,
         reference_time: Optional[str] = typer.Option(None, "--reference-time",
                                                      help="'Now' for time words in the query (UTC; default now)."),
         as_json: bool = JsonOpt) -> None:
    """Search the database; prints the trace id once the trace is stored (``agentbase trace ID`` shows it)."""
    async def go() -> None:
        async with _db(db, embedder, existing=True) as ab:
            found = await ab.find(query, top_k=top_k, user_id=user_id, mode=mode, reference_time=reference_time)
            degraded = ab.degrade_reason() if mode == "hybrid" else None
            if degraded:  # on stderr: --json output stays parseable
                err.print(_tagged("warning:", "yellow", degraded))
            if not as_json:  # the table first: storing the trace waits while another process writes
                show(found)
            trace_id = found[0].trace_id if found else None
            if trace_id is not None and not await stored(ab, trace_id):
                err.print(_tagged("warning:", "yellow", "the retrieval trace could not be stored (another "
                                  "process held the write lock past storage.busy_timeout_s); no trace id"))
                found = [r.model_copy(update={"trace_id": None}) for r in found]
                trace_id = None
            if as_json:
                _out([_dump(r) for r in found], True)
            elif trace_id:
                console.print(f"trace: {trace_id}")

    async def stored(ab: Any, trace_id: str) -> bool:
        try:
            await ab.get_trace(trace_id)  # stores what is queued, then reads it back
        except NotFoundError:
            return False
        return True

    def show(results: list[Any]) -> None:
        table = Table("score", "matched_by", "category", "text", "id")
        for r in results:
            table.add_row(f"{r.score:.3f}", r.matched_by, _cell(r.entry.category), _cell(r.text[:100]),
                          _cell(r.entry.id[:8]))
        console.print(table)

    _run(go())


@app.command()
def get(entry_id: str, db: Optional[str] = DbOpt, as_json: bool = JsonOpt) -> None:
    """Show one entry (ENTRY_ID may be a unique id prefix of at least 8 characters)."""
    async def go() -> Any:
        async with _db(db, "none", existing=True) as ab:
            return await _find_entry(ab, entry_id)
    _out(_dump(_run(go())), as_json)


@app.command("list")
def list_cmd(db: Optional[str] = DbOpt, user_id: Optional[str] = None, agent_id: Optional[str] = None,
             session_id: Optional[str] = None,
             context_type: Optional[str] = typer.Option(None, "--type", help="memory, resource or skill."),
             category: Optional[str] = None, tag: list[str] = typer.Option([], "--tag", help="Repeatable."),
             limit: int = typer.Option(20, help="Entries to show (1-10000), newest first."),
             offset: int = typer.Option(0, help="Entries to skip."), as_json: bool = JsonOpt) -> None:
    """List entries newest first, with how many match in all (the same total as MCP's list_entries and the
    HTTP API's GET /api/v1/entries)."""
    filters = {k: v for k, v in dict(user_id=user_id, agent_id=agent_id, session_id=session_id,
                                     context_type=context_type, category=category, tags=tag or None).items()
               if v is not None}

    async def go() -> Any:
        async with _db(db, "none", existing=True) as ab:
            return await ab.list(limit=limit, offset=offset, **filters), await ab.count(**filters)
    entries, total = _run(go())
    if as_json:
        _out({"entries": [_dump(e) for e in entries], "count": len(entries), "total": total}, True)
        return
    table = Table("id", "type", "category", "owner", "created (UTC)", "text")
    for e in entries:
        table.add_row(_cell(e.id[:ID_PREFIX_MIN]), e.context_type.value, _cell(e.category), _cell(e.user_id or ""),
                      e.created_at.strftime("%Y-%m-%d %H:%M"), _cell(e.l1_overview[:80]))
    console.print(table)
    if entries:
        console.print(f"{offset + 1}-{offset + len(entries)} of {total} entries", highlight=False)
    else:  # past the end (or nothing matches): no range to show
        console.print(f"0 of {total} entries" + (f" (offset {offset} is past the end)" if offset else ""),
                      highlight=False)


@app.command()
def delete(entry_id: str, db: Optional[str] = DbOpt) -> None:
    """Delete one entry from every index (ENTRY_ID may be a unique id prefix of at least 8 characters)."""
    async def go() -> Any:
        async with _db(db, "none", existing=True) as ab:
            full_id = (await _find_entry(ab, entry_id)).id
            if not await ab.delete(full_id):
                raise NotFoundError(f"entry {full_id!r} not found")
            return full_id
    console.print(f"deleted {_run(go())}")


@app.command()
def stats(db: Optional[str] = DbOpt, as_json: bool = JsonOpt) -> None:
    """Counts, driver, vector engine and embedder."""
    async def go() -> Any:
        async with _db(db, existing=True) as ab:
            return await ab.stats()
    _out(_run(go()), as_json)


@app.command()
def reindex(db: Optional[str] = DbOpt, embedder: Optional[str] = EmbOpt, as_json: bool = JsonOpt) -> None:
    """Rebuild FTS and re-embed every entry with the configured embedder."""
    async def go() -> Any:
        async with _db(db, embedder, existing=True) as ab:
            out = await ab.reindex()
            if not ab.embedding_enabled:
                return out
            with _progress() as prog:
                task = prog.add_task("embedding", total=out["jobs"])
                while True:
                    left = await ab.flush(timeout=2)
                    prog.update(task, completed=out["jobs"] - left)
                    if left == 0 or not ab.embedding_enabled:
                        break
            return out
    _out(_run(go()), as_json)


@app.command()
def trace(trace_id: str, db: Optional[str] = DbOpt, as_json: bool = JsonOpt) -> None:
    """Show a retrieval trace: each step with latency and candidate counts (TRACE_ID may be a unique id prefix of
    at least 8 characters)."""
    async def go() -> Any:
        async with _db(db, "none", existing=True) as ab:
            return await _find_trace(ab, trace_id)
    t = _run(go())
    if as_json:
        _out(_dump(t), True)
        return
    _print_trace(t)


def _print_trace(t: Any) -> None:
    table = Table("step", "ms", "in", "out", "details", title=f"trace {t.id} ({t.total_ms:.1f} ms)")
    for s in t.steps:
        details = {k: v for k, v in s.details.items() if k != "why"}
        table.add_row(s.name, f"{s.latency_ms:.2f}", str(s.candidates_in), str(s.candidates_out),
                      _cell(json.dumps(details, ensure_ascii=False, default=str)[:80]))
    console.print(table)
    if t.degrade_reason:
        console.print(_tagged("degraded:", "yellow", t.degrade_reason))


@session_app.command("create")
def session_create(db: Optional[str] = DbOpt, user_id: Optional[str] = None, agent_id: Optional[str] = None,
                   session_id: Optional[str] = None, as_json: bool = JsonOpt) -> None:
    """Create a session and print its id."""
    async def go() -> Any:
        async with _db(db, "none") as ab:
            return await ab.create_session(session_id=session_id, user_id=user_id, agent_id=agent_id)
    s = _run(go())
    _out(_dump(s), True) if as_json else console.print(_shown(s.id), markup=False, highlight=False)


@session_app.command("add-message")
def session_add_message(session_id: str, role: str, content: str, db: Optional[str] = DbOpt, name: Optional[str] = None,
                        as_json: bool = JsonOpt) -> None:
    """Append a message to a session."""
    async def go() -> Any:
        async with _db(db, "none", existing=True) as ab:
            return await ab.add_message(session_id, role, content, name=name)
    m = _run(go())
    _out(_dump(m), True) if as_json else console.print(f"{_shown(m.id)} seq={m.seq}", markup=False, highlight=False)


@session_app.command("commit")
def session_commit(session_id: str, db: Optional[str] = DbOpt, as_json: bool = JsonOpt) -> None:
    """Commit a session into memories (zero LLM calls)."""
    async def go() -> Any:
        async with _db(db, existing=True) as ab:
            out = await ab.commit_session(session_id)
            await ab.flush(timeout=120)
            return out
    _out(_run(go()), as_json)


@session_app.command("list")
def session_list(db: Optional[str] = DbOpt, user_id: Optional[str] = None, agent_id: Optional[str] = None,
                 limit: int = typer.Option(20, help="Sessions to show (1-10000), newest first."),
                 offset: int = typer.Option(0, help="Sessions to skip."), as_json: bool = JsonOpt) -> None:
    """List sessions, newest first (optionally one owner's): id, owner, status, messages committed, last update."""
    async def go() -> Any:
        async with _db(db, "none", existing=True) as ab:
            return await ab.list_sessions(user_id=user_id, agent_id=agent_id, limit=limit, offset=offset)
    sessions = _run(go())
    if as_json:
        _out([_dump(s) for s in sessions], True)
        return

    def shown(value: str) -> str:  # an id with a line break or other control character is quoted, on one line
        return value if value.isprintable() else repr(value)

    for s in sessions:  # one line each, the id whole (to copy into `session show`)
        owner = " ".join(f"{k}={shown(v)}" for k, v in (("user", s.user_id), ("agent", s.agent_id)) if v)
        console.print(f"{shown(s.id)}  {owner or '-'}  {s.status}  committed={s.committed_seq}  "
                      f"updated={s.updated_at.strftime('%Y-%m-%d %H:%M')} UTC", markup=False, highlight=False,
                      soft_wrap=True)
    if not sessions:
        err.print("no sessions")


@session_app.command("show")
def session_show(session_id: str, db: Optional[str] = DbOpt, as_json: bool = JsonOpt) -> None:
    """Show a session and its messages."""
    async def go() -> Any:
        async with _db(db, "none", existing=True) as ab:
            s = await ab.get_session(session_id)
            if s is None:
                raise NotFoundError(f"session {session_id!r} not found")
            return s, await ab.get_messages(session_id)
    s, msgs = _run(go())
    if as_json:
        _out({"session": _dump(s), "messages": [_dump(m) for m in msgs]}, True)
        return
    user = s.user_id if s.user_id is None else _shown(s.user_id)
    console.print(f"session {_shown(s.id)} ({s.status}, user={user}, {len(msgs)} messages)", markup=False,
                  highlight=False)
    for m in msgs:
        speaker = f"{m.role} ({m.name})" if m.name else m.role
        console.print(f"  {m.seq:>4} {_shown(speaker)}: {_shown(m.content[:120])}", markup=False, highlight=False)


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=err)


async def _ingest_all(ab: Any, convs: list[Any]) -> dict[str, int]:
    from .datasets import ingest_conversation

    total = {"sessions": 0, "messages": 0, "entries": 0, "sessions_existing": 0}
    with _progress() as prog:
        task = prog.add_task("ingest", total=sum(len(c.sessions) for c in convs))
        for c in convs:
            for s in c.sessions:
                sub = type(c)(c.conversation_id, [s], [], c.user_id)
                counts = await ingest_conversation(ab, sub)
                for k in total:
                    total[k] += counts[k]
                prog.advance(task)
        pending = await ab.flush(timeout=0)
        if ab.embedding_enabled:
            jt = prog.add_task("embed", total=pending or 1)
            while pending:
                pending = await ab.flush(timeout=1)
                prog.update(jt, completed=(prog.tasks[jt].total or 0) - pending)
            prog.update(jt, completed=prog.tasks[jt].total)
    if pending:  # no embedder can run them here: they wait in the file for one that can
        total["embedding_jobs_queued"] = pending
    return total


@import_app.command("longmemeval")
def import_longmemeval(file: Path, db: Optional[str] = DbOpt,
                       limit: int = typer.Option(1, min=1, help="Questions to import."),
                       embedder: Optional[str] = EmbOpt, as_json: bool = JsonOpt) -> None:
    """Import the haystacks of the first LIMIT LongMemEval questions (sessions keep their dates)."""
    from .datasets import load_json, longmemeval_conversation, records

    async def go() -> Any:
        # the file is read and checked before the database is opened: a wrong file creates nothing
        convs = [longmemeval_conversation(r) for r in records(load_json(file), "LongMemEval")[:limit]]
        async with _db(db, embedder) as ab:
            return await _ingest_all(ab, convs)
    _out(_run(go()), as_json)


@import_app.command("locomo")
def import_locomo(file: Path, db: Optional[str] = DbOpt,
                  limit: int = typer.Option(1, min=1, help="Conversations to import."),
                  embedder: Optional[str] = EmbOpt, as_json: bool = JsonOpt) -> None:
    """Import LoCoMo conversations (speakers as message names, session dates as times)."""
    from .datasets import load_json, locomo_conversations

    async def go() -> Any:
        convs = list(locomo_conversations(load_json(file)))[:limit]
        async with _db(db, embedder) as ab:
            return await _ingest_all(ab, convs)
    _out(_run(go()), as_json)


@app.command()
def demo(data: Optional[Path] = typer.Option(None, help="A LongMemEval (.json/.json.xz) or LoCoMo file."),
         db: str = typer.Option("agentbase_demo.db", "--db"), questions: int = typer.Option(5, min=1),
         embedder: Optional[str] = EmbOpt) -> None:
    """Build a database from a multi-session conversation and answer questions with evidence and traces."""
    from .demo import run_demo

    _run(run_demo(data, db, questions, embedder, console, _ingest_all, _print_trace))


def main() -> None:  # pragma: no cover
    app()


_LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")  # uvicorn's


@app.command()
def serve(db: Optional[str] = DbOpt, host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind."),
          port: int = typer.Option(8000, "--port", min=1, max=65535, help="TCP port."),
          token: list[str] = typer.Option([], "--token", help="Accepted bearer token (repeatable); adds to "
                                          "AGENTBASE_AUTH__TOKENS."),
          embedder: Optional[str] = EmbOpt,
          log_level: str = typer.Option("info", "--log-level",
                                        help="uvicorn log level: critical, error, warning, info, debug, trace.")
          ) -> None:
    """Serve the HTTP API with uvicorn: OpenAI-compatible /v1/threads and /v1/conversations.

    Binding to a non-loopback --host is refused unless bearer tokens are configured (--token or
    AGENTBASE_AUTH__TOKENS); with tokens every request must send ``Authorization: Bearer <token>``.
    """
    import ipaddress

    from .config import load_settings

    if log_level not in _LOG_LEVELS:
        raise _fail(ConfigError(f"--log-level must be one of {', '.join(_LOG_LEVELS)}, got {log_level!r}"))

    try:
        import uvicorn

        from .web import create_app
    except ImportError:
        err.print(_tagged("error:", "red", "the web extra is missing; run: pip install 'agentbase[web]'"))
        raise typer.Exit(EXIT_USAGE) from None
    try:
        # an empty token authenticates nobody (the app drops it): it must not count as authentication here
        tokens = [t for t in dict.fromkeys([*token, *load_settings().auth.tokens]) if t]
    except AgentBaseError as exc:
        raise _fail(exc) from None
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = False
    if not loopback and not tokens:
        err.print(_tagged("error:", "red", f"refusing to serve on {host} without authentication; bind to 127.0.0.1 "
                          "or configure bearer tokens (--token or AGENTBASE_AUTH__TOKENS)"), soft_wrap=True)
        raise typer.Exit(EXIT_USAGE)
    try:
        ab = _db(db, embedder)
    except AgentBaseError as exc:
        raise _fail(exc) from None
    try:  # open the file now: a directory or a non-SQLite file is an error here, not a 500 on every request
        ab.sync.initialize()
    except AgentBaseError as exc:
        ab.sync.close()
        raise _fail(exc) from None
    shown = f"[{host}]" if ":" in host else host
    console.print(f"AgentBase serving {ab.location} at http://{shown}:{port}/v1 (OpenAI base_url)"
                  + (" - bearer token required" if tokens else ""), soft_wrap=True)
    try:
        uvicorn.run(create_app(ab, tokens=tokens), host=host.strip("[]"), port=port, log_level=log_level)
    finally:
        ab.sync.close()


# ---------------------------------------------------------------- skills, lifecycle, archives, graph (issue 6)
skill_app = typer.Typer(help="Skills (SKILL.md folders).", no_args_is_help=True)
graph_app = typer.Typer(help="The temporal entity graph.", no_args_is_help=True)
app.add_typer(skill_app, name="skill")
app.add_typer(graph_app, name="graph")


@skill_app.command("import")
def skill_import(directory: str, db: Optional[str] = DbOpt, user_id: Optional[str] = None, agent_id: Optional[str] = None,
                 project_id: Optional[str] = None, as_json: bool = JsonOpt) -> None:
    """Import a skill folder with SKILL.md at its root (refused whole on symlinks, non-UTF-8, limits...)."""
    directory = _path(directory, "skill folder")
    if not (directory / "SKILL.md").is_file():  # checked before the database is opened: no file is created
        raise _fail(UsageError(f"{directory} is not a skill folder: it has no SKILL.md at its root"))

    async def go() -> Any:
        async with _db(db) as ab:
            e = await ab.import_skill_dir(directory, user_id=user_id, agent_id=agent_id, project_id=project_id)
            files = await ab.get_skill_files(e.id)
            await ab.flush(timeout=60)
            return e, files
    e, files = _run(go())
    if as_json:
        _out({"skill": _dump(e), "files": sorted(files)}, True)
    else:
        console.print(f"imported skill {e.name!r} ({len(files)} files) as {e.id}")


@app.command()
def forget(db: Optional[str] = DbOpt, decay: bool = typer.Option(False, "--decay", help="Run a decay pass."),
           threshold: float = typer.Option(0.05, help="Strength below which memories are archived (0..1)."),
           purge: bool = typer.Option(False, "--purge", help="Delete instead of archive."),
           tau0_days: float = typer.Option(30.0, help="Decay time constant of an unrecalled memory, days."),
           as_json: bool = JsonOpt) -> None:
    """Forget weak memories: strength exp(-age / (tau0 * 1.5^recalls)) below THRESHOLD is archived or purged."""
    if not decay:
        err.print(_tagged("error:", "red", "nothing to do: pass --decay to run a decay pass"))
        raise typer.Exit(EXIT_USAGE)

    async def go() -> Any:
        async with _db(db, "none", existing=True) as ab:
            return await ab.decay_pass(threshold, purge=purge, tau0_days=tau0_days)
    out = _run(go())
    if as_json:
        _out(out, True)
    else:
        verb = "deleted" if purge else "archived"
        console.print(f"scanned {out['scanned']}, {verb} {len(out['deleted'] if purge else out['archived'])}")


def _backup_dir(ab: Any) -> Path:
    """``backup``'s default folder: ``<file>.backups`` beside a SQLite file; for a PostgreSQL URL
    ``<database name>.backups`` in the current folder (never a path made of the URL, which holds the password)."""
    if ab.url is None:
        return Path(f"{ab.path}.backups")
    from .lifecycle import _database_name

    return Path(f"{_database_name(ab.url)}.backups")


@app.command()
def backup(db: Optional[str] = DbOpt, keep: Optional[int] = typer.Option(None, "--keep", help="Keep the newest N backups."),
           directory: Optional[str] = typer.Option(None, "--dir", help="Backup folder (default: <db>.backups)."),
           as_json: bool = JsonOpt) -> None:
    """Copy the database with SQLite's online backup API to a timestamped file."""
    dest = None if directory is None else _path(directory, "--dir")

    async def go() -> Any:
        async with _db(db, "none", existing=True) as ab:
            return await ab.backup(dest or _backup_dir(ab), keep=keep)
    out = _run(go())
    _out(out, True) if as_json else console.print(f"backup written to {out['path']} ({out['size_bytes']} bytes)")


@app.command()
def migrate(source: str = typer.Option(..., "--from", help="The AgentBase SQLite file to copy."),
            target: str = typer.Option(..., "--to", help="postgresql://user:password@host/db (empty database)."),
            as_json: bool = JsonOpt) -> None:
    """Copy a SQLite file into an empty PostgreSQL database (everything; one transaction) and print the counts.

    A missing --from, a folder or a file that is not an AgentBase database exits 2 and is left unchanged; a
    destination that holds rows (or that another migrate filled meanwhile) exits 3 and nothing is written."""
    from .storage import migrate_to_postgres
    from .storage.postgres.connection import is_postgres_url, redact_url

    src = _path(source, "--from")
    if not is_postgres_url(target):
        raise _fail(UsageError(f"--to must be a postgresql:// URL, got {redact_url(target)!r}"))
    _SECRETS.update(_secrets(target))
    counts = _run(migrate_to_postgres(src, target))
    if as_json:
        _out({"from": str(src), "to": redact_url(target),
              "tables": {t: {"source": a, "copied": b} for t, (a, b) in counts.items()}}, True)
        return
    table = Table("table", "source rows", "copied rows", title=f"{src} -> {redact_url(target)}")
    for name, (a, b) in counts.items():
        table.add_row(name, str(a), str(b))
    console.print(table)


@app.command("export")
def export_cmd(file: str, db: Optional[str] = DbOpt, as_json: bool = JsonOpt) -> None:
    """Export everything (entries, history, sessions, graph, skills) to a portable tar archive."""
    target = _path(file, "archive path")

    async def go() -> Any:
        async with _db(db, "none", existing=True) as ab:
            return await ab.export_archive(target)
    out = _run(go())
    _out(out, True) if as_json else console.print(f"exported to {out['path']}: {out['counts']}")


@app.command("import-archive")
def import_archive_cmd(file: str, db: Optional[str] = DbOpt, max_bytes: int = typer.Option(1 << 30, help="Size limit."),
                       embedder: Optional[str] = EmbOpt, as_json: bool = JsonOpt) -> None:
    """Merge an archive into the database (refused whole if unsafe, corrupt or too new); re-embeds entries."""
    source = _path(file, "archive path")

    async def go() -> Any:
        # not `async with`, which opens (creates) the file first: import_archive checks the archive whole before
        # it opens the database, so a wrong or broken archive creates no database
        ab = _db(db, embedder)
        try:
            return await ab.import_archive(source, max_bytes=max_bytes)
        finally:
            await ab.close()
    _out(_run(go()), as_json)


@graph_app.command("facts")
def graph_facts(entity: str, db: Optional[str] = DbOpt, as_of: Optional[str] = typer.Option(None, "--as-of",
                                                                                 help="UTC date/time."),
                as_json: bool = JsonOpt) -> None:
    """Relations of ENTITY valid at --as-of (default now)."""
    async def go() -> Any:
        async with _db(db, "none", existing=True) as ab:
            return await ab.facts(entity, as_of=as_of)
    rels = _run(go())
    if as_json:
        _out([_dump(r) for r in rels], True)
        return
    table = Table("subject", "predicate", "object", "valid_from", "valid_to", "confidence")
    for r in rels:
        table.add_row(_cell(r.subject), _cell(r.predicate), _cell(r.object), str(r.valid_from or ""),
                      str(r.valid_to or ""), f"{r.confidence:.2f}")
    console.print(table)


@graph_app.command("timeline")
def graph_timeline(entity: str, db: Optional[str] = DbOpt, as_json: bool = JsonOpt) -> None:
    """Every relation of ENTITY, open and closed, by valid_from."""
    async def go() -> Any:
        async with _db(db, "none", existing=True) as ab:
            return await ab.timeline(entity)
    rels = _run(go())
    if as_json:
        _out([_dump(r) for r in rels], True)
        return
    for r in rels:
        console.print(f"{r.valid_from or '?'} .. {r.valid_to or 'now'}  {_shown(r.subject)} {_shown(r.predicate)} "
                      f"{_shown(r.object)}", markup=False, highlight=False)



@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def mcp(ctx: typer.Context) -> None:
    """Serve the database over MCP (stdio; --http for streamable HTTP). Same options as `agentbase-mcp`."""
    try:
        from .mcp import main as mcp_main
    except ImportError:
        err.print(_tagged("error:", "red", "the mcp extra is missing; run: pip install 'agentbase[mcp]'"))
        raise typer.Exit(EXIT_USAGE) from None
    raise typer.Exit(mcp_main(list(ctx.args)))


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def web(ctx: typer.Context) -> None:
    """Serve the dashboard: `agentbase web DB [PORT] [--host H]`. Same options as `agentbase-web`."""
    try:
        from .web.dashboard import main as web_main
    except ImportError:
        err.print(_tagged("error:", "red", "the web extra is missing; run: pip install 'agentbase[web]'"))
        raise typer.Exit(EXIT_USAGE) from None
    raise typer.Exit(web_main(list(ctx.args)))


if __name__ == "__main__":  # pragma: no cover
    main()
