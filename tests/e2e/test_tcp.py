"""`phoenix-lsp serve --tcp HOST:PORT` speaks LSP over TCP (REQ-PROTO-001)."""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
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


#: ``python -m phoenix_lsp ...`` with pygls's start-up log on stderr: "Serving on ..." says the port is open.
SERVE_LOGGING = ("import logging, runpy; logging.basicConfig(level=logging.INFO, format='%(message)s'); "
                 "runpy.run_module('phoenix_lsp', run_name='__main__', alter_sys=True)")


def _wait_listening(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Wait for the server's stderr to say it is serving. A thread reads stderr line by line (and goes on
    draining it afterwards, so the server never blocks on a full pipe)."""
    assert proc.stderr is not None
    stderr = proc.stderr
    lines: queue.Queue[bytes] = queue.Queue()

    def pump() -> None:
        for line in iter(stderr.readline, b""):
            lines.put(line)
        lines.put(b"")  # the server closed stderr: it exited

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + timeout
    seen = b""
    while b"Serving on" not in seen:
        try:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.001))
        except queue.Empty:
            line = b""
        if not line:
            raise AssertionError(f"the server did not start listening within {timeout}s: {seen.decode()[-2000:]}")
        seen += line


@pytest.mark.req("REQ-PROTO-001")
def test_serves_lsp_over_tcp(tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE_LOGGING, "serve", "--tcp", f"127.0.0.1:{port}", "--data-dir", str(tmp_path)],
        env={**os.environ, "ANTHROPIC_API_KEY": "sk-ant-tcp-test-0000000"},
        stderr=subprocess.PIPE,
    )
    try:
        _wait_listening(proc, 15)
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
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
