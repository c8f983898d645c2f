"""``agentbase-mcp``: AgentBase as a Model Context Protocol server (``pip install 'agentbase[mcp]'``).

Tools mirror the public :class:`~agentbase.AgentBase` API one to one (same argument names, so an agent's tool call
reads like the Python call), return pydantic models (clients get ``structured_content`` plus an output schema), and
turn every AgentBase error into an MCP tool error with a clear message; an unexpected failure answers
``Error executing tool <name>`` and never a stack trace. Resources: ``agentbase://entries/{entry_id}``,
``agentbase://sessions/{session_id}`` and ``agentbase://stats`` (JSON).

Transports: stdio (default) and streamable HTTP (``--http``; 127.0.0.1 by default). A non-loopback host is refused
unless bearer tokens are configured (``AGENTBASE_AUTH__TOKENS='["<token>"]'``); with tokens, every HTTP request
without ``Authorization: Bearer <token>`` gets 401. ``--user-id`` pins the server to one owner: entries and
sessions of other users are invisible (``not found``) and writes are stamped with that owner.

Register it with an MCP client (e.g. ``claude_desktop_config.json``)::

    {"mcpServers": {"agentbase": {"command": "agentbase-mcp", "args": ["--db", "/path/my_agent.db"]}}}
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import pydantic
from pydantic import BaseModel

from .engine import DEFAULT_PATH, AgentBase
from .errors import AgentBaseError, MissingDependencyError, NotFoundError
from .graph import Neighborhood, Relation
from .models import (CommitResult, DeleteResult, Entry, EntryList, HistoryList, Message, MessageList,
                     ResourceChunks, SearchResult, SearchResults, Session, Trace)

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
    from mcp.types import ToolAnnotations
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("mcp", "mcp") from _exc

__all__ = ["AgentBaseMCPServer", "CommitResult", "DeleteResult", "EntryList", "HistoryList", "MessageList",
           "RelationList", "ResourceChunks", "SearchResults", "create_server", "http_app", "is_loopback", "main",
           "mcp_asgi_app"]

ScopeName = Literal["global", "agent", "project", "session"]
ContextTypeName = Literal["memory", "resource", "skill"]
_READ = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)
_WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)
_DESTROY = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False)

INSTRUCTIONS = (
    "AgentBase is this agent's long-term memory (a database that persists across conversations). Use `find` before "
    "answering questions about the "
    "user or past conversations, `add_memory` to remember durable facts and preferences, sessions "
    "(`create_session`, `add_message`, `commit_session`) to log a conversation and extract memories from it, "
    "`add_resource` for documents and `add_skill`/`find_skills` for procedures. Times are ISO 8601 UTC.")


# ------------------------------------------------------------------------------------------------- results
# Tool results are pydantic models, so clients get structured content and an output schema.
class RelationList(BaseModel):
    """Relations of one entity from the temporal graph (``facts`` / ``timeline``)."""
    entity: str
    relations: list[Relation]


# ------------------------------------------------------------------------------------------------- server
class AgentBaseMCPServer(MCPServer):
    """:class:`MCPServer` that rejects unknown tool arguments by name instead of silently dropping them.

    A misspelt owner filter (``userid``) would otherwise search every user's entries.
    """

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """Check argument names against the tool's input schema, then call it.

        Args:
            name: tool name. arguments: the call's arguments. context: the request context.

        Returns:
            The tool's result.

        Raises:
            ToolError: unknown tool arguments (or any error of the tool itself).
        """
        tool = self._tool_manager.get_tool(name)
        if tool is not None and isinstance(arguments, dict):
            known = set((tool.parameters or {}).get("properties", {}))
            unknown = sorted(set(arguments) - known)
            if unknown:
                raise ToolError(f"unknown argument(s) {unknown} for tool {name!r}; accepted: {sorted(known)}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, pydantic.ValidationError):
                raise
            # the SDK's argument check: one line per problem, without the input echoed or a docs link
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                                 for e in cause.errors(include_url=False, include_input=False))
            raise ToolError(f"Error executing tool {name}: ValidationError: {problems}") from None


def _guard(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """Turn AgentBase errors into MCP tool errors that carry the library's message (no traceback)."""

    @functools.wraps(fn)
    async def tool(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except AgentBaseError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from None

    return tool


class _Owner:
    """The owner a server is pinned to (``--user-id``); None serves every owner."""

    def __init__(self, user_id: str | None):
        self.user_id = user_id

    def user(self, user_id: str | None) -> str | None:
        if self.user_id is None:
            return user_id
        if user_id is not None and user_id != self.user_id:
            raise ToolError(f"this server is pinned to user_id={self.user_id!r}; other users are not reachable")
        return self.user_id

    def check_session(self, session: Session | None, session_id: str) -> Session:
        if session is None or (self.user_id is not None and session.user_id != self.user_id):
            raise ToolError(f"NotFoundError: session {session_id!r} not found")
        return session


def create_server(db: AgentBase, *, user_id: str | None = None, name: str = "agentbase") -> AgentBaseMCPServer:
    """Build the MCP server for ``db``.

    Args:
        db: an :class:`AgentBase` (its methods run on the engine loop, so any transport's loop can call them).
        user_id: pin every call to this owner (other users' entries and sessions answer "not found").
        name: the server name announced to clients.

    Returns:
        The :class:`AgentBaseMCPServer` with the tools ``add_memory``, ``find``, ``get_entry``, ``update_entry``,
        ``delete_entry``, ``list_entries``, ``history``, ``create_session``, ``add_message``, ``get_messages``,
        ``commit_session``, ``add_resource``, ``add_skill``, ``find_skills``, ``get_trace``, ``stats``, the
        temporal-graph tools ``facts``, ``timeline`` and ``neighbors``, and the resources
        ``agentbase://entries/{entry_id}``, ``agentbase://sessions/{session_id}`` and ``agentbase://stats``.
    """
    from . import __version__

    db = getattr(db, "aio", db)
    owner = _Owner(user_id)
    server = AgentBaseMCPServer(name, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    _register_entry_tools(server, db, owner)
    _register_session_tools(server, db, owner)
    _register_resources(server, db, owner)
    if all(hasattr(db, m) for m in ("facts", "timeline", "neighbors")):
        _register_graph_tools(server, db, owner)
    return server


def _results(hits: list[SearchResult]) -> SearchResults:
    return SearchResults(results=hits, trace_id=next((h.trace_id for h in hits if h.trace_id), None))


def _register_entry_tools(server: MCPServer, db: AgentBase, owner: _Owner) -> None:
    @server.tool(annotations=_WRITE)
    @_guard
    async def add_memory(content: str, category: str = "fact", tags: list[str] | None = None,
                         metadata: dict[str, Any] | None = None, scope: ScopeName = "global",
                         user_id: str | None = None, agent_id: str | None = None, project_id: str | None = None,
                         session_id: str | None = None, confidence: float = 1.0, importance: float = 0.5,
                         event_time: str | None = None, context_type: ContextTypeName = "memory",
                         dedup: bool = True, entry_id: str | None = None) -> Entry:
        """Remember one thing (a memory by default). Entity tags ner_<Entity> are added from the text.

        An identical text for the same owners returns the existing entry with raised confidence (dedup).
        category: profile, preference, fact, event, procedure... event_time: when it happened (ISO 8601, UTC).
        confidence and importance: 0..1.
        """
        return await db.add_memory(content, category=category, tags=tags, metadata=metadata, scope=scope,
                                   user_id=owner.user(user_id), agent_id=agent_id, project_id=project_id,
                                   session_id=session_id, confidence=confidence, importance=importance,
                                   event_time=event_time, context_type=context_type, dedup=dedup,
                                   entry_id=entry_id)

    @server.tool(annotations=_READ)
    @_guard
    async def find(query: str, top_k: int = 10, mode: Literal["hybrid", "fts", "vector"] = "hybrid",
                   strategy: Literal["auto", "flat", "hierarchical"] = "auto", token_budget: int | None = None,
                   reference_time: str | None = None, trace: bool | None = None,
                   context_type: ContextTypeName | list[ContextTypeName] | None = None,
                   category: str | list[str] | None = None, tags: list[str] | None = None,
                   scope: ScopeName | list[ScopeName] | None = None, user_id: str | None = None,
                   agent_id: str | None = None, project_id: str | None = None, session_id: str | None = None,
                   metadata: dict[str, Any] | None = None, date_from: str | None = None,
                   date_to: str | None = None) -> SearchResults:
        """Search memories, resources and skills: FTS5 BM25 + vectors + entity tags fused by RRF.

        Any text is a safe query. Filters (context_type, category, tags (all required), scope, owner ids,
        metadata equality, date_from/date_to in ISO 8601) apply inside the search. reference_time is "now" for
        expressions such as "last week". Each result has score, matched_by, score_parts and the text.
        """
        filters = {k: v for k, v in dict(context_type=context_type, category=category, tags=tags, scope=scope,
                                         agent_id=agent_id, project_id=project_id, session_id=session_id,
                                         metadata=metadata, date_from=date_from, date_to=date_to).items()
                   if v is not None}
        uid = owner.user(user_id)
        if uid is not None:
            filters["user_id"] = uid
        return _results(await db.find(query, top_k=top_k, mode=mode, strategy=strategy, token_budget=token_budget,
                                      reference_time=reference_time, trace=trace, **filters))

    @server.tool(annotations=_READ)
    @_guard
    async def get_entry(entry_id: str, user_id: str | None = None, agent_id: str | None = None,
                        project_id: str | None = None) -> Entry:
        """Return one entry by id (owner ids, when given, must match)."""
        entry = await db.get(entry_id, user_id=owner.user(user_id), agent_id=agent_id, project_id=project_id)
        if entry is None:
            raise NotFoundError(f"entry {entry_id!r} not found")
        return entry

    @server.tool(annotations=_WRITE)
    @_guard
    async def update_entry(entry_id: str, content: str | None = None, tags: list[str] | None = None,
                           metadata: dict[str, Any] | None = None, category: str | None = None,
                           confidence: float | None = None, importance: float | None = None,
                           event_time: str | None = None, status: Literal["active", "archived"] | None = None,
                           user_id: str | None = None, agent_id: str | None = None) -> Entry:
        """Change an entry: new content re-derives summaries, entity tags and the vector; history keeps the old
        text. Given values replace the stored ones."""
        return await db.update(entry_id, content, tags=tags, metadata=metadata, category=category,
                               confidence=confidence, importance=importance, event_time=event_time, status=status,
                               user_id=owner.user(user_id), agent_id=agent_id)

    @server.tool(annotations=_DESTROY)
    @_guard
    async def delete_entry(entry_id: str, user_id: str | None = None, agent_id: str | None = None) -> DeleteResult:
        """Delete an entry from every index (its history is kept). deleted=false when no such entry."""
        deleted = await db.delete(entry_id, user_id=owner.user(user_id), agent_id=agent_id)
        return DeleteResult(entry_id=entry_id, deleted=deleted)

    @server.tool(annotations=_READ)
    @_guard
    async def list_entries(limit: int = 20, offset: int = 0, order: Literal["asc", "desc"] = "desc",
                           context_type: ContextTypeName | list[ContextTypeName] | None = None,
                           category: str | list[str] | None = None, tags: list[str] | None = None,
                           scope: ScopeName | list[ScopeName] | None = None, user_id: str | None = None,
                           agent_id: str | None = None, project_id: str | None = None,
                           session_id: str | None = None, metadata: dict[str, Any] | None = None,
                           date_from: str | None = None, date_to: str | None = None) -> EntryList:
        """List entries by creation time (newest first by default) with the same filters as find."""
        filters = {k: v for k, v in dict(context_type=context_type, category=category, tags=tags, scope=scope,
                                         user_id=owner.user(user_id), agent_id=agent_id, project_id=project_id,
                                         session_id=session_id, metadata=metadata, date_from=date_from,
                                         date_to=date_to).items() if v is not None}
        entries = await db.list(limit=limit, offset=offset, order=order, **filters)
        return EntryList(entries=entries, count=len(entries), total=await db.count(**filters))

    @server.tool(annotations=_READ)
    @_guard
    async def history(entry_id: str) -> HistoryList:
        """ADD / UPDATE / DELETE events of an entry with old and new text, oldest first."""
        if owner.user_id is not None and await db.get(entry_id, user_id=owner.user_id) is None:
            raise NotFoundError(f"entry {entry_id!r} not found")
        return HistoryList(entry_id=entry_id, events=await db.history(entry_id))

    @server.tool(annotations=_WRITE)
    @_guard
    async def add_resource(uri: str, content: str, mime_type: str = "text/plain", title: str | None = None,
                           tags: list[str] | None = None, metadata: dict[str, Any] | None = None,
                           chunk_chars: int = 1500, user_id: str | None = None, agent_id: str | None = None,
                           project_id: str | None = None, session_id: str | None = None,
                           scope: ScopeName = "global") -> ResourceChunks:
        """Store a document, URL or API description as searchable chunks that point back to uri."""
        entries = await db.add_resource(uri, content, mime_type=mime_type, title=title, tags=tags, metadata=metadata,
                                        chunk_chars=chunk_chars, user_id=owner.user(user_id), agent_id=agent_id,
                                        project_id=project_id, session_id=session_id, scope=scope)
        return ResourceChunks(uri=uri, entries=entries)

    @server.tool(annotations=_WRITE)
    @_guard
    async def add_skill(name: str, description: str, content: str = "", tags: list[str] | None = None,
                        input_schema: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None,
                        user_id: str | None = None, agent_id: str | None = None, project_id: str | None = None,
                        session_id: str | None = None, scope: ScopeName = "global") -> Entry:
        """Store a skill: what the agent can do (name, description, instructions, optional JSON input schema)."""
        return await db.add_skill(name, description, content, tags=tags, input_schema=input_schema,
                                  metadata=metadata, user_id=owner.user(user_id), agent_id=agent_id,
                                  project_id=project_id, session_id=session_id, scope=scope)

    @server.tool(annotations=_READ)
    @_guard
    async def find_skills(query: str, top_k: int = 5, tags: list[str] | None = None, user_id: str | None = None,
                          agent_id: str | None = None, project_id: str | None = None) -> SearchResults:
        """Find skills relevant to a task ("how do I deploy?"): skill search plus name/description matching."""
        owners = {k: v for k, v in dict(tags=tags, user_id=owner.user(user_id), agent_id=agent_id,
                                        project_id=project_id).items() if v is not None}
        native = getattr(db, "find_skills", None)
        if native is not None:
            return _results(await native(query, top_k=top_k, **owners))
        return _results(await db.find(query, top_k=top_k, context_type="skill", **owners))

    @server.tool(annotations=_READ)
    @_guard
    async def get_trace(trace_id: str) -> Trace:
        """A persisted retrieval trace: each find() step with latency, candidate counts and per-result reasons."""
        if owner.user_id is not None:
            raise ToolError("traces span every owner; they are not available on a server pinned to one user")
        return await db.get_trace(trace_id)

    @server.tool(annotations=_READ)
    @_guard
    async def stats() -> dict[str, Any]:
        """Counts (entries by type, sessions, messages, embeddings, jobs, traces) and engine facts."""
        if owner.user_id is not None:
            by_type = {t: await db.count(context_type=t, user_id=owner.user_id) for t in ("memory", "resource",
                                                                                           "skill")}
            return {"user_id": owner.user_id, "entries": by_type, "entries_total": sum(by_type.values())}
        return await db.stats()


def _register_session_tools(server: MCPServer, db: AgentBase, owner: _Owner) -> None:
    @server.tool(annotations=_WRITE)
    @_guard
    async def create_session(session_id: str | None = None, user_id: str | None = None,
                             agent_id: str | None = None, project_id: str | None = None,
                             metadata: dict[str, Any] | None = None, created_at: str | None = None) -> Session:
        """Start a conversation session (or return the existing one with this session_id)."""
        if session_id is not None and owner.user_id is not None:
            existing = await db.get_session(session_id)
            if existing is not None:
                owner.check_session(existing, session_id)
        return await db.create_session(session_id=session_id, user_id=owner.user(user_id), agent_id=agent_id,
                                       project_id=project_id, metadata=metadata, created_at=created_at)

    @server.tool(annotations=_WRITE)
    @_guard
    async def add_message(session_id: str, role: str, content: str, name: str | None = None,
                          tool_calls: list[dict[str, Any]] | None = None, tool_call_id: str | None = None,
                          metadata: dict[str, Any] | None = None, created_at: str | None = None,
                          message_id: str | None = None) -> Message:
        """Append a message (role user/assistant/system/tool) to a session; seq gives the strict order."""
        owner.check_session(await db.get_session(session_id), session_id)
        return await db.add_message(session_id, role, content, name=name, tool_calls=tool_calls,
                                    tool_call_id=tool_call_id, metadata=metadata, created_at=created_at,
                                    message_id=message_id)

    @server.tool(annotations=_READ)
    @_guard
    async def get_messages(session_id: str, limit: int | None = None, order: Literal["asc", "desc"] = "asc",
                           after_seq: int | None = None, before_seq: int | None = None) -> MessageList:
        """Messages of a session in seq order (asc or desc)."""
        owner.check_session(await db.get_session(session_id), session_id)
        msgs = await db.get_messages(session_id, limit=limit, order=order, after_seq=after_seq,
                                     before_seq=before_seq)
        return MessageList(session_id=session_id, messages=msgs)

    @server.tool(annotations=_WRITE)
    @_guard
    async def commit_session(session_id: str, wait: bool = True) -> CommitResult:
        """Turn the session's new messages into memories (turns, facts, summary, entity tags); idempotent.
        wait=false returns once the turns are stored and searchable and queues the facts, tags and summary."""
        owner.check_session(await db.get_session(session_id), session_id)
        return CommitResult(**await db.commit_session(session_id, wait=wait))


def _register_graph_tools(server: MCPServer, db: AgentBase, owner: _Owner) -> None:
    def unpinned() -> None:
        if owner.user_id is not None:
            raise ToolError("the entity graph spans every owner; it is not available on a server pinned to one user")

    @server.tool(annotations=_READ)
    @_guard
    async def facts(entity: str, as_of: str | None = None, predicate: str | None = None,
                    direction: Literal["out", "in", "both"] = "both") -> RelationList:
        """What was true about an entity at a time (default now): temporal graph relations valid at as_of."""
        unpinned()
        return RelationList(entity=entity, relations=await db.facts(entity, as_of=as_of, predicate=predicate,
                                                                    direction=direction))

    @server.tool(annotations=_READ)
    @_guard
    async def timeline(entity: str) -> RelationList:
        """Every relation of an entity, open and closed, ordered by valid_from (how facts changed over time)."""
        unpinned()
        return RelationList(entity=entity, relations=await db.timeline(entity))

    @server.tool(annotations=_READ)
    @_guard
    async def neighbors(entity: str, depth: int = 1, as_of: str | None = None, include_expired: bool = False,
                        limit: int = 200) -> Neighborhood:
        """Entities within depth hops (1..5) of an entity in the temporal graph, with the relations between them."""
        unpinned()
        found = await db.neighbors(entity, depth=depth, as_of=as_of, include_expired=include_expired, limit=limit)
        if found is None:
            raise NotFoundError(f"entity {entity!r} not found")
        return found


def _register_resources(server: MCPServer, db: AgentBase, owner: _Owner) -> None:
    @server.resource("agentbase://entries/{entry_id}", name="entry", mime_type="application/json",
                     description="One entry as JSON.")
    async def entry_resource(entry_id: str) -> str:
        try:
            entry = await db.get(entry_id, user_id=owner.user_id)
        except AgentBaseError as exc:
            raise ResourceNotFoundError(str(exc)) from None
        if entry is None:
            raise ResourceNotFoundError(f"entry {entry_id!r} not found")
        return entry.model_dump_json()

    @server.resource("agentbase://sessions/{session_id}", name="session", mime_type="application/json",
                     description="A session with its messages as JSON.")
    async def session_resource(session_id: str) -> str:
        try:
            session = await db.get_session(session_id)
            if session is None or (owner.user_id is not None and session.user_id != owner.user_id):
                raise NotFoundError(f"session {session_id!r} not found")
            msgs = await db.get_messages(session_id)
        except AgentBaseError as exc:
            raise ResourceNotFoundError(str(exc)) from None
        return json.dumps({"session": session.model_dump(mode="json"),
                           "messages": [m.model_dump(mode="json") for m in msgs]}, ensure_ascii=False)

    @server.resource("agentbase://stats", name="stats", mime_type="application/json",
                     description="Database counts and engine facts.")
    async def stats_resource() -> str:
        if owner.user_id is not None:
            return json.dumps({"user_id": owner.user_id, "entries_total": await db.count(user_id=owner.user_id)})
        return json.dumps(await db.stats(), default=str)


# ------------------------------------------------------------------------------------------------- command
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="agentbase-mcp", description="Serve an AgentBase file over MCP (stdio by "
                                "default, streamable HTTP with --http).")
    p.add_argument("db_path", nargs="?", help="database file or postgresql:// URL (default: --db, $AGENTBASE_DB, "
                   "storage.url (AGENTBASE_STORAGE__URL), else agentbase.db)")
    for flag, kw in (("--db", dict(dest="db_opt", help="database file")),
                     ("--http", dict(action="store_true", help="serve streamable HTTP instead of stdio")),
                     ("--host", dict(default="127.0.0.1", help="HTTP bind host (127.0.0.1; others need tokens)")),
                     ("--port", dict(type=int, default=8765, help="HTTP port (default 8765)")),
                     ("--path", dict(default="/mcp", help="HTTP endpoint path (default /mcp)")),
                     ("--user-id", dict(help="pin the server to one owner")),
                     ("--embedder", dict(help="embedder provider: local, onnx, openai, hash, none")),
                     ("--config", dict(help="YAML settings file"))):
        p.add_argument(flag, **kw)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``agentbase-mcp``.

    Args:
        argv: command-line arguments (default ``sys.argv[1:]``).

    Returns:
        The exit status (0 on a clean shutdown, 2 on a configuration error).
    """
    from .mcp_http import http_app, refuse_open_bind

    args = _parser().parse_args(argv)
    # nothing named: what AgentBase() opens without a path (storage.url, e.g. AGENTBASE_STORAGE__URL, else agentbase.db)
    path = args.db_path or args.db_opt or os.environ.get("AGENTBASE_DB") or DEFAULT_PATH
    try:
        db = AgentBase(path, embedder=args.embedder, config_file=args.config)
        tokens = list(db.settings.auth.tokens)
        if args.http:
            refuse_open_bind(args.host, tokens)
        db.sync.initialize()
    except AgentBaseError as exc:
        print(f"agentbase-mcp: error: {exc}", file=sys.stderr)
        return 2
    try:
        if args.http:
            import uvicorn

            app = http_app(db, tokens=tokens, host=args.host, path=args.path, user_id=args.user_id)
            print(f"agentbase-mcp: serving {db.location} at http://{args.host}:{args.port}{args.path}", file=sys.stderr)
            uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
        else:
            create_server(db, user_id=args.user_id).run("stdio")
    except KeyboardInterrupt:  # pragma: no cover - interactive stop
        pass
    finally:
        db.sync.close()
    return 0


from .mcp_http import http_app, is_loopback, mcp_asgi_app  # noqa: E402 - re-exported; imports create_server

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
