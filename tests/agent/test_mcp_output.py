"""A tool's declared output schema, checked by the hub once per result (``mcp_output.py``, REQ-AGENT-017),
against the real records server over stdio listing a tool with a schema its results break."""

from __future__ import annotations

import http.server
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.agent import mcp_output
from phoenix_lsp.agent.contracts import ErrorCode, ErrorKind, ToolFailure
from phoenix_lsp.agent.mcp_hub import McpHub
from phoenix_lsp.agent.mcp_output import OutputSchemas

from .mcp_helpers import TOKEN, TOKEN_VARIABLE, registry, stdio_entry

pytestmark = pytest.mark.req("REQ-AGENT-017")

#: what get_record is listed as returning: a record whose id is a string (its ids are integers)
STRING_ID = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
#: search_records' object must have a key it never sends
COUNTED = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}


def _hub(data: Path, *schemas: str) -> McpHub:
    extra = [arg for schema in schemas for arg in ("--output-schema", schema)]
    return McpHub(registry(records=stdio_entry(data, *extra)),
                  environ={TOKEN_VARIABLE: TOKEN, "PATH": os.environ.get("PATH", "")})


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[McpHub]:
    with _hub(tmp_path / "records.json", f"get_record={json.dumps(STRING_ID)}",
              f"search_records={json.dumps(COUNTED)}") as hub:
        yield hub


def _failure(hub: McpHub, uri: str, arguments: dict[str, Any]) -> ToolFailure:
    with pytest.raises(ToolFailure) as caught:
        hub.call(uri, arguments)
    assert caught.value.error.kind == ErrorKind.TOOL
    return caught.value


def test_a_result_that_breaks_its_declared_output_schema_is_that_call_s_error_and_the_session_goes_on(
        hub: McpHub) -> None:
    server_pid = hub.call("mcp://records/pid", {})
    broken = _failure(hub, "mcp://records/get_record", {"id": 7})
    assert broken.error.code == ErrorCode.TOOL_ERROR
    assert "does not match its declared output schema" in broken.error.message
    assert "at id:" in broken.error.message and "string" in broken.error.message  # where and why
    assert "Work item 7" not in broken.error.message  # nothing of the dropped result
    missing = _failure(hub, "mcp://records/search_records", {"status": "open"})
    assert missing.error.code == ErrorCode.TOOL_ERROR and "count" in missing.error.message
    # the server process is the one that answered before: its session was not ended by a bad result
    assert hub.call("mcp://records/pid", {}) == server_pid
    assert hub.call("mcp://records/list_records", {})["records"][0]["id"] == 1  # its own schema: checked, fine


def test_a_result_that_matches_is_returned_and_its_validator_is_compiled_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[dict[str, Any]] = []
    real = mcp_output.jsonschema_rs.validator_for

    def counting(schema: dict[str, Any], **options: Any) -> Any:
        compiled.append(schema)
        return real(schema, **options)

    monkeypatch.setattr(mcp_output.jsonschema_rs, "validator_for", counting)
    with _hub(tmp_path / "records.json") as hub:
        for _ in range(3):
            assert len(hub.call("mcp://records/list_records", {})["records"]) == 50
    assert len(compiled) == 1 and "records" in json.dumps(compiled[0])


def test_a_schema_s_remote_reference_is_never_fetched(tmp_path: Path) -> None:
    """A server cannot make the client reach out through its output schema: the witness is a local HTTP server
    that would serve the referenced schema, and that no request reaches."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            body = b'{"type": "object"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            return None

    witness = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=witness.serve_forever, daemon=True).start()
    try:
        remote = {"$ref": f"http://127.0.0.1:{witness.server_address[1]}/record.json"}
        with _hub(tmp_path / "records.json", f"get_record={json.dumps(remote)}") as hub:
            refused = _failure(hub, "mcp://records/get_record", {"id": 3})
    finally:
        witness.shutdown()
        witness.server_close()
    assert refused.error.code == ErrorCode.TOOL_ERROR and "not usable" in refused.error.message
    assert asked == []


def test_the_compiled_validators_are_bounded_and_forgotten_with_their_version() -> None:
    schemas = OutputSchemas(max_validators=2)
    integer = {"type": "integer"}
    assert schemas.problem("s@1", "a", integer, 3) is None
    problem = schemas.problem("s@1", "b", integer, "secret-ish value")
    assert problem is not None and problem.startswith("at (the result): ") and "integer" in problem
    assert "secret-ish" not in problem  # masked
    assert schemas.problem("t@1", "c", integer, 4) is None
    assert len(schemas) == 2  # the oldest went
    schemas.forget("s@1")
    assert len(schemas) == 1
    # a schema that changed under the same key is compiled again, not served stale
    assert schemas.problem("t@1", "c", {"type": "string"}, 4) is not None
    assert "not usable" in (schemas.problem("t@1", "d", {"type": 12}, 4) or "")
