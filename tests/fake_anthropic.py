"""A local fake of the Anthropic Messages API, for tests and benchmarks.

This is a FAKE: the real Anthropic API cannot be reached from tests, so this module runs a real HTTP
server on 127.0.0.1 (ephemeral port, background threads) that speaks the Messages API wire format closely
enough for the official ``anthropic`` SDK: ``POST /v1/messages`` streaming (SSE with ``message_start``,
``content_block_start/delta/stop`` carrying ``text_delta`` and ``input_json_delta``, ``message_delta``
with ``stop_reason`` and ``usage``, ``message_stop``) and non-streaming, plus Anthropic-style JSON error
bodies.

Each test scripts the replies: a FIFO queue (:meth:`FakeAnthropic.enqueue`) and/or a handler callable
``(request_json) -> Reply | None`` (:attr:`FakeAnthropic.handler`) that can route concurrent requests,
e.g. sub-agents, by their content. A handler returning ``None`` falls back to the queue. A request with
no reply scripted gets a 400 ``invalid_request_error`` naming the problem (non-retryable, so it surfaces
at once) and is counted in :attr:`FakeAnthropic.unexpected`.

Every request is recorded (:class:`RecordedRequest`): parsed JSON body, headers (kept out of reprs),
monotonic start/end times and whether the client disconnected, so tests assert on what was sent and on
timing overlap of concurrent streams (:meth:`FakeAnthropic.max_concurrency`) instead of sleeping.

Usage in a test (the ``fake_anthropic`` fixture is defined at the bottom)::

    async def test_hello(fake_anthropic):
        fake_anthropic.enqueue(Reply.text_reply("Hello!", deltas=3))
        client = LlmClient(api_key="k", base_url=fake_anthropic.base_url)
        ...
        assert fake_anthropic.requests[0].body["messages"][-1]["content"] == "hi"

As a separate process (for benchmarks)::

    python -m tests.fake_anthropic --port 0 --script replies.json [--loop] [--handler pkg.mod:func]
    python -m tests.fake_anthropic --self-benchmark   # the fake's own throughput vs the SDK consumer

prints ``FAKE_ANTHROPIC_LISTENING http://127.0.0.1:PORT`` on stdout once ready and serves until
SIGTERM/SIGINT. ``GET /_fake/requests`` returns the records (without headers) as JSON.

Prompt caching (issue 16) follows the API's rules (:class:`PromptCache`): blocks marked with
``cache_control`` are breakpoints; the prefix up to each one (tools -> system -> messages) is kept per model
for its TTL (``5m`` or ``1h``, refreshed by each hit); a later request reads the longest kept prefix that ends
at one of its breakpoints or up to 20 blocks before one; a prefix shorter than the model's minimum is not
kept; a 5th breakpoint is refused with a 400. ``usage`` answers what the request really contained: tokens
are counted deterministically as bytes / 4 (rounded up) of each block's compact JSON without its
``cache_control``, in the key order sent (so a reordered key is a different prefix, as for the real API).
The cache writes are also split per TTL, as the API's ``usage.cache_creation`` object
(``ephemeral_5m_input_tokens`` / ``ephemeral_1h_input_tokens``, flat keys in the records). Input figures a
test scripts in ``Reply.usage`` replace the computed ones (all of them, the split included).

Latency (for benchmarks only): ``ttft_base_s`` + uncached input tokens x ``prefill_s_per_token`` + output
tokens x ``decode_s_per_token`` passes before the response headers: a model of a request's latency (all 0 by
default). With ``count_output_tokens`` the output tokens are counted like the input (bytes / 4 of each block).
With ``stream_decode`` (streamed requests) only ``ttft_base_s`` + the prefill pass before the headers, as with
a real model: the reply is then sent in deltas of ``stream_chunk_bytes`` characters each (the blocks' own
pieces when 0), each sent when the model would have decoded it (the output tokens' decode time shared over
the deltas by their length, on one schedule from the first token), so a client acting on a partial reply gains
what it would with a real model, and the whole reply still takes the same time.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import itertools
import json
import math
import select
import signal
import socket
import sys
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

#: Anthropic error ``type`` for each HTTP status the fake can answer with.
ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}

_DEFAULT_ERROR_MESSAGES: dict[int, str] = {
    400: "messages: field required",
    401: "invalid x-api-key",
    403: "Your API key does not have permission to use the specified resource.",
    404: "model: not found",
    413: "Request exceeds the maximum allowed number of bytes.",
    429: "Number of request tokens has exceeded your per-minute rate limit.",
    500: "Internal server error",
    529: "Overloaded",
}

_ids = itertools.count(1)


def _new_id(prefix: str) -> str:
    return f"{prefix}_fake{next(_ids):06d}"


@dataclass
class TextBlock:
    """A text content block, streamed as ``deltas`` roughly equal ``text_delta`` pieces."""

    text: str
    deltas: int = 1

    def pieces(self) -> list[str]:
        """Split the text into ``deltas`` non-empty pieces (fewer if the text is shorter)."""
        n = max(1, min(self.deltas, len(self.text))) if self.text else 1
        if not self.text:
            return [""]
        size, extra = divmod(len(self.text), n)
        out: list[str] = []
        pos = 0
        for i in range(n):
            step = size + (1 if i < extra else 0)
            out.append(self.text[pos : pos + step])
            pos += step
        return out


@dataclass
class ToolUseBlock:
    """A ``tool_use`` block; its input JSON is streamed as ``json_chunks`` ``input_json_delta`` pieces.

    ``raw_json`` overrides the serialised input (to send malformed JSON on purpose).
    """

    name: str
    input: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    json_chunks: int = 3
    raw_json: str | None = None

    def __post_init__(self) -> None:
        if not self.id:
            self.id = _new_id("toolu")

    def json_text(self) -> str:
        """The input as streamed: ``raw_json`` if set, else compact JSON."""
        return self.raw_json if self.raw_json is not None else json.dumps(self.input, separators=(",", ":"))

    def pieces(self) -> list[str]:
        """Split the JSON text into ``json_chunks`` pieces (cutting through tokens on purpose)."""
        text = self.json_text()
        if not text:
            return []
        return TextBlock(text, self.json_chunks).pieces()


Block = TextBlock | ToolUseBlock


@dataclass
class Reply:
    """One scripted answer to one ``POST /v1/messages``.

    Success replies carry ``blocks``; error replies carry an HTTP ``status`` (>= 400) with an
    Anthropic-style JSON body. Stream shaping:

    - ``delay_s``: pause before each delta event (slow streams);
    - ``headers_delay_s``: pause before the response headers (to provoke client timeouts);
    - ``drop_after_events``: send that many SSE events, then cut the TCP connection (no final chunk);
    - ``hang_after_events``: send that many SSE events, then send nothing until the client disconnects
      (bounded by ``hang_limit_s``);
    - ``sse_error``: after the content, send an ``event: error`` with this error type (e.g.
      ``overloaded_error``) instead of finishing, as the real API does for mid-stream failures;
    - ``headers``: extra response headers (e.g. ``retry-after`` on a 429);
    - ``endless_line``: after the first events, one ``data:`` line of that many bytes (``x`` and no line end,
      sent until the client goes away); the bytes of it sent are in ``RecordedRequest.line_bytes_sent``;
    - ``hold_last_delta``: the last delta is held until this condition is true (looked at every 10 ms, for at
      most ``hold_limit_s``): whether it was is ``RecordedRequest.held_until``, True, or False when the limit
      passed first (an order witness: something happened before the model's reply was complete, or not).

    :meth:`stalled` stalls before the headers or mid-stream (no byte at all) until the client gives up.
    """

    blocks: list[Block] = field(default_factory=list)
    stop_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    model: str | None = None
    delay_s: float = 0.0
    headers_delay_s: float = 0.0
    status: int = 200
    error_type: str | None = None
    error_message: str | None = None
    drop_after_events: int | None = None
    hang_after_events: int | None = None
    hang_limit_s: float = 30.0
    sse_error: str | None = None
    stamp: bool = False  # replace each text delta with "<send time in monotonic ns>;" (latency benchmarks)
    headers: dict[str, str] = field(default_factory=dict)
    endless_line: int | None = None
    hold_last_delta: Callable[[], bool] | None = None
    hold_limit_s: float = 30.0

    # -- constructors --------------------------------------------------------------------------------
    @classmethod
    def text_reply(
        cls, text: str, *, deltas: int = 1, delay_s: float = 0.0, stop_reason: str = "end_turn", **kw: Any
    ) -> Reply:
        """A text-only answer split into ``deltas`` text deltas."""
        return cls(blocks=[TextBlock(text, deltas)], stop_reason=stop_reason, delay_s=delay_s, **kw)

    @classmethod
    def tool_reply(cls, *tools: ToolUseBlock, text: str | None = None, deltas: int = 1, **kw: Any) -> Reply:
        """Optional leading text, then one or several ``tool_use`` blocks; stop_reason ``tool_use``."""
        blocks: list[Block] = [TextBlock(text, deltas)] if text else []
        blocks.extend(tools)
        kw.setdefault("stop_reason", "tool_use")
        return cls(blocks=blocks, **kw)

    @classmethod
    def error(
        cls, status: int, message: str | None = None, error_type: str | None = None, **headers: str
    ) -> Reply:
        """An HTTP error answer with an Anthropic-style body ``{"type":"error","error":{...}}``; keyword
        arguments are response headers, ``_`` written ``-`` (``retry_after="2"`` sends ``retry-after: 2``)."""
        sent = {name.replace("_", "-"): value for name, value in headers.items()}
        return cls(status=status, error_message=message, error_type=error_type, headers=sent)

    @classmethod
    def stalled(cls, before_headers: bool = False, *, after_events: int = 3, limit_s: float = 30.0) -> Reply:
        """Send no byte at all until the client disconnects (or ``limit_s`` passes): before the response
        headers, or after the headers and ``after_events`` stream events (0: right after the headers)."""
        if before_headers:
            return cls(blocks=[TextBlock("never sent")], headers_delay_s=limit_s)
        return cls(blocks=[TextBlock("stalls after a few words", 8)], hang_after_events=after_events,
                   hang_limit_s=limit_s)

    @classmethod
    def dropped(cls, text: str = "partial answer that never ends", *, after_events: int = 4) -> Reply:
        """Stream a few events, then cut the connection mid-stream."""
        return cls(blocks=[TextBlock(text, 20)], drop_after_events=after_events)

    @classmethod
    def hanging(cls, text: str = "thinking...", *, after_events: int = 3, limit_s: float = 30.0) -> Reply:
        """Stream a few events, then hang until the client disconnects (or ``limit_s`` passes)."""
        return cls(blocks=[TextBlock(text, 5)], hang_after_events=after_events, hang_limit_s=limit_s)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Reply:
        """Build a reply from a JSON script entry (used by the subprocess mode).

        Keys: ``text``, ``deltas``, ``tool_uses`` (list of ``{name, input, id?}``), ``stop_reason``,
        ``usage``, ``delay_s``, ``headers_delay_s``, ``status``, ``error_message``, ``error_type``,
        ``drop_after_events``, ``hang_after_events``, ``hang_limit_s``, ``sse_error``, ``headers``.
        """
        d = dict(d)
        blocks: list[Block] = []
        text = d.pop("text", None)
        deltas = int(d.pop("deltas", 1))
        if text is not None:
            blocks.append(TextBlock(text, deltas))
        for t in d.pop("tool_uses", []):
            blocks.append(ToolUseBlock(name=t["name"], input=t.get("input", {}), id=t.get("id", "")))
        if blocks and "stop_reason" not in d:
            d["stop_reason"] = "tool_use" if any(isinstance(b, ToolUseBlock) for b in blocks) else "end_turn"
        return cls(blocks=blocks, **d)

    # -- helpers -------------------------------------------------------------------------------------
    def final_stop_reason(self) -> str:
        """The stop_reason sent: explicit, else ``tool_use`` when a tool block is present, else ``end_turn``."""
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolUseBlock) for b in self.blocks) else "end_turn"

    def full_usage(self, computed: dict[str, int] | None = None) -> dict[str, int]:
        """Usage numbers: what the prompt cache computed for the request (else input 10, no cache), output =
        number of deltas, then whatever the script set in ``usage``. A script that sets any input figure
        speaks for the whole input: the computed input figures are then not used (unset ones are 0)."""
        out_default = sum(len(b.pieces()) for b in self.blocks) or 1
        u = {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        scripted_input = {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", *TTL_SPLIT}
        if scripted_input & set(self.usage):
            u = {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        else:
            u.update(computed or {})
        u["output_tokens"] = out_default
        u.update(self.usage)
        return u

    def content_json(self) -> list[dict[str, Any]]:
        """Content blocks as a non-streaming answer would carry them."""
        out: list[dict[str, Any]] = []
        for b in self.blocks:
            if isinstance(b, TextBlock):
                out.append({"type": "text", "text": b.text})
            else:
                out.append({"type": "tool_use", "id": b.id, "name": b.name, "input": b.input})
        return out


@dataclass
class RecordedRequest:
    """What the fake saw of one request. Times are ``time.monotonic()`` seconds (system-wide clock)."""

    method: str
    path: str
    body: Any
    headers: dict[str, str] = field(repr=False)  # may hold the API key: never in reprs
    started_at: float
    ended_at: float | None = None  # the handler returned (after the last write, or after the client went away)
    last_write_at: float | None = None  # the reply's last bytes began to go out: a client cannot have read them
    first_byte_at: float | None = None
    status: int | None = None
    events_sent: int = 0
    held_until: bool | None = None  # Reply.hold_last_delta: its condition came true before the last delta
    line_bytes_sent: int = 0  # of a reply's endless line
    disconnected: bool = False  # the client went away before the response was complete
    completed: bool = False  # the response was sent in full
    usage: dict[str, int] | None = None  # the usage answered (input, output, cache write and read tokens)
    held: str | None = None  # "headers" / "stream": the fake holds the response back (headers delay, hanging)

    @property
    def tool_names(self) -> list[str] | None:
        """Names of the tools offered in the request, or ``None`` when the request had no ``tools``."""
        if not isinstance(self.body, dict) or "tools" not in self.body:
            return None
        return [t.get("name", "") for t in self.body["tools"]]

    @property
    def system(self) -> str:
        """The system prompt's text, whether it was sent as a string or as text blocks (with breakpoints)."""
        return system_text(self.body) if isinstance(self.body, dict) else ""

    @property
    def breakpoints(self) -> int:
        """How many blocks of the request carried ``cache_control``."""
        return len(_breakpoints(_flatten(self.body))) if isinstance(self.body, dict) else 0

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The ``messages`` array sent."""
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    def api_key_sent(self) -> str | None:
        """The credential the client sent (``x-api-key`` or ``Authorization: Bearer``), for assertions."""
        if "x-api-key" in self.headers:
            return self.headers["x-api-key"]
        auth = self.headers.get("authorization", "")
        return auth[len("Bearer ") :] if auth.startswith("Bearer ") else None

    @property
    def served_until(self) -> float | None:
        """When serving ended, for overlaps: the last write's start, else the handler's end (``None``: still serving).

        ``ended_at`` is stamped after the last write, so a client that has read the reply may start its next
        request first, and two sequential requests would seem to overlap; ``last_write_at`` cannot be later
        than anything the client does after reading the reply.
        """
        return self.last_write_at if self.last_write_at is not None else self.ended_at

    def overlaps(self, other: RecordedRequest) -> bool:
        """Whether the two requests were being served at the same time."""
        now = time.monotonic()
        a_end = self.served_until if self.served_until is not None else now
        b_end = other.served_until if other.served_until is not None else now
        return self.started_at < b_end and other.started_at < a_end

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe view without headers."""
        return {
            "method": self.method,
            "path": self.path,
            "body": self.body,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "last_write_at": self.last_write_at,
            "first_byte_at": self.first_byte_at,
            "status": self.status,
            "events_sent": self.events_sent,
            "disconnected": self.disconnected,
            "completed": self.completed,
            "usage": self.usage,
        }


# ------------------------------------------------------------------------------------ prompt caching (issue 16)

#: The smallest prefix each model caches, in tokens (the API's documented minimums); shorter ones are not kept.
MIN_CACHEABLE_TOKENS: dict[str, int] = {
    "claude-opus-4-5": 4096,
    "claude-haiku-4-5": 4096,
    "claude-opus-4-1": 1024,
    "claude-sonnet-4-5": 1024,
    "claude-sonnet-4-5[1m]": 1024,
}
#: The minimum for models the table does not know (test models such as "m").
DEFAULT_MIN_CACHEABLE_TOKENS = 1024
MAX_BREAKPOINTS = 4
#: A breakpoint finds a kept prefix that ends at most this many blocks before it (the API's lookback).
LOOKBACK_BLOCKS = 20
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
#: The usage keys of the cache writes per TTL (flat here; sent as the API's ``usage.cache_creation`` object).
TTL_SPLIT_KEYS = {"5m": "ephemeral_5m_input_tokens", "1h": "ephemeral_1h_input_tokens"}
TTL_SPLIT = tuple(TTL_SPLIT_KEYS.values())


class CacheError(Exception):
    """The request's breakpoints break a rule the API enforces (answered with a 400)."""


def system_text(body: dict[str, Any]) -> str:
    """A request's system prompt as text, whether sent as a string or as a list of text blocks."""
    system = body.get("system", "")
    if isinstance(system, list):
        return "".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return str(system or "")


def _canonical(block: Any) -> str:
    """A block's compact JSON without ``cache_control``, in the key order sent."""
    if isinstance(block, dict):
        block = {k: v for k, v in block.items() if k != "cache_control"}
    return json.dumps(block, separators=(",", ":"), ensure_ascii=False)


def count_tokens(block: Any) -> int:
    """The fake's deterministic token count of one block: bytes / 4 of its canonical JSON, rounded up."""
    return max(1, math.ceil(len(_canonical(block).encode()) / 4))


def _flatten(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """The request as the cache sees it: (where, block) in prefix order tools -> system -> messages."""
    out: list[tuple[str, Any]] = [("tools", t) for t in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, str) and system:
        out.append(("system", {"type": "text", "text": system}))
    elif isinstance(system, list):
        out.extend(("system", b) for b in system)
    for i, message in enumerate(body.get("messages") or []):
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        out.extend((f"messages[{i}].{message.get('role')}", b) for b in blocks)
    return out


def _breakpoints(blocks: list[tuple[str, Any]]) -> list[tuple[int, str]]:
    """(position, ttl) of every breakpoint; position = the number of blocks in the prefix it closes."""
    out: list[tuple[int, str]] = []
    for i, (_, block) in enumerate(blocks):
        control = block.get("cache_control") if isinstance(block, dict) else None
        if control is not None:
            ttl = control.get("ttl", "5m") if isinstance(control, dict) else None
            if not isinstance(control, dict) or control.get("type") != "ephemeral" or ttl not in TTL_SECONDS:
                raise CacheError(
                    f"cache_control: expected {{'type': 'ephemeral', 'ttl'?: '5m' | '1h'}}, got {control!r}"
                )
            out.append((i + 1, str(ttl)))
    return out


class PromptCache:
    """The fake's prompt cache, shared by all requests to one fake: prefix hash -> expiry, per model."""

    def __init__(self) -> None:
        self.min_tokens: dict[str, int] = dict(MIN_CACHEABLE_TOKENS)
        self._entries: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()
        self._offset = 0.0  # advanced by tests to expire entries without waiting

    def now(self) -> float:
        return time.monotonic() + self._offset

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass for the cache (entries whose TTL runs out are gone)."""
        self._offset += seconds

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        now = self.now()
        return sum(1 for expiry in self._entries.values() if expiry > now)

    def check(self, body: dict[str, Any]) -> None:
        """Raise :class:`CacheError` for what the API refuses: a 5th breakpoint, a bad TTL, or a 1h
        breakpoint after a 5m one."""
        marks = _breakpoints(_flatten(body))
        if len(marks) > MAX_BREAKPOINTS:
            raise CacheError(
                f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {len(marks)}."
            )
        ttls = [ttl for _, ttl in marks]
        if "5m" in ttls and "1h" in ttls[ttls.index("5m") :]:
            raise CacheError("a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block")

    def use(self, body: dict[str, Any]) -> dict[str, int]:
        """Serve one (already checked) request: read the longest kept prefix, keep the new ones, and
        return ``input_tokens`` / ``cache_creation_input_tokens`` / ``cache_read_input_tokens``."""
        model = str(body.get("model"))
        blocks = _flatten(body)
        marks = _breakpoints(blocks)
        sizes = [count_tokens(b) for _, b in blocks]
        prefix = [0]  # prefix[i] = tokens of the first i blocks
        hashes = [hashlib.sha256(model.encode()).hexdigest()]
        for (where, block), size in zip(blocks, sizes, strict=True):
            prefix.append(prefix[-1] + size)
            hashes.append(hashlib.sha256(f"{hashes[-1]}|{where}|{_canonical(block)}".encode()).hexdigest())
        total = prefix[-1]
        minimum = self.min_tokens.get(model, DEFAULT_MIN_CACHEABLE_TOKENS)
        with self._lock:
            now = self.now()
            hit, hit_ttl = 0, "5m"
            for position, ttl in marks:
                for candidate in range(position, max(0, position - LOOKBACK_BLOCKS), -1):
                    if candidate > hit and self._entries.get((model, hashes[candidate]), 0.0) > now:
                        hit, hit_ttl = candidate, ttl
                        break
            if hit:
                key = (model, hashes[hit])
                self._entries[key] = max(self._entries[key], now + TTL_SECONDS[hit_ttl])
            written = hit
            for position, ttl in marks:
                key = (model, hashes[position])
                if position <= hit:
                    if key in self._entries:  # a hit refreshes the entries it passes
                        self._entries[key] = max(self._entries[key], now + TTL_SECONDS[ttl])
                    continue
                if prefix[position] < minimum:
                    continue  # too short to cache: processed normally, no error
                self._entries[key] = now + TTL_SECONDS[ttl]
                written = position
        read = prefix[hit]
        creation = prefix[written] - read
        split = dict.fromkeys(TTL_SPLIT, 0)  # the writes per TTL, as the API's cache_creation says
        boundary = hit
        for position, ttl in marks:
            if boundary < position <= written and prefix[position] >= minimum:
                split[TTL_SPLIT_KEYS[ttl]] += prefix[position] - prefix[boundary]
                boundary = position
        return {
            "input_tokens": total - read - creation,
            "cache_creation_input_tokens": creation,
            "cache_read_input_tokens": read,
            **split,
        }


class _ClientGone(Exception):
    """The client closed the connection while we were answering."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive + chunked streaming, like the real API
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: tests read records, not logs."""

    # -- plumbing --------------------------------------------------------------------------------------
    def _peer_closed(self, wait_s: float) -> bool:
        """Wait up to ``wait_s`` for the peer to close; True if it did (EOF or reset)."""
        sock = self.connection
        deadline = time.monotonic() + wait_s
        while True:
            remaining = deadline - time.monotonic()
            if self.server.fake.stopping.is_set():
                return True
            try:
                ready, _, _ = select.select([sock], [], [], max(0.0, min(remaining, 0.05)))
            except (OSError, ValueError):
                return True
            if ready:
                try:
                    data = sock.recv(1, socket.MSG_PEEK)
                except OSError:
                    return True
                if not data:
                    return True
                # The client sent bytes mid-response (it should not); treat as still connected.
                time.sleep(min(max(remaining, 0.0), 0.01))
            if remaining <= 0:
                return False

    def _write(self, data: bytes, rec: RecordedRequest) -> None:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            raise _ClientGone from exc
        if rec.first_byte_at is None:
            rec.first_byte_at = time.monotonic()

    def _send_json(
        self, status: int, payload: Any, rec: RecordedRequest | None = None, headers: dict[str, str] | None = None
    ) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("request-id", _new_id("req"))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if rec is not None:
            rec.last_write_at = time.monotonic()
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        if rec is not None:
            rec.status = status
            rec.completed = True

    # -- routes ----------------------------------------------------------------------------------------
    def do_GET(self) -> None:
        """``GET /_fake/requests``: the records as JSON (for benchmarks running the fake in a subprocess).
        ``GET /v1/models``: the model list (:attr:`FakeAnthropic.models`), or the scripted failure or delay."""
        fake = self.server.fake
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/_fake/requests":
            self._send_json(200, [r.to_json() for r in fake.requests])
        elif path == "/v1/models":
            fake.model_list_calls += 1
            if fake.models_delay_s:
                time.sleep(fake.models_delay_s)
            if fake.expected_api_key is not None and self.headers.get("x-api-key") != fake.expected_api_key:
                self._send_json(401, {"type": "error", "error": {"type": "authentication_error",
                                                                 "message": "invalid x-api-key"}})
            elif fake.models_status != 200:
                self._send_json(fake.models_status, {"type": "error", "error": {"type": "api_error",
                                                                                "message": "models unavailable"}})
            else:
                # as the API: active and deprecated models unless the lifecycle stages are named (retired ones
                # only when asked for), in the brackets form the SDK sends (lifecycle[]=active&...)
                query = urllib.parse.parse_qs(self.path.partition("?")[2])
                stages = set(query.get("lifecycle[]", []) + query.get("lifecycle", [])) or {"active", "deprecated"}
                fake.models_lifecycles_asked.append(sorted(stages))
                data = [e for e in (FakeModel.of(m).entry() for m in fake.models) if e["lifecycle"] in stages]
                self._send_json(200, {"data": data, "has_more": False,
                                      "first_id": data[0]["id"] if data else None,
                                      "last_id": data[-1]["id"] if data else None})
        else:
            self._send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": "no route"}})

    def do_POST(self) -> None:
        """``POST /v1/messages``: record the request, pick the scripted reply, answer it."""
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = {"_unparsable": raw.decode("utf-8", "replace")}
        rec = RecordedRequest(
            method="POST",
            path=self.path,
            body=body,
            headers={k.lower(): v for k, v in self.headers.items()},
            started_at=time.monotonic(),
        )
        fake._record(rec)
        try:
            self._answer(rec)
        except _ClientGone:
            rec.disconnected = True
            self.close_connection = True
        finally:
            rec.ended_at = time.monotonic()
            fake._finished(rec)

    def _answer(self, rec: RecordedRequest) -> None:
        fake = self.server.fake
        path = self.path.split("?", 1)[0].rstrip("/")
        if path != "/v1/messages":
            self._send_error(404, f"fake_anthropic: no route for POST {self.path}", rec)
            return
        if fake.expected_api_key is not None and rec.api_key_sent() != fake.expected_api_key:
            self._send_error(401, None, rec)
            return
        body = rec.body
        if not isinstance(body, dict) or not body.get("model") or "messages" not in body:
            self._send_error(400, "fake_anthropic: body must be a JSON object with model and messages", rec)
            return
        try:
            fake.cache.check(body)
        except CacheError as exc:  # refused before any reply is used, like the API
            self._send_error(400, str(exc), rec)
            return
        reply = fake._next_reply(body)
        if reply is None:
            self._send_error(
                400, "fake_anthropic: no reply scripted for this request (queue empty, handler gave none)", rec
            )
            return
        if reply.headers_delay_s:
            fake._changed(rec, held="headers")
            if self._peer_closed(reply.headers_delay_s):
                raise _ClientGone
        if reply.status >= 400:
            self._send_error(reply.status, reply.error_message, rec, reply.error_type, reply.headers)
            return
        usage = reply.full_usage(fake.cache.use(body))
        if fake.count_output_tokens and "output_tokens" not in reply.usage:  # counted like input: bytes / 4
            usage["output_tokens"] = sum(count_tokens(block) for block in reply.content_json()) or 1
        rec.usage = usage
        uncached = usage["input_tokens"] + usage["cache_creation_input_tokens"]
        ttft = fake.ttft_base_s + uncached * fake.prefill_s_per_token
        decode = usage["output_tokens"] * fake.decode_s_per_token
        paced = bool(body.get("stream")) and fake.stream_decode
        if not paced:
            ttft += decode  # the whole answer is decoded before it is sent
        if ttft and self._peer_closed(ttft):
            raise _ClientGone
        model = reply.model or body["model"]
        if body.get("stream"):
            self._stream(reply, model, rec, usage, decode if paced else 0.0)
        else:
            self._send_json(200, self._message_json(reply, model, reply.content_json(), True, usage), rec)

    def _send_error(
        self,
        status: int,
        message: str | None,
        rec: RecordedRequest,
        error_type: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        etype = error_type or ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
        msg = message or _DEFAULT_ERROR_MESSAGES.get(status, f"fake error {status}")
        try:
            self._send_json(status, {"type": "error", "error": {"type": etype, "message": msg}}, rec, headers)
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            raise _ClientGone from exc

    @staticmethod
    def _message_json(
        reply: Reply, model: str, content: list[dict[str, Any]], final: bool, usage: dict[str, int]
    ) -> dict[str, Any]:
        if not final:
            usage = {**usage, "output_tokens": 1}
        sent: dict[str, Any] = {k: v for k, v in usage.items() if k not in TTL_SPLIT}
        if set(TTL_SPLIT) & usage.keys():  # the writes per TTL, as the API reports them
            sent["cache_creation"] = {k: usage.get(k, 0) for k in TTL_SPLIT}
        return {
            "id": _new_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": reply.final_stop_reason() if final else None,
            "stop_sequence": None,
            "usage": sent,
        }

    def _pieces(self, block: Block) -> list[str]:
        """A block's deltas: its own pieces, or ``stream_chunk_bytes`` characters each when the fake sets it."""
        size = self.server.fake.stream_chunk_bytes
        if not size:
            return block.pieces()
        text = block.text if isinstance(block, TextBlock) else block.json_text()
        return [text[i:i + size] for i in range(0, len(text), size)] or ([""] if isinstance(block, TextBlock) else [])

    def _events(self, reply: Reply, model: str, usage: dict[str, int]) -> Iterator[tuple[dict[str, Any], bool]]:
        """The SSE events of a streamed reply, each with a flag: is it a delta (subject to ``delay_s``)."""
        yield {"type": "message_start", "message": self._message_json(reply, model, [], False, usage)}, False
        for index, b in enumerate(reply.blocks):
            if isinstance(b, TextBlock):
                yield (
                    {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                    False,
                )
                for piece in self._pieces(b):
                    yield (
                        {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}},
                        True,
                    )
            else:
                yield (
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "tool_use", "id": b.id, "name": b.name, "input": {}},
                    },
                    False,
                )
                for piece in self._pieces(b):
                    yield (
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": piece},
                        },
                        True,
                    )
            yield {"type": "content_block_stop", "index": index}, False
        if reply.sse_error:
            yield (
                {"type": "error", "error": {"type": reply.sse_error, "message": f"fake mid-stream {reply.sse_error}"}},
                False,
            )
            return
        yield (
            {
                "type": "message_delta",
                "delta": {"stop_reason": reply.final_stop_reason(), "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
            False,
        )
        yield {"type": "message_stop"}, False

    def _stream(self, reply: Reply, model: str, rec: RecordedRequest, usage: dict[str, int],
                decode_s: float = 0.0) -> None:
        """Send the reply's events; with ``decode_s`` (``stream_decode``) each delta goes when its share of the
        decode time (by its length among all the deltas') has passed since the first token."""
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("request-id", _new_id("req"))
            self.end_headers()
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            raise _ClientGone from exc
        rec.status = 200
        events = list(self._events(reply, model, usage))
        lengths = [len(_delta_text(event)) if is_delta else 0 for event, is_delta in events]
        total, done, first = sum(lengths) or 1, 0, time.monotonic()
        last = max((i for i, (_e, is_delta) in enumerate(events) if is_delta), default=-1)
        for position, ((event, is_delta), length) in enumerate(zip(events, lengths, strict=True)):
            if position == last and reply.hold_last_delta is not None:
                rec.held_until = self._hold(reply.hold_last_delta, reply.hold_limit_s)
            done += length
            wait = first + decode_s * done / total - time.monotonic() if decode_s and is_delta else 0.0
            if wait > 0 and self._peer_closed(wait):
                raise _ClientGone
            if reply.endless_line is not None and rec.events_sent >= 2:
                self._endless_line(reply.endless_line, rec)
                return
            if reply.drop_after_events is not None and rec.events_sent >= reply.drop_after_events:
                # Cut the TCP connection without the terminating chunk: a real mid-stream failure.
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            if reply.hang_after_events is not None and rec.events_sent >= reply.hang_after_events:
                self.server.fake._changed(rec, held="stream")
                if self._peer_closed(reply.hang_limit_s):
                    raise _ClientGone
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            if is_delta and reply.delay_s and self._peer_closed(reply.delay_s):
                raise _ClientGone
            if reply.stamp and event.get("delta", {}).get("type") == "text_delta":
                event["delta"]["text"] = f"{time.monotonic_ns()};"  # stamped when sent, after the pause
            if event["type"] == "message_stop":  # a client may stop reading here, before the terminating chunk
                rec.last_write_at = time.monotonic()
            payload = f"event: {event['type']}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n".encode()
            self._write(b"%x\r\n%s\r\n" % (len(payload), payload), rec)
            rec.events_sent += 1
            self.server.fake._changed(rec)
        if rec.last_write_at is None:
            rec.last_write_at = time.monotonic()
        self._write(b"0\r\n\r\n", rec)
        rec.completed = True


    def _hold(self, condition: Callable[[], bool], limit_s: float) -> bool:
        """Wait until ``condition()`` is true (True) or ``limit_s`` passed (False); the client leaving ends it."""
        deadline = time.monotonic() + limit_s
        while not condition():
            if time.monotonic() >= deadline:
                return False
            if self._peer_closed(0.01):
                raise _ClientGone
        return True

    def _endless_line(self, size: int, rec: RecordedRequest) -> None:
        """One ``data:`` line of ``size`` bytes, 1 MiB a chunk, never ended; then the connection is cut."""
        self._write(b"%x\r\ndata: \r\n" % 6, rec)
        piece = b"x" * (1 << 20)
        while rec.line_bytes_sent < size:
            part = piece[:size - rec.line_bytes_sent]
            self._write(b"%x\r\n%s\r\n" % (len(part), part), rec)
            rec.line_bytes_sent += len(part)
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def _delta_text(event: dict[str, Any]) -> str:
    """What a delta event carries: its text or its piece of a tool's input."""
    delta = event.get("delta", {})
    return str(delta.get("text", delta.get("partial_json", "")))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 64
    fake: FakeAnthropic

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client resetting an idle keep-alive connection is normal; anything else is kept and shown."""
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError):
            return
        self.fake.handler_errors.append(f"{type(exc).__name__}: {exc}")
        super().handle_error(request, client_address)


@dataclass(frozen=True)
class FakeModel:
    """One model of ``GET /v1/models`` with the fields of the SDK's ``ModelInfo``: its lifecycle stage (active,
    deprecated, retired), its line (sonnet, opus...: None leaves the field out, as an older API did), its release
    and its deprecation and retirement dates."""

    id: str
    name: str
    window: int | None = None
    created_at: str = "2026-01-01T00:00:00Z"
    lifecycle: str = "active"
    line: str | None = None
    deprecated_at: str | None = None
    retires_at: str | None = None

    @staticmethod
    def of(model: tuple[str, str, int | None] | FakeModel) -> FakeModel:
        return model if isinstance(model, FakeModel) else FakeModel(*model)

    def entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"type": "model", "id": self.id, "display_name": self.name,
                                 "created_at": self.created_at, "lifecycle": self.lifecycle,
                                 "deprecated_at": self.deprecated_at, "retires_at": self.retires_at}
        if self.window:
            entry["max_input_tokens"] = self.window
        if self.line is not None:
            entry["line"] = self.line
        return entry


class FakeAnthropic:
    """The fake Messages API server. Start with :meth:`start` (or use as a context manager).

    Attributes a test uses: :attr:`base_url`, :meth:`enqueue`, :attr:`handler`, :attr:`requests`,
    :meth:`wait_for`, :meth:`max_concurrency`. ``expected_api_key`` (optional) makes the fake answer 401
    to any other key (sent as ``x-api-key`` or ``Authorization: Bearer``), like the real API.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, expected_api_key: str | None = None) -> None:
        self._host = host
        self._port = port
        self.expected_api_key = expected_api_key
        self.handler: Callable[[dict[str, Any]], Reply | None] | None = None
        self.loop_replies = False  # when True the queue cycles instead of draining (benchmarks)
        self.stopping = threading.Event()
        self._queue: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._cond = threading.Condition()
        self._waiters: list[tuple[Any, Any]] = []  # (event loop, asyncio.Event) of each await_for
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.unexpected = 0
        self.handler_errors: list[str] = []
        self.cache = PromptCache()  # the prompt cache of issue 16, shared by every request to this fake
        self.ttft_base_s = 0.0  # latency model for benchmarks: base + uncached input tokens x prefill rate
        self.prefill_s_per_token = 0.0
        self.decode_s_per_token = 0.0  # ... + output tokens x decode rate (benchmarks)
        self.count_output_tokens = False  # output tokens as bytes / 4 of the answer's blocks, like input
        #: streamed replies paced at the decode rate after the first token, instead of decoded before the headers
        self.stream_decode = False
        self.stream_chunk_bytes = 0  # the deltas' size then (0: each block's own pieces)
        #: GET /v1/models, in this order: (id, display name, max input tokens or None), an active model released
        #: 2026-01-01, or a :class:`FakeModel` for a model's lifecycle, line and dates; a status other than 200
        #: fails the listing
        self.models: list[tuple[str, str, int | None] | FakeModel] = [
            ("claude-sonnet-4-6", "Claude Sonnet 4.6", 1_000_000)]
        #: the lifecycle stages each listing asked for (the API's default: active and deprecated)
        self.models_lifecycles_asked: list[list[str]] = []
        self.models_status = 200
        self.models_delay_s = 0.0
        self.model_list_calls = 0

    def __repr__(self) -> str:
        return f"FakeAnthropic(base_url={self.base_url!r}, requests={len(self._requests)})"

    # -- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> FakeAnthropic:
        """Bind and serve in a daemon thread; returns self."""
        server = _Server((self._host, self._port), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-anthropic", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; hanging streams are released."""
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port."""
        assert self._server is not None, "FakeAnthropic not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The value for ``ANTHROPIC_BASE_URL``."""
        return f"http://{self._host}:{self.port}" if self._server is not None else "(not started)"

    def env(self, api_key: str = "sk-ant-fake-test-key") -> dict[str, str]:
        """Environment variables pointing an SDK client (or a server subprocess) at this fake."""
        return {"ANTHROPIC_BASE_URL": self.base_url, "ANTHROPIC_API_KEY": api_key}

    # -- scripting -----------------------------------------------------------------------------------
    def enqueue(self, *replies: Reply) -> None:
        """Append replies to the FIFO queue used when no handler answers."""
        with self._cond:
            self._queue.extend(replies)

    def _next_reply(self, body: dict[str, Any]) -> Reply | None:
        if self.handler is not None:
            try:
                reply = self.handler(body)
            except Exception as exc:  # a broken test handler must show up, not hang the client
                self.handler_errors.append(f"{type(exc).__name__}: {exc}")
                return Reply.error(400, f"fake_anthropic: test handler raised {type(exc).__name__}: {exc}")
            if reply is not None:
                return reply
        with self._cond:
            if self._queue:
                reply = self._queue.popleft()
                if self.loop_replies:
                    self._queue.append(reply)
                return reply
            self.unexpected += 1
            return None

    # -- records -------------------------------------------------------------------------------------
    def _record(self, rec: RecordedRequest) -> None:
        with self._cond:
            self._requests.append(rec)
        self._changed(rec)

    def _finished(self, rec: RecordedRequest) -> None:
        self._changed(rec)

    def _changed(self, rec: RecordedRequest, held: str | None = None) -> None:
        """A record changed (recorded, an event sent, held, ended): wake :meth:`wait_for` and :meth:`await_for`."""
        with self._cond:
            if held is not None:
                rec.held = held
            self._cond.notify_all()
            waiters = list(self._waiters)
        for loop, event in waiters:
            with contextlib.suppress(RuntimeError):  # that loop has closed
                loop.call_soon_threadsafe(event.set)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of the recorded requests, in arrival order."""
        with self._cond:
            return list(self._requests)

    def wait_for(self, predicate: Callable[[list[RecordedRequest]], bool], timeout: float = 5.0) -> bool:
        """Block (this thread) until ``predicate(requests)`` holds; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(list(self._requests)):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    async def await_for(self, predicate: Callable[[list[RecordedRequest]], bool], timeout: float = 5.0) -> bool:
        """Like :meth:`wait_for` without blocking the event loop: re-checked each time a record changes."""
        import asyncio

        loop = asyncio.get_running_loop()
        changed = asyncio.Event()
        waiter = (loop, changed)
        with self._cond:
            self._waiters.append(waiter)
        try:
            deadline = loop.time() + timeout
            while True:
                changed.clear()
                if predicate(self.requests):
                    return True
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return False
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), remaining)
        finally:
            with self._cond:
                self._waiters.remove(waiter)

    def max_concurrency(self) -> int:
        """The largest number of requests that were being served at the same instant."""
        points: list[tuple[float, int]] = []
        now = time.monotonic()
        for r in self.requests:
            points.append((r.started_at, 1))
            points.append((r.served_until if r.served_until is not None else now, -1))
        points.sort(key=lambda p: (p[0], p[1]))  # ends before starts at equal times: touching != overlap
        best = cur = 0
        for _, d in points:
            cur += d
            best = max(best, cur)
        return best


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    """A started :class:`FakeAnthropic` (fresh per test), stopped afterwards."""
    fake = FakeAnthropic().start()
    try:
        yield fake
    finally:
        fake.stop()


