"""The relay between a stdio MCP server's stdout and the MCP SDK (``agent/mcp_relay.py``, REQ-PROTO-063)."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from phoenix_lsp.agent import mcp_relay
from phoenix_lsp.agent.mcp_relay import HEAD, Relay


def _relay(max_bytes: int = 1000) -> tuple[Relay, io.BytesIO]:
    out = io.BytesIO()
    return Relay(out, max_bytes, 100, 8), out


def _lines(out: io.BytesIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.mark.req("REQ-PROTO-063")
def test_lines_within_the_bounds_pass_whole_however_they_are_cut() -> None:
    text = b"".join(b'{"jsonrpc":"2.0","id":%d,"result":{"v":[[["\\n]]]"]]]}}\n' % i for i in range(30))
    for size in (1, 5, 100, len(text)):
        relay, out = _relay()
        for start in range(0, len(text), size):
            relay.feed(text[start:start + size])
        assert out.getvalue() == text and relay.refused == 0


@pytest.mark.req("REQ-PROTO-063")
def test_a_line_over_the_bounds_becomes_an_error_for_its_id_and_is_never_held_whole() -> None:
    relay, out = _relay()
    relay.feed(b'{"jsonrpc":"2.0","id":"a-1","result":{"text":"')
    for _ in range(200):  # 200 KiB of a line that has not ended
        relay.feed(b"x" * 1024)
        assert len(relay._line) <= HEAD  # only its head is kept (its id is looked for there), and a tail
    relay.feed(b'"}}\n{"jsonrpc":"2.0","id":2,"result":' + b"[" * 9 + b"]" * 9 + b"}\n")
    relay.feed(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"x":"' + b"y" * 2000 + b'"}}\n')
    relay.feed(b'{"jsonrpc":"2.0","id":3,"result":{}}\n')
    first, second, third = _lines(out)
    assert first["id"] == "a-1" and first["error"]["code"] == mcp_relay.REFUSED_CODE  # type: ignore[index]
    assert "over the limit of 1,000 bytes" in first["error"]["message"]  # type: ignore[index]
    assert second["id"] == 2 and "more than 8 levels deep" in second["error"]["message"]  # type: ignore[index]
    assert third == {"jsonrpc": "2.0", "id": 3, "result": {}}  # the notification (no id) was dropped
    assert relay.refused == 3


@pytest.mark.req("REQ-PROTO-063")
def test_the_relay_runs_the_server_on_the_sdks_pipe_and_ends_with_its_code() -> None:
    server = [sys.executable, "-c", "import sys; line = sys.stdin.readline(); print(line.strip()); "
              "print('{\"id\": 1, \"v\": \"' + 'x' * 5000 + '\"}'); sys.exit(3)"]
    done = subprocess.run(mcp_relay.command(server, 1000, 100, 64), input=b'{"id": 0}\n', capture_output=True,
                          timeout=60, check=False)
    assert done.returncode == 3
    echoed, refused = done.stdout.splitlines()
    assert json.loads(echoed) == {"id": 0}  # the server read the SDK's pipe itself
    assert json.loads(refused)["id"] == 1 and "5,018 bytes" in json.loads(refused)["error"]["message"]
