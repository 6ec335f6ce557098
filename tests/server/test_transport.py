"""The LSP stream reader (REQ-PROTO-044) and the checks of a message before pygls handles it (REQ-PROTO-045,
REQ-PROTO-048), in-process: the stream is a list of chunks, the protocol a real ``PhoenixProtocol`` whose
answers are captured."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

import pytest

from phoenix_lsp import limits
from phoenix_lsp.server.app import create
from phoenix_lsp.server.logs import RateLimit
from phoenix_lsp.server.lsp import envelope
from phoenix_lsp.server.transport import MAX_HEADER_BYTES, Frames, Refused, request_id

LIMIT = 1000


def frame(body: bytes, length: int | str | None = None) -> bytes:
    return b"Content-Length: %s\r\n\r\n" % str(len(body) if length is None else length).encode() + body


class Stream:
    """Chunks handed out one read at a time; records the largest buffer the reader held."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.chunks = list(chunks)
        self.frames = Frames(self.read, lambda: LIMIT)
        self.most_buffered = 0

    async def read(self) -> bytes:
        self.most_buffered = max(self.most_buffered, len(self.frames._buffer))
        return self.chunks.pop(0) if self.chunks else b""

    async def all(self) -> list[bytes | Refused]:
        out: list[bytes | Refused] = []
        while (item := await self.frames.next()) is not None:
            out.append(item)
        return out


REQUEST = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "phoenix/listConversations", "params": {}}).encode()


@pytest.mark.req("REQ-PROTO-044")
@pytest.mark.parametrize("length", ["100000000000000", "9" * 30, "9" * 5000, "-5", "abc", ""])
async def test_a_huge_or_broken_content_length_is_refused_and_the_next_message_read(length: str) -> None:
    stream = Stream([frame(b'{"jsonrpc":"2.0","id":1,"method":"x"}', length) + frame(REQUEST)])
    first, second = await stream.all()
    assert isinstance(first, Refused)
    assert second == REQUEST
    if length.isdigit() and len(length) < 20:
        assert "over the limit" in first.reason and first.msg_id == 1, "a request over the limit is answered"
    else:
        assert "not a byte count" in first.reason


@pytest.mark.req("REQ-PROTO-044")
async def test_a_body_over_the_limit_is_skipped_without_being_kept() -> None:
    big = json.dumps({"jsonrpc": "2.0", "id": "big", "method": "phoenix/sendMessage",
                      "params": {"text": "x" * 50 * LIMIT}}).encode()
    chunks = [frame(big)[i : i + 100] for i in range(0, len(frame(big)), 100)] + [frame(REQUEST)]
    stream = Stream(chunks)
    refused, body = await stream.all()
    assert isinstance(refused, Refused) and refused.msg_id == "big"
    assert body == REQUEST
    assert stream.most_buffered < 2 * LIMIT, "the refused body was thrown away as it came, not gathered"


@pytest.mark.req("REQ-PROTO-044")
async def test_the_stream_resynchronises_after_garbage_and_split_headers() -> None:
    data = b"garbage\r\n\r\n" + frame(REQUEST) + b"\r\n" + frame(REQUEST)
    stream = Stream([data[i : i + 7] for i in range(0, len(data), 7)])  # headers split across reads
    assert await stream.all() == [REQUEST, REQUEST]


@pytest.mark.req("REQ-PROTO-044")
async def test_a_header_that_never_ends_is_bounded() -> None:
    stream = Stream([b"Content-Length: 12\r\nX: " + b"y" * 3 * MAX_HEADER_BYTES, b"\r\n\r\n" + frame(REQUEST)])
    items = await stream.all()
    assert isinstance(items[0], Refused) and items[-1] == REQUEST
    assert stream.most_buffered < 4 * MAX_HEADER_BYTES


def test_the_id_of_a_refused_request_is_found_at_the_top_level_only() -> None:
    assert request_id(b'{"jsonrpc":"2.0","params":{"id":3},"id": 7, "method":"x", "params": {"text": "xx') == 7
    assert request_id(b'{"id":"a\\"b","method"') == 'a"b'
    assert request_id(b'{"method":"id","params":{"id":1},"text":"') is None
    assert request_id(b'{"id":true}') is None and request_id(b'{"i') is None


