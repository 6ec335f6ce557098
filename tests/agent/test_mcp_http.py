"""McpHub against the real records server over streamable HTTP: the Authorization header comes from
secretsRef, calls and errors map as over stdio, and a server that goes away is UNAVAILABLE until it is back."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.agent.contracts import ErrorCode, ToolFailure
from phoenix_lsp.agent.mcp_hub import McpHub

from .mcp_helpers import TOKEN, free_port, http_server, registry

AUTH_VARIABLE = "PHX_TEST_RECORDS_AUTH"


def entry(port: int) -> dict[str, object]:
    return {"url": f"http://127.0.0.1:{port}/mcp", "headers": {"X-Client": "phoenix-tests"},
            "secretsRef": {"Authorization": f"env:{AUTH_VARIABLE}"}, "trustAnnotations": True}

pytestmark = pytest.mark.req("REQ-AGENT-017", "REQ-AGENT-012")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    data = tmp_path_factory.mktemp("http") / "records.json"
    port = free_port()
    with http_server(data, port):
        yield port, data


@pytest.fixture(scope="module")
def hub(served: tuple[int, Path]) -> Iterator[McpHub]:
    with McpHub(registry(records=entry(served[0])), environ={AUTH_VARIABLE: f"Bearer {TOKEN}"}) as hub:
        yield hub


def test_catalogue_schema_and_calls_over_http(hub: McpHub, served: tuple[int, Path]) -> None:
    tools = {t.name: t for t in hub.catalogue()}
    assert tools["get_record"].kind == "read" and tools["update_record"].kind == "write"
    assert hub.schema("mcp://records/update_record")["required"] == ["id", "fields"]
    assert hub.versions(["mcp://records/get_record"]) == {"mcp://records/get_record": "records@1.0.0"}
    assert len(hub.call("mcp://records/list_records", {})["records"]) == 50
    hub.call("mcp://records/update_record", {"id": 9, "fields": {"owner": "platform"}})
    assert {r["id"]: r for r in json.loads(served[1].read_text())}[9]["owner"] == "platform"


def test_errors_map_over_http(hub: McpHub) -> None:
    cases: list[tuple[str, dict[str, Any], dict[str, float], str]] = [
        ("mcp://records/get_record", {"id": 404}, {}, ErrorCode.NOT_FOUND),
        ("mcp://records/get_record", {"id": [1]}, {}, ErrorCode.INVALID_ARGUMENTS),
        ("mcp://records/nope", {}, {}, ErrorCode.NOT_FOUND),
        ("mcp://records/slow", {"seconds": 5}, {"timeout_s": 0.5}, ErrorCode.TIMEOUT)]
    for uri, arguments, options, code in cases:
        with pytest.raises(ToolFailure) as caught:
            hub.call(uri, arguments, **options)
        assert caught.value.error.code == code, (uri, caught.value.error)
    assert hub.call("mcp://records/get_record", {"id": 1})["id"] == 1


@pytest.mark.req("REQ-AGENT-016")
def test_a_wrong_token_is_unavailable_and_never_shown(served: tuple[int, Path],
                                                      caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "Bearer wrong-http-tok-93ab"
    with McpHub(registry(records=entry(served[0])), environ={AUTH_VARIABLE: wrong}, connect_timeout_s=10) as hub:
        with pytest.raises(ToolFailure) as caught:
            hub.call("mcp://records/get_record", {"id": 1})
        health = hub.health()
    assert caught.value.error.code == ErrorCode.UNAVAILABLE and "HTTP 401" in caught.value.error.message
    assert "secretsRef" in caught.value.error.message
    for text in (caught.value.error.message, caplog.text, repr(hub), json.dumps([h.model_dump() for h in health])):
        assert "wrong-http-tok" not in text and TOKEN not in text


def test_a_server_that_goes_away_is_unavailable_until_it_is_back(tmp_path: Path) -> None:
    port = free_port()
    data = tmp_path / "records.json"
    with McpHub(registry(records=entry(port)), environ={AUTH_VARIABLE: f"Bearer {TOKEN}"},
                connect_timeout_s=5) as hub:
        with http_server(data, port):
            assert hub.call("mcp://records/get_record", {"id": 2})["id"] == 2
        with pytest.raises(ToolFailure) as caught:
            hub.call("mcp://records/get_record", {"id": 2}, timeout_s=5)
        assert caught.value.error.code == ErrorCode.UNAVAILABLE
        assert not hub.health()[0].connected
        with http_server(data, port):
            assert hub.call("mcp://records/get_record", {"id": 3})["id"] == 3
            assert hub.health()[0].connected
