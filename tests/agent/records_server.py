"""A real MCP server for the agent route's tests, built with the official SDK (``MCPServer``).

Run: ``python tests/agent/records_server.py --data FILE [--version V | --version-file F] [--http PORT]``

- 50 deterministic records (``id``, ``title``, ``status``, ``priority``, ``owner``, a ~400-character
  ``description`` so raw payloads are large), loaded from ``--data`` (created if missing) and saved back
  after every update, so a test can read the final state.
- It refuses to start unless the environment variable ``RECORDS_TOKEN`` equals the expected token, given
  separately (``--expect-token-file``: a file holding it, or ``RECORDS_EXPECTED_TOKEN``); a test thereby
  proves that ``secretsRef`` was resolved, without the token being in the registry. Over HTTP, every
  request must also carry the header ``Authorization: Bearer <token>``.
- ``--version`` sets ``serverInfo.version`` (default 1.0.0); from version 2 on, ``update_record`` has an
  extra optional argument ``reason``, so a test sees a schema change with a version bump.
- Test-only tools: ``slow(seconds)`` (sleeps), ``crash()`` (the process exits at once), ``big(kb)``,
  ``pid()``, ``listings()`` (how many times ``tools/list`` was answered; ``--list-ttl-ms`` adds a
  ``ttlMs`` hint to it).
- ``--output-schema TOOL=JSON`` lists TOOL with that output schema instead of its own (the tool still answers as
  before): a server whose results break the schema it declares.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ListToolsResult, ToolAnnotations

STATUSES = ("open", "in_progress", "blocked", "done")
OWNERS = ("infra", "web", "data", "mobile", "support")
READ = ToolAnnotations(read_only_hint=True)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)


def dataset() -> list[dict[str, Any]]:
    """The 50 records, always the same."""
    records = []
    for index in range(1, 51):
        sentence = (f"Record {index} tracks work item {index * 7 % 50} for the {OWNERS[index % 5]} team; "
                    "it collects the notes, decisions and follow-ups gathered so far. ")
        records.append({
            "id": index,
            "title": f"Work item {index}",
            "status": STATUSES[index % 4],
            "priority": index % 5 + 1,
            "owner": OWNERS[index % 5],
            "description": (sentence * 4)[:400],
        })
    return records


class _Records(MCPServer):
    """The SDK's server, with a freshness hint on its tool listing (``--list-ttl-ms``) and a count of them."""

    list_ttl_ms: int | None = None
    listings = 0
    output_schemas: dict[str, dict[str, Any]] = {}

    async def _handle_list_tools(self, ctx: Any, params: Any) -> ListToolsResult:
        self.listings += 1
        result = await super()._handle_list_tools(ctx, params)
        if self.output_schemas:
            tools = [t.model_copy(update={"output_schema": self.output_schemas.get(t.name, t.output_schema)})
                     for t in result.tools]
            result = result.model_copy(update={"tools": tools})
        return result if self.list_ttl_ms is None else result.model_copy(update={"ttl_ms": self.list_ttl_ms})


