"""The MCP tools' family in the tables keyed by tool name (issue 37, REQ-PROTO-055): each consumer's entry for
``mcp__*`` is used for every ``mcp__<server>__<tool>``, so no MCP call is shown as an unknown tool."""

from __future__ import annotations

import logging

import pytest

from phoenix_lsp.protocol.kinds import MCP_FAMILY, TOOL_NAMES, mcp_words, table_key
from phoenix_lsp.server import plain
from phoenix_lsp.server.acp import updates

NAME = "mcp__tracker__create_issue"


@pytest.mark.req("REQ-MCP-006")
def test_every_table_reads_the_familys_entry_for_an_mcp_tool(caplog: pytest.LogCaptureFixture) -> None:
    assert MCP_FAMILY in TOOL_NAMES and table_key(NAME) == MCP_FAMILY and table_key("bash") == "bash"
    assert mcp_words(NAME) == "create_issue on tracker" and mcp_words("mcp__odd") == "mcp__odd"
    with caplog.at_level(logging.WARNING):
        assert updates.kind_of(NAME, "read") == "fetch"
        assert updates.kind_of(NAME, "write") == "edit"
        assert updates.kind_of(NAME) == "other"  # its kind not known here
        assert updates.kind_of("bash", "read") == "execute"  # the access of a built-in tool is not looked at
        assert updates.title_of(NAME, {"title": "x"}) == "Call create_issue on tracker"
        assert plain.tool_words(NAME, {}) == "Calling create_issue on tracker"
    assert not caplog.records, "an MCP tool is no unknown tool"
