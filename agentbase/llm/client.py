"""An async client for any OpenAI-compatible chat-completions endpoint, with retries, a concurrency bound and a
record of every call (docs/llm.md).

The transport is the ``openai`` package's ``AsyncOpenAI`` (extra ``agentbase[openai]``), with its own retries
turned off: this module retries itself so that each attempt, its outcome and its tokens are recorded, and so that
the caller learns which kind of failure remained (:class:`~agentbase.errors.LLMUnavailable`: defer;
:class:`~agentbase.errors.LLMRetryable`: retry later; :class:`~agentbase.errors.LLMError`: give up).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import email.utils
import json
import random
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import LLMError, LLMOutputError, LLMRetryable, LLMUnavailable, MissingDependencyError

if TYPE_CHECKING:
    from ..config import LLMSettings

__all__ = ["LLMCall", "LLMClient", "LLMResult", "parse_json_answer"]

# Backoff between attempts: "full jitter" (M. Brooker, "Exponential Backoff And Jitter", AWS Architecture Blog,
# 2015): sleep uniform(0, min(cap, base * 2**attempt)). A server's Retry-After wins when given, capped at
# RETRY_AFTER_CAP_S so one header cannot park a job handler for hours.
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 20.0
#: Seconds a client answers LLMUnavailable at once after the endpoint was unreachable, without a request: a dead
#: server then costs each call nothing instead of its retries (the job queue defers for as long, ingest.DEFER_S).
UNAVAILABLE_HOLD_S = 30.0
RETRY_AFTER_CAP_S = 60.0
RECENT_CALLS = 1000  # calls kept in LLMClient.recent (a ring buffer)


@dataclass(frozen=True)
class LLMResult:
    """One successful chat completion.

    Attributes:
        text: the first choice's message content ("" when the server sent none).
        model: the model name the server reported (the configured one when it reported none).
        prompt_tokens: input tokens as the server counted them (``usage.prompt_tokens``; 0 when not reported).
        completion_tokens: output tokens (``usage.completion_tokens``; 0 when not reported).
        latency_s: seconds from the first attempt to the answer, retries and backoff included.
        purpose: the caller's purpose label (``"summary"``, ``"retrieval_key"``, ``"facts"``, ``"rerank"``...).
    """

    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    purpose: str


@dataclass(frozen=True)
class LLMCall:
    """The record of one :meth:`LLMClient.chat` call, successful or not (never the messages or the key).

    Attributes:
        purpose: the caller's label.
        model: the model asked for (or reported, on success).
        prompt_tokens: input tokens of the successful attempt (0 on failure).
        completion_tokens: output tokens of the successful attempt (0 on failure).
        latency_s: seconds for the whole call, retries included.
        outcome: ``"ok"``, ``"unavailable"``, ``"retryable"`` (429/5xx/timeout after the retries) or ``"error"``.
        attempts: HTTP requests sent (1 + retries used).
        error: a one-line description of the last failure ("" on success).
        at: UNIX time (seconds, UTC) the call finished.
    """

    purpose: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    outcome: str
    attempts: int
    error: str
    at: float

    def as_dict(self) -> dict[str, Any]:
        """The record as a JSON-ready dict (the shape traces store under ``"llm_calls"``)."""
        return {"purpose": self.purpose, "model": self.model, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "latency_ms": round(self.latency_s * 1000, 3),
                "outcome": self.outcome, "attempts": self.attempts, "error": self.error}


_collector: contextvars.ContextVar[list[LLMCall] | None] = contextvars.ContextVar("agentbase_llm_calls",
                                                                                    default=None)


def _retry_after(exc: Any) -> float | None:
    """Seconds from a response's ``retry-after-ms`` or ``Retry-After`` header (seconds or an HTTP date, RFC 9110
    section 10.2.3), or None."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class LLMClient:
    """Chat completions from one OpenAI-compatible endpoint.

    Use one client from one event loop (the engine's); ``chat`` may be awaited concurrently, at most
    ``max_concurrency`` requests are in flight. Every call is recorded as an :class:`LLMCall`: in
    :attr:`recent`, in the per-purpose totals of :meth:`usage`, in the list of an enclosing :meth:`collect`
    block (how a ``find()`` trace gathers its calls), and passed to each listener added with
    :meth:`add_listener` (how the engine persists token counts for ``stats()``).
    """

    def __init__(self, *, base_url: str, model: str, api_key: str | None = None, timeout_s: float = 60.0,
                 max_retries: int = 3, max_concurrency: int = 4, max_tokens: int = 512, temperature: float = 0.0,
                 backoff_base_s: float = BACKOFF_BASE_S, backoff_cap_s: float = BACKOFF_CAP_S,
                 http_client: Any = None):
        """Configure the client (no request is sent here).

        Args:
            base_url: API root, e.g. ``"http://127.0.0.1:8080/v1"``; requests go to ``{base_url}/chat/completions``.
            model: the ``"model"`` field of each request.
            api_key: bearer token, or None for servers without auth (the placeholder ``"EMPTY"`` is sent, the
                convention of vLLM and llama.cpp server).
            timeout_s: seconds per HTTP request (> 0).
            max_retries: attempts after the first for 429 / 5xx / timeouts / connection errors (>= 0).
            max_concurrency: requests in flight at once (>= 1).
            max_tokens: default completion token limit per call (>= 1).
            temperature: sampling temperature (0 = as deterministic as the server allows).
            backoff_base_s: first backoff ceiling in seconds (doubles each retry, full jitter).
            backoff_cap_s: largest backoff ceiling in seconds.
            http_client: optional ``httpx.AsyncClient`` handed to ``AsyncOpenAI`` (proxies, custom transports).

        Raises:
            ConfigError: a bound is out of range or ``base_url``/``model`` is empty.
            MissingDependencyError: the ``openai`` package is not installed.
        """
        from ..errors import ConfigError

        if not base_url or not model:
            raise ConfigError("LLMClient needs base_url and model")
        if timeout_s <= 0 or max_retries < 0 or max_concurrency < 1 or max_tokens < 1 or backoff_base_s < 0:
            raise ConfigError("timeout_s, max_concurrency and max_tokens must be positive, max_retries and "
                              "backoff_base_s >= 0")
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - openai is in [all]
            raise MissingDependencyError("openai", "openai") from exc
        self._openai = openai
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.max_concurrency = int(max_concurrency)
        self.max_tokens = int(max_tokens)
        self.temperature = float(temperature)
        self.backoff_base_s = float(backoff_base_s)
        self.backoff_cap_s = float(backoff_cap_s)
        self._client = openai.AsyncOpenAI(base_url=self.base_url, api_key=api_key or "EMPTY",
                                          timeout=self.timeout_s, max_retries=0, http_client=http_client)
        self._semaphore: asyncio.Semaphore | None = None
        self._no_json_mode = False  # the server refused response_format once: stop sending it
        self._down: tuple[float, str] | None = None  # (monotonic time, reason) the endpoint was last unreachable
        self._lock = threading.Lock()
        self._totals: dict[str, dict[str, int]] = {}
        self._listeners: list[Callable[[LLMCall], None]] = []
        self.recent: deque[LLMCall] = deque(maxlen=RECENT_CALLS)

    def __repr__(self) -> str:
        return f"LLMClient(base_url={self.base_url!r}, model={self.model!r})"

    @classmethod
    def from_settings(cls, settings: LLMSettings, **kwargs: Any) -> LLMClient | None:
        """A client for ``settings`` (the ``llm`` section), or None when no model is configured.

        Args:
            settings: :class:`~agentbase.config.LLMSettings`.
            **kwargs: extra constructor arguments (``backoff_base_s``, ``http_client``...).

        Returns:
            The client, or None when ``settings.configured`` is False.

        Raises:
            MissingDependencyError: a model is configured but the ``openai`` package is not installed.
        """
        if not settings.configured:
            return None
        key = settings.api_key.get_secret_value() if settings.api_key is not None else None
        return cls(base_url=settings.base_url or "", model=settings.model or "", api_key=key,
                   timeout_s=settings.timeout_s, max_retries=settings.max_retries,
                   max_concurrency=settings.max_concurrency, max_tokens=settings.max_tokens,
                   temperature=settings.temperature, **kwargs)

    # -- recording ------------------------------------------------------------------------------------------

    def add_listener(self, callback: Callable[[LLMCall], None]) -> None:
        """Call ``callback(call)`` after every chat call (on the calling loop; exceptions are swallowed)."""
        self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[LLMCall], None]) -> None:
        """Stop calling ``callback``; unknown callbacks are ignored."""
        with contextlib.suppress(ValueError):
            self._listeners.remove(callback)

    @staticmethod
    @contextlib.contextmanager
    def collect() -> Iterator[list[LLMCall]]:
        """Collect the calls made by any client inside this block (in this task and the tasks it starts).

        Yields:
            A list that fills with :class:`LLMCall` records as calls finish.
        """
        calls: list[LLMCall] = []
        token = _collector.set(calls)
        try:
            yield calls
        finally:
            _collector.reset(token)

    def usage(self) -> dict[str, dict[str, int]]:
        """Totals since this client was made, per purpose: ``{purpose: {"calls", "errors", "prompt_tokens",
        "completion_tokens"}}`` (``errors`` counts calls whose outcome was not ``"ok"``)."""
        with self._lock:
            return {k: dict(v) for k, v in self._totals.items()}

    def _record(self, call: LLMCall) -> None:
        with self._lock:
            t = self._totals.setdefault(call.purpose, {"calls": 0, "errors": 0, "prompt_tokens": 0,
                                                       "completion_tokens": 0})
            t["calls"] += 1
            t["errors"] += call.outcome != "ok"
            t["prompt_tokens"] += call.prompt_tokens
            t["completion_tokens"] += call.completion_tokens
            self.recent.append(call)
        calls = _collector.get()
        if calls is not None:
            calls.append(call)
        for callback in list(self._listeners):
            with contextlib.suppress(Exception):
                callback(call)

    # -- the call -------------------------------------------------------------------------------------------

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, RETRY_AFTER_CAP_S)
        ceiling = min(self.backoff_cap_s, self.backoff_base_s * (2 ** attempt))
        return random.uniform(0, ceiling)

    async def chat(self, messages: list[dict[str, Any]], *, purpose: str, max_tokens: int | None = None,
                   json_mode: bool = False) -> LLMResult:
        """Send one chat completion, retrying transient failures.

        Args:
            messages: OpenAI chat messages, ``[{"role": "system"|"user"|"assistant", "content": str}, ...]``.
            purpose: a short label recorded with the call (``"summary"``, ``"rerank"``...).
            max_tokens: completion token limit for this call (default: the client's ``max_tokens``).
            json_mode: ask for a JSON object (``response_format={"type": "json_object"}``); a server that
                refuses the field with HTTP 400 is asked again without it, and never sent it again.

        Returns:
            :class:`LLMResult`.

        Raises:
            LLMUnavailable: the endpoint could not be reached (connection refused, DNS, closed port) in
                ``1 + max_retries`` attempts, or it could not be within the last :data:`UNAVAILABLE_HOLD_S` seconds
                (then at once, no request sent).
            LLMRetryable: HTTP 429 / 5xx or a timeout in every attempt.
            LLMError: a permanent failure (HTTP 4xx other than 429, or a body that is not a chat completion).
        """
        if not isinstance(messages, list) or not messages:
            raise LLMError("messages must be a non-empty list of chat messages", purpose=purpose)
        if self._down is not None:
            since = time.monotonic() - self._down[0]
            if since < UNAVAILABLE_HOLD_S:
                raise LLMUnavailable(f"{self._down[1]} ({since:.0f} s ago; next try in "
                                     f"{UNAVAILABLE_HOLD_S - since:.0f} s)", purpose=purpose)
            self._down = None
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
        openai = self._openai
        limit = int(max_tokens or self.max_tokens)
        started = time.perf_counter()
        attempts = 0
        last: LLMError | None = None
        refused = False  # the last attempt found nothing listening (not a reset or a dropped connection)
        async with self._semaphore:
            retries = 0
            while True:
                attempts += 1
                kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": limit,
                                          "temperature": self.temperature}
                if json_mode and not self._no_json_mode:
                    kwargs["response_format"] = {"type": "json_object"}
                retry_after: float | None = None
                try:
                    response = await self._client.chat.completions.create(**kwargs)
                    result = self._result(response, purpose, started)
                except openai.APITimeoutError:
                    last = LLMRetryable(f"timed out after {self.timeout_s:g} s", purpose=purpose)
                except openai.APIConnectionError as exc:
                    last = LLMUnavailable(f"cannot reach {self.base_url}: {_cause(exc)}", purpose=purpose)
                    refused = _refused(exc)
                except openai.APIStatusError as exc:
                    status = exc.status_code
                    if status == 429 or status >= 500:
                        retry_after = _retry_after(exc)
                        last = LLMRetryable(f"HTTP {status}: {_excerpt(exc)}", purpose=purpose, status=status,
                                            retry_after_s=retry_after)
                    elif status == 400 and "response_format" in kwargs:
                        # the server does not know JSON mode: ask again at once without it (not a retry)
                        self._no_json_mode = True
                        last = LLMError(f"HTTP 400: {_excerpt(exc)}", purpose=purpose, status=status)
                        continue
                    else:
                        last = LLMError(f"HTTP {status}: {_excerpt(exc)}", purpose=purpose, status=status)
                        break
                except (openai.APIError, ValueError) as exc:  # a body that is not a chat completion (or JSON)
                    last = LLMError(f"malformed response: {_excerpt(exc)}", purpose=purpose)
                    break
                except LLMError as exc:
                    last = exc
                    break
                else:
                    self._record_ok(result, attempts)
                    return result
                if retries >= self.max_retries:
                    break
                await asyncio.sleep(self._backoff(retries, retry_after))
                retries += 1
        assert last is not None
        if isinstance(last, LLMUnavailable) and refused:
            self._down = (time.monotonic(), str(last))
        outcome = ("unavailable" if isinstance(last, LLMUnavailable) else
                   "retryable" if isinstance(last, LLMRetryable) else "error")
        self._record(LLMCall(purpose=purpose, model=self.model, prompt_tokens=0, completion_tokens=0,
                             latency_s=time.perf_counter() - started, outcome=outcome, attempts=attempts,
                             error=str(last), at=time.time()))
        raise last

    def _result(self, response: Any, purpose: str, started: float) -> LLMResult:
        choices = getattr(response, "choices", None)
        if not choices:
            raise LLMError("malformed response: no choices", purpose=purpose)
        message = getattr(choices[0], "message", None)
        text = getattr(message, "content", None) or ""
        usage = getattr(response, "usage", None)
        return LLMResult(text=str(text), model=str(getattr(response, "model", None) or self.model),
                         prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                         completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                         latency_s=time.perf_counter() - started, purpose=purpose)

    def _record_ok(self, result: LLMResult, attempts: int) -> None:
        self._record(LLMCall(purpose=result.purpose, model=result.model, prompt_tokens=result.prompt_tokens,
                             completion_tokens=result.completion_tokens, latency_s=result.latency_s,
                             outcome="ok", attempts=attempts, error="", at=time.time()))

    async def aclose(self) -> None:
        """Close the HTTP connection pool (the client cannot be used afterwards)."""
        await self._client.close()


