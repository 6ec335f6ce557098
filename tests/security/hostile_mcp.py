"""A hostile MCP server written without the SDK (whose own server would never send such messages): JSON-RPC by
hand, over stdio (``python hostile_mcp.py``) or streamable HTTP (``python hostile_mcp.py --http PORT [--sse]``: each
answer a JSON body, or one SSE event).

Tools: ``echo(text)`` answers normally; ``huge(mb)`` answers one message of ``mb`` MiB (a text result);
``deep(levels)`` answers a structured result nested ``levels`` deep (a line of a few KB). What it sent is
appended to ``--log`` (a line per answer: the tool and its size), the witness outside the client.
"""

from __future__ import annotations

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TOOLS = [{"name": name, "description": f"{name} (hostile test server)", "inputSchema": {"type": "object"},
          "annotations": {"readOnlyHint": True}} for name in ("echo", "huge", "deep")]


def answer(message: dict[str, Any], log: Path) -> bytes | None:
    """The answer to one message, as bytes without the line end; None for a notification."""
    if "id" not in message:
        return None
    method, params = message.get("method"), message.get("params") or {}
    if method == "initialize":
        result: Any = {"protocolVersion": params.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                       "serverInfo": {"name": "hostile", "version": "1.0.0"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        name, arguments = params.get("name"), params.get("arguments") or {}
        if name == "huge":
            head = b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' % json.dumps(
                message["id"]).encode()
            body = head + b"x" * (int(arguments.get("mb", 64)) << 20) + b'"}],"isError":false}}'
            with log.open("a") as out:
                out.write(f"huge {len(body)}\n")
            return body
        if name == "deep":
            levels = int(arguments.get("levels", 10_000))
            body = (b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"deep"}],'
                    b'"structuredContent":{"v":%s1%s},"isError":false}}') % (
                json.dumps(message["id"]).encode(), b"[" * levels, b"]" * levels)
            with log.open("a") as out:
                out.write(f"deep {len(body)}\n")
            return body
        result = {"content": [{"type": "text", "text": f"echo: {arguments.get('text', '')}"}], "isError": False}
    elif method == "ping":
        result = {}
    else:
        return json.dumps({"jsonrpc": "2.0", "id": message["id"],
                           "error": {"code": -32601, "message": f"no method {method}"}}).encode()
    return json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()


def stdio(log: Path) -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        if line.strip():
            sent = answer(json.loads(line), log)
            if sent is not None:
                out.write(sent + b"\n")
                out.flush()


def http(port: int, log: Path, sse: bool) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # no server-initiated stream
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_DELETE(self) -> None:
            self.do_GET()

        def do_POST(self) -> None:
            message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            sent = answer(message, log)
            if sent is None:
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if sse:  # one event holding the answer
                sent = b"event: message\ndata: " + sent + b"\n\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream" if sse else "application/json")
            self.send_header("Content-Length", str(len(sent)))
            self.end_headers()
            try:
                self.wfile.write(sent)
            except OSError:  # the client stopped reading
                with log.open("a") as out:
                    out.write("client went away\n")

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(prog="hostile_mcp")
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--http", type=int, metavar="PORT")
    parser.add_argument("--sse", action="store_true", help="over HTTP, answer in an SSE event (else JSON)")
    args = parser.parse_args()
    if args.http is None:
        stdio(args.log)
    else:
        http(args.http, args.log, args.sse)


if __name__ == "__main__":
    main()
