"""OpenAI object rules the Threads/Conversations adapter follows: input validation and rendering to API shapes.

Split from :mod:`agentbase.adapters.openai_assistants`; the shapes, limits and messages are those of the OpenAI
SDK 3.57 objects. Nothing here touches storage.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from agentbase.adapters._keys import FRAMEWORK_KEYS, OPENAI
from agentbase.errors import NotFoundError
from agentbase.errors import ValidationError as _ValidationError

RESERVED = OPENAI
THREAD_ROLES = ("user", "assistant")
CONV_INPUT_ROLES = ("user", "assistant", "system", "developer")
CONV_ROLES = ("unknown", "user", "assistant", "system", "critic", "discriminator", "developer", "tool")
ROLE_ALIASES = {"human": "user", "ai": "assistant"}
MAX_ITEMS = 20

class OpenAIValidationError(_ValidationError):
    """Bad input for an OpenAI-shaped call (an AgentBase :class:`~agentbase.errors.ValidationError`).

    Attributes:
        param: the request parameter at fault (``"metadata"``, ``"limit"``, ...), or None.
    """

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


class _NotFound(NotFoundError):
    """An unknown thread, message, conversation or item (carries the OpenAI ``param``)."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


# ---------------------------------------------------------------------------------------------- validation
def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def _ts(dt: Any) -> int:
    return int(dt.timestamp())


def _require(ok: Any, message: str, param: str | None) -> None:
    if not ok:
        raise OpenAIValidationError(message, param)


def _check_metadata(value: Any, param: str = "metadata") -> dict[str, str] | None:
    """OpenAI metadata rules: at most 16 pairs, string keys up to 64 characters, string values up to 512."""
    if value is None:
        return None
    _require(isinstance(value, dict), f"Invalid type for '{param}': expected an object.", param)
    _require(len(value) <= 16, f"Invalid '{param}': at most 16 key-value pairs are allowed.", param)
    for key, item in value.items():
        _require(isinstance(key, str) and 0 < len(key) <= 64 and key != RESERVED and key not in FRAMEWORK_KEYS,
                 f"Invalid '{param}': keys must be strings of 1-64 characters (not {RESERVED!r} or "
                 f"{', '.join(map(repr, sorted(FRAMEWORK_KEYS)))}, which the framework adapters keep).", param)
        _require(isinstance(item, str) and len(item) <= 512,
                 f"Invalid '{param}.{key}': values must be strings of at most 512 characters.",
                 f"{param}.{key}")
    return dict(value)


def _check_object(value: Any, param: str) -> None:
    _require(value is None or isinstance(value, dict), f"Invalid type for '{param}': expected an object.",
             param)


def _check_page(limit: Any, order: Any) -> tuple[int, str]:
    _require(not isinstance(limit, bool) and isinstance(limit, int) and 1 <= limit <= 100,
             "Invalid 'limit': must be an integer between 1 and 100.", "limit")
    _require(order in ("asc", "desc"), "Invalid 'order': must be 'asc' or 'desc'.", "order")
    return limit, order


def _valid_attachments(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(a, dict) and isinstance(a.get("file_id", ""), str) and isinstance(a.get("tools", []), list)
        and all(isinstance(t, dict) and t.get("type") in ("code_interpreter", "file_search")
                for t in a.get("tools", [])) for a in value)


def _valid_part(part: Any) -> bool:
    kind = part.get("type") if isinstance(part, dict) else None
    return (kind == "text" and isinstance(part.get("text"), str)) or \
        (kind in ("image_file", "image_url") and isinstance(part.get(kind), dict))


# The reserved fields this module writes, each with the check its stored value must pass to be shown: metadata
# written through another API (``add_message(metadata={"_openai": {"attachments": "bad"}})``) must not make a
# /v1 response fail the SDK's schema.
_EXTRA_CHECKS: dict[str, Any] = {
    "attachments": _valid_attachments,
    "parts": lambda v: isinstance(v, list) and bool(v) and all(_valid_part(p) for p in v),
    "tool_resources": lambda v: isinstance(v, dict),
    "assistant_id": lambda v: isinstance(v, str), "run_id": lambda v: isinstance(v, str),
    "type": lambda v: v in ("message", "function_call", "function_call_output"),
    "phase": lambda v: v in ("commentary", "final_answer"),
    "object": lambda v: v in ("thread", "conversation"),
}


def _split(metadata: dict[str, Any] | None) -> tuple[dict[str, str], dict[str, Any]]:
    """Split stored metadata into the user's (string) metadata and the reserved OpenAI fields (only those whose
    stored value has the shape this module writes). The other adapters' keys (:data:`FRAMEWORK_KEYS`) are in
    neither: :func:`_join` keeps them."""
    meta = {k: v for k, v in (metadata or {}).items() if k not in FRAMEWORK_KEYS}
    extra = meta.pop(RESERVED, None)
    shown = {str(k): v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for k, v in meta.items()}
    if not isinstance(extra, dict):
        return shown, {}
    return shown, {k: v for k, v in extra.items() if k in _EXTRA_CHECKS and _EXTRA_CHECKS[k](v)}


