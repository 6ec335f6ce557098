"""What runs beside the conversations is the hub's to stop (issue 35, REQ-PROTO-050, REQ-BASH-013): ``Hub.stop``
cancels the conversations' tasks, kills the bash tool's background commands (deleting their logs) and closes the
agent route, and every adapter only calls ``hub.stop()`` / ``hub.close()``.

Each test starts a real background command through the bash tool (the model asks for it), reads the pid the
command printed into its own log, and witnesses its end from outside: the process is gone and its log deleted
(a server that merely dies leaves the log for the next start to sweep: only the stop deletes it).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.core.events import UserMessage
from phoenix_lsp.core.values import Mode
from phoenix_lsp.store import Store
from tests.acp.harness import TIMEOUT, agent, tool_result
from tests.e2e.harness import last_seq, session, tool_results, wait_idle
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.server.test_runtime import RecordingSink, Rig, ScriptedLlm, make_hub, needs_sandbox, stop, text, tool
from tests.waiting import eventually, exited

#: prints its own pid into its log, then stays (``exec``: the pid printed is the one that sleeps)
BACKGROUND = {"command": "echo started $$; exec sleep 300", "run": "background"}
LOG = re.compile(r"Its combined output goes to (\S+?);")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


async def _started(result: str) -> tuple[int, Path]:
    """The pid the background command printed, alive, and its log, from the tool result the model got."""
    found = LOG.search(result)
    assert found, f"not started in the background: {result[:300]}"
    log = Path(found.group(1))
    line = await eventually(lambda: re.search(r"started (\d+)", log.read_text()), "the command printed its pid")
    pid = int(line.group(1))
    assert await exited([pid], 0) == [pid], "the background command runs before the stop"
    return pid, log


@needs_sandbox
@pytest.mark.req("REQ-BASH-013", "REQ-PROTO-050")
async def test_the_hubs_stop_kills_a_live_background_command(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    store = Store(tmp_path / "data" / "phoenix.db")
    sink, llm = RecordingSink(), ScriptedLlm()
    rig = Rig(make_hub(store, sink, llm), store, sink, llm, workdir)
    try:
        runtime = rig.new()
        assert runtime.state.mode is Mode.RESTRICTED  # the command runs sandboxed, without a question
        llm.enqueue(tool("call-1", "bash", BACKGROUND), text("it runs"))
        runtime.apply(UserMessage("start it in the background"))
        await sink.rest(runtime.id)
        content = llm.requests[-1].messages[-1]["content"]
        result = next(_text(b["content"]) for b in content if b.get("tool_use_id") == "call-1")
        pid, log = await _started(result)
        rig.hub.stop()
        assert await exited([pid], 10) == [], "the background command outlived the hub's stop"
        assert not log.exists(), "its log outlived the hub's stop"
        rig.hub.stop()  # idempotent: at shutdown, and again at exit
    finally:
        await stop(rig.hub)
        store.close()


@needs_sandbox
@pytest.mark.slow
@pytest.mark.req("REQ-BASH-013", "REQ-PROTO-050")
async def test_the_lsp_shutdown_kills_a_live_background_command(fake_anthropic: FakeAnthropic,
                                                                tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("bash", BACKGROUND, id="toolu_bg")),
                               Reply.text_reply("it runs"))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "start it in the background"})
        await wait_idle(s, cid, mark)
        result = next(tool_results(r)["toolu_bg"] for r in fake_anthropic.requests if "toolu_bg" in tool_results(r))
        pid, log = await _started(_text(result["content"]))
        await asyncio.wait_for(s.client.shutdown_async(None), 60)
        assert await exited([pid], 10) == [], "the background command outlived the shutdown"
        assert not log.exists(), "its log outlived the shutdown"
        assert s.client._server is not None and s.client._server.returncode is None, "ended by shutdown, not exit"
        s.client.exit(None)
        await asyncio.wait_for(s.client._server.wait(), 30)
        s.killed = True  # nothing left for the session to shut down


@needs_sandbox
@pytest.mark.slow
@pytest.mark.req("REQ-BASH-013", "REQ-ACP-017")
async def test_the_acp_agents_end_kills_a_live_background_command(fake_anthropic: FakeAnthropic,
                                                                  tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("bash", BACKGROUND, id="toolu_bg")),
                           Reply.text_reply("it runs"))
    async with agent(fake_anthropic, tmp_path, exit_wait=TIMEOUT) as a:
        new = await a.new()
        answer = await a.prompt(new.session_id, "start it in the background")
        assert answer.stop_reason == "end_turn"
        pid, log = await _started(_text(tool_result(fake_anthropic, "toolu_bg")["content"]))
        process = a.process
    # the client closed the connection: the agent ends
    assert await asyncio.wait_for(process.wait(), TIMEOUT) == 0
    assert await exited([pid], 10) == [], "the background command outlived the ACP agent"
    assert not log.exists(), "its log outlived the ACP agent: it was not stopped, only left behind"
