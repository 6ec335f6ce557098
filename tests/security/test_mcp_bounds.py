"""The last unbounded inputs (issue 34): a message from an MCP server, bounded before the MCP SDK reads it.

The MCP SDK gathers a stdio server's line, or an HTTP answer, whole and decodes it before the MCP client's result
cap is applied: a server answering one 64 MiB line held the client's memory (and its loop, the line gathered by
repeated joins), and a result nested 10,000 deep reached the SDK's decoder. Now a stdio server's stdout reaches the
SDK through the relay (``agent/mcp_relay.py``) and an HTTP answer through ``bounded_http``, both with the bounds of
``limits.mcp_message``: the call fails with one tool error naming the limit, and the next call works. The server
is a hostile one written by hand (``hostile_mcp.py``); the witnesses are its log of what it sent, its process,
and the next call's answer.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp import limits
from phoenix_lsp.agent.contracts import ErrorCode, ToolFailure
from phoenix_lsp.agent.mcp_hub import DEFAULT_MAX_RESULT_BYTES, McpHub
from tests.agent.mcp_helpers import free_port, registry

pytestmark = pytest.mark.slow  # each test starts an MCP server as a subprocess

HOSTILE = Path(__file__).with_name("hostile_mcp.py")
LIMIT = f"{limits.mcp_message(DEFAULT_MAX_RESULT_BYTES).max_bytes:,} bytes"


@contextlib.contextmanager
def _hub(entry: dict[str, Any]) -> Iterator[McpHub]:
    with McpHub(registry(hostile=entry), environ={"PATH": os.environ.get("PATH", "")}) as hub:
        yield hub


@contextlib.contextmanager
def _http(log: Path, sse: bool) -> Iterator[int]:
    port = free_port()
    process = subprocess.Popen([sys.executable, str(HOSTILE), "--log", str(log), "--http", str(port),
                                *(["--sse"] if sse else [])])
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            assert process.poll() is None and time.monotonic() < deadline, "the hostile server did not start"
            time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        process.wait(10)


def _refused(hub: McpHub, tool: str, arguments: dict[str, int]) -> ToolFailure:
    with pytest.raises(ToolFailure) as caught:
        hub.call(f"mcp://hostile/{tool}", arguments, timeout_s=30)
    return caught.value


def _entry(log: Path) -> dict[str, Any]:
    return {"command": [sys.executable, str(HOSTILE)], "args": ["--log", str(log)], "trustAnnotations": True,
            "connectTimeoutS": 60}


@pytest.mark.req("REQ-PROTO-063")
def test_a_64_mib_line_from_a_stdio_server_is_one_tool_error_naming_the_limit(tmp_path: Path) -> None:
    log = tmp_path / "sent.log"
    with _hub(_entry(log)) as hub:
        assert hub.call("mcp://hostile/echo", {"text": "before"}, timeout_s=30) == "echo: before"
        refused = _refused(hub, "huge", {"mb": 64})
        assert refused.error.code == ErrorCode.RESULT_TOO_LARGE, refused.error
        assert "over the limit of " + LIMIT in refused.error.message, refused.error.message
        assert "huge" in log.read_text()  # the server did send it
        assert hub.call("mcp://hostile/echo", {"text": "after"}, timeout_s=30) == "echo: after"


@pytest.mark.req("REQ-PROTO-063", "REQ-SEC-005")
def test_a_result_10000_deep_from_a_stdio_server_is_one_tool_error_naming_the_limit(tmp_path: Path) -> None:
    log = tmp_path / "sent.log"
    with _hub(_entry(log)) as hub:
        refused = _refused(hub, "deep", {"levels": 10_000})
        assert refused.error.code == ErrorCode.RESULT_TOO_LARGE, refused.error
        assert "more than 64 levels deep" in refused.error.message, refused.error.message
        assert "deep" in log.read_text()
        assert hub.call("mcp://hostile/echo", {"text": "after"}, timeout_s=30) == "echo: after"


@pytest.mark.req("REQ-PROTO-063", "REQ-SEC-005")
@pytest.mark.parametrize("sse", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize(("tool", "arguments", "said"), [
    ("huge", {"mb": 64}, "over the limit of " + LIMIT),
    ("deep", {"levels": 10_000}, "more than 64 levels deep")])
def test_an_http_answer_over_the_bounds_is_one_tool_error_naming_the_limit(
        tool: str, arguments: dict[str, int], said: str, sse: bool, tmp_path: Path) -> None:
    log = tmp_path / "sent.log"
    with _http(log, sse) as port, _hub({"url": f"http://127.0.0.1:{port}/mcp", "connectTimeoutS": 60,
                                   "trustAnnotations": True}) as hub:
        assert hub.call("mcp://hostile/echo", {"text": "before"}, timeout_s=30) == "echo: before"
        refused = _refused(hub, tool, arguments)
        assert refused.error.code == ErrorCode.RESULT_TOO_LARGE, refused.error
        assert said in refused.error.message, refused.error.message
        assert tool in log.read_text()
        assert hub.call("mcp://hostile/echo", {"text": "after"}, timeout_s=30) == "echo: after"
        if tool == "huge":  # the client stopped reading at the bound: the server could not send the rest
            deadline = time.monotonic() + 30
            while "client went away" not in log.read_text() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert "client went away" in log.read_text()
