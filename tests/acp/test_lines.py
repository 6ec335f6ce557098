"""The lines on stdin before the SDK reads them: a line over the message cap is never held whole (issue 28)."""

from __future__ import annotations

import asyncio
import json

import pytest

from phoenix_lsp.server.acp.lines import READ_LIMIT, Asked, objects_only
from tests.waiting import eventually

CAP = 64 * 1024


class Writer:
    def __init__(self) -> None:
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)


@pytest.mark.req("REQ-ACP-019")
async def test_a_line_over_the_cap_is_answered_while_it_still_arrives_and_the_next_line_is_read() -> None:
    source = asyncio.StreamReader(limit=READ_LIMIT)
    writer = Writer()
    lines = objects_only(source, writer, CAP)  # type: ignore[arg-type]
    source.feed_data(b'{"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": {"text": "')
    for _ in range(40):  # 2.5 MB of a line that has not ended: it is answered already, and read on
        source.feed_data(b"x" * CAP)
    await eventually(lambda: writer.written, "the refusal of the line over the cap", 60)
    [answer] = [json.loads(line) for line in writer.written]
    assert answer["id"] == 7 and answer["error"]["code"] == -32600
    assert f"{CAP:,} bytes" in answer["error"]["message"]
    await eventually(lambda: len(source._buffer) < READ_LIMIT, "the line read on as it arrives", 60)  # not kept
    source.feed_data(b'"}}\n{"jsonrpc": "2.0", "id": 8, "method": "session/cancel"}\n')
    source.feed_eof()
    assert json.loads(await asyncio.wait_for(lines.readline(), 30))["id"] == 8  # the next line, whole
    assert await asyncio.wait_for(lines.readline(), 30) == b""
    assert len(writer.written) == 1


@pytest.mark.req("REQ-PROTO-061")
@pytest.mark.parametrize(("line", "said"), [
    (b'{"jsonrpc": "2.0", "id": 11, "method": "session/prompt", "params": ' + b"[" * 600 + b"]" * 600 + b"}\n",
     "levels deep"),
    # 2 MiB of short strings: measured in a thread (over limits.OFF_LOOP_BYTES), refused from its quotes
    (b'{"jsonrpc": "2.0", "id": 11, "method": "session/prompt", "params": [' + b'"a",' * 500_000 + b'"a"]}\n',
     "strings, commas and brackets"),
], ids=["deep", "many-tokens"])
async def test_a_line_over_its_bounds_is_answered_and_never_reaches_the_sdk(line: bytes, said: str) -> None:
    source = asyncio.StreamReader(limit=READ_LIMIT)
    writer = Writer()
    lines = objects_only(source, writer, 64 * 1024 * 1024, tokens=100_000)  # type: ignore[arg-type]
    source.feed_data(line + b'{"jsonrpc": "2.0", "id": 12, "method": "session/cancel"}\n')
    source.feed_eof()
    assert json.loads(await asyncio.wait_for(lines.readline(), 30))["id"] == 12  # the bad line is not passed on
    assert await asyncio.wait_for(lines.readline(), 30) == b""
    [answer] = [json.loads(written) for written in writer.written]
    assert answer["id"] == 11 and answer["error"]["code"] == -32600
    assert said in answer["error"]["message"] and "goes on serving" in answer["error"]["message"]


@pytest.mark.req("REQ-PROTO-063", "REQ-ACP-010")
@pytest.mark.parametrize("shape", ["over the line's cap", "over its own tokens"])
async def test_an_answer_to_the_agents_read_over_its_bounds_fails_the_read_and_is_not_answered_back(
        shape: str) -> None:
    asked = Asked()
    asked.sent(b'{"jsonrpc": "2.0", "id": 3, "method": "fs/read_text_file", "params": {"path": "/w/a.txt"}}\n')
    asked.sent(b'{"jsonrpc": "2.0", "id": 4, "method": "session/request_permission", "params": {}}\n')
    assert asked.pending == {3: "fs/read_text_file"}  # only the methods with bounds of their own are noted
    source = asyncio.StreamReader(limit=READ_LIMIT)
    writer = Writer()
    lines = objects_only(source, writer, CAP, asked=asked)  # type: ignore[arg-type]
    if shape == "over the line's cap":
        source.feed_data(b'{"jsonrpc": "2.0", "id": 3, "result": {"content": "' + b"x" * (2 * CAP) + b'"}}\n')
    else:  # within a line's bounds, over the 1,000 tokens of this answer
        source.feed_data(b'{"jsonrpc": "2.0", "id": 3, "result": {"content": "x", "_meta": {"pad": ['
                         + b'"",' * 2_000 + b'""]}}}\n')
    source.feed_data(b'{"jsonrpc": "2.0", "id": 4, "result": {"outcome": {"outcome": "cancelled"}}}\n')
    source.feed_eof()
    refused = json.loads(await asyncio.wait_for(lines.readline(), 30))
    assert refused["id"] == 3 and "was not read" in refused["error"]["message"], refused
    assert json.loads(await asyncio.wait_for(lines.readline(), 30))["id"] == 4  # another answer, as it came
    assert await asyncio.wait_for(lines.readline(), 30) == b""
    assert writer.written == []  # nothing is answered back to the client
    assert asked.pending == {}