def build(data: Path, version: str, list_ttl_ms: int | None = None,
          output_schemas: dict[str, dict[str, Any]] | None = None) -> MCPServer:
    server = _Records("records", version=version)
    server.list_ttl_ms = list_ttl_ms
    server.output_schemas = dict(output_schemas or {})
    if not data.exists():
        data.write_text(json.dumps(dataset(), indent=1), encoding="utf-8")

    def load() -> list[dict[str, Any]]:
        return list(json.loads(data.read_text(encoding="utf-8")))

    def find(records: list[dict[str, Any]], record_id: int) -> dict[str, Any]:
        for record in records:
            if record["id"] == record_id:
                return record
        raise ToolError(f"not found: there is no record with id {record_id}")

    @server.tool(annotations=READ)
    def list_records() -> dict[str, Any]:
        """All records, in full."""
        return {"records": load()}

    @server.tool(annotations=READ)
    def get_record(id: int) -> dict[str, Any]:
        """One record by id."""
        return find(load(), id)

    @server.tool(annotations=READ)
    def search_records(status: str | None = None, min_priority: int | None = None,
                       fields: list[str] | None = None) -> dict[str, Any]:
        """Records with this status and at least this priority; only the given fields of each, if any."""
        found = [r for r in load() if (status is None or r["status"] == status)
                 and (min_priority is None or r["priority"] >= min_priority)]
        if fields:
            found = [{k: v for k, v in r.items() if k in fields} for r in found]
        return {"records": found}

    def _update(id: int, fields: dict[str, Any]) -> dict[str, Any]:
        records = load()
        record = find(records, id)
        unknown = sorted(set(fields) - {"title", "status", "priority", "owner", "description"})
        if unknown:
            raise ToolError(f"cannot update {unknown}: not fields of a record")
        record.update(fields)
        data.write_text(json.dumps(records, indent=1), encoding="utf-8")
        return record

    def update_record_v2(id: int, fields: dict[str, Any], reason: str = "") -> dict[str, Any]:
        """Change some fields of one record."""
        return _update(id, fields)

    def update_record(id: int, fields: dict[str, Any]) -> dict[str, Any]:
        """Change some fields of one record."""
        return _update(id, fields)

    major = version.split(".")[0]
    server.add_tool(update_record_v2 if major.isdigit() and int(major) >= 2 else update_record,
                    name="update_record", annotations=WRITE)

    @server.tool()
    def describe(text: str) -> str:
        """Plain text back (no annotation: a write by default)."""
        return f"described: {text}"

    @server.tool(annotations=READ)
    async def slow(seconds: float) -> str:
        """Sleeps, then answers."""
        await asyncio.sleep(seconds)
        return "done"

    @server.tool(annotations=READ)
    def crash() -> str:
        """The server process ends at once."""
        os._exit(3)

    @server.tool(annotations=READ)
    def listings() -> int:
        """How many times the tools were listed."""
        return server.listings

    @server.tool(annotations=READ)
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.tool(annotations=READ)
    def big(kb: int) -> str:
        """kb kilobytes of text."""
        return "x" * (kb * 1024)

    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="records_server")
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("RECORDS_DATA", "records.json")))
    parser.add_argument("--version", default="1.0.0")
    parser.add_argument("--version-file", type=Path, help="read the version from this file")
    parser.add_argument("--http", type=int, metavar="PORT")
    parser.add_argument("--list-ttl-ms", type=int, help="a ttlMs freshness hint on tools/list")
    parser.add_argument("--expect-token-file", type=Path)
    parser.add_argument("--output-schema", action="append", default=[], metavar="TOOL=JSON",
                        help="list TOOL with this output schema instead of its own")
    args = parser.parse_args(argv)
    if args.expect_token_file is not None:
        expected = args.expect_token_file.read_text(encoding="utf-8").strip()
    else:
        expected = os.environ.get("RECORDS_EXPECTED_TOKEN", "")
    if not expected or os.environ.get("RECORDS_TOKEN") != expected:
        print("records_server: RECORDS_TOKEN is missing or wrong; refusing to start", file=sys.stderr)
        return 2
    version = args.version_file.read_text(encoding="utf-8").strip() if args.version_file else args.version
    declared = {tool: json.loads(schema) for tool, schema in (a.split("=", 1) for a in args.output_schema)}
    server = build(args.data, version, args.list_ttl_ms, declared)
    if args.http is None:
        server.run("stdio")
        return 0
    app = server.streamable_http_app(streamable_http_path="/mcp")

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization", b"").decode() != f"Bearer {expected}":
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"missing or wrong token"})
                return
        await app(scope, receive, send)

    import uvicorn

    uvicorn.run(guarded, host="127.0.0.1", port=args.http, log_level="warning", lifespan="on")
    return 0


if __name__ == "__main__":
    sys.exit(main())
