"""An offline ``agents.models.interface.Model`` for the suite: it answers from a queue of fixed texts (or tool
calls) and records the input of every call, so a test can check what history the model was given."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)


def text_message(text: str, n: int) -> ResponseOutputMessage:
    """An assistant output message with one ``output_text`` part (id ``msg_<n>``)."""
    return ResponseOutputMessage(id=f"msg_{n}", type="message", role="assistant", status="completed",
                                 content=[ResponseOutputText(type="output_text", text=text, annotations=[])])


def tool_call(name: str, arguments: dict[str, Any], n: int) -> ResponseFunctionToolCall:
    """A function tool call (call id ``call_<n>``)."""
    return ResponseFunctionToolCall(id=f"fc_{n}", type="function_call", call_id=f"call_{n}", name=name,
                                    arguments=json.dumps(arguments), status="completed")


class FixedModel(Model):
    """Returns the queued outputs in order: each entry is a text (an assistant message) or a list of output items.

    Attributes:
        inputs: the ``input`` argument of every call, oldest first (a copy of each list).
    """

    def __init__(self, *outputs: str | list[Any]) -> None:
        self.queue = list(outputs)
        self.inputs: list[Any] = []
        self.calls = 0

    def _next(self, input: str | list[Any]) -> ModelResponse:
        self.calls += 1
        self.inputs.append(list(input) if isinstance(input, list) else input)
        if not self.queue:
            raise AssertionError("FixedModel has no more outputs queued")
        out = self.queue.pop(0)
        items = [text_message(out, self.calls)] if isinstance(out, str) else out
        return ModelResponse(output=items, usage=Usage(), response_id=f"resp_{self.calls}")

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                           tracing, *, previous_response_id, conversation_id, prompt) -> ModelResponse:
        return self._next(input)

    async def stream_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                              tracing, *, previous_response_id, conversation_id,
                              prompt) -> AsyncIterator[Any]:
        response = self._next(input)
        yield ResponseCompletedEvent(
            type="response.completed", sequence_number=0,
            response=Response(id=response.response_id, created_at=0, model="fixed", object="response",
                              output=response.output, parallel_tool_calls=False, tool_choice="auto",
                              tools=[]))
