"""The agent route's own tools in the core (issue 37): only what planning needs (REQ-AGENT-040), and the hand-over
of a message that needs the workspace to the ask route for the rest of its turn (REQ-AGENT-042)."""

from __future__ import annotations

import pytest

from phoenix_lsp.core import texts
from phoenix_lsp.core.effects import Audit, RequestLlm, RunTool
from phoenix_lsp.core.events import UserMessage
from phoenix_lsp.core.state import AwaitingLlm
from phoenix_lsp.core.tools import AGENT_TOOLS, tools_for
from phoenix_lsp.core.values import Route, ToolResult

from .test_machine import fresh, of, reply, run, tool

AGENT = UserMessage("look", route=Route.AGENT)


@pytest.mark.req("REQ-AGENT-040")
def test_the_agent_route_offers_no_built_in_tool_but_the_upgrade_request() -> None:
    assert tools_for(False, Route.AGENT) == AGENT_TOOLS
    assert "bash" not in AGENT_TOOLS and "patch" not in AGENT_TOOLS and "read_file" not in AGENT_TOOLS
    state, effects = run(fresh(), AGENT, reply(1, tool(1, "bash", command="ls")))
    assert not of(effects, RunTool)  # refused: the route has no such tool
    result = state.history[-1].content[0]
    assert isinstance(result, ToolResult) and result.is_error and "use_ask_route" in result.content


@pytest.mark.req("REQ-AGENT-042")
def test_use_ask_route_gives_the_rest_of_the_turn_the_ask_routes_tools() -> None:
    state, effects = run(fresh(), AGENT, reply(1, tool(1, "use_ask_route", reason="a file")))
    assert state.route is Route.ASK and isinstance(state.status, AwaitingLlm) and of(effects, RequestLlm)
    result = state.history[-1].content[0]
    assert isinstance(result, ToolResult) and not result.is_error and result.content == texts.ASK_ROUTE_TAKEN
    assert [a.detail for a in of(effects, Audit) if a.action == "routeHandedOver"] == [{"reason": "a file"}]
    # the turn goes on with the ask route's tools: bash runs now
    state, effects = run(state, reply(2, tool(2, "bash", command="ls")))
    assert [e.call.name for e in of(effects, RunTool)] == ["bash"]
