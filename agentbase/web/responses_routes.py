"""OpenAI Responses API on ``agentbase serve``: ``POST /v1/responses`` and ``GET /v1/responses/{id}``.

The request and response JSON follow the OpenAI Responses API as the ``openai`` SDK sends and parses it
(``client.responses.create(model=, input=, instructions=, conversation=, previous_response_id=, store=,
max_output_tokens=, metadata=, stream=)``; types in ``openai/types/responses/``). AgentBase answers it with the
model configured in the ``llm`` settings section (any OpenAI-compatible chat-completions endpoint, called
through :class:`agentbase.llm.client.LLMClient`):

1. the conversation: ``conversation`` (an id from ``POST /v1/conversations`` or ``{"id": ...}``), else the
   conversation of ``previous_response_id``, else a new one (``conv_...``) when ``store`` is true;
2. memory: the ``top_k`` (5) results of ``find(<the new user text>)`` for the request's owner (the
   ``X-AgentBase-User`` header, else the conversation's ``user_id``) are appended to ``instructions``;
3. the model gets that system text, the conversation's last ``HISTORY_MESSAGES`` user/assistant/system
   messages and the new input, and its answer becomes the response's one ``output_text``;
4. with ``store`` (default true) the input items and the answer are appended to the conversation in one
   transaction and the session is committed in the background (``commit_session(wait=False)``: its turns and
   facts become memories for later ``find()``); with ``store=false`` nothing is written.

Response ids are ``resp_<32 hex of the answer's message id><hex of the conversation id>``, so
``GET /v1/responses/{id}`` and ``previous_response_id`` find the stored answer without an index; the stored
response object lives in that message's metadata (key ``"_openai"`` → ``"response"``).

Errors are OpenAI-shaped: no ``llm`` configured → 503 ``llm_not_configured`` (with ``x-should-retry: false``
so the SDK does not retry); the model unreachable → 503 ``llm_unavailable`` (no SDK retry); the model still
failing with 429 / 5xx / timeouts after the client's own retries → 503 ``llm_retryable``; a permanent failure
(HTTP 4xx, a body that is not a chat completion) → 502 ``llm_error``; bad input → 400; unknown ids → 404. No
error writes anything. ``stream=true`` answers Server-Sent Events in the SDK's event order
(``response.created`` ... ``response.output_text.delta`` ... ``response.completed``); the text comes as one
delta, since the model is called without streaming.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from fastapi import APIRouter, Body, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict

from ..adapters._openai_rules import OpenAIValidationError, _check_metadata, _items_input, _join, _new_id
from .api_routes import _LimitedRoute
from .errors import error_response
from .openai_routes import get_adapter

__all__ = ["HISTORY_MESSAGES", "MEMORY_TOP_K", "get_llm", "router"]

router = APIRouter(prefix="/v1", tags=["openai"], route_class=_LimitedRoute)

HISTORY_MESSAGES = 40  # the conversation's last messages sent to the model (a bound on the prompt's size)
MEMORY_TOP_K = 5  # memories added to the instructions
_ID = re.compile(r"^resp_([0-9a-f]{32})((?:[0-9a-f]{2})+)$")
_CHAT_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_NOT_CONFIGURED = ("No language model is configured for the Responses API: set the llm section "
                   "(llm.base_url and llm.model, or AGENTBASE_LLM__BASE_URL and AGENTBASE_LLM__MODEL) and "
                   "restart the server. AgentBase stores conversations without one (/v1/conversations).")


class ResponseCreate(BaseModel):
    """Body of ``POST /v1/responses`` (the fields AgentBase reads; the SDK's other optional fields are
    accepted and, when they change nothing here, ignored: ``temperature``, ``top_p``, ``user``, ...)."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    input: Any = None
    instructions: str | None = None
    conversation: Any = None
    previous_response_id: str | None = None
    store: bool | None = True
    max_output_tokens: int | None = None
    metadata: Any = None
    stream: bool | None = False
    tools: Any = None