@pytest.mark.req("REQ-PROTO-044")
def test_an_id_cut_by_the_end_of_what_arrived_is_not_taken_for_another() -> None:
    """Found by the fuzz bench: a refused request whose first bytes ended inside its id ("181" of 18104) was
    answered with id 181, and 18104 never."""
    assert request_id(b'{"jsonrpc": "2.0", "id": 181') is None
    assert request_id(b'{"jsonrpc": "2.0", "id": 18104,') == 18104
    assert request_id(b'{"jsonrpc": "2.0", "id": 18104}') == 18104
    assert request_id(b'{"jsonrpc": "2.0", "id": "18') is None  # a string is whole only with its quote


async def test_a_refused_request_split_inside_its_id_is_answered_with_its_id() -> None:
    body = b'{"jsonrpc": "2.0", "id": 18104, "method": "phoenix/listConversations", "params": {}}'
    head = b"Content-Length: %d\r\n\r\n" % (2 * LIMIT)
    cut = body.index(b"04,")
    stream = Stream([head + body[:cut], body[cut:] + b"x" * 100, frame(REQUEST)])
    items = await stream.all()
    assert isinstance(items[0], Refused) and items[0].msg_id == 18104, items[0]


@pytest.mark.req("REQ-PROTO-048")
@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ([1, 2], "batch"),
        ({"jsonrpc": "1.0", "id": 1, "method": "x"}, '"jsonrpc"'),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "x"}, '"id"'),
        ({"jsonrpc": "2.0", "id": 1, "method": 5}, '"method"'),
        ({"jsonrpc": "2.0"}, "neither"),
    ],
)
def test_a_malformed_envelope_is_named(message: Any, problem: str) -> None:
    found, _ = envelope(message)
    assert found is not None and problem in found


class Captured:
    """A real server's protocol whose output is captured instead of written."""

    def __init__(self) -> None:
        self.server = create()
        self.sent: list[dict[str, Any]] = []
        self.server.protocol._send_data = lambda data: self.sent.append(  # type: ignore[method-assign]
            json.loads(json.dumps(data, default=self.server.protocol._serialize_message))
        )
        self.server.protocol.initialize_received = True

    def answer(self, body: bytes) -> dict[str, Any]:
        self.sent.clear()
        self.server.protocol.handle_body(body)
        answers = [m for m in self.sent if "method" not in m]
        assert len(answers) == 1, f"one answer expected, got {self.sent}"
        return answers[0]


@pytest.mark.req("REQ-PROTO-048", "REQ-SEC-005")
@pytest.mark.parametrize(
    ("body", "code", "msg_id"),
    [
        (b"{not json", -32700, None),
        # nested too deeply: refused before decoding (REQ-SEC-005), the id still readable
        (b'{"jsonrpc":"2.0","id":1,"method":"x","params":' + b"[" * 100_000, -32600, 1),
        (b'{"jsonrpc":"2.0","id":"\xff\xfe","method":"x"}', -32700, None),
        (b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"x"}', -32700, None),
        (b'{"jsonrpc":"2.0","id":3,"method":7}', -32600, 3),
        (b'{"jsonrpc":"2.0","id":4,"method":"textDocument/hover","params":{"position":"x"}}', -32602, 4),
        (b'{"jsonrpc":"2.0","id":5,"method":"no/such"}', -32601, 5),
    ],
)
async def test_every_malformed_request_gets_an_answer_and_no_popup(body: bytes, code: int, msg_id: Any) -> None:
    captured = Captured()
    answer = captured.answer(body)
    assert answer["id"] == msg_id and answer["error"]["code"] == code
    assert not [m for m in captured.sent if m.get("method") == "window/showMessage"]


@pytest.mark.req("REQ-PROTO-045")
async def test_a_request_without_params_is_served() -> None:
    captured = Captured()
    answer = captured.answer(b'{"jsonrpc":"2.0","id":9,"method":"phoenix/listConversations"}')
    # served (the hub is not set up in-process, so the phoenix error says so), not dropped
    assert answer["id"] == 9 and answer["error"]["data"]["kind"] == "notInitialized"


