"""A loopback HTTP stub server for tests: canned replies in the OpenAI or Anthropic shape, slow replies, garbage.

A stub, not a model: it answers what a test tells it to, so tests can check what a client sends and
how it copes with what comes back. It listens on 127.0.0.1 on a free port, in a daemon thread,
and records every request it receives (path, headers, parsed JSON body).

    with StubServer(openai_reply("[[ ## sql ## ]]\\nSELECT 1")) as stub:
        build_lm("openai/stub-model", api_base=stub.url + "/v1")
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class StubReply:
    """What the stub sends back: a status, a body (bytes), a content type, after ``delay_s`` seconds."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"
    delay_s: float = 0.0


@dataclass(frozen=True)
class StubRequest:
    """One request the stub received."""

    path: str
    headers: dict[str, str]
    body: Any  # the parsed JSON body, or the raw text when it is not JSON


Replier = Callable[[StubRequest], StubReply]


def openai_reply(text: str, *, logprobs: list[dict[str, Any]] | None = None, delay_s: float = 0.0) -> Replier:
    """Every request answered with one OpenAI chat completion whose content is ``text``."""

    def reply(request: StubRequest) -> StubReply:
        choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text},
                                  "finish_reason": "stop",
                                  "logprobs": None if logprobs is None else {"content": logprobs}}
        body = {"id": "chatcmpl-stub", "object": "chat.completion", "created": int(time.time()),
                "model": (request.body or {}).get("model", "stub") if isinstance(request.body, dict) else "stub",
                "choices": [choice], "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}
        return StubReply(json.dumps(body).encode(), delay_s=delay_s)

    return reply


def anthropic_reply(text: str) -> Replier:
    """Every request answered with one Anthropic Messages API reply whose text is ``text``."""

    def reply(request: StubRequest) -> StubReply:
        model = request.body.get("model", "stub") if isinstance(request.body, dict) else "stub"
        body = {"id": "msg_stub", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 13, "output_tokens": 9}}
        return StubReply(json.dumps(body).encode())

    return reply


def fixed_reply(body: bytes, *, status: int = 200, content_type: str = "application/json",
                delay_s: float = 0.0) -> Replier:
    """Every request answered with the same bytes (garbage, an error page, a slow reply)."""
    return lambda request: StubReply(body, status, content_type, delay_s)


@dataclass
class StubServer:
    """A loopback HTTP server answering every POST with ``replier``'s reply; a context manager."""

    replier: Replier
    requests: list[StubRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                request = StubRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                stub.requests.append(request)
                reply = stub.replier(request)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", reply.content_type)
                    self.send_header("content-length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except OSError:
                    pass  # the client gave up (a timeout test): nothing to answer

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="stub-server", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> StubServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