def get_llm(request: Request) -> Any:
    """The application's LLM client: ``app.state.llm`` when :func:`~agentbase.web.app.create_app` was given one,
    else built once from the database's ``llm`` settings (``LLMClient.from_settings``).

    Args:
        request: the current request.

    Returns:
        An :class:`agentbase.llm.client.LLMClient`, or None when no model is configured.
    """
    state = request.app.state
    if getattr(state, "llm", None) is None and not getattr(state, "llm_resolved", False):
        state.llm_resolved = True
        settings = getattr(state.agentbase, "settings", None)
        llm_settings = getattr(settings, "llm", None)
        if llm_settings is not None:
            from ..llm.client import LLMClient

            state.llm = LLMClient.from_settings(llm_settings)
            if state.llm is not None:  # its calls count in the file's totals, as the database's own do
                state.llm.add_listener(state.agentbase.count_llm_call)
    return getattr(state, "llm", None)


def _response_id(message_id: str, session_id: str) -> str:
    return f"resp_{message_id.removeprefix('msg_')}{session_id.encode().hex()}"


def _parse_id(response_id: Any, param: str) -> tuple[str, str]:
    """(session id, message id) of a response id; 404 in OpenAI's words for anything else."""
    m = _ID.match(response_id) if isinstance(response_id, str) else None
    if m:
        try:
            return bytes.fromhex(m.group(2)).decode(), f"msg_{m.group(1)}"
        except UnicodeDecodeError:
            pass
    raise _NotFoundResponse(f"Response with id '{response_id}' not found.", param)


class _NotFoundResponse(Exception):
    def __init__(self, message: str, param: str):
        super().__init__(message)
        self.message, self.param = message, param


async def _stored(request: Request, response_id: Any, param: str) -> tuple[str, dict[str, Any]]:
    """The conversation id and stored response object of ``response_id`` (owner-checked)."""
    session_id, message_id = _parse_id(response_id, param)
    adapter = get_adapter(request)
    try:
        await adapter.retrieve_conversation(session_id)
    except LookupError:
        raise _NotFoundResponse(f"Response with id '{response_id}' not found.", param) from None
    msg = await request.app.state.agentbase.get_message(session_id, message_id)
    meta = (msg.metadata or {}).get("_openai") if msg is not None else None
    stored = meta.get("response") if isinstance(meta, dict) else None
    if not isinstance(stored, dict) or stored.get("id") != response_id:
        raise _NotFoundResponse(f"Response with id '{response_id}' not found.", param)
    return session_id, stored


def _input_items(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, str):
        if not value.strip():
            raise OpenAIValidationError("Invalid 'input': expected a non-empty string or array.", "input")
        return [{"type": "message", "role": "user", "content": value}]
    if not isinstance(value, list) or not value:
        raise OpenAIValidationError("Invalid 'input': expected a non-empty string or array of items.", "input")
    items = []
    for i, item in enumerate(value):
        if isinstance(item, dict) and item.get("type", "message") == "message":
            item = {k: v for k, v in item.items() if k in ("type", "id", "role", "content", "status", "phase")}
            if isinstance(item.get("content"), list):  # the SDK's input_text parts; images are not read
                item["content"] = [{"type": p.get("type"), "text": p.get("text")} if isinstance(p, dict) else p
                                   for p in item["content"]]
        items.append(item)
    return items


def _chat_message(row: dict[str, Any] | Any) -> dict[str, str] | None:
    role = row["role"] if isinstance(row, dict) else row.role
    content = row["content"] if isinstance(row, dict) else row.content
    role = _CHAT_ROLES.get(role)
    return {"role": role, "content": content} if role and content and content.strip() else None


def _memory_block(results: list[Any]) -> str:
    lines = [f"- {(r.text or r.entry.content).strip()}" for r in results if (r.text or r.entry.content).strip()]
    return "Relevant memories about the user (from AgentBase):\n" + "\n".join(lines) if lines else ""


def _usage(result: Any) -> dict[str, Any]:
    p, c = int(result.prompt_tokens or 0), int(result.completion_tokens or 0)
    return {"input_tokens": p, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0}, "output_tokens": c,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": p + c}


