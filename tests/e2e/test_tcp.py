"""`phoenix-lsp serve --tcp HOST:PORT` speaks LSP over TCP (REQ-PROTO-001)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _read_message(sock: socket.socket) -> dict:  # type: ignore[type-arg]
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(4096)
    header, _, body = data.partition(b"\r\n\r\n")
    length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += sock.recv(65536)
    return json.loads(body[:length])


@pytest.mark.req("REQ-PROTO-001")
def test_serves_lsp_over_tcp(tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "phoenix_lsp", "serve", "--tcp", f"127.0.0.1:{port}", "--data-dir", str(tmp_path)],
        env={**os.environ, "ANTHROPIC_API_KEY": "sk-ant-tcp-test-0000000"},
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        with sock:
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                               "params": {"processId": None, "rootUri": None, "capabilities": {}}})
            sock.sendall(f"Content-Length: {len(body)}\r\n\r\n{body}".encode())
            reply = _read_message(sock)
            while "id" not in reply:  # skip notifications such as window/logMessage
                reply = _read_message(sock)
            assert reply["id"] == 1
            phoenix = reply["result"]["capabilities"]["experimental"]["phoenix"]
            assert "phoenix/sendMessage" in phoenix["methods"] and "sandbox" in phoenix
    finally:
        proc.kill()
        proc.wait(10)