def _load_handler(spec: str) -> Callable[[dict[str, Any]], Reply | None]:
    module_name, _, attr = spec.partition(":")
    handler = getattr(importlib.import_module(module_name), attr)
    if not callable(handler):
        raise SystemExit(f"--handler {spec}: {attr} is not callable")
    return handler  # type: ignore[no-any-return]


def _raw_stream(base_url: str, body: dict[str, Any]) -> int:
    """Read one streamed answer with a bare socket (no SDK cost); returns the bytes read."""
    import http.client

    host, port = base_url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("POST", "/v1/messages", body=json.dumps(body), headers={"content-type": "application/json"})
    resp = conn.getresponse()
    total = 0
    while chunk := resp.read1(1 << 16):
        total += len(chunk)
    conn.close()
    return total


def run_self_benchmark() -> None:
    """Print how fast the fake serves deltas, next to the SDK-consumer figure measured in the same run.

    The fake runs in a child process (its own GIL), like a benchmark of the server would use it.
    """
    import asyncio
    import subprocess
    import tempfile

    replies = [
        {"text": "x" * 10_000, "deltas": 10_000},
        {"text": "y" * 16_000, "deltas": 16_000},
        {"text": "z" * 2_000, "deltas": 2_000},
    ]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump({"replies": [], "loop": True}, fh)
    handler_spec = "tests.fake_anthropic:_bench_handler"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_anthropic", "--port", "0", "--script", fh.name, "--handler", handler_spec],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().split()[1]

        def body(i: int) -> dict[str, Any]:
            return {"model": "m", "stream": True, "messages": [{"role": "user", "content": json.dumps(replies[i])}]}

        _raw_stream(base_url, body(2))  # warm-up
        t = time.perf_counter()
        _raw_stream(base_url, body(0))
        raw_10k = time.perf_counter() - t

        t = time.perf_counter()
        _raw_stream(base_url, body(1))
        one_16k = time.perf_counter() - t
        threads = [threading.Thread(target=_raw_stream, args=(base_url, body(2))) for _ in range(8)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        eight_2k = time.perf_counter() - t

        from phoenix_lsp.llm.client import LlmClient, LlmRequest

        async def sdk_10k() -> float:
            client = LlmClient(api_key="bench", base_url=base_url)
            request = LlmRequest(model="m", system="", messages=body(2)["messages"], tools=None)
            await client.stream(request, lambda _: None)  # warm-up (SDK import, connection)
            request = LlmRequest(model="m", system="", messages=body(0)["messages"], tools=None)
            start = time.perf_counter()
            await client.stream(request, lambda _: None)
            elapsed = time.perf_counter() - start
            await client.aclose()
            return elapsed

        sdk = asyncio.run(sdk_10k())
    finally:
        proc.terminate()
        proc.wait(10)
    print(
        f"fake serves 10,000 deltas to a bare socket reader: {raw_10k * 1000:8.1f} ms "
        f"({10_000 / raw_10k:,.0f} deltas/s)"
    )
    print(
        f"baseline, same 10,000 deltas through the SDK client: {sdk * 1000:8.1f} ms (server share {raw_10k / sdk:.0%})"
    )
    print(
        f"1 stream x 16,000 deltas: {one_16k * 1000:8.1f} ms; 8 concurrent x 2,000: {eight_2k * 1000:8.1f} ms "
        f"(ratio {eight_2k / one_16k:.2f})"
    )


def _bench_handler(body: dict[str, Any]) -> Reply:
    """Handler of the self-benchmark: the user message is a JSON reply spec."""
    return Reply.from_dict(json.loads(body["messages"][0]["content"]))


def main(argv: list[str] | None = None) -> int:
    """Run the fake as a process: ``python -m tests.fake_anthropic --port 0 --script FILE``."""
    parser = argparse.ArgumentParser(description="Fake Anthropic Messages API (for tests and benchmarks).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on stdout)")
    parser.add_argument("--script", help="JSON file: a list of replies (see Reply.from_dict), or {replies, loop}")
    parser.add_argument("--loop", action="store_true", help="cycle through the replies instead of draining")
    parser.add_argument("--handler", help="module:function returning a Reply (or None) for a request body")
    parser.add_argument("--api-key", help="answer 401 unless x-api-key equals this")
    parser.add_argument("--self-benchmark", action="store_true", help="measure the fake's own throughput")
    parser.add_argument("--ttft-s", type=float, default=0.0, help="latency model: base time to first token")
    parser.add_argument("--prefill-s-per-token", type=float, default=0.0, help="... + uncached input tokens x this")
    parser.add_argument("--decode-s-per-token", type=float, default=0.0, help="... + output tokens x this")
    parser.add_argument("--count-output-tokens", action="store_true", help="output tokens = bytes / 4 of the answer")
    args = parser.parse_args(argv)
    if args.self_benchmark:
        run_self_benchmark()
        return 0

    fake = FakeAnthropic(args.host, args.port, expected_api_key=args.api_key)
    fake.ttft_base_s, fake.prefill_s_per_token = args.ttft_s, args.prefill_s_per_token
    fake.decode_s_per_token, fake.count_output_tokens = args.decode_s_per_token, args.count_output_tokens
    if args.script:
        with open(args.script, encoding="utf-8") as fh:
            script = json.load(fh)
        if isinstance(script, dict):
            fake.loop_replies = bool(script.get("loop", False))
            script = script.get("replies", [])
        fake.enqueue(*(Reply.from_dict(d) for d in script))
    fake.loop_replies = fake.loop_replies or args.loop
    if args.handler:
        fake.handler = _load_handler(args.handler)
    fake.start()
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    print(f"FAKE_ANTHROPIC_LISTENING {fake.base_url}", flush=True)
    while not done.wait(0.2):
        pass
    fake.stop()
    return 0


if __name__ == "__main__":
    # Run the copy imported as `tests.fake_anthropic`, not this `__main__` one: a --handler module that
    # imports Reply from tests.fake_anthropic must build the same classes the server checks against.
    from tests.fake_anthropic import main as _main

    sys.exit(_main())