def _response_obj(*, response_id: str, created: int, body: ResponseCreate, model: str, message_id: str,
                  text: str, usage: dict[str, Any] | None, conversation: str | None, store: bool,
                  status: str = "completed", memories: list[str] | None = None) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}] if text or \
        status == "completed" else []
    output = [{"id": message_id, "type": "message", "role": "assistant", "status": status,
               "content": content}] if status == "completed" else []
    return {"id": response_id, "object": "response", "created_at": created, "status": status,
            "background": False, "error": None, "incomplete_details": None, "instructions": body.instructions,
            "max_output_tokens": body.max_output_tokens, "model": model, "output": output,
            "parallel_tool_calls": True, "previous_response_id": body.previous_response_id,
            "conversation": {"id": conversation} if conversation else None, "store": store,
            "temperature": getattr(body, "temperature", None), "top_p": getattr(body, "top_p", None),
            "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": [], "truncation": "disabled",
            "usage": usage, "metadata": body.metadata or {},
            "agentbase": {"memories": memories or []}}


def _llm_error_response(exc: Exception) -> JSONResponse | None:
    """503 for an unreachable model (no SDK retry) or one still failing transiently after the client's retries
    (the SDK may retry), 502 for a permanent failure; None for an exception that is not an LLM error."""
    from ..errors import LLMError, LLMRetryable, LLMUnavailable

    if isinstance(exc, LLMUnavailable):
        return error_response(503, f"The configured language model is unavailable: {exc}", type="server_error",
                              code="llm_unavailable", headers={"x-should-retry": "false"})
    if isinstance(exc, LLMRetryable):
        return error_response(503, f"The configured language model is busy or failing: {exc}",
                              type="server_error", code="llm_retryable")
    if isinstance(exc, LLMError):
        return error_response(502, f"The configured language model failed: {exc}", type="server_error",
                              code="llm_error", headers={"x-should-retry": "false"})
    return None


@router.post("/responses")
async def create_response(request: Request, body: ResponseCreate = Body(...)) -> Any:
    """Create a model response with the conversation's history and the user's memories
    (``client.responses.create``).

    Returns:
        The ``Response`` object (or an SSE stream of Responses events for ``stream=true``); errors as
        described in the module docstring.
    """
    try:
        return await _create(request, body)
    except _NotFoundResponse as exc:
        return error_response(404, exc.message, param=exc.param)


