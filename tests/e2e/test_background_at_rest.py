"""End-to-end: an ended background command is reviewed at once when no turn runs (REQ-BASH-044), a running one's
changes are shown on request and its stop leads to their review (REQ-BASH-045), and one discarded at the server's
stop is told to the user and, after a restart, to the model (REQ-BASH-046).

A real LSP client drives the real server; the model is the fake Anthropic server scripted to call bash; the
commands run for real in real kernel overlays. The witnesses are the disk, the question and the events the client
received, and what the fake model server was told.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.sandbox import overlay
from tests.e2e.harness import Buffers, Session, session, tool_results, wait_idle
from tests.e2e.test_approval import answer, approval_after, start
from tests.e2e.test_background_review import launchers
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.sandbox.capture import tree_digest
from tests.waiting import eventually

SUPPORT = overlay.overlay_support()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SUPPORT is not None, reason=f"no overlay here: {SUPPORT}")]

ENDS = "sleep 1; echo bg > bg.txt && sed -i s/one/ONE/ a.txt"
RUNS_FIRST = "echo so far > partial.txt"
RUNS = f"{RUNS_FIRST} && sleep 300"


async def background(s: Session, cid: str, command: str) -> tuple[str, int]:
    """A turn in which the model starts `command` in the background (auto policy: no question for bash). Returns
    what it was told and the seq after the turn."""
    block = ToolUseBlock("bash", {"command": command, "run": "background"})
    mark = await start(s, cid, Reply.tool_reply(block), Reply.text_reply("started"))
    idle = await wait_idle(s, cid, mark)
    told = str(tool_results(s.fake.requests[-1])[block.id]["content"])
    assert "Started in the background" in told
    return told, int(idle["seq"])


def all_text(request: Any) -> str:
    """Every text the model was sent in one request."""
    out = []
    for message in request.body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            out.append(content)
            continue
        for block in content:
            if block.get("type") == "text":
                out.append(block["text"])
            elif block.get("type") == "tool_result":
                out.append(str(block.get("content")))
    return "\n".join(out)


async def next_turn_told(s: Session, cid: str) -> str:
    """What the model is sent at the conversation's next turn."""
    mark = await start(s, cid, Reply.text_reply("ok"), text="and now?")
    await wait_idle(s, cid, mark)
    return all_text(s.fake.requests[-1])


@pytest.mark.req("REQ-BASH-044")
@pytest.mark.parametrize("decision", ["allow", "deny"])
async def test_a_background_command_that_ends_at_rest_is_reviewed_at_once(
        fake_anthropic: FakeAnthropic, tmp_path: Path, decision: str) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        (w / "a.txt").write_text("zero\none\n")
        before = tree_digest(w)
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="auto")
        await s.request("phoenix/setApprovalPolicy", {"conversationId": cid, "policy": "interactive"})
        block = ToolUseBlock("bash", {"command": ENDS, "run": "background"})
        mark = await start(s, cid, Reply.tool_reply(block), Reply.text_reply("started"))
        bash = await approval_after(s, cid, mark)
        await answer(s, cid, bash["toolUseId"], "allow")
        idle = await wait_idle(s, cid, mark)
        requests = len(s.fake.requests)
        # no turn runs: the review is asked by itself once the command has ended
        asked = await approval_after(s, cid, int(idle["seq"]))
        assert asked["toolName"] == "patch" and asked["arguments"]["command"] == ENDS
        assert "+bg\n" in asked["diff"] and "-one\n+ONE\n" in asked["diff"]
        assert tree_digest(w) == before, "nothing lands before the answer"
        await answer(s, cid, asked["toolUseId"], decision)
        # the review is over when what the model is told of it is in the history (a message of its own)
        await s.wait_event(lambda e: e["conversationId"] == cid and e["seq"] > asked["seq"]
                           and e["kind"] == "message")
        if decision == "allow":
            await s.wait_until(lambda: (w / "bg.txt").exists(), what="the accepted changes on disk")
            assert (w / "bg.txt").read_text() == "bg\n" and (w / "a.txt").read_text() == "zero\nONE\n"
        else:
            assert tree_digest(w) == before
        assert len(s.fake.requests) == requests, "the review made no model request"
        told = await next_turn_told(s, cid)
        assert f"The background command `{ENDS}`" in told
        assert ("reviewed and applied" if decision == "allow" else "not applied (the user rejected them)") in told
        if decision == "deny":
            assert tree_digest(w) == before


@pytest.mark.req("REQ-BASH-045")
@pytest.mark.req("REQ-PROTO-071")
async def test_a_running_commands_changes_are_shown_and_its_stop_leads_to_their_review(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="auto")
        told, _ = await background(s, cid, RUNS)
        pid = int(re.search(r"PID (\d+)", told).group(1))  # type: ignore[union-attr]
        await eventually(lambda: (Path(f"/proc/{pid}").exists()), "it runs", timeout=30)
        shown: dict[str, Any] = {}

        async def so_far() -> bool:
            shown.update(await s.request("phoenix/reviewBackground", {"conversationId": cid}))
            return bool(shown["commands"][0]["files"])
        for _ in range(300):  # its first write may come a moment after its start
            if await so_far():
                break
        [command] = shown["commands"]
        assert command["pid"] == pid and command["running"] and command["files"] == ["partial.txt"]
        assert "+so far\n" in command["diff"] and shown["stopped"] == []
        assert not (w / "partial.txt").exists(), "a review shown while it runs applies nothing"
        # stop it: its changes are reviewed (auto policy: they land) once its tree is gone
        mark = s.last_seq(cid)
        stopped = await s.request("phoenix/reviewBackground", {"conversationId": cid, "pid": pid, "stop": True})
        assert stopped["stopped"] == [pid] and "Stopped" in stopped["message"]
        await s.wait_until(lambda: (w / "partial.txt").exists(), what="its changes reviewed and applied")
        assert (w / "partial.txt").read_text() == "so far\n"
        await s.wait_event(lambda e: e["conversationId"] == cid and e["seq"] > mark and e["kind"] == "message")
        assert not launchers(s.pid)
        assert "reviewed and applied" in await next_turn_told(s, cid)
        # nothing runs any more: asking again names no command
        error = await s.error("phoenix/reviewBackground", {"conversationId": cid})
        assert "no running background command" in error.message


@pytest.mark.req("REQ-BASH-046")
async def test_a_discard_at_the_servers_stop_is_told_to_the_user_and_after_a_restart_to_the_model(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with session(fake_anthropic, tmp_path, data_dir=data) as s:
        w = s.workdir
        before = tree_digest(w)
        cid = await unrestricted(s, policy="auto")
        outside = tmp_path / "wrote"  # outside the workspace: not captured, a witness that it wrote
        await background(s, cid, f"{RUNS_FIRST} && touch {outside} && sleep 300")
        await s.wait_until(outside.exists, what="it wrote into its layer")
        events = s.events
    told = [e for e in events if e["kind"] == "error" and e.get("errorKind") == "discarded"]
    assert len(told) == 1, "the user is told once, before the server is gone"
    assert f"`{RUNS_FIRST} && touch" in told[0]["message"] and "1 created (partial.txt)" in told[0]["message"]
    assert tree_digest(w) == before
    async with session(fake_anthropic, tmp_path, data_dir=data) as s:
        said = await next_turn_told(s, cid)
    assert f"`{RUNS_FIRST} && touch" in said and "discarded unreviewed" in said and "1 created (partial.txt)" in said
