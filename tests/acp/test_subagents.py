"""A sub-agent's approvals over ACP (REQ-ACP-018, REQ-PERM-017): asked with session/request_permission in its
parent's session, and the answer reaches the sub-agent.

A sub-agent is Restricted when the kernel sandbox exists, and Restricted asks nothing: an approval of a sub-agent
can only arise without the sandbox, where it starts Unrestricted under its parent's policy. So the agent runs under
``tests/e2e/no_landlock.py`` (the kernel answers ENOSYS to Landlock, nothing mocked)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.acp.harness import Editor, agent, tool_result
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the agent as a subprocess

NO_LANDLOCK = [sys.executable, str(Path(__file__).parents[1] / "e2e" / "no_landlock.py")]
TASK = "make the witness file"


@pytest.mark.req("REQ-ACP-018", "REQ-ACP-007", "REQ-PERM-017")
@pytest.mark.parametrize("answer", ["allow_once", "reject_once"])
async def test_a_subagents_approval_is_asked_in_the_parents_session(fake_anthropic: FakeAnthropic, tmp_path: Path,
                                                                    answer: str) -> None:
    def route(body: dict[str, Any]) -> Reply | None:
        first = body["messages"][0]["content"]
        text = first if isinstance(first, str) else first[0].get("text", "")
        if text == TASK:  # the sub-agent
            if len(body["messages"]) == 1:
                return Reply.tool_reply(ToolUseBlock("bash", {"command": "touch from-agent.txt"}, id="toolu_sub"))
            said = str(body["messages"][-1]["content"])
            return Reply.tool_reply(ToolUseBlock("submit_result", {"result": f"agent saw: {said[:300]}"},
                                                 id="toolu_submit"))
        if len(body["messages"]) == 1:
            return Reply.tool_reply(ToolUseBlock("spawn_agents", {"tasks": [TASK]}, id="toolu_spawn"))
        return Reply.text_reply("all done")

    fake_anthropic.handler = route
    async with agent(fake_anthropic, tmp_path, Editor(save=True), launcher=NO_LANDLOCK) as a:
        session = await a.new()
        sid = session.session_id
        assert session.modes.current_mode_id == "unrestricted"  # no sandbox: only Unrestricted exists
        running = a.prompt(sid, "delegate")
        asked = await a.editor.wait_until(lambda: a.editor.asked and a.editor.asked[0])
        assert asked.session_id == sid  # the parent's session: the client knows no other
        assert asked.tool_call.tool_call_id == "toolu_sub" and asked.tool_call.kind == "execute"
        assert a.editor.option_kinds(asked) == ["allow_once", "allow_always", "reject_once"]
        assert a.editor.call_updates("toolu_sub")[0].session_update == "tool_call"  # shown before it is asked
        a.editor.answer = lambda review: a.editor.option(review, "allow_once")  # the file it made (issue 36)
        asked.answer.set_result(a.editor.option(asked, answer))
        assert (await running).stop_reason == "end_turn"
        assert len(a.editor.asked) == (2 if answer == "allow_once" else 1)
    witness = tmp_path / "work" / "from-agent.txt"
    reported = str(tool_result(fake_anthropic, "toolu_spawn")["content"])
    if answer == "allow_once":
        assert witness.exists()
        assert "agent saw" in reported
    else:
        assert not witness.exists()  # the rejection reached the sub-agent: nothing ran
        assert "den" in reported.lower() or "reject" in reported.lower()