async def _create(request: Request, body: ResponseCreate) -> Any:
    if body.tools:
        return error_response(400, "Tools are not supported by AgentBase's Responses API.", param="tools")
    if body.max_output_tokens is not None and body.max_output_tokens < 1:
        return error_response(400, "Invalid 'max_output_tokens': must be at least 1.", param="max_output_tokens")
    if body.metadata is not None:
        body.metadata = _check_metadata(body.metadata)
    conv = body.conversation.get("id") if isinstance(body.conversation, dict) else body.conversation
    if conv is not None and (not isinstance(conv, str) or not conv):
        return error_response(400, "Invalid 'conversation': expected an id or {\"id\": ...}.", param="conversation")
    if conv and body.previous_response_id:
        return error_response(400, "Use either 'conversation' or 'previous_response_id', not both.",
                              param="previous_response_id")
    rows = _items_input(_input_items(body.input), allow_empty=False)  # validated before anything runs
    llm = get_llm(request)
    if llm is None:
        return error_response(503, _NOT_CONFIGURED, type="server_error", code="llm_not_configured",
                              headers={"x-should-retry": "false"})
    db, adapter = request.app.state.agentbase, get_adapter(request)
    store = body.store is not False
    if body.previous_response_id:
        conv, _ = await _stored(request, body.previous_response_id, "previous_response_id")
    owner = adapter.user_id
    if conv:
        try:
            await adapter.retrieve_conversation(conv)
        except LookupError:
            return error_response(404, f"Conversation with id '{conv}' not found.", param="conversation")
        session = await db.get_session(conv)
        owner = owner or session.user_id
        history = [m for m in (_chat_message(x) for x in reversed(
            await db.get_messages(conv, limit=HISTORY_MESSAGES, order="desc"))) if m]
    else:
        history = []
    query = "\n".join(r["content"] for r in rows if r["role"] == "user" and r["content"].strip())
    filters = {"user_id": owner} if owner else {}
    found = await db.find(query, top_k=MEMORY_TOP_K, **filters) if query.strip() else []
    if conv:  # this conversation's own turns are already in the history
        found = [r for r in found if r.entry.session_id != conv]
    system = "\n\n".join(x for x in (body.instructions or "", _memory_block(found)) if x.strip())
    messages = ([{"role": "system", "content": system}] if system else []) + history + \
        [m for m in (_chat_message(r) for r in rows) if m]
    max_tokens = body.max_output_tokens
    from ..llm.client import LLMClient

    try:
        with LLMClient.collect() as calls:
            try:
                result = await llm.chat(messages, purpose="responses", max_tokens=max_tokens)
            finally:  # the answer's call, one trace per response (conversation id: never the text)
                db.trace_llm_calls("llm responses", {"kind": "responses", "conversation": conv}, calls)
    except Exception as exc:  # the client's typed errors become 503/502; anything else stays a 500
        mapped = _llm_error_response(exc)
        if mapped is None:
            raise
        return mapped
    text = result.text or ""
    message_id, created = _new_id("msg"), int(time.time())
    if store and not conv:
        conv = (await adapter.create_conversation(None, None))["id"]
    response_id = _response_id(message_id, conv) if store else f"resp_{message_id.removeprefix('msg_')}"
    obj = _response_obj(response_id=response_id, created=created, body=body, model=result.model or body.model or "",
                        message_id=message_id, text=text, usage=_usage(result), conversation=conv, store=store, memories=[r.entry.id for r in found])
    if store:
        answer = {"id": message_id, "role": "assistant", "content": text,
                  "metadata": _join({}, {"type": "message", "response": obj})}
        await db.add_messages(conv, [*rows, answer])
        await db.commit_session(conv, wait=False)
    if body.stream:
        return StreamingResponse(_events(obj), media_type="text/event-stream")
    return obj


def _events(obj: dict[str, Any]):
    """The SSE events of one finished response, in the order the SDK's stream accumulator expects."""
    seq = iter(range(1_000_000))
    item = obj["output"][0]
    part = item["content"][0]
    pending = {**obj, "status": "in_progress", "output": [], "usage": None}
    empty_item = {**item, "status": "in_progress", "content": []}
    empty_part = {**part, "text": ""}
    events = [("response.created", {"response": pending}), ("response.in_progress", {"response": pending}),
              ("response.output_item.added", {"output_index": 0, "item": empty_item}),
              ("response.content_part.added", {"item_id": item["id"], "output_index": 0, "content_index": 0,
                                               "part": empty_part}),
              ("response.output_text.delta", {"item_id": item["id"], "output_index": 0, "content_index": 0,
                                              "delta": part["text"], "logprobs": []}),
              ("response.output_text.done", {"item_id": item["id"], "output_index": 0, "content_index": 0,
                                             "text": part["text"], "logprobs": []}),
              ("response.content_part.done", {"item_id": item["id"], "output_index": 0, "content_index": 0,
                                              "part": part}),
              ("response.output_item.done", {"output_index": 0, "item": item}),
              ("response.completed", {"response": obj})]
    for kind, data in events:
        payload = {"type": kind, "sequence_number": next(seq), **data}
        yield f"event: {kind}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n"


@router.get("/responses/{response_id}")
async def retrieve_response(request: Request, response_id: str) -> Any:
    """Return a stored response (``client.responses.retrieve``).

    Returns:
        The ``Response`` object; 404 for an unknown id, another owner's, or one created with ``store=false``.
    """
    try:
        _, stored = await _stored(request, response_id, "response_id")
    except _NotFoundResponse as exc:
        return error_response(404, exc.message, param=exc.param)
    return stored
