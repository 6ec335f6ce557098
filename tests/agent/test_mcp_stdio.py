"""McpHub against the real records server over stdio (REQ-AGENT-012/016/017): catalogue, lazy schemas cached
per server@version, calls, every error mapping, secretsRef, clean shutdown. Real subprocesses, no mocks."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from phoenix_lsp.agent.agent_config import CapabilityManifest
from phoenix_lsp.agent.contracts import ErrorCode, ErrorKind, ToolFailure
from phoenix_lsp.agent.mcp_hub import McpHub
from tests.waiting import wait_exited

from .mcp_helpers import TOKEN, TOKEN_VARIABLE, registry, stdio_entry

MANIFEST = CapabilityManifest.model_validate({"tools": {"mcp://records/search_records": {"kind": "write"}}})

pytestmark = pytest.mark.req("REQ-AGENT-017", "REQ-AGENT-012")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("records") / "records.json"


@pytest.fixture(scope="module")
def hub(data: Path) -> Iterator[McpHub]:
    """One server subprocess for the module (started lazily by the hub)."""
    with McpHub(registry(records=stdio_entry(data)), manifest=MANIFEST,
                environ={TOKEN_VARIABLE: TOKEN, "PATH": os.environ.get("PATH", "")}) as hub:
        yield hub


def failure(hub: McpHub, uri: str, arguments: dict[str, object] | None = None, **kw: float) -> ToolFailure:
    with pytest.raises(ToolFailure) as caught:
        hub.call(uri, arguments or {}, **kw)
    assert caught.value.error.kind == ErrorKind.TOOL
    return caught.value


def test_the_catalogue_lists_every_tool_with_its_kind_and_no_schema(hub: McpHub) -> None:
    tools = {t.name: t for t in hub.catalogue()}
    assert {"list_records", "get_record", "search_records", "update_record", "describe"} <= set(tools)
    assert tools["get_record"].uri == "mcp://records/get_record" and tools["get_record"].server == "records"
    assert (tools["get_record"].kind, tools["get_record"].kind_source) == ("read", "annotation")
    assert (tools["update_record"].kind, tools["update_record"].kind_source) == ("write", "annotation")
    assert (tools["describe"].kind, tools["describe"].kind_source) == ("write", "default")  # no annotation
    # the manifest overrides the server's readOnlyHint
    assert (tools["search_records"].kind, tools["search_records"].kind_source) == ("write", "manifest")
    assert "inputSchema" not in tools["get_record"].model_dump_json(by_alias=True)
    assert tools["get_record"].description == "One record by id."


def test_a_schema_is_loaded_on_first_use_and_cached_by_server_and_version(hub: McpHub) -> None:
    hub.catalogue()  # lists every tool, hands out no schema
    assert "pid" not in hub.cached_schemas().get("records@1.0.0", [])  # (no other test here uses pid)
    assert hub.schema("mcp://records/pid")["properties"] == {}
    assert "pid" in hub.cached_schemas()["records@1.0.0"]
    schema = hub.schema("mcp://records/get_record")
    assert schema["properties"]["id"]["type"] == "integer" and schema["required"] == ["id"]
    assert hub.schema("mcp://records/get_record?id=3") is schema  # a scope does not matter; the same entry
    assert hub.versions(["mcp://records/get_record"]) == {"mcp://records/get_record": "records@1.0.0"}


def test_calls_return_structured_json_with_large_payloads(hub: McpHub) -> None:
    records = hub.call("mcp://records/list_records", {}, timeout_s=10)["records"]
    assert len(records) == 50 and all(len(r["description"]) == 400 for r in records)
    assert len(json.dumps(records)) > 20_000
    assert hub.call("mcp://records/get_record", {"id": 7})["title"] == "Work item 7"
    found = hub.call("mcp://records/search_records", {"status": "open", "min_priority": 3})["records"]
    assert found and all(r["status"] == "open" and r["priority"] >= 3 for r in found)
    assert hub.call("mcp://records/describe", {"text": "x"}) == "described: x"  # the value, not the SDK's wrapper


def test_a_write_changes_the_servers_file(hub: McpHub, data: Path) -> None:
    updated = hub.call("mcp://records/update_record", {"id": 4, "fields": {"status": "done"}})
    assert updated["status"] == "done"
    stored = {r["id"]: r for r in json.loads(data.read_text())}
    assert stored[4]["status"] == "done"


def test_unknown_record_tool_and_server_are_not_found(hub: McpHub) -> None:
    missing = failure(hub, "mcp://records/get_record", {"id": 999})
    assert missing.error.code == ErrorCode.NOT_FOUND and "999" in missing.error.message
    tool = failure(hub, "mcp://records/delete_everything")
    assert tool.error.code == ErrorCode.NOT_FOUND and "get_record" in tool.error.message  # names the real ones
    server = failure(hub, "mcp://nowhere/get_record")
    assert server.error.code == ErrorCode.NOT_FOUND and "records" in server.error.message
    assert failure(hub, "not a uri").error.code == ErrorCode.NOT_FOUND


def test_invalid_arguments(hub: McpHub) -> None:
    wrong_type = failure(hub, "mcp://records/get_record", {"id": "seven"})
    assert wrong_type.error.code == ErrorCode.INVALID_ARGUMENTS and "id" in wrong_type.error.message
    assert failure(hub, "mcp://records/get_record", {}).error.code == ErrorCode.INVALID_ARGUMENTS
    # the server's own refusal (a field a record does not have) is the tool's error
    refused = failure(hub, "mcp://records/update_record", {"id": 1, "fields": {"colour": "red"}})
    assert refused.error.code == ErrorCode.TOOL_ERROR and "colour" in refused.error.message


def test_a_timeout_fails_the_call_and_the_session_survives(hub: McpHub) -> None:
    started = time.monotonic()
    slow = failure(hub, "mcp://records/slow", {"seconds": 5}, timeout_s=0.5)
    assert slow.error.code == ErrorCode.TIMEOUT and time.monotonic() - started < 4
    assert hub.call("mcp://records/get_record", {"id": 1})["id"] == 1


def test_a_result_over_the_cap_is_refused_with_a_clear_error(hub: McpHub) -> None:
    big = failure(hub, "mcp://records/big", {"kb": 1100}, timeout_s=20)
    assert big.error.code == ErrorCode.RESULT_TOO_LARGE and "cap" in big.error.message
    assert len(hub.call("mcp://records/big", {"kb": 4})) == 4096


def test_calls_from_many_threads_at_once(hub: McpHub) -> None:
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda i: hub.call("mcp://records/get_record", {"id": i})["id"], range(1, 25)))
    assert got == list(range(1, 25))


@pytest.mark.req("REQ-AGENT-016")
def test_the_secret_never_shows(hub: McpHub, data: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The server only starts with RECORDS_TOKEN set from secretsRef; the token is nowhere we write."""
    caplog.set_level(logging.DEBUG)
    hub_registry = registry(records=stdio_entry(data))
    hub.call("mcp://records/get_record", {"id": 2})
    with pytest.raises(ToolFailure) as caught:
        hub.call("mcp://records/describe", {"text": 5})
    produced = [json.dumps([t.model_dump(mode="json") for t in hub.catalogue()]), repr(hub),
                json.dumps([h.model_dump(mode="json") for h in hub.health()]), str(caught.value),
                caught.value.error.message, caplog.text, repr(hub_registry)]
    assert all(TOKEN not in text for text in produced)


