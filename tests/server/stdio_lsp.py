"""LSP over a server process's pipes, without a client library: for tests of what the process does around its
messages (its exit, its start-up), where a client library's own start and end would be in the way."""

from __future__ import annotations

import json
from typing import IO, Any


def send(stdin: IO[bytes], message: dict[str, Any]) -> None:
    """Write one framed message."""
    body = json.dumps(message).encode()
    stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stdin.flush()


def answer(stdout: IO[bytes], wanted: int) -> dict[str, Any]:
    """Read framed messages until the answer to request ``wanted``."""
    while True:
        length = 0
        while line := stdout.readline().strip():
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        message: dict[str, Any] = json.loads(stdout.read(length))
        if message.get("id") == wanted:
            return message
