"""OpenAI-compatible REST routes: ``/v1/threads…`` (Assistants v2) and ``/v1/conversations…``.

Paths, methods and JSON follow the OpenAI API as used by SDK 3.57, so
``OpenAI(base_url="http://host:port/v1")`` works unchanged. The work is done by
:class:`~agentbase.adapters.openai_assistants.AsyncOpenAIAssistantAdapter`, found on
``request.app.state.openai_adapter`` (set by :func:`agentbase.web.app.create_app`). The ``OpenAI-Beta`` header
is accepted and ignored. Runs are not implemented: every ``/runs`` route answers 501 in OpenAI's error shape
(with ``x-should-retry: false`` so SDK clients do not retry).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from ..adapters.openai_assistants import AsyncOpenAIAssistantAdapter
from .api_routes import _LimitedRoute, owner_of
from .errors import error_response

__all__ = ["get_adapter", "router"]

router = APIRouter(prefix="/v1", tags=["openai"], route_class=_LimitedRoute)  # bodies up to the same 2 MiB

_RUNS_MESSAGE = ("Runs are not implemented by AgentBase: it stores threads and messages (memory), it does "
                 "not run assistants. Run your model yourself and append its reply with "
                 "POST /v1/threads/{thread_id}/messages.")


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")  # OpenAI answers 400 "Unknown parameter" too


class ThreadMessageIn(_Body):
    """One message of ``POST /v1/threads`` or the body of ``POST /v1/threads/{id}/messages``."""

    role: Any
    content: Any
    attachments: Any = None
    metadata: Any = None


class ThreadCreate(_Body):
    """Body of ``POST /v1/threads``."""

    messages: list[dict[str, Any]] | None = None
    metadata: Any = None
    tool_resources: Any = None


class ThreadModify(_Body):
    """Body of ``POST /v1/threads/{thread_id}``."""

    metadata: Any = None
    tool_resources: Any = None


class MetadataIn(_Body):
    """Body of ``POST /v1/threads/{thread_id}/messages/{message_id}``."""

    metadata: Any = None


class ConversationCreate(_Body):
    """Body of ``POST /v1/conversations``."""

    items: list[Any] | None = None
    metadata: Any = None


class ConversationUpdate(_Body):
    """Body of ``POST /v1/conversations/{conversation_id}`` (``metadata`` is required)."""

    metadata: Any


class ItemsCreate(_Body):
    """Body of ``POST /v1/conversations/{conversation_id}/items``."""

    items: list[Any]


def get_adapter(request: Request) -> AsyncOpenAIAssistantAdapter:
    """Return the adapter for this request: the application's (``app.state.openai_adapter``), or, for a request
    scoped by the ``X-AgentBase-User`` header, one bound to that user (its threads are created with that owner;
    other owners' threads and threads without an owner answer 404).

    Args:
        request: the current request.

    Returns:
        An :class:`AsyncOpenAIAssistantAdapter`.

    Raises:
        HTTPException: 400 for an empty header.
    """
    owner = owner_of(request)
    if owner is None:
        return request.app.state.openai_adapter
    return AsyncOpenAIAssistantAdapter(request.app.state.agentbase, user_id=owner, exclusive=True)


# ---------------------------------------------------------------------------------------------- runs: 501
@router.api_route("/threads/runs", methods=["GET", "POST"], include_in_schema=False)
@router.api_route("/threads/{thread_id}/runs", methods=["GET", "POST"], include_in_schema=False)
@router.api_route("/threads/{thread_id}/runs/{rest:path}", methods=["GET", "POST", "DELETE"],
                  include_in_schema=False)
async def runs_not_implemented() -> JSONResponse:
    """Answer every Runs endpoint with 501 Not Implemented (OpenAI error shape, no retry).

    Returns:
        The 501 error response.
    """
    return error_response(501, _RUNS_MESSAGE, code="not_implemented", headers={"x-should-retry": "false"})


# ---------------------------------------------------------------------------------------------- threads
@router.post("/threads")
async def create_thread(request: Request, body: ThreadCreate | None = Body(None)) -> dict[str, Any]:
    """Create a thread, optionally with messages (``client.beta.threads.create``).

    Returns:
        The ``Thread``.
    """
    body = body or ThreadCreate()
    return await get_adapter(request).create_thread(body.messages, body.metadata,
                                                    tool_resources=body.tool_resources)


@router.get("/threads/{thread_id}")
async def retrieve_thread(request: Request, thread_id: str) -> dict[str, Any]:
    """Retrieve a thread (``client.beta.threads.retrieve``).

    Returns:
        The ``Thread``; 404 for an unknown id.
    """
    return await get_adapter(request).retrieve_thread(thread_id)


@router.post("/threads/{thread_id}")
async def modify_thread(request: Request, thread_id: str,
                        body: ThreadModify | None = Body(None)) -> dict[str, Any]:
    """Replace a thread's metadata / tool resources (``client.beta.threads.update``).

    Returns:
        The updated ``Thread``.
    """
    body = body or ThreadModify()
    return await get_adapter(request).modify_thread(thread_id, metadata=body.metadata,
                                                    tool_resources=body.tool_resources)


@router.delete("/threads/{thread_id}")
async def delete_thread(request: Request, thread_id: str) -> dict[str, Any]:
    """Delete a thread and its messages (``client.beta.threads.delete``).

    Returns:
        ``{id, object: "thread.deleted", deleted: true}``.
    """
    return await get_adapter(request).delete_thread(thread_id)


@router.post("/threads/{thread_id}/messages")
async def create_message(request: Request, thread_id: str, body: ThreadMessageIn) -> dict[str, Any]:
    """Append a message (``client.beta.threads.messages.create``).

    Returns:
        The ``Message``.
    """
    return await get_adapter(request).create_message(thread_id, body.role, body.content, body.metadata,
                                                     body.attachments)


@router.get("/threads/{thread_id}/messages")
async def list_messages(request: Request, thread_id: str, limit: int = Query(20), order: str = Query("desc"),
                        after: str | None = Query(None), before: str | None = Query(None),
                        run_id: str | None = Query(None)) -> dict[str, Any]:
    """List a thread's messages with cursor pagination (``client.beta.threads.messages.list``).

    Returns:
        ``{object: "list", data, first_id, last_id, has_more}``.
    """
    return await get_adapter(request).list_messages(thread_id, limit=limit, order=order, after=after,
                                                    before=before, run_id=run_id)


@router.get("/threads/{thread_id}/messages/{message_id}")
async def retrieve_message(request: Request, thread_id: str, message_id: str) -> dict[str, Any]:
    """Retrieve one message (``client.beta.threads.messages.retrieve``).

    Returns:
        The ``Message``.
    """
    return await get_adapter(request).retrieve_message(thread_id, message_id)


@router.post("/threads/{thread_id}/messages/{message_id}")
async def modify_message(request: Request, thread_id: str, message_id: str,
                         body: MetadataIn | None = Body(None)) -> dict[str, Any]:
    """Replace a message's metadata (``client.beta.threads.messages.update``).

    Returns:
        The updated ``Message``.
    """
    return await get_adapter(request).modify_message(thread_id, message_id,
                                                     metadata=(body or MetadataIn()).metadata)


@router.delete("/threads/{thread_id}/messages/{message_id}")
async def delete_message(request: Request, thread_id: str, message_id: str) -> dict[str, Any]:
    """Delete one message (``client.beta.threads.messages.delete``).

    Returns:
        ``{id, object: "thread.message.deleted", deleted: true}``.
    """
    return await get_adapter(request).delete_message(thread_id, message_id)


# ---------------------------------------------------------------------------------------------- conversations
@router.post("/conversations")
async def create_conversation(request: Request,
                              body: ConversationCreate | None = Body(None)) -> dict[str, Any]:
    """Create a conversation with up to 20 items (``client.conversations.create``).

    Returns:
        The ``Conversation``.
    """
    body = body or ConversationCreate()
    return await get_adapter(request).create_conversation(body.items, body.metadata)


@router.get("/conversations/{conversation_id}")
async def retrieve_conversation(request: Request, conversation_id: str) -> dict[str, Any]:
    """Retrieve a conversation (``client.conversations.retrieve``).

    Returns:
        The ``Conversation``.
    """
    return await get_adapter(request).retrieve_conversation(conversation_id)


@router.post("/conversations/{conversation_id}")
async def update_conversation(request: Request, conversation_id: str,
                              body: ConversationUpdate) -> dict[str, Any]:
    """Replace a conversation's metadata (``client.conversations.update``).

    Returns:
        The updated ``Conversation``.
    """
    return await get_adapter(request).update_conversation(conversation_id, metadata=body.metadata)


@router.delete("/conversations/{conversation_id}")
async def delete_conversation(request: Request, conversation_id: str) -> dict[str, Any]:
    """Delete a conversation and its items (``client.conversations.delete``).

    Returns:
        ``{id, object: "conversation.deleted", deleted: true}``.
    """
    return await get_adapter(request).delete_conversation(conversation_id)


@router.post("/conversations/{conversation_id}/items")
async def create_items(request: Request, conversation_id: str, body: ItemsCreate,
                       include: list[str] | None = Query(None)) -> dict[str, Any]:
    """Append items (``client.conversations.items.create``); ``include`` is accepted and ignored.

    Returns:
        A ``ConversationItemList`` of the new items.
    """
    return await get_adapter(request).create_items(conversation_id, body.items)


@router.get("/conversations/{conversation_id}/items")
async def list_items(request: Request, conversation_id: str, limit: int = Query(20),
                     order: str = Query("desc"), after: str | None = Query(None),
                     include: list[str] | None = Query(None)) -> dict[str, Any]:
    """List a conversation's items with cursor pagination (``client.conversations.items.list``).

    Returns:
        ``{object: "list", data, first_id, last_id, has_more}``.
    """
    return await get_adapter(request).list_items(conversation_id, limit=limit, order=order, after=after)


@router.get("/conversations/{conversation_id}/items/{item_id}")
async def retrieve_item(request: Request, conversation_id: str, item_id: str,
                        include: list[str] | None = Query(None)) -> dict[str, Any]:
    """Retrieve one item (``client.conversations.items.retrieve``).

    Returns:
        The item (a message, function_call or function_call_output).
    """
    return await get_adapter(request).retrieve_item(conversation_id, item_id)


@router.delete("/conversations/{conversation_id}/items/{item_id}")
async def delete_item(request: Request, conversation_id: str, item_id: str) -> dict[str, Any]:
    """Delete one item (``client.conversations.items.delete``).

    Returns:
        The ``Conversation`` (as the OpenAI API does).
    """
    return await get_adapter(request).delete_item(conversation_id, item_id)