def _join(user_meta: dict[str, Any] | None, extra: dict[str, Any],
          stored: dict[str, Any] | None = None) -> dict[str, Any]:
    """Metadata to store: the user's pairs, the reserved OpenAI fields, and the other adapters' keys of the
    ``stored`` metadata being replaced (a thread update must not drop the LangChain message or the LlamaIndex
    archive status kept on the same row)."""
    extra = {k: v for k, v in extra.items() if v is not None}
    kept = {k: v for k, v in (stored or {}).items() if k in FRAMEWORK_KEYS}
    return {**(user_meta or {}), **kept, **({RESERVED: extra} if extra else {})}


def _thread_message_input(role: Any, content: Any, metadata: Any, attachments: Any,
                          p: str = "") -> dict[str, Any]:
    """Validate one Assistants message (a string or text/image_file/image_url parts) for add_messages."""
    _require(role in THREAD_ROLES, f"Invalid '{p}role': must be 'user' or 'assistant'.", f"{p}role")
    if isinstance(content, str):
        parts = [{"type": "text", "text": content}]
    else:
        _require(isinstance(content, list) and content,
                 f"Invalid '{p}content': expected a string or a non-empty array of parts.", f"{p}content")
        parts = []
        for i, part in enumerate(content):
            _require(_valid_part(part), f"Invalid '{p}content[{i}]': expected a text, image_file or image_url part.",
                     f"{p}content[{i}]")
            kind = part["type"]
            parts.append({"type": "text", "text": part["text"]} if kind == "text" else
                         {"type": kind, kind: part[kind]})
    _require(attachments is None or _valid_attachments(attachments),
             f"Invalid '{p}attachments': expected [{{file_id, tools: [{{type}}]}}].", f"{p}attachments")
    plain = len(parts) == 1 and parts[0]["type"] == "text"
    extra = {"attachments": attachments, "parts": None if plain else parts}
    text = "\n".join(x["text"] for x in parts if x["type"] == "text")
    return {"id": _new_id("msg"), "role": role, "content": text,
            "metadata": _join(_check_metadata(metadata, f"{p}metadata"), extra)}


# The fields OpenAI takes in an object of a request array; another key is a 400 "Unknown parameter" there as at
# the top level (a misspelt "metdata" inside messages[] would otherwise be dropped without a word).
THREAD_MESSAGE_KEYS = frozenset({"role", "content", "attachments", "metadata"})
_ITEM_KEYS = {"message": frozenset({"type", "id", "role", "content", "status", "phase"}),
              "function_call": frozenset({"type", "id", "call_id", "name", "arguments", "status"}),
              "function_call_output": frozenset({"type", "id", "call_id", "output", "status"})}


def _check_keys(obj: dict[str, Any], allowed: frozenset[str], p: str) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise OpenAIValidationError(f"Unknown parameter: '{p}{unknown[0]}'.", f"{p}{unknown[0]}")


def _item_input(item: Any, index: int) -> dict[str, Any]:
    """Validate one Conversations input item (message, function_call, function_call_output)."""
    p = f"items[{index}]"
    _require(isinstance(item, dict), f"Invalid '{p}': expected an object.", p)
    kind = item.get("type", "message")
    if kind in _ITEM_KEYS:
        _check_keys(item, _ITEM_KEYS[kind], f"{p}.")
    if kind == "message":
        role, content = item.get("role"), item.get("content")
        _require(role in CONV_INPUT_ROLES,
                 f"Invalid '{p}.role': must be one of {', '.join(CONV_INPUT_ROLES)}.", f"{p}.role")
        _require(isinstance(content, (str, list)), f"Invalid '{p}.content': expected a string or an array.",
                 f"{p}.content")
        for j, part in enumerate(content if isinstance(content, list) else []):
            _require(isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text")
                     and isinstance(part.get("text"), str),
                     f"Invalid '{p}.content[{j}]': only input_text/output_text parts are supported.",
                     f"{p}.content[{j}]")
        texts = [content] if isinstance(content, str) else [part["text"] for part in content]
        phase = item.get("phase") if item.get("phase") in ("commentary", "final_answer") else None
        extra = {"type": "message", "phase": phase,
                 "parts": [{"type": "text", "text": t} for t in texts] if len(texts) != 1 else None}
        return {"id": _new_id("msg"), "role": role, "content": "\n".join(texts), "metadata": _join({}, extra)}
    if kind == "function_call":
        for key in ("call_id", "name", "arguments"):
            _require(isinstance(item.get(key), str) and (key == "arguments" or item[key]),
                     f"Invalid '{p}.{key}': expected a string.", f"{p}.{key}")
        call = {"id": item["call_id"], "type": "function",
                "function": {"name": item["name"], "arguments": item["arguments"]}}
        return {"id": _new_id("fc"), "role": "assistant", "content": "", "tool_calls": [call],
                "metadata": _join({}, {"type": "function_call"})}
    if kind == "function_call_output":
        call_id, output = item.get("call_id"), item.get("output")
        if isinstance(output, list) and all(isinstance(x, dict) and isinstance(x.get("text"), str)
                                            for x in output):
            output = "\n".join(x["text"] for x in output)
        _require(isinstance(call_id, str) and call_id and isinstance(output, str),
                 f"Invalid '{p}': function_call_output needs call_id and a text output.", p)
        return {"id": _new_id("fco"), "role": "tool", "content": output, "tool_call_id": call_id,
                "metadata": _join({}, {"type": "function_call_output"})}
    raise OpenAIValidationError(f"Invalid '{p}.type': {kind!r} items are not supported (message, "
                                "function_call, function_call_output are).", f"{p}.type")


