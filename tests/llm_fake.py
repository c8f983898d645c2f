"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 (stdlib ``http.server`` in a thread).

It stands in for a model in the core tests: ``POST /v1/chat/completions`` answers with the text a script
function returns for the request body, with ``usage`` counted as whitespace-separated words of the prompt and of
the answer; ``GET /v1/models`` lists the one model. Every request body is kept in ``requests`` so a test can
check what AgentBase sent. ``status`` (default 200) makes the next answers fail with that HTTP status.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "fake-model"


def _words(messages: list[dict[str, Any]]) -> int:
    return sum(len(str(m.get("content") or "").split()) for m in messages)


class FakeLLM:
    """``with FakeLLM(script) as fake: fake.url`` is an OpenAI ``base_url`` (``http://127.0.0.1:PORT/v1``).

    Args:
        script: ``(request_body) -> answer text``; the default echoes the last user message.
    """

    def __init__(self, script: Callable[[dict[str, Any]], str] | None = None):
        self.script = script or (lambda body: "echo: " + str(body["messages"][-1]["content"]))
        self.requests: list[dict[str, Any]] = []
        self.status = 200
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0,
                                                                 "owned_by": "test"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                fake.requests.append(body)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": "not found"}})
                if fake.status != 200:
                    return self._send(fake.status, {"error": {"message": "scripted failure", "type": "server_error"}})
                text = fake.script(body)
                p, c = _words(body.get("messages", [])), len(text.split())
                self._send(200, {"id": f"chatcmpl-{len(fake.requests)}", "object": "chat.completion",
                                 "created": int(time.time()), "model": body.get("model") or MODEL,
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": text}}],
                                 "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
