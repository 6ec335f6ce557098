"""The lines on stdin before the SDK reads them: a line over the message cap is never held whole (issue 28)."""

from __future__ import annotations

import asyncio
import json

import pytest

from phoenix_lsp.server.acp.lines import READ_LIMIT, objects_only
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
