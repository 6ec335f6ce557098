"""The search over many MCP tools (REQ-MCP-022, ``tools/mcp_search.py``): when it takes over from the inline
definitions, how it ranks (a description that repeats every word does not win), and what it gives back."""

from __future__ import annotations

import json
from typing import Any

import pytest

from phoenix_lsp.tools import mcp_search
from phoenix_lsp.tools.patch import estimate_tokens


def tool(name: str, description: str) -> dict[str, Any]:
    return {"name": f"mcp__shop__{name}", "description": description,
            "input_schema": {"type": "object", "title": "args", "properties": {"id": {"type": "integer"}}}}


TOOLS = [tool("get_order", "One order by its id."), tool("list_orders", "The orders of a customer."),
         tool("refund_payment", "Refund a payment."), tool("count_penguins", "Counts the penguins of the zoo."),
         tool("everything", " ".join(["order", "orders", "refund", "payment", "penguins", "customer", "id"] * 20))]


@pytest.mark.req("REQ-MCP-022")
def test_the_search_takes_over_above_a_tenth_of_the_window() -> None:
    tokens = estimate_tokens(TOOLS)
    assert not mcp_search.too_many(tokens, tokens * 10)
    assert mcp_search.too_many(tokens, tokens * 10 - 10)
    definition = mcp_search.definition(TOOLS)
    assert definition == mcp_search.definition(json.loads(json.dumps(TOOLS)))  # byte-stable with its input
    assert "5 tools of the MCP servers shop" in definition["description"]


@pytest.mark.req("REQ-MCP-022")
@pytest.mark.parametrize(("query", "first"), [("penguins", "count_penguins"), ("refund a payment", "refund_payment"),
                                              ("orders of a customer", "list_orders")])
def test_a_description_repeating_every_word_does_not_come_first(query: str, first: str) -> None:
    found = mcp_search.rank(TOOLS, query)
    assert found[0]["name"] == f"mcp__shop__{first}"
    assert len(found) <= mcp_search.MOST_FOUND


@pytest.mark.req("REQ-MCP-022")
def test_the_answer_gives_each_tool_whole_and_says_when_nothing_matches() -> None:
    kinds = {"mcp__shop__get_order": "read"}
    text, is_error = mcp_search.answer(TOOLS, kinds, {"names": ["mcp__shop__get_order", "mcp__shop__nope"]})
    assert not is_error and "No MCP tool is named mcp__shop__nope." in text
    assert '- mcp__shop__get_order [read]: One order by its id.\n  input schema: {"properties":{"id":' in text
    assert '"title"' not in text  # compacted as describe_tools gives it
    text, is_error = mcp_search.answer(TOOLS, kinds, {"query": "zebra"})
    assert is_error and "No MCP tool matches 'zebra'" in text
    assert mcp_search.answer(TOOLS, kinds, {})[1] is True
