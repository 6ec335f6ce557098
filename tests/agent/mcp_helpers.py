"""Shared pieces of the MCP tests: the records server (``records_server.py``) as a real subprocess, over
stdio (started by the hub) or streamable HTTP (started here)."""

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

from phoenix_lsp.agent.agent_config import McpRegistry

SERVER = Path(__file__).with_name("records_server.py")
#: the token the records server expects; tests check it never shows in anything the hub produces
TOKEN = "rec-tok-4f9c2e81d7"
TOKEN_VARIABLE = "PHX_TEST_RECORDS_TOKEN"


def stdio_entry(data: Path, *extra: str, secret: str = TOKEN_VARIABLE,
                token_file: Path | None = None, trust: bool = True) -> dict[str, Any]:
    """A registry entry starting the records server over stdio. The expected token reaches the server by a
    file of its own (not through the registry): only ``secretsRef`` can make it start. ``trust``: its
    readOnlyHint annotations count (the test server says the truth about its tools)."""
    if token_file is None:
        token_file = data.with_suffix(".expected")
        token_file.write_text(TOKEN, encoding="utf-8")
    return {"command": [sys.executable, str(SERVER)],
            "args": ["--data", str(data), "--expect-token-file", str(token_file), *extra],
            "secretsRef": {"RECORDS_TOKEN": f"env:{secret}"}, "trustAnnotations": trust,
            # the suite's own workers load the machine: a Python server can take more than the default 10 s
            "connectTimeoutS": 60}


def registry(**servers: dict[str, Any]) -> McpRegistry:
    return McpRegistry.model_validate({"servers": servers})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def http_server(data: Path, port: int, *extra: str) -> Iterator[subprocess.Popen[bytes]]:
    """The records server over streamable HTTP on 127.0.0.1:port, until the block ends."""
    env = {**os.environ, "RECORDS_TOKEN": TOKEN, "RECORDS_EXPECTED_TOKEN": TOKEN}
    log = data.with_suffix(".log").open("ab")
    process = subprocess.Popen([sys.executable, str(SERVER), "--data", str(data), "--http", str(port), *extra],
                               env=env, stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the records server did not start: {data.with_suffix('.log').read_text()!r}")
            time.sleep(0.05)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
