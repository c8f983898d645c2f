"""The optional LLM path (docs/llm.md): an OpenAI-compatible chat client and the uses built on it.

Nothing here runs unless ``settings.llm.base_url`` and ``settings.llm.model`` are set; zero LLM calls is the
default.
"""

from __future__ import annotations

from ..errors import LLMError, LLMOutputError, LLMRetryable, LLMUnavailable
from .client import LLMCall, LLMClient, LLMResult, parse_json_answer

__all__ = ["LLMCall", "LLMClient", "LLMError", "LLMOutputError", "LLMResult", "LLMRetryable", "LLMUnavailable",
           "parse_json_answer"]
