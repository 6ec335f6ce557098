"""The editor's sight tools in the core (REQ-SIGHT-002): offered only to conversations whose client announced
the sight, fixed for their life, read tools that are never asked about."""

from __future__ import annotations

from dataclasses import replace

import pytest

from phoenix_lsp.core import machine
from phoenix_lsp.core.permissions import Allow, Refuse, decide
from phoenix_lsp.core.tools import (
    AGENT_TOOLS,
    CONVERSATION_TOOLS,
    SIGHT_TOOLS,
    SUBAGENT_TOOLS,
    TOOL_KINDS,
    ToolKind,
    tools_for,
)
from phoenix_lsp.core.values import Mode, Policy, Route, ToolUse

pytestmark = pytest.mark.req("REQ-SIGHT-002")


def test_the_sight_tools_come_after_the_conversations_own_on_the_ask_route() -> None:
    assert tools_for(False) == CONVERSATION_TOOLS
    assert tools_for(False, Route.ASK, True) == (*CONVERSATION_TOOLS, *SIGHT_TOOLS)
    # the agent route has its own tools (REQ-AGENT-040): a message that needs the editor's is handed to the ask
    # route (use_ask_route, REQ-AGENT-042)
    assert tools_for(False, Route.AGENT, False) == tools_for(False, Route.AGENT, True) == AGENT_TOOLS
    assert not set(SIGHT_TOOLS) & set(AGENT_TOOLS)
    assert tools_for(True, Route.ASK, True) == (*SUBAGENT_TOOLS, *SIGHT_TOOLS)
    assert all(TOOL_KINDS[name] is ToolKind.READ for name in SIGHT_TOOLS)


@pytest.mark.parametrize("mode", [Mode.RESTRICTED, Mode.UNRESTRICTED])
@pytest.mark.parametrize("name", SIGHT_TOOLS)
def test_sight_tools_run_without_asking_only_where_the_conversation_has_them(mode: Mode, name: str) -> None:
    base = replace(machine.new_conversation("c", model="m", working_directory="/w", sandbox=True),
                   mode=mode, policy=Policy.INTERACTIVE)
    call = ToolUse("t1", name, {"path": "a.py"})
    assert decide(replace(base, editor_sight=True), call) == Allow()
    refused = decide(base, call)
    assert isinstance(refused, Refuse) and refused.reason == "unknown_tool", refused
    assert name not in refused.message.split("Use one of: ")[1]


def test_a_conversation_started_with_the_sight_keeps_it() -> None:
    state = machine.new_conversation("c", model="m", working_directory="/w", sandbox=True, editor_sight=True)
    from phoenix_lsp import codec

    restored = codec.decode_state(codec.encode_state(state), ())
    assert restored.editor_sight is True
    assert codec.decode_state(codec.encode_state(replace(state, editor_sight=False)), ()).editor_sight is False
