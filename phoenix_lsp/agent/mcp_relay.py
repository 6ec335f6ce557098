"""The stdout of a stdio MCP server, bounded per line before the MCP SDK reads it (REQ-PROTO-063).

The MCP SDK reads a stdio server's stdout as text and gathers a line, however long it grows, before it decodes
it; only then is the MCP client's result cap applied. So a server's stdout reaches the SDK through this relay,
a small process of our own between the two (standard library only, started by ``mcp_sessions``): the server
gets the SDK's pipe as its stdin and its stderr as before; each line of its stdout is passed on whole when it is
within ``limits.mcp_message`` (bytes, nesting, tokens), and when it is not, the line is not kept (only its first
and last bytes, to find its id) and an error answer for its id is passed on instead, naming the bound, so that
the call waiting for it fails with a tool error and the session goes on. A line with no id to answer is dropped
and said on stderr. The relay ends when the server's stdout ends, with the server's exit code.

Run: ``python -c <RUN> ROOT --max-bytes N --max-tokens N --max-depth N -- COMMAND [ARG...]`` (see
:func:`command`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from phoenix_lsp import limits
from phoenix_lsp.server.transport import message_id

#: the line that runs the relay: the package's folder is put first on the path (the server's environment is not
#: ours, so no PYTHONPATH carries it), and Python runs isolated from the environment's PYTHON* variables
RUN = "import sys; sys.path.insert(0, sys.argv[1]); from phoenix_lsp.agent.mcp_relay import main; sys.exit(main())"
#: how much of the start and of the end of a refused line is kept, to find its id
HEAD = 64 * 1024
TAIL = 512
#: the JSON-RPC code of the error answer standing for a refused line (one of those JSON-RPC leaves to an
#: implementation; the SDK passes it to the call, ``mcp_calls`` maps it to RESULT_TOO_LARGE)
REFUSED_CODE = -32090


def command(argv: list[str], max_bytes: int, max_tokens: int, max_depth: int) -> list[str]:
    """The command line that runs ``argv`` (a server's) behind the relay, with the bounds of one message."""
    root = str(Path(__file__).resolve().parents[2])
    return [sys.executable, "-I", "-c", RUN, root, "--max-bytes", str(max_bytes), "--max-tokens",
            str(max_tokens), "--max-depth", str(max_depth), "--", *argv]


class Relay:
    """Lines in, lines (or error answers standing for them) out; never more than a line's bound held."""

    def __init__(self, out: object, max_bytes: int, max_tokens: int, max_depth: int) -> None:
        self._write = out.write  # type: ignore[attr-defined]
        self._flush = out.flush  # type: ignore[attr-defined]
        self.bounds = limits.Bounds("a message from the MCP server", max_bytes, max_tokens, max_depth)
        self._line = bytearray()
        self._over = 0  # bytes of the current line when it is over the bound (its head and tail kept), else 0
        self._tail = b""
        self.refused = 0

    def feed(self, chunk: bytes) -> None:
        """Pass on every line that ``chunk`` completes; keep the start of the next."""
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            self._grow(piece)
            if end < 0:
                return
            self._end_line()
            start = end + 1

    def _grow(self, piece: bytes) -> None:
        if self._over:
            self._over += len(piece)
            self._tail = (self._tail + piece)[-TAIL:]
            return
        if len(self._line) + len(piece) > self.bounds.max_bytes:
            self._over = len(self._line) + len(piece)
            self._tail = (bytes(self._line[-TAIL:]) + piece)[-TAIL:]
            del self._line[HEAD:]
            self._line += piece[:max(0, HEAD - len(self._line))]
            return
        self._line += piece

    def _end_line(self) -> None:
        line, over, tail = bytes(self._line), self._over, self._tail
        self._line, self._over, self._tail = bytearray(), 0, b""
        if over:  # its head and tail, where an id is looked for
            self._refuse(line + tail, self.bounds.too_long(over))
            return
        if not line.strip():
            return
        try:
            self.bounds.check(line)
        except limits.Refused as exc:
            self._refuse(line, str(exc))
            return
        self._write(line + b"\n")
        self._flush()

    def _refuse(self, seen: bytes, why: str) -> None:
        self.refused += 1
        msg_id = message_id(seen)  # in its first 64 KiB, or as its last member
        detail = (f"{why} (the MCP client's cap for one message: a result's cap and room around it). Ask the "
                  "tool for less (a narrower query); the next call is read as usual")
        if msg_id is None:
            sys.stderr.write(f"phoenix-lsp: a line of the MCP server's stdout with no id was dropped: {detail}\n")
            sys.stderr.flush()
            return
        answer = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": REFUSED_CODE, "message": detail}}
        self._write(json.dumps(answer).encode() + b"\n")
        self._flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mcp_relay", description=__doc__)
    parser.add_argument("--max-bytes", type=int, required=True)
    parser.add_argument("--max-tokens", type=int, required=True)
    parser.add_argument("--max-depth", type=int, required=True)
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args(sys.argv[2:] if argv is None else argv)  # sys.argv[1] is the package's folder
    server = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not server:
        parser.error("no server command after --")
    try:  # the server reads the SDK's pipe itself and writes its stderr where ours goes
        child = subprocess.Popen(server, stdout=subprocess.PIPE)
    except OSError as exc:
        sys.stderr.write(f"phoenix-lsp: the MCP server's command {server[0]!r} could not be started: {exc}\n")
        return 127
    assert child.stdout is not None
    relay = Relay(sys.stdout.buffer, args.max_bytes, args.max_tokens, args.max_depth)
    fd = child.stdout.fileno()
    try:
        while chunk := os.read(fd, 1 << 16):
            relay.feed(chunk)
    except (BrokenPipeError, ConnectionError):  # the SDK closed its end: the session is over
        child.terminate()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
