"""REQ-PROTO-055: every consumer of events and of tool names handles every kind, or a test fails.

The kinds come from the published schema (``specs/protocol.schema.json``): the ``PhoenixEvent`` union's
mapping and the ``ToolName`` enum. Each Python consumer's table is compared with them here (the VS Code
extension's in its unit tests, the Neovim plugin's in tests/clients/nvim/test_kinds.py), a schema with one more
kind is shown to fail each comparison, and a kind that still arrives at run time is reported where a person
or the log sees it.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.client.conversation import Conversation
from phoenix_lsp.client.events import NESTED, SHOWN, EventView
from phoenix_lsp.client.screen import Screen
from phoenix_lsp.protocol import events as ev
from phoenix_lsp.protocol.kinds import EVENT_KINDS, TOOL_NAMES, table_problems
from phoenix_lsp.server import plain
from phoenix_lsp.server.acp import updates

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "specs" / "protocol.schema.json").read_text())


def schema_event_kinds(schema: dict[str, Any]) -> list[str]:
    return list(schema["$defs"]["PhoenixEvent"]["discriminator"]["mapping"])


def schema_tool_names(schema: dict[str, Any]) -> list[str]:
    return list(schema["$defs"]["ToolName"]["enum"])


#: every Python table keyed by event kind, and every one keyed by tool name
EVENT_TABLES: dict[str, Collection[str]] = {
    "acp/updates.py LIVE": updates.LIVE,
    "plain.py EVENTS": plain.EVENTS,
    "client/events.py SHOWN": SHOWN,
    "client/events.py NESTED": NESTED,
}
TOOL_TABLES: dict[str, Collection[str]] = {
    "acp/updates.py KINDS": updates.KINDS,
    "acp/updates.py TITLES": updates.TITLES,
    "plain.py TOOL_WORDS": plain.TOOL_WORDS,
}


@pytest.mark.req("REQ-PROTO-055")
def test_the_python_lists_are_the_schemas() -> None:
    assert sorted(EVENT_KINDS) == schema_event_kinds(SCHEMA)  # the mapping is sorted
    assert list(TOOL_NAMES) == schema_tool_names(SCHEMA)
    assert len(EVENT_KINDS) == 26 and len(TOOL_NAMES) == 16  # 15 tools and the MCP tools' family


@pytest.mark.req("REQ-PROTO-055")
@pytest.mark.parametrize("name", EVENT_TABLES)
def test_each_event_table_handles_exactly_the_schemas_kinds(name: str) -> None:
    assert table_problems(name, EVENT_TABLES[name], schema_event_kinds(SCHEMA)) == []


@pytest.mark.req("REQ-PROTO-055")
@pytest.mark.parametrize("name", TOOL_TABLES)
def test_each_tool_table_names_exactly_the_schemas_tools(name: str) -> None:
    assert table_problems(name, TOOL_TABLES[name], schema_tool_names(SCHEMA)) == []


@pytest.mark.req("REQ-PROTO-055")
def test_a_kind_added_to_the_schema_fails_every_python_consumer() -> None:
    grown = json.loads(json.dumps(SCHEMA))
    grown["$defs"]["PhoenixEvent"]["discriminator"]["mapping"]["fakeKind"] = "#/$defs/FakeKind"
    grown["$defs"]["ToolName"]["enum"].append("fake_tool")
    for name, table in EVENT_TABLES.items():
        assert table_problems(name, table, schema_event_kinds(grown)) == [
            f"{name} does not handle the kind 'fakeKind': add it to the table (what the consumer does with it, "
            "or why it ignores it)"]
    for name, table in TOOL_TABLES.items():
        assert table_problems(name, table, schema_tool_names(grown)) == [
            f"{name} does not handle the kind 'fake_tool': add it to the table (what the consumer does with it, "
            "or why it ignores it)"]


@pytest.mark.req("REQ-PROTO-055")
def test_a_key_that_is_no_kind_is_reported_too() -> None:
    assert table_problems("t", [*EVENT_KINDS, "gone"], EVENT_KINDS) == [
        "t has the key 'gone', which is no kind of the protocol: remove it"]


def _fake_event() -> ev.EventKinds:
    """An event of a kind the tables lack, as a newer server's model would be (built without validation)."""
    return ev.TextDelta.model_construct(kind="fakeKind", conversation_id="c1", seq=1, text="x", request_id=1)


@pytest.mark.req("REQ-PROTO-055")
def test_the_acp_adapter_logs_an_unknown_event_kind_and_tool(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=updates.__name__):
        assert updates.live(_fake_event(), updates.Calls(), "/w") == []
        assert updates.kind_of("fake_tool") == "other"
        assert updates.title_of("fake_tool", {}) == "fake_tool"
    said = [r.getMessage() for r in caplog.records]
    assert any("event kind 'fakeKind'" in m and "update phoenix-lsp" in m for m in said), said
    assert sum("tool 'fake_tool'" in m for m in said) == 1, "said once per kind"


@pytest.mark.req("REQ-PROTO-055")
def test_the_plain_adapter_logs_an_unknown_event_kind_and_tool(caplog: pytest.LogCaptureFixture) -> None:
    client = plain.PlainClient(None, lambda coro: None)  # type: ignore[arg-type]  # never reached: no server call
    with caplog.at_level(logging.WARNING, logger=plain.__name__):
        client.event(_fake_event(), {"kind": "fakeKind", "conversationId": "c1"})
        assert plain.tool_words("fake_tool", {}) == "Running fake_tool"
    said = [r.getMessage() for r in caplog.records]
    assert any("event kind 'fakeKind'" in m for m in said), said
    assert any("tool 'fake_tool'" in m for m in said), said


@pytest.mark.req("REQ-PROTO-055")
def test_the_terminal_client_says_an_event_it_cannot_read_once_per_kind() -> None:
    out = io.StringIO()
    view = EventView(Conversation(id="c1"), Screen(out, color=False), lambda: None, _no_request, lambda c: None)
    for seq in (1, 2):
        view.on_event({"kind": "fakeKind", "conversationId": "c1", "seq": seq, "time": 0})
    view.on_event({"kind": "textDelta", "conversationId": "c1", "seq": 3, "time": 0, "text": "still here",
                   "requestId": 1})
    shown = out.getvalue()
    assert shown.count("[?]") == 1, shown
    assert "'fakeKind'" in shown and "Update phoenix-lsp" in shown
    assert "still here" in shown


async def _no_request(method: str, params: dict[str, Any]) -> Any:
    raise AssertionError("no request expected")
