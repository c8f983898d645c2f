"""A fault-injecting OpenAI chat-completions server on loopback (stdlib ``http.server`` in a thread).

It answers ``POST /v1/chat/completions`` with the OpenAI response shape. What it answers is scripted:

* ``server.script`` is a list of one-shot faults consumed in order, each one of
  ``("status", code)``, ``("status", code, retry_after_s)``, ``("hang", seconds)``, ``("garbage",)`` (a body
  that is not JSON) or ``("text", answer)``;
* when the script is empty, ``server.responder(request_json) -> str`` writes the answer (default: ``"ok"``).

Every request body is kept in ``server.requests``. ``dead_url()`` is a URL whose port nothing listens on.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def count_tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: whitespace-separated words."""
    return len(text.split())


class FakeLLMServer:
    def __init__(self) -> None:
        self.script: list[tuple[Any, ...]] = []
        self.responder: Callable[[dict[str, Any]], str] = lambda request: "ok"
        self.requests: list[dict[str, Any]] = []
        self.reject_json_mode = False  # answer 400 to a request carrying response_format
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def _send(self, code: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                with outer._lock:
                    outer.requests.append(request)
                    fault = outer.script.pop(0) if outer.script else None
                if not self.path.endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                if outer.reject_json_mode and "response_format" in request:
                    self._send(400, b'{"error": {"message": "response_format is not supported"}}')
                    return
                if fault is not None:
                    kind = fault[0]
                    if kind == "status":
                        headers = {"Retry-After": str(fault[2])} if len(fault) > 2 else {}
                        body = json.dumps({"error": {"message": f"scripted {fault[1]}"}}).encode()
                        self._send(fault[1], body, headers)
                        return
                    if kind == "hang":
                        time.sleep(fault[1])  # then the normal answer (a client that timed out is gone)
                        self._reply(request, outer.responder(request))
                        return
                    if kind == "garbage":
                        self._send(200, b"<html>this is not json")
                        return
                    if kind == "text":
                        self._reply(request, fault[1])
                        return
                    raise AssertionError(f"unknown fault {fault!r}")
                self._reply(request, outer.responder(request))

            def _reply(self, request: dict[str, Any], text: str) -> None:
                prompt = " ".join(str(m.get("content", "")) for m in request.get("messages", []))
                body = {
                    "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                    "model": request.get("model", "fake"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": count_tokens(prompt), "completion_tokens": count_tokens(text),
                              "total_tokens": count_tokens(prompt) + count_tokens(text)},
                }
                try:
                    self._send(200, json.dumps(body).encode())
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def purposes(self) -> list[str]:
        """The first line of each request's system message (the prompts start with a purpose line)."""
        out = []
        for r in self.requests:
            system = next((m["content"] for m in r.get("messages", []) if m.get("role") == "system"), "")
            out.append(system.splitlines()[0] if system else "")
        return out


def dead_url() -> str:
    """An http URL on loopback whose port was just free (nothing listens: connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