# ------------------------------------------------------------------------------------- own servers


@pytest.mark.req("REQ-AGENT-016")
def test_a_missing_secret_is_unavailable_naming_the_variable(tmp_path: Path) -> None:
    with McpHub(registry(records=stdio_entry(tmp_path / "r.json")), environ={}) as hub:
        missing = failure(hub, "mcp://records/get_record", {"id": 1})
    assert missing.error.code == ErrorCode.UNAVAILABLE and TOKEN_VARIABLE in missing.error.message


@pytest.mark.req("REQ-AGENT-016")
def test_a_wrong_secret_keeps_the_server_from_starting_and_is_not_shown(tmp_path: Path,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "wrong-tok-b7d1e0"
    with McpHub(registry(records=stdio_entry(tmp_path / "r.json")), environ={TOKEN_VARIABLE: wrong},
                connect_timeout_s=20) as hub:
        refused = failure(hub, "mcp://records/get_record", {"id": 1})
        assert hub.catalogue() == []  # an unreachable server is left out
        health = hub.health()[0]
    assert refused.error.code == ErrorCode.UNAVAILABLE and "refusing to start" in refused.error.message
    assert not health.connected and health.error
    assert wrong not in refused.error.message + caplog.text + health.model_dump_json()


def test_a_crash_is_unavailable_then_the_next_call_reconnects_and_a_new_version_drops_the_cache(
        tmp_path: Path) -> None:
    version = tmp_path / "version"
    version.write_text("1.0.0")
    entry = stdio_entry(tmp_path / "r.json", "--version-file", str(version))
    with McpHub(registry(records=entry), environ={TOKEN_VARIABLE: TOKEN}) as hub:
        assert "reason" not in hub.schema("mcp://records/update_record")["properties"]
        assert hub.cached_schemas() == {"records@1.0.0": ["update_record"]}
        crashed = failure(hub, "mcp://records/crash")
        assert crashed.error.code == ErrorCode.UNAVAILABLE and "next call" in crashed.error.message
        assert not hub.health()[0].connected
        version.write_text("2.0.0")
        assert hub.call("mcp://records/get_record", {"id": 3})["id"] == 3  # reconnected
        assert hub.health()[0].connected and hub.health()[0].version == "2.0.0"
        assert hub.versions(["mcp://records/update_record"]) == {"mcp://records/update_record": "records@2.0.0"}
        # records@1.0.0's entries went with its version (the call loaded get_record's schema, to check it)
        assert hub.cached_schemas() == {"records@2.0.0": ["get_record"]}
        assert "reason" in hub.schema("mcp://records/update_record")["properties"]
        assert hub.cached_schemas() == {"records@2.0.0": ["get_record", "update_record"]}


def test_a_ttl_hint_on_the_tool_listing_is_respected(tmp_path: Path) -> None:
    now = [0.0]
    entry = stdio_entry(tmp_path / "r.json", "--list-ttl-ms", "30000")
    with McpHub(registry(records=entry), environ={TOKEN_VARIABLE: TOKEN}, clock=lambda: now[0]) as hub:
        hub.catalogue()
        hub.catalogue()
        hub.schema("mcp://records/get_record")
        assert hub.call("mcp://records/listings", {}) == 1  # fresh: listed once
        now[0] += 31
        hub.catalogue()
        assert hub.call("mcp://records/listings", {}) == 2  # stale: listed again
    # without a hint, the listing lasts as long as the server's version
    with McpHub(registry(records=stdio_entry(tmp_path / "r.json")), environ={TOKEN_VARIABLE: TOKEN},
                clock=lambda: now[0]) as hub:
        hub.catalogue()
        now[0] += 10_000
        hub.catalogue()
        assert hub.call("mcp://records/listings", {}) == 1


def test_close_ends_the_server_process_and_refuses_further_calls(tmp_path: Path) -> None:
    hub = McpHub(registry(records=stdio_entry(tmp_path / "r.json")), environ={TOKEN_VARIABLE: TOKEN})
    pid = hub.call("mcp://records/pid", {})
    os.kill(pid, 0)  # alive
    threads = threading.active_count()
    hub.close()
    assert wait_exited([pid], 30) == []  # on its pidfd (a hang guard: 10 s of polling was near the edge at load 20)
    assert not _alive(pid)
    assert threading.active_count() < threads
    closed = failure(hub, "mcp://records/pid")
    assert closed.error.code == ErrorCode.UNAVAILABLE
    hub.close()  # idempotent


def test_a_command_that_does_not_exist_is_unavailable(tmp_path: Path) -> None:
    entry = {"command": [str(tmp_path / "no-such-server")]}
    with McpHub(registry(ghost=entry), connect_timeout_s=5) as hub:
        ghost = failure(hub, "mcp://ghost/anything")
    assert ghost.error.code == ErrorCode.UNAVAILABLE and "ghost" in ghost.error.message


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead too
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.req("REQ-AGENT-014")
def test_a_server_s_read_only_hints_count_only_if_the_registry_trusts_it(tmp_path: Path) -> None:
    """MCP annotations are the server's own claim: untrusted, a tool the manifest does not call read is a write
    (so Restricted refuses it and the interactive policy asks), whatever its readOnlyHint says."""
    data = tmp_path / "records.json"
    with McpHub(registry(records=stdio_entry(data, trust=False)), manifest=MANIFEST,
                environ={**os.environ, TOKEN_VARIABLE: TOKEN}) as untrusted:
        tools = {t.name: t for t in untrusted.catalogue()}
    assert tools["get_record"].read_only_hint is True  # what the server claims, still shown
    assert (tools["get_record"].kind, tools["get_record"].kind_source) == ("write", "default")
    assert (tools["search_records"].kind, tools["search_records"].kind_source) == ("write", "manifest")


@pytest.mark.req("REQ-AGENT-030")
def test_the_sdks_wrapper_is_removed_only_where_it_is_a_wrapper() -> None:
    from phoenix_lsp.agent.mcp_hub import unwrap, unwrapped_schema

    wrapped = {"type": "object", "title": "list_issuesOutput", "required": ["result"],
               "properties": {"result": {"type": "array", "items": {"$ref": "#/$defs/I"}}}, "$defs": {"I": {}}}
    assert unwrapped_schema(wrapped) == {"type": "array", "items": {"$ref": "#/$defs/I"}, "$defs": {"I": {}}}
    assert unwrap({"result": [1, 2]}, wrapped) == [1, 2]
    # an object that really has one key "result" (its schema is not the SDK's wrapper) stays as it is
    real = {"type": "object", "title": "Outcome", "required": ["result"], "properties": {"result": {}}}
    assert unwrapped_schema(real) is None and unwrap({"result": [1]}, real) == {"result": [1]}
    assert unwrap({"result": [1], "more": 2}, wrapped) == {"result": [1], "more": 2}
    # no output schema: only a wrapped non-object is unwrapped
    assert unwrap({"result": [1]}, None) == [1] and unwrap({"result": {"a": 1}}, None) == {"result": {"a": 1}}
    assert unwrap([1], None) == [1]


class _CountedEnviron(dict[str, str]):
    """An environment that counts how often it is read whole (the guard looks for credential variables)."""

    reads = 0

    def items(self):  # type: ignore[no-untyped-def, override]
        type(self).reads += 1
        return super().items()


@pytest.mark.req("REQ-AGENT-016")
def test_a_result_s_strings_are_redacted_with_the_secrets_gathered_once(data: Path) -> None:
    """Every string of a result passes the server's redactor, yet the environment is read once per result, not
    once per string: a thousand records' strings cost one look at the environment (issue 37: 8 s of a 1,000-
    record call went there)."""
    from phoenix_lsp.store.secrets import REDACTED, SecretGuard

    environ = _CountedEnviron({TOKEN_VARIABLE: TOKEN, "PATH": os.environ.get("PATH", "")})
    guard = SecretGuard(environ=environ)
    guard.add_secret("Work item 7", "a secret that is a record's title")
    with McpHub(registry(records=stdio_entry(data)), manifest=MANIFEST, environ=environ,
                redact=guard.redact) as hub:
        hub.catalogue()
        _CountedEnviron.reads = 0
        records = hub.call("mcp://records/list_records", {}, timeout_s=10)["records"]
        reads = _CountedEnviron.reads
    assert len(records) == 50
    titles = [r["title"] for r in records]
    assert "Work item 7" not in titles and REDACTED in titles  # the redactor reached each record's strings
    assert reads <= 2, f"the environment was read {reads} times for one result"