def _items_input(items: Any, *, allow_empty: bool) -> list[dict[str, Any]]:
    if items is None and allow_empty:
        return []
    _require(isinstance(items, list) and (items or allow_empty),
             "Invalid 'items': expected a non-empty array.", "items")
    _require(len(items) <= MAX_ITEMS, f"Invalid 'items': at most {MAX_ITEMS} items can be added at a time.",
             "items")
    return [_item_input(item, i) for i, item in enumerate(items)]


# ---------------------------------------------------------------------------------------------- rendering
def _role(message: Any) -> str:
    return ROLE_ALIASES.get(message.role, message.role)


def _is_call(message: Any, extra: dict[str, Any]) -> bool:
    return extra.get("type") == "function_call" or bool(message.tool_calls and not message.content.strip())


def _thread_visible(message: Any) -> bool:
    _, extra = _split(message.metadata)
    return _role(message) in THREAD_ROLES and extra.get("type", "message") == "message" \
        and not _is_call(message, extra)


def _thread_obj(session: Any) -> dict[str, Any]:
    meta, extra = _split(session.metadata)
    return {"id": session.id, "object": "thread", "created_at": _ts(session.created_at), "metadata": meta,
            "tool_resources": extra.get("tool_resources") or {}}


def _message_obj(m: Any) -> dict[str, Any]:
    meta, extra = _split(m.metadata)
    parts = extra.get("parts") or [{"type": "text", "text": m.content}]
    content = [{"type": "text", "text": {"value": p["text"], "annotations": []}} if p["type"] == "text" else p
               for p in parts]
    created = _ts(m.created_at)
    return {"id": m.id, "object": "thread.message", "created_at": created,
            "assistant_id": extra.get("assistant_id"), "thread_id": m.session_id,
            "run_id": extra.get("run_id"), "role": _role(m), "content": content,
            "attachments": extra.get("attachments") or [], "metadata": meta, "status": "completed",
            "completed_at": created, "incomplete_at": None, "incomplete_details": None}


def _conversation_obj(session: Any) -> dict[str, Any]:
    meta, _ = _split(session.metadata)
    return {"id": session.id, "object": "conversation", "created_at": _ts(session.created_at),
            "metadata": meta}


def _item_obj(m: Any) -> dict[str, Any]:
    _, extra = _split(m.metadata)
    if m.role == "tool" or extra.get("type") == "function_call_output":
        return {"id": m.id, "type": "function_call_output", "call_id": m.tool_call_id, "output": m.content,
                "status": "completed"}
    if _is_call(m, extra) and m.tool_calls:
        call = m.tool_calls[0]
        fn = call.get("function") or {}
        args = fn.get("arguments", call.get("args", ""))
        return {"id": m.id, "type": "function_call", "call_id": str(call.get("id") or ""),
                "name": str(fn.get("name") or call.get("name") or ""),
                "arguments": args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
                "status": "completed"}
    role = _role(m) if _role(m) in CONV_ROLES else "unknown"
    parts = extra.get("parts") or [{"type": "text", "text": m.content}]
    texts = [p["text"] for p in parts if p.get("type") == "text"]
    content = [{"type": "output_text", "text": t, "annotations": []} if role == "assistant"
               else {"type": "input_text", "text": t} for t in texts]
    item = {"id": m.id, "type": "message", "role": role, "status": "completed", "content": content}
    if extra.get("phase"):
        item["phase"] = extra["phase"]
    return item


def _envelope(data: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    return {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None, "has_more": has_more}
