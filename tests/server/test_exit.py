"""The server ends on ``exit`` without the interpreter's teardown, after closing the store (REQ-PROTO-034)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.server.stdio_lsp import answer, send


@pytest.mark.slow
@pytest.mark.req("REQ-PROTO-050", "REQ-PROTO-034")
def test_exit_closes_the_store(tmp_path: Path) -> None:
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-exit-test-0000000000"}
    proc = subprocess.Popen([sys.executable, "-m", "phoenix_lsp", "serve", "--data-dir", str(tmp_path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        send(proc.stdin, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                           "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}})
        answer(proc.stdout, 1)
        send(proc.stdin, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
        send(proc.stdin, {"jsonrpc": "2.0", "id": 2, "method": "phoenix/newConversation", "params": {}})
        created = answer(proc.stdout, 2)["result"]["conversationId"]
        send(proc.stdin, {"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
        answer(proc.stdout, 3)
        send(proc.stdin, {"jsonrpc": "2.0", "method": "exit"})
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
    # closed, not abandoned: SQLite checkpoints and removes the write-ahead log when the last connection closes
    assert (tmp_path / "phoenix.db").is_file() and not (tmp_path / "phoenix.db-wal").exists()
    import sqlite3

    with sqlite3.connect(tmp_path / "phoenix.db") as db:
        assert db.execute("select count(*) from conversations where id = ?", (created,)).fetchone() == (1,)