@pytest.mark.req("REQ-PROTO-047")
async def test_requests_before_initialize_are_refused_and_notifications_dropped() -> None:
    captured = Captured()
    captured.server.protocol.initialize_received = False
    answer = captured.answer(b'{"jsonrpc":"2.0","id":1,"method":"phoenix/listConversations","params":{}}')
    assert answer["error"]["code"] == -32002 and "before initialize" in answer["error"]["message"]
    captured.sent.clear()
    captured.server.protocol.handle_body(b'{"jsonrpc":"2.0","method":"initialized","params":{}}')
    assert captured.sent == [] and not captured.server.started


@pytest.mark.req("REQ-PROTO-048")
def test_the_log_of_hostile_input_is_rate_limited() -> None:
    now = [0.0]
    limit = RateLimit(burst=3, window_s=10, clock=lambda: now[0])

    def record() -> logging.LogRecord:
        return logging.LogRecord("x", logging.WARNING, __file__, 1, "bad message", None, None)

    passed = [limit.filter(record()) for _ in range(10)]
    assert passed == [True] * 3 + [False] * 7
    now[0] = 10.0
    note = record()
    assert limit.filter(note) and "7 similar lines left out" in str(note.msg)
    assert limit.filter(logging.LogRecord("x", logging.INFO, __file__, 1, "info", None, None))


@pytest.mark.req("REQ-PROTO-044")
async def test_a_length_longer_than_what_was_sent_does_not_swallow_the_next_message() -> None:
    short = b'{"jsonrpc":"2.0","id":"short","method":"x"}'
    stream = Stream([frame(short, 500), frame(REQUEST)])  # announces 500, sends fewer, then the next message
    refused, body = await stream.all()
    assert isinstance(refused, Refused) and refused.msg_id == "short" and "announced 500" in refused.reason
    assert body == REQUEST


@pytest.mark.req("REQ-PROTO-044")
async def test_a_header_with_two_lengths_is_refused_and_the_stream_resynchronised_on_the_second() -> None:
    stream = Stream([b"Content-Length: 10\r\nContent-Length: 20\r\n" + b"\x00" * 50 + frame(REQUEST)])
    items = await stream.all()
    assert all(isinstance(item, Refused) for item in items[:-1]) and items[-1] == REQUEST


@pytest.mark.req("REQ-PROTO-044")
def test_a_string_where_an_lsp_array_belongs_costs_nothing() -> None:
    """cattrs structured an array from any iterable: a string of n characters cost n element errors
    (1.6 KB each: a 64 MB string would exhaust memory)."""
    import tracemalloc

    captured = Captured()
    body = json.dumps({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": "file:///a", "version": 1}, "contentChanges": "x" * 1_000_000}}).encode()
    tracemalloc.start()
    try:
        captured.server.protocol.handle_body(body)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * 1024 * 1024, f"{peak:,} bytes to refuse one malformed notification"


@pytest.mark.req("REQ-PROTO-062")
async def test_a_big_body_is_handed_over_whole_and_the_messages_after_it_are_read() -> None:
    """A body over limits.OFF_LOOP_BYTES is handed over without a copy (the buffer becomes the body): it must be
    exactly its bytes, and what arrived after it in the same read must be the next messages."""
    big = json.dumps({"jsonrpc": "2.0", "id": "big", "method": "x",
                      "params": {"text": "y" * (limits.OFF_LOOP_BYTES + 12_345)}}).encode()
    data = frame(big) + frame(REQUEST) + frame(REQUEST)
    chunks = [data[i : i + 300_000] for i in range(0, len(data), 300_000)]
    frames = Frames(lambda: _pop(chunks), lambda: 4 * limits.OFF_LOOP_BYTES)
    first, second, third = await frames.next(), await frames.next(), await frames.next()
    assert first == big and len(first) == len(big)  # type: ignore[arg-type]
    assert second == REQUEST and third == REQUEST
    assert await frames.next() is None


async def _pop(chunks: list[bytes]) -> bytes:
    return chunks.pop(0) if chunks else b""
