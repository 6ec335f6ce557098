"""A local fake of an OpenAI-compatible Chat Completions server (and of Ollama's own API), for tests and benchmarks.

This is a FAKE: no hosted OpenAI-compatible API (nor an Ollama with a model) can be reached from tests, so this
module runs a real HTTP server on 127.0.0.1 (ephemeral port, background threads) that speaks the wire format
closely enough for the official ``openai`` SDK:

- ``POST /v1/chat/completions`` with ``stream: true``: SSE ``data:`` chunks as the API sends them - a first
  chunk with ``delta.role``, text as ``delta.content`` pieces, tool calls as ``delta.tool_calls[]`` items with
  an ``index`` (the first fragment of each carries ``id``, ``type`` and ``function.name``, later ones only
  ``function.arguments`` pieces; with :attr:`FakeOpenAI.whole_calls` each call comes whole in one chunk, as
  Ollama sends them), the chunk with ``finish_reason``, then (``stream_options.include_usage``) the usage chunk
  with empty ``choices`` and ``prompt_tokens_details.cached_tokens``, then ``data: [DONE]``;
- errors as the API sends them: ``{"error": {"message", "type", "param", "code"}}`` with any status (429 with
  ``retry-after``, 500, 401...);
- ``GET /v1/models`` (:attr:`FakeOpenAI.models`); Ollama's ``POST /api/show`` and ``GET /api/tags``
  (:attr:`FakeOpenAI.ollama`, with :attr:`FakeOpenAI.ollama_parameters` as the Modelfile's parameters; a test
  can hold /api/show's answer with :attr:`FakeOpenAI.show_gate`).

Replies are scripted with the SAME vocabulary as ``tests/fake_anthropic.py`` (:class:`Reply`,
:class:`TextBlock`, :class:`ToolUseBlock`), so a scenario reads the same on both providers: a FIFO queue
(:meth:`FakeOpenAI.enqueue`) and/or a handler ``(request_json) -> Reply | None``. A request with no reply
scripted gets a 400 naming the problem and is counted in :attr:`FakeOpenAI.unexpected`. ``stop_reason`` maps to
``finish_reason`` (``end_turn`` -> ``stop``, ``tool_use`` -> ``tool_calls``, ``max_tokens`` -> ``length``).
Usage: ``prompt_tokens`` is the request's bytes / 4; the longest prefix of messages (compact JSON, in order)
already seen in an earlier request is reported as ``cached_tokens`` (automatic prefix caching; a prefix must be
at least :attr:`FakeOpenAI.min_cached_tokens`); a script's ``usage`` (``prompt_tokens``, ``cached_tokens``,
``completion_tokens``) wins.

As a separate process (for benchmarks)::

    python -m tests.fake_openai --port 0 --script replies.json

prints ``FAKE_OPENAI_LISTENING http://127.0.0.1:PORT/v1`` once ready and serves until SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.fake_anthropic import Reply, TextBlock, ToolUseBlock

__all__ = ["FakeOpenAI", "Recorded", "Reply", "TextBlock", "ToolUseBlock", "fake_openai"]

FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length", "refusal": "content_filter"}
ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error",
               429: "rate_limit_exceeded", 500: "server_error", 503: "server_error"}


@dataclass
class Recorded:
    """One request the fake saw (headers kept out of reprs: they hold the key)."""

    method: str
    path: str
    body: Any
    headers: dict[str, str] = field(repr=False)
    started_at: float = 0.0
    status: int | None = None
    disconnected: bool = False
    chunks_sent: int = 0
    line_bytes_sent: int = 0  # of a reply's endless line
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    def api_key_sent(self) -> str | None:
        auth = self.headers.get("authorization") or self.headers.get("api-key")
        if auth and auth.lower().startswith("bearer "):
            return auth[7:]
        return auth


def _tokens(value: Any) -> int:
    return math.ceil(len(json.dumps(value, separators=(",", ":"))) / 4)


class _Gone(Exception):
    pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read records."""

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._json(status, {"error": {"message": message, "type": ERROR_TYPES.get(status, "server_error"),
                                      "param": None, "code": None}}, headers)

    def _authorised(self, rec: Recorded | None = None) -> bool:
        fake = self.server.fake
        if fake.expected_api_key is None:
            return True
        auth = self.headers.get("Authorization") or ""
        return auth == f"Bearer {fake.expected_api_key}" or self.headers.get("api-key") == fake.expected_api_key

    def do_GET(self) -> None:
        fake = self.server.fake
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith("/models"):
            fake.model_list_calls += 1
            if not self._authorised():
                self._error(401, "Incorrect API key provided.")
            elif fake.models_status != 200:
                self._error(fake.models_status, "models unavailable")
            else:
                data = [{"id": mid, "object": "model", "created": 1_760_000_000, "owned_by": "fake",
                         **({"context_length": window} if window else {})} for mid, window in fake.models]
                self._json(200, {"object": "list", "data": data})
        elif path == "/api/tags":
            self._json(200, {"models": [{"name": name, "model": name} for name in fake.ollama]})
        else:
            self._error(404, f"fake_openai: no route for GET {self.path}")

    def do_POST(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = {"_unparsable": raw.decode("utf-8", "replace")}
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/api/show":
            name = body.get("model") if isinstance(body, dict) else None
            facts = fake.ollama.get(str(name))
            fake.show_calls += 1
            if facts is None:
                self._json(404, {"error": f"model '{name}' not found"})
                return
            if fake.show_gate is not None:
                fake.show_gate.wait(30)  # held until the test lets Ollama answer
            window, vision = facts
            self._json(200, {"model_info": {"general.architecture": "llama", "llama.context_length": window},
                             "parameters": fake.ollama_parameters.get(str(name), ""),
                             "capabilities": ["completion", "tools", *(["vision"] if vision else [])]})
            return
        rec = Recorded("POST", self.path, body, {k.lower(): v for k, v in self.headers.items()}, time.monotonic())
        with fake.lock:
            fake._requests.append(rec)
            fake.changed.notify_all()
        try:
            self._answer(rec, path)
        except _Gone:
            rec.disconnected = True
            self.close_connection = True
        finally:
            with fake.lock:
                fake.changed.notify_all()

    def _answer(self, rec: Recorded, path: str) -> None:
        fake = self.server.fake
        if not path.endswith("/chat/completions"):
            self._error(404, f"fake_openai: no route for POST {self.path}")
            return
        if not self._authorised(rec):
            rec.status = 401
            self._error(401, f"Incorrect API key provided: {rec.api_key_sent()}.")  # echoes it, as proxies do
            return
        body = rec.body
        if not isinstance(body, dict) or not body.get("model") or "messages" not in body:
            self._error(400, "fake_openai: body must be a JSON object with model and messages")
            return
        forbidden = [k for k in ("max_tokens", "system", "cache_control") if k in body]
        if forbidden or "cache_control" in json.dumps(body):
            self._error(400, f"fake_openai: Unrecognized request argument supplied: {forbidden or 'cache_control'}")
            return
        reply = fake._next(body)
        if reply is None:
            fake.unexpected += 1
            self._error(400, "fake_openai: no reply scripted for this request (queue empty, handler gave none)")
            return
        if reply.status >= 400:
            rec.status = reply.status
            self._error(reply.status, reply.error_message or f"fake error {reply.status}", reply.headers)
            return
        rec.usage = fake._usage(body, reply)
        self._stream(reply, body, rec)

    def _chunks(
        self, reply: Reply, body: dict[str, Any], usage: dict[str, int]
    ) -> Iterator[tuple[dict[str, Any], bool]]:
        fake = self.server.fake
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_760_000_000,
                "model": reply.model or body["model"]}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        yield chunk({"role": "assistant", "content": ""}), False
        index = 0
        for block in reply.blocks:
            if isinstance(block, TextBlock):
                for piece in block.pieces():
                    yield chunk({"content": piece}), True
            else:
                call_id = block.id.replace("toolu_", "call_")
                if fake.whole_calls:
                    yield chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                                 "function": {"name": block.name,
                                                              "arguments": block.json_text()}}]}), True
                else:
                    yield chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                                 "function": {"name": block.name, "arguments": ""}}]}), True
                    for piece in block.pieces():
                        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}), True
                index += 1
        finish = FINISH.get(reply.final_stop_reason(), "stop")
        if fake.whole_calls and finish == "tool_calls":
            finish = "stop"  # as Ollama does
        yield chunk({}, finish), False
        if (body.get("stream_options") or {}).get("include_usage"):
            yield {**base, "choices": [], "usage": {
                "prompt_tokens": usage["prompt_tokens"], "completion_tokens": usage["completion_tokens"],
                "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"],
                "prompt_tokens_details": {"cached_tokens": usage["cached_tokens"]}}}, False

    def _stream(self, reply: Reply, body: dict[str, Any], rec: Recorded) -> None:
        fake = self.server.fake
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
        except OSError as exc:
            raise _Gone from exc
        rec.status = 200
        for data, is_delta in self._chunks(reply, body, rec.usage):
            if reply.endless_line is not None and rec.chunks_sent >= 2:
                self._send(b"data: ")  # one line of that many bytes, never ended; then the connection is cut
                piece = b"x" * (1 << 20)
                while rec.line_bytes_sent < reply.endless_line:
                    part = piece[:reply.endless_line - rec.line_bytes_sent]
                    self._send(part)
                    rec.line_bytes_sent += len(part)
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            if reply.drop_after_events is not None and rec.chunks_sent >= reply.drop_after_events:
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            if is_delta and reply.delay_s:
                time.sleep(reply.delay_s)
            if reply.stamp and is_delta and "content" in data["choices"][0]["delta"]:
                data["choices"][0]["delta"]["content"] = f"{time.monotonic_ns()};"
            self._send(f"data: {json.dumps(data, separators=(',', ':'))}\n\n".encode())
            rec.chunks_sent += 1
            with fake.lock:
                fake.changed.notify_all()
        if reply.sse_error:
            self._send(b'data: {"error":{"message":"The server had an error while processing your request.",'
                       b'"type":"server_error"}}\n\n')
        else:
            self._send(b"data: [DONE]\n\n")
        self._send(b"", last=True)

    def _send(self, payload: bytes, last: bool = False) -> None:
        try:
            if payload:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
            if last:
                self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError as exc:
            raise _Gone from exc


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeOpenAI

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-answer is not an error worth printing."""


class FakeOpenAI:
    """The fake server; ``with FakeOpenAI() as fake:`` or the ``fake_openai`` fixture."""

    def __init__(self, port: int = 0, expected_api_key: str | None = None) -> None:
        self.expected_api_key = expected_api_key
        self.queue: deque[Reply] = deque()
        self.handler: Callable[[dict[str, Any]], Reply | None] | None = None
        self.loop_script = False
        self.models: list[tuple[str, int | None]] = [("gpt-4.1", None), ("meta-llama/llama-3.3-70b", 131_072)]
        self.models_status = 200
        self.model_list_calls = 0
        self.ollama: dict[str, tuple[int, bool]] = {}  # name -> (context length, takes images)
        self.ollama_parameters: dict[str, str] = {}  # name -> /api/show's "parameters" text ("num_ctx 8192")
        self.show_gate: threading.Event | None = None  # when set: /api/show answers only once it is set
        self.show_calls = 0
        self.whole_calls = False
        self.min_cached_tokens = 16
        self.unexpected = 0
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self._requests: list[Recorded] = []
        self._prefixes: set[str] = set()
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.fake = self
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"FakeOpenAI({self.base_url}, {len(self._requests)} requests)"

    def start(self) -> FakeOpenAI:
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def base_url(self) -> str:
        return self.root + "/v1"

    def env(self, api_key: str = "sk-proj-fake-openai-key-0123456789") -> dict[str, str]:
        """The variables that point the ``openai`` provider here."""
        return {"OPENAI_API_KEY": api_key, "OPENAI_BASE_URL": self.base_url}

    def enqueue(self, *replies: Reply) -> None:
        with self.lock:
            self.queue.extend(replies)

    def _next(self, body: dict[str, Any]) -> Reply | None:
        if self.handler is not None:
            reply = self.handler(body)
            if reply is not None:
                return reply
        with self.lock:
            if not self.queue:
                return None
            reply = self.queue.popleft()
            if self.loop_script:
                self.queue.append(reply)
            return reply

    def _usage(self, body: dict[str, Any], reply: Reply) -> dict[str, int]:
        """Prompt tokens (bytes / 4), the longest earlier-seen message prefix as cached tokens, and the output."""
        messages = body.get("messages", [])
        prompt = _tokens({k: v for k, v in body.items() if k != "messages"}) + sum(_tokens(m) for m in messages)
        cached = 0
        with self.lock:
            prefix = ""
            for i, message in enumerate(messages):
                prefix += json.dumps(message, separators=(",", ":"))
                if prefix in self._prefixes:
                    cached = sum(_tokens(m) for m in messages[: i + 1])
                self._prefixes.add(prefix)
        if cached < self.min_cached_tokens:
            cached = 0
        usage = {"prompt_tokens": prompt, "cached_tokens": cached,
                 "completion_tokens": sum(len(b.pieces()) for b in reply.blocks) or 1}
        for key in ("prompt_tokens", "cached_tokens", "completion_tokens"):
            if key in reply.usage:
                usage[key] = reply.usage[key]
        return usage

    @property
    def requests(self) -> list[Recorded]:
        with self.lock:
            return list(self._requests)

    async def await_for(self, predicate: Callable[[list[Recorded]], bool], timeout: float = 10.0) -> bool:
        """Wait (without blocking the event loop) until ``predicate(requests)`` holds."""
        import asyncio

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self.requests):
                return True
            await asyncio.sleep(0.01)
        return predicate(self.requests)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fake_openai")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", help="a JSON list of replies (tests.fake_anthropic.Reply.from_dict)")
    parser.add_argument("--loop", action="store_true")
    args = parser.parse_args(argv)
    fake = FakeOpenAI(port=args.port)
    if args.script:
        with open(args.script, encoding="utf-8") as f:
            fake.enqueue(*(Reply.from_dict(d) for d in json.load(f)))
    fake.loop_script = args.loop
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    fake.start()
    print(f"FAKE_OPENAI_LISTENING {fake.base_url}", flush=True)
    stop.wait()
    fake.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