def _refused(exc: BaseException) -> bool:
    """Whether a connection error was a refused connection or an unknown host (nothing to reach), as opposed to a
    connection reset or dropped mid-request (a live server under load)."""
    import socket

    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, (ConnectionRefusedError, socket.gaierror)):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _cause(exc: BaseException) -> str:
    inner = exc.__cause__ or exc.__context__
    return " ".join(str(inner or exc).split())[:200] or type(exc).__name__


def _excerpt(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*(.*?)\s*```\s*$", re.S)


def parse_json_answer(text: str, *, purpose: str = "") -> Any:
    """The JSON value in a model's answer: the whole text, or inside one Markdown code fence, or the first
    ``{...}`` / ``[...]`` span in it (small models often add a sentence around the JSON).

    Args:
        text: the model's answer.
        purpose: recorded on the error.

    Returns:
        The parsed value (dict, list, str, number...).

    Raises:
        LLMOutputError: no JSON value could be read.
    """
    candidates = [text.strip()]
    fenced = _FENCE.match(text)
    if fenced:
        candidates.insert(0, fenced.group(1))
    for opener, closer in (("{", "}"), ("[", "]")):
        start, end = text.find(opener), text.rfind(closer)
        if 0 <= start < end:
            candidates.append(text[start:end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    raise LLMOutputError(f"the model's answer is not JSON: {' '.join(text.split())[:200]!r}", purpose=purpose)
